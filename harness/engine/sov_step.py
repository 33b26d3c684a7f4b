"""The separation-of-variables step (Genz 1992; docs/math.md §6).

At variable j, with t_j = c_j / L_jj from the walk, every particle is weighted by Φ(t_j) and
draws z_j from N(0, 1) truncated to z_j >= -t_j by inversion of its uniform w_j, in log space:
z_j = -Φ⁻¹((1 - w_j) Φ(t_j)) = -ndtri_exp(log(1 - w_j) + log Φ(t_j)), so no probability is
formed by subtraction and nothing underflows (harness.core.truncnorm.draw_above).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from harness.core.truncnorm import draw_above
from harness.engine.sov_block import sov_block
from harness.model.problem import Problem


class SovStep:
    """One variable of the walk: weight by Φ(t), draw z from N(0, 1) truncated to z >= -t.

    Parameters
    ----------
    E : ndarray
        log(1 - w) of the point set, variable-major (E[j] is variable j for every particle,
        always < 0).

    Attributes
    ----------
    logw : ndarray
        The particles' accumulated log weights.
    """

    def __init__(self, E: np.ndarray):
        self.E = E
        self.logw = np.zeros(E.shape[1])
        # a whole block at a time (harness.engine.sov_block), which is this class's __call__
        # for every variable of the block: not for a subclass with a step of its own, nor for
        # points streamed a block at a time
        own = type(self).__call__ is _SOV_CALL
        self.fused_block = self._block if own and isinstance(E, np.ndarray) else None

    def _block(self, i0: int, i1: int, W: np.ndarray, D: np.ndarray, pivots: np.ndarray):
        """Variables i0..i1-1 of every particle: W's block-start means in, its draws out."""
        sov_block(W, D, pivots, self.E[i0:i1], self.logw)

    def __call__(self, j: int, t: np.ndarray):
        z, lp = draw_above(t, self.E[j], overwrite=True)   # the walk hands over a fresh t
        self.logw += lp
        return z, None

    def log_weights(self) -> np.ndarray:
        """Each particle's final log weight (the estimate of its randomisation is their mean)."""
        return self.logw

    def lineages(self) -> int | None:
        """Distinct first-variable ancestors of the final particles (None: no resampling)."""
        return None

    def resampled(self, src: np.ndarray) -> None:
        """Particle p continues particle src[p]: no per-particle state besides the weights."""

    def release(self) -> None:
        """Drop the point set once the walk is done (the weights stay)."""
        del self.E


_SOV_CALL = SovStep.__call__   # the per-variable step sov_block does for a whole block


@dataclass(frozen=True)
class SovProposal:
    """The SOV step as a part of an orthant sampler: no set-up, no rules of its own."""

    looks_ahead = False   # no per-particle block state

    def prepare(self, problem: Problem, factor) -> None:
        """Nothing to compute before the timed region."""

    def set_up(self, problem: Problem, factor) -> tuple[Callable[[np.ndarray], SovStep], dict]:
        """(the step's maker from a chunk's log(1 - w), set-up diagnostics)."""
        return SovStep, {}

    def reasons(self, diagnostics: Mapping) -> list[str]:
        """Why the step's own diagnostics call a run unreliable: never."""
        return []

    def setup_memory(self, n_train: int) -> dict[str, int]:
        return {}
