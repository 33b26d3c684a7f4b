"""Importance sampling over independent randomisations of a point set (docs/math.md §6).

The budget's points are split into K independent randomisations of a scrambled Sobol' set
(default), a randomly shifted lattice, or pseudo-random uniforms (harness.core.qmc); each
particle walks every variable with no resampling, and Ẑ is the mean of the final weights, an
unbiased estimate of Z. The spread of the K per-randomisation estimates gives the standard
errors (harness.engine.randomisations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from harness.core.qmc import SOBOL_MAX_DIM, auto_randomisations
from harness.model.reliability import degenerate_weights, unreliable_reason

# Bytes per particle and variable at the peak of a chunk: generating the Sobol' points holds
# scipy's (n, N) float draws, their 2^30-scaled copy and the uint32 digits beside the (N, n)
# output (8 + 8 + 8 + 4 = 28); the walk holds E, the history Z and the block products' working
# copy of the history slice (27 bytes for every kind, measured with tracemalloc). Rounded up.
POINT_BYTES = {"sobol": 32, "lattice": 32, "random": 32}


@dataclass(frozen=True)
class Importance:
    """The importance walk as a part of an orthant sampler (module doc).

    Parameters
    ----------
    points : str
        'sobol', 'lattice' or 'random' (harness.core.qmc.KINDS).
    randomisations : int
        K; 0 chooses by the budget (harness.core.qmc.auto_randomisations).
    """

    points: str = "sobol"
    randomisations: int = 10
    streams = False               # a QMC point has all its coordinates at once
    t_interval = False            # normal-quantile SEs: their measured misses come from heavy
    #                               tails more than from K (docs/studies.md, "Small-budget
    #                               calibration")
    bytes_per_projection = 8      # the tile-low-rank walk's projections H, per particle

    @property
    def bytes_per_variable(self) -> int:
        return POINT_BYTES[self.points]

    def point_kind(self, n_vars: int) -> str:
        """The point set used: `points`, except that Sobol' points (which exist up to
        SOBOL_MAX_DIM dimensions in scipy) become the lattice above that."""
        if self.points == "sobol" and n_vars > SOBOL_MAX_DIM:
            return "lattice"
        return self.points

    def randomisations_for(self, budget: int) -> int:
        """K at this budget: `randomisations`, or for 0 the budget's own."""
        return self.randomisations or auto_randomisations(budget)

    def wrap(self, step, rows, rng: np.random.Generator):
        """The step as the walk runs it: unchanged (no resampling)."""
        return step

    def reasons(self, diagnostics: Mapping, budget: int, step_reasons: list[str]) -> str:
        """The step's reasons, then collapsed or heavy-tailed weights
        (harness.model.reliability.degenerate_weights)."""
        return unreliable_reason(step_reasons + degenerate_weights(diagnostics, budget))
