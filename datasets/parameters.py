"""Parameter checks shared by the problem families (one-line InputErrors naming the field)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from harness.core.errors import InputError
from harness.core.kernels import STATIONARY, Kernel, make_kernel

T = TypeVar("T")

# The largest problems a family builds. No method finishes beyond them on a machine like this
# one: sov-tlr, the only one that scales (O(N^1.5) per sample, no N x N matrix), took about
# 10 minutes at N = 65,536 (docs/design.md "Large problems"); 10^6 points are hours of its set-up
# alone, and a dense method's 8 N^2 bytes are 8 TB. Features likewise: the class covariance of
# gauss2class is d x d and every kernel entry costs d operations.
MAX_POINTS = 1_000_000
MAX_FEATURES = 1_000


def check_count(family: str, key: str, value: int, minimum: int,
                maximum: int = MAX_POINTS) -> None:
    """minimum <= value <= maximum for a size parameter (points, features) of a family."""
    if value < minimum:
        raise InputError(f"problem {family}: parameter {key!r}", f"must be >= {minimum}, "
                         f"got {value}")
    if value > maximum:
        raise InputError(f"problem {family}: parameter {key!r}", f"{value:,} is more than "
                         f"the harness builds (at most {maximum:,}: no method finishes beyond)",
                         f"use {key} <= {maximum:,}")


def check_sizes(family: str, n_train: int, n_test: int) -> None:
    """At least two training points, no negative number of test points, at most MAX_POINTS
    of each."""
    check_count(family, "n_train", n_train, 2)
    check_count(family, "n_test", n_test, 0)


def check_seed(family: str, seed: int) -> None:
    """A seed for numpy's generators: a non-negative integer."""
    if seed < 0:
        raise InputError(f"problem {family}: parameter 'seed'", f"must be >= 0, got {seed}")


class NoExactTruth(InputError, ArithmeticError):
    """The oracle's ArithmeticError, as an InputError: the command line's one line, exit 2."""


def exact_truth(family: str, compute: Callable[[], T]) -> T:
    """compute() of a family's oracle; when it cannot reach its tolerance for these parameters
    (extreme scales make the integrand a step function), NoExactTruth instead of a
    traceback: the problem has no exact truth to benchmark against."""
    try:
        return compute()
    except ArithmeticError as exc:
        raise NoExactTruth(f"problem {family}: parameters",
                           f"the exact truth cannot be computed for them ({exc})",
                           "use moderate scales (|values| of order 1 to 100)") from None


def check_positive(family: str, **values: float) -> None:
    """Each named value (e.g. the kernel's alpha and beta) is a finite positive number."""
    for key, value in values.items():
        if not (np.isfinite(value) and value > 0):
            raise InputError(f"problem {family}: parameter {key!r}",
                             f"must be a positive number, got {value}")


def stationary_kernel(family: str, kernel: str, alpha: float, beta: float) -> Kernel:
    """The kernel named `kernel` (rbf, matern12, matern32, matern52: docs/math.md §1) with
    length scale alpha and variance beta, or an InputError naming the family's parameter."""
    if kernel not in STATIONARY:
        raise InputError(f"problem {family}: parameter 'kernel'", f"unknown kernel {kernel!r}",
                         f"use one of {list(STATIONARY)}")
    check_positive(family, alpha=alpha, beta=beta)
    return make_kernel(kernel, alpha=alpha, beta=beta)


def kernel_label(kernel: Kernel) -> str:
    """'RBF kernel' (the wording of existing descriptions) or 'matern32 kernel'."""
    return "RBF kernel" if kernel.name == "rbf" else f"{kernel.name} kernel"
