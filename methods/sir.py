"""Sequential importance resampling, "GHK with resampling" (docs/math.md §5 last point, §6).

The SOV proposal walked particle by particle (harness.core.sequential): at variable j every
particle draws z_j from N(0, 1) truncated to z_j >= -t_j and multiplies its weight by
Φ(t_j) (methods.sov.SovStep, reused unchanged). When the effective sample size of a
population's weights, (Σ W)^2 / Σ W^2, falls below `ess_threshold` times its size, the
population is resampled (systematic or multinomial, with probabilities W / Σ W): the running
log normaliser gains log mean W, and every weight is reset to 1. At the end

    Ẑ = exp(log normaliser) * mean W,

the standard SMC estimate, which is unbiased for Z (Del Moral 2004): each resampling keeps
E[Σ offspring weights | past] equal to the population's mean weight. Resampling happens after
the draw of z_j (the weight Φ(t_j) does not depend on it), so the copies share their past and
diverge at the next variable.

Uniforms are pseudo-random (a QMC point set is not preserved by resampling). The budget is
split into `randomisations` independent populations (each an SMC run of its own; their spread
gives the standard errors, as for SOV; by default 10 to 40 populations of about 200 particles,
Sir.randomisations_for), and populations too large for memory into
chunks, which are again independent runs recombined exactly. Everything else — the ratio
estimator for the test points from the final population, the diagnostics, the chunking — is
SOV's (Sir subclasses Sov and only replaces the step).

Tilted proposal (setting `proposal`, docs/math.md §7b): 'sov' (the default) is the walk above;
'tilted' draws z_j from minimax tilting's shifted proposal N(μ_j, 1) truncated to z_j >= -t_j
(the saddle point of the same factor and ordering: methods.tilted_walk.SaddleShifts) and
weights it by the twisted increment log Φ(t_j + μ_j) + μ_j²/2 - P_j t_j (P the inverse Mills
ratios at the saddle point), whose product over a path is tilting's weight and whose partial
products are fair weights of the prefix, so resampling on them keeps tilting's proposal and
stops its weights' variance from growing with N (markov1d rho 0.9 at N = 32,768, 4,000
particles: log Z within 1.5 SE, where tilting alone was 22.5 nats low). The step also looks
ahead over the rest of the walk's block (methods.tilted_walk.BlockTwist): the constraints still
to come in the block are replaced by Gaussian sites fitted at the saddle point and integrated
exactly, and z_j is drawn from that Gaussian's conditional times its own constraint. On
markov1d (rho 0.9, N = 8,192, 4,000 particles) it cut the populations' spread of log Ẑ_k from
0.34 to 0.04 and left 3,996 first-variable lineages of 4,000 against 288 (docs/math.md §7b).

Large N (setting `factorisation`, harness.methods.tlr_path, as sov-tlr has it): from
TLR_CROSSOVER = 2048 variables on ('auto') the walk runs on the tile-low-rank Cholesky factor
built straight from problem.cov (harness.core.tlr_ops.TileLowRankWalk, which permutes its
per-particle projections when the step resamples): no N x N array. `reorder` 'auto' is the
given order on the dense path and the tlr path's default (k-d tree order; block for pure orthant
problems) on the tlr path.

Path degeneracy: the step keeps each particle's ancestor at the first variable; the number of
distinct ones, summed over the populations, is the diagnostic `ancestor_lineages` (and its
fraction of the particles). On short-range problems (markov1d, N = 500) hundreds of
resamplings leave a population descending from one or two first-variable ancestors, and the
test probabilities, averages over whole paths, were far outside their standard errors; below
5 % of the particles the run is unreliable (harness.model.reliability.degenerate_paths).
"""

from __future__ import annotations

import numpy as np

from harness.core.qmc import auto_randomisations
from harness.core.sequential import Resample
from harness.methods.sov import Factor, Sov
from harness.methods.tilted_walk import SaddleShifts, TiltStep, Twist, with_saddle_vectors
from harness.methods.tlr_path import TILED_ORDERINGS, TLR_CONSTRAINTS, TiledOrdering
from harness.model.constraints import Number, OneOf
from harness.model.footprint import MemoryEstimate
from harness.model.problem import Problem
from harness.model.reliability import (
    degenerate_paths,
    degenerate_weights,
    spread_randomisations,
    unconverged_saddle_point,
    unreliable_reason,
)

RESAMPLINGS = ("systematic", "multinomial")
PROPOSALS = ("sov", "tilted")
SPREAD_MIN_PARTICLES = 100   # the spread rule from populations of this many particles (Sir)
PARTICLES_EACH = 200         # "randomisations = 0": populations of about this many particles


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



