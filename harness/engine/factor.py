"""What an orthant walk needs from a factorisation of the problem (docs/math.md §4, §6)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from harness.core.sequential import CholeskyWalk, WalkResult


class SetupFailed(Exception):
    """The set-up of an orthant sampler failed (the message is the Estimate's reason)."""


@dataclass
class Factor:
    """A factor ready to walk.

    Attributes
    ----------
    walk : CholeskyWalk
        The walk over the training variables (dense, tile-low-rank or Vecchia).
    test_sd : ndarray
        s_j, the conditional standard deviation of each test variable given the training ones.
    test_means : callable
        ``test_means(result, cols)``: the (particles, len(cols)) conditional means c*_j of the
        test variables `cols` given a finished walk's draws.
    projections : int
        Columns of the walk's per-particle projection buffer (tile-low-rank walk; 0 otherwise):
        the walk's memory per particle grows by this many numbers.
    test_tile : int
        Test variables are best taken in multiples of this.
    history_rows : int or None
        Rows of the walk's history (None: one per variable).
    diagnostics : dict
        Set-up diagnostics of the factor (ordering, ranks, timings).
    """

    walk: CholeskyWalk
    test_sd: np.ndarray
    test_means: Callable[[WalkResult, slice], np.ndarray]
    projections: int = 0
    test_tile: int = 1
    history_rows: int | None = None
    diagnostics: dict = field(default_factory=dict)


class FactorMemory(NamedTuple):
    """Bytes a factor holds while walked and needs while built, by part, and the columns of
    the walk's per-particle projection buffer (Factor.projections) the particles add."""

    held: dict[str, int]
    setup: dict[str, int]
    projections: int = 0
