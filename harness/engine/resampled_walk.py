"""Sequential importance resampling, "GHK with resampling" (docs/math.md §5, §6, §7b).

Each particle walks the variables with the step's proposal; when the effective sample size of
a population's weights, (Σ W)² / Σ W², falls below `ess_threshold` times its size, the
population is resampled (systematic or multinomial, with probabilities W / Σ W): its running
log normaliser gains log mean W and every weight is reset to 1. At the end
Ẑ = exp(log normaliser) · mean W, unbiased for Z (Del Moral 2004). Resampling happens after
the draw of z_j, so the copies share their past and diverge at the next variable.

Uniforms are pseudo-random (resampling does not keep a QMC set); the budget is split into
independent populations, whose spread gives the standard errors (with `t_interval`, times
harness.core.qmc.t_coverage_factor for their K - 1 degrees of freedom). Path degeneracy is watched
through each particle's ancestor at the first variable (`ancestor_lineages`): a population
that descends from a handful of them has test probabilities far outside their standard errors
(harness.model.reliability.degenerate_paths). docs/studies.md, "Resampled walks", has the
measurements behind the number of populations and the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from harness.core.qmc import auto_randomisations
from harness.core.sequential import Resample
from harness.model.constraints import Number, OneOf
from harness.model.reliability import (
    degenerate_paths,
    degenerate_weights,
    spread_randomisations,
    unreliable_reason,
)

RESAMPLINGS = ("systematic", "multinomial")
SPREAD_MIN_PARTICLES = 100   # the spread rule from populations of this many particles
PARTICLES_EACH = 200         # "randomisations = 0": populations of about this many particles
WALKS = ("auto", "importance", "sequential")   # a method's choice of walk (`resamples`)
SEQUENTIAL_FROM = 2048       # 'auto' resamples from this many variables on (docs/math.md §7b)
CONSTRAINTS = {
    "ess_threshold": Number(low=0, high=1, fix="0 never resamples (plain SOV), 1 resamples "
                                               "at every variable"),
    "resampling": OneOf(*RESAMPLINGS),
}


def resamples(walk: str, n_train: int) -> bool:
    """Whether a method's `walk` setting (one of WALKS) resamples at N = n_train: 'sequential',
    or 'auto' from SEQUENTIAL_FROM variables on, where the plain weights' log-variance grows
    with N on short-range covariances (docs/studies.md, "Resampled walks")."""
    return walk == "sequential" or (walk == "auto" and n_train >= SEQUENTIAL_FROM)


def resample_indices(logw: np.ndarray, how: str, rng: np.random.Generator) -> np.ndarray:
    """len(logw) ancestor indices drawn with probabilities proportional to exp(logw)."""
    m = len(logw)
    p = np.exp(logw - logw.max())
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    if how == "systematic":
        u = (rng.random() + np.arange(m)) / m
    else:
        u = np.sort(rng.random(m))
    return np.minimum(np.searchsorted(cdf, u, side="right"), m - 1)


class Resampler:
    """A step with per-population resampling when the ESS is low (module doc).

    Parameters
    ----------
    step : SovStep
        The proposal's weight-and-draw step (harness.engine.sov_step or tilted_step).
    rows : list of (population, first row, size)
        The populations of the chunk (harness.core.qmc.PointSet.chunk_rows).
    threshold : float
        Resample a population when its ESS falls below this fraction of its size.
    how : str
        'systematic' or 'multinomial'.
    rng : numpy.random.Generator
        The stream of the resampling draws.
    """

    def __init__(self, step, rows, threshold: float, how: str, rng: np.random.Generator):
        self.step = step
        self.starts = np.array([r0 for _, r0, _ in rows])
        self.sizes = np.array([m for _, _, m in rows])
        self.threshold, self.how, self.rng = threshold, how, rng
        self.log_norm = np.zeros(len(self.sizes))   # running log normaliser per population
        self.resamplings = 0
        self.origin = np.arange(len(step.logw))   # each particle's ancestor at variable 0

    def enter_block(self, i0: int, i1: int, W: np.ndarray, D: np.ndarray) -> None:
        """The walk's announcement of a block, passed on to a step that looks ahead."""
        enter = getattr(self.step, "enter_block", None)
        if enter is not None:
            enter(i0, i1, W, D)

    def __call__(self, j: int, t: np.ndarray):
        z, _ = self.step(j, t)
        logw = self.step.logw
        # ESS of every population at once: (Σ W)^2 / Σ W^2 with W scaled by the group maximum
        top = np.maximum.reduceat(logw, self.starts)
        w = np.exp(logw - np.repeat(top, self.sizes))
        s1 = np.add.reduceat(w, self.starts)
        s2 = np.add.reduceat(w * w, self.starts)
        low = np.flatnonzero((s1 * s1 < self.threshold * self.sizes * s2) & (self.sizes > 1))
        if len(low) == 0:
            return z, None
        src = np.arange(len(logw))
        for g in low:
            r0, m = self.starts[g], self.sizes[g]
            lw = logw[r0 : r0 + m]
            src[r0 : r0 + m] = r0 + resample_indices(lw, self.how, self.rng)
            self.log_norm[g] += top[g] + np.log(s1[g] / m)
            lw[:] = 0.0
            self.resamplings += 1
        self.origin = self.origin[src]
        self.step.resampled(src)
        return z, Resample(src=src)

    def lineages(self) -> int:
        """Distinct first-variable ancestors of the final particles, summed over the
        populations (path degeneracy: every particle of a population may descend from one)."""
        return int(sum(len(np.unique(self.origin[r0 : r0 + m]))
                       for r0, m in zip(self.starts, self.sizes, strict=True)))

    def log_weights(self) -> np.ndarray:
        """Final weights times the population's normaliser: their mean is its Ẑ."""
        out = self.step.logw.copy()
        return out + np.repeat(self.log_norm, self.sizes)

    def release(self) -> None:
        self.step.release()