class SirStep(TiltStep):
    """The proposal's weight-and-draw step (SOV's, or with `mu` and `twist` tilting's shifted
    proposal with twisted weights: methods.tilted_walk.TiltStep), then per-population
    resampling when the ESS is low."""

    def __init__(self, E: np.ndarray, rows, threshold: float, how: str,
                 rng: np.random.Generator, mu: np.ndarray | None = None,
                 twist: Twist | None = None):
        super().__init__(E, np.zeros(E.shape[0]) if mu is None else mu, twist)
        self.starts = np.array([r0 for _, r0, _ in rows])
        self.sizes = np.array([m for _, _, m in rows])
        self.threshold, self.how, self.rng = threshold, how, rng
        self.log_norm = np.zeros(len(self.sizes))   # running log normaliser per population
        self.resamplings = 0
        self.origin = np.arange(E.shape[1])   # each particle's ancestor at the first variable

    def __call__(self, j: int, t: np.ndarray):
        z, _ = super().__call__(j, t)
        # ESS of every population at once: (Σ W)^2 / Σ W^2 with W scaled by the group maximum
        top = np.maximum.reduceat(self.logw, self.starts)
        w = np.exp(self.logw - np.repeat(top, self.sizes))
        s1 = np.add.reduceat(w, self.starts)
        s2 = np.add.reduceat(w * w, self.starts)
        low = np.flatnonzero((s1 * s1 < self.threshold * self.sizes * s2) & (self.sizes > 1))
        if len(low) == 0:
            return z, None
        src = np.arange(len(self.logw))
        for g in low:
            r0, m = self.starts[g], self.sizes[g]
            lw = self.logw[r0 : r0 + m]
            src[r0 : r0 + m] = r0 + resample_indices(lw, self.how, self.rng)
            self.log_norm[g] += top[g] + np.log(s1[g] / m)
            lw[:] = 0.0
            self.resamplings += 1
        self.origin = self.origin[src]
        self.resampled(src)
        return z, Resample(src=src)

    def lineages(self) -> int:
        """Distinct first-variable ancestors of the final particles, summed over the
        populations (path degeneracy: every particle of a population may descend from one)."""
        return int(sum(len(np.unique(self.origin[r0 : r0 + m]))
                       for r0, m in zip(self.starts, self.sizes, strict=True)))

    def log_weights(self) -> np.ndarray:
        """Final weights times the population's normaliser: their mean is its Ẑ."""
        out = self.logw.copy()
        return out + np.repeat(self.log_norm, self.sizes)


