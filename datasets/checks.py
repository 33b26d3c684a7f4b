"""Parameter checks shared by the problem families (one-line InputErrors naming the field)."""

from __future__ import annotations

import numpy as np

from harness.errors import InputError


def check_sizes(family: str, n_train: int, n_test: int) -> None:
    """At least two training points and no negative number of test points."""
    if n_train < 2:
        raise InputError(f"problem {family}: parameter 'n_train'", f"must be >= 2, got {n_train}")
    if n_test < 0:
        raise InputError(f"problem {family}: parameter 'n_test'", f"must be >= 0, got {n_test}")


def check_positive(family: str, **values: float) -> None:
    """Each named value (e.g. the kernel's alpha and beta) is a finite positive number."""
    for key, value in values.items():
        if not (np.isfinite(value) and value > 0):
            raise InputError(f"problem {family}: parameter {key!r}",
                             f"must be a positive number, got {value}")