@dataclass(frozen=True)
class Resampled:
    """The resampled walk as a part of an orthant sampler (module doc).

    Parameters
    ----------
    ess_threshold : float
        Resample a population when its ESS falls below this fraction of its size.
    resampling : str
        'systematic' or 'multinomial'.
    randomisations : int
        Independent populations; 0: budget // PARTICLES_EACH, clipped to [10, 40].
    t_interval : bool
        Standard errors times harness.core.qmc.t_coverage_factor(populations), so that
        ±2.5 SE keeps the normal coverage under the populations' t (docs/math.md §7b). On by
        default: sir, minimax-tilting's and vecchia-tilting's sequential walks and vecchia-sir
        take it (docs/studies.md, "Small-budget calibration").
    """

    ess_threshold: float = 0.5
    resampling: str = "systematic"
    randomisations: int = 0
    t_interval: bool = True
    streams = True                # random points, generated a block at a time if the factor
    #                               holds only the rows still read
    bytes_per_projection = 16     # projections H and the spare the resampling gathers into
    bytes_per_variable = 48       # points and history, with the history's spare for gathers

    def point_kind(self, n_vars: int) -> str:
        return "random"

    def randomisations_for(self, budget: int) -> int:
        """The number of populations: `randomisations`, or for 0 budget // PARTICLES_EACH
        clipped to [10, 40] (10 up to 2,000 particles, 40 from 8,000 on)."""
        return self.randomisations or auto_randomisations(budget, PARTICLES_EACH)

    def wrap(self, step, rows, rng: np.random.Generator) -> Resampler:
        return Resampler(step, rows, self.ess_threshold, self.resampling, rng)

    def reasons(self, diagnostics: Mapping, budget: int, step_reasons: list[str]) -> str:
        """Collapsed weights (not their tail: the final weights are reset by resampling),
        degenerate paths, the step's reasons and, with populations of SPREAD_MIN_PARTICLES or
        more, log Ẑ_k spread by more than a nat (harness.model.reliability)."""
        reasons = degenerate_weights(diagnostics, budget, tail=False) + degenerate_paths(
            diagnostics, budget) + step_reasons
        k = diagnostics.get("randomisations") or 1
        if budget // k >= SPREAD_MIN_PARTICLES:
            reasons += spread_randomisations(diagnostics, budget)
        return unreliable_reason(reasons)