class Sir(SaddleShifts, TiledOrdering, Sov):
    """SOV proposal with resampling when the weights' ESS drops (module doc)."""

    name = "sir"
    summary = ("sequential importance resampling: SOV's truncated-normal proposal (or minimax "
               "tilting's, with twisted weights) with systematic/multinomial resampling when "
               "the weights' ESS drops; unbiased Ẑ")
    budget_unit = "particles"
    constraints = {
        "ess_threshold": Number(low=0, high=1, fix="0 never resamples (plain SOV), 1 resamples "
                                                   "at every variable"),
        "resampling": OneOf(*RESAMPLINGS),
        "proposal": OneOf(*PROPOSALS),
        "randomisations": Sov.constraints["randomisations"],
        "reorder": OneOf(*TILED_ORDERINGS),
        "block_size": Sov.constraints["block_size"],
        **TLR_CONSTRAINTS,
        "chunk_mb": Sov.constraints["chunk_mb"],
    }
    h_bytes = 16   # the projections H and the spare the resampling gathers into

    def __init__(self, ess_threshold: float = 0.5, resampling: str = "systematic",
                 proposal: str = "sov", randomisations: int = 0, reorder: str = "auto",
                 block_size: int = 0, tile_size: int = 0, tolerance: float = 1e-8,
                 factorisation: str = "auto", chunk_mb: float = 512.0):
        self.ess_threshold = ess_threshold
        self.resampling = resampling
        self.proposal = proposal
        self.randomisations = randomisations
        self.reorder = reorder
        self.block_size = block_size
        self.tile_size = tile_size
        self.tolerance = tolerance
        self.factorisation = factorisation
        self.chunk_mb = chunk_mb
        self.points = "random"   # fixed, not a setting: resampling does not keep a QMC set

    def randomisations_for(self, budget: int) -> int:
        """The number of populations: the `randomisations` setting, or for 0 budget //
        PARTICLES_EACH clipped to [10, 40] (qmc.auto_randomisations), so 10 up to 2,000
        particles, 20 at 4,000, 40 from 8,000 on. The standard errors come from the populations'
        spread (K - 1 degrees of freedom), and each population's log Ẑ_k spreads more the fewer
        particles it has (its variance grows like N / particles). Measured with the tilted
        proposal on markov1d (rho 0.9, 100 test points, 4,000 particles, exact truth): at
        N = 8,192 over 10 seeds, K = 10, 20, 40 put 2.5 %, 0.8 %, 0.6 % of the test
        probabilities beyond 3 SE (t with K - 1 degrees of freedom: 1.5 %, 0.74 %, 0.47 %),
        the worst at 5.3, 3.4, 3.8 SE, and one log Z at -3.6 SE with K = 10 (none beyond 2.5
        with 20 or 40); at N = 32,768, K = 40 (100 particles each) spread by 1.35 nats
        (effective populations 7 of 40, test z's with sd 1.42), K = 20 by 0.77-0.93 (8 seeds:
        13 of 800 test probabilities beyond 3 SE, log Z within 0.71 SE;
        benchmarks/bench_sequential_tilting.py). Those runs had the first-order twist; with the
        Gaussian look-ahead over each block (methods.tilted_walk.BlockTwist) the populations
        agree to 0.04 nats at N = 8,192, and K = 10 and 20 (5 seeds) put 0.8 % and 0.4 % of
        the test probabilities beyond 3 SE."""
        return self.randomisations or auto_randomisations(budget, PARTICLES_EACH)

    def particle_memory(self, n_vars, n_test, budget, block, extra=0, per_variable=None):
        """SOV's, with the walk's spare history for the resampling gathers (measured with
        tracemalloc at N = 2000: 44 bytes per particle and variable; 48 here); with the
        tilted proposal also the block look-ahead's per-particle arrays (BlockTwist: g, and
        three more block-wide ones while a block is entered)."""
        out = super().particle_memory(n_vars, n_test, budget, block, extra, per_variable=48)
        if self.proposal == "tilted":
            n = min(budget, self.points_per_chunk(n_vars, n_test, block, extra))
            out["block look-ahead"] = n * 8 * 4 * block
        return out

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """SOV's or the tile-low-rank path's, plus the saddle point's work with the tilted
        proposal."""
        est = super().memory_estimate(n_train, n_test, budget)
        return with_saddle_vectors(est, n_train) if self.proposal == "tilted" else est

    def prepare(self, problem: Problem) -> None:
        super().prepare(problem)
        if self.proposal == "tilted":
            self.shifts(problem)

    def set_up(self, problem: Problem) -> tuple[Factor, dict]:
        """SOV's factor; with the tilted proposal also the saddle point of that factor (cached
        per problem)."""
        fac, setup = super().set_up(problem)
        self._tilt = None
        if self.proposal == "tilted":
            mu, twist, info = self.saddle_set_up(problem)
            self._tilt = (mu, twist)
            setup = {**setup, **info}
        return fac, setup

    def make_step(self, E, rows, rng) -> SirStep:
        mu, twist = getattr(self, "_tilt", None) or (None, None)
        return SirStep(E, rows, self.ess_threshold, self.resampling, rng, mu, twist)

    def unreliable_reason(self, diagnostics: dict, budget: int) -> str:
        """SOV's rules without the Pareto k̂ one: after resampling the final weights are
        reset, so their tail index (the `pareto_k` diagnostic, kept for information) says
        nothing about the estimate (measured in benchmarks/bench_reliability.py: -1.0 to 0.5
        on markov1d runs that were all >= 3 SE off, up to 1.4 on correct quick-sweep runs).
        With populations of SPREAD_MIN_PARTICLES or more, also the spread rule: their log Ẑ_k
        with sd > 1 nat (harness.model.reliability.spread_randomisations). Measured: sd
        0.02-0.55 on seven easy problems (one-factor and linear, N up to 1,000; 5 seeds at 10³
        and 10⁴ particles, 70 runs); 1.6 and 2.3 on a 2-D Matérn-3/2 orthant problem at N = 4,096
        (10⁴ particles: 1.5-4 effective populations of 10); smaller populations spread by
        1.1-4.2 on easy problems (budget 100), so the rule waits for 100 particles each."""
        reasons = degenerate_weights(diagnostics, budget, tail=False) + degenerate_paths(
            diagnostics, budget) + unconverged_saddle_point(diagnostics)
        k = diagnostics.get("randomisations") or 1
        if budget // k >= SPREAD_MIN_PARTICLES:
            reasons += spread_randomisations(diagnostics, budget)
        return unreliable_reason(reasons)
