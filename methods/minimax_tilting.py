"""Minimax exponential tilting (Botev 2017; docs/math.md §7), "minimax-tilting".

Importance sampling for Z = P(v >= 0), v = L z ~ N(0, R), with the SOV walk's proposal
shifted: at variable j (t_j = c_j / L_jj from the shared Cholesky walk, harness.core.sequential)

    z_j ~ N(μ_j, 1) truncated to z_j >= -t_j,
    log weight += log Φ(t_j + μ_j) + μ_j^2 / 2 - μ_j z_j,

which is SOV for μ = 0. The shifts μ (and a point x of the orthant) solve Botev's saddle-point
system ∇ψ(x, μ) = 0 of ψ(x; μ) = Σ_j [μ_j^2/2 - x_j μ_j + log Φ(L̃_j x + μ_j)], L̃ = D^{-1} L - I
(D = diag L), with x_N = μ_N = 0; the 2(N - 1) equations are

    -μ + L̃ᵀ P = 0,   μ - x + P = 0,   P = φ(L̃ x + μ) / Φ(L̃ x + μ)

(inverse Mills ratio in log space), solved by Newton's method on the profile
φ(x) = min_μ ψ(x; μ), which is concave on the orthant's cone (harness.core.saddle_point: μ(x)
in closed form per variable, each step an SPD system solved by conjugate gradients using only
products with the factor, O(N²) each; affine invariant, so nearly singular covariances
converge too). The estimator then has bounded, often vanishing, relative error as the
probability gets small. The set-up (reordering and factor O(N³), saddle point ~ O(N²) per
Newton step) is done once per problem in `prepare` and cached. If the saddle point does not
converge, μ is still a valid proposal (any shift is): the estimate runs and its diagnostics
say so (saddle_converged = 0, and saddle_decrement, the Newton decrement where it stopped);
far from converged it is `unreliable` (harness.model.reliability).

Everything after the step — randomised QMC points (Sobol', lattice or random) in independent
randomisations with the standard error of log Ẑ from their spread, the shared-sample ratio
estimator of the test probabilities, ESS diagnostics — is SOV's: MinimaxTilting subclasses
Sov and only replaces the step (and the default ordering: Botev reorders by the univariate
rule, harness.core.reorder).

Large N (setting `factorisation`, harness.methods.tlr_path, as sov-tlr has it): from
TLR_CROSSOVER = 2048 variables on ('auto') the factor is the tile-low-rank Cholesky built
straight from problem.cov, the saddle point's products L v and Lᵀ u go tile by tile
(harness.core.tlr_ops.TileLowRankOperator) and the tilted walk is the tile-low-rank walk: no
N x N array and no O(N³) step. The univariate reordering is O(N³), so the tlr path's ordering
('auto') is the k-d tree order of the training inputs (the block reordering for pure orthant
problems, which have none). Measured at N = 4096, 2000 points, sd of log Ẑ over 10 seeds
(3 seeds for the first two columns), tolerance 1e-8:

                                   none    block   kdtree   kdtree, then block
    markov1d rho = 0.9             0.85    1.39    0.58     0.67
    gauss2class matern32 α = 0.1   1.08    0.39    0.36     0.62

(dense path, univariate: 0.28 on markov1d over 3 seeds). On gauss2class 'none' and 'block' keep
the inputs' given order, whose tiles are not spatially compact: mean tile rank 54, 171 % of a
dense factor stored (k-d tree: rank 10.5, 16 %), set-up 5.5 s against 0.5 s. markov1d's given
order interleaves the labels, so there too the k-d tree order (the sorted 1-D order) is the
local one: rank 1.1 against 3.6. No ordering keeps the weights light here: at 2000 points
most runs of every ordering were `unreliable` (Pareto k̂ > 1).

Sequential walk (setting `walk`, docs/math.md §7b): the plain weights' log-variance grows with N
on short-range covariances; no ordering stops that, and more points barely help once k̂ > 1.
'sequential' walks the same proposal particle by particle and resamples a population when its
ESS falls below half, on the twisted weights whose partial products are fair weights of each
prefix: exactly `sir` with proposal 'tilted' (methods.sir), under this method's name, settings
and dense ordering (random points; the populations' spread gives the standard errors; sir's
rules). 'importance' is Botev's estimator above. 'auto' (the default) is 'importance' below
TLR_CROSSOVER = 2048 variables and 'sequential' from there on, where the factor is tile-low-rank
too. Measured at N = 4,096 with 4,000 points or particles (6 seeds, exact truth): markov-p4 (rho
0.95, beta 2) 'importance' 6 of 6 unreliable (Pareto k̂ 2.1-2.4) and 1.0-4.6 nats low,
'sequential' 6 of 6 ok with log Z within 1.3 SE (errors -0.01 to 0.12); one-factor
(onefactor:n=4096, long-range) both ok and alike (SE 0.011 against 0.013; no resampling was
needed there). markov1d rho 0.9 at N = 32,768: 'importance' 22.5 nats low (k̂ 4.1), 'sequential'
within 0.71 SE in 8 of 8 seeds (benchmarks/bench_sequential_tilting.py), but all 8 flagged by
the path rule (2.4-2.8 % of the first-variable lineages left). With the Gaussian look-ahead over
each block of the walk (methods.tilted_walk.BlockTwist, docs/math.md §7b): 4 of 4 ok at
N = 32,768 and 4 of 4 at 65,536, log Z within 2.1 SE, 1.0 % and 1.5 % of the test probabilities
beyond 3 SE (worst 3.9), 74 % and 58 % of the lineages left, 41 and 101-133 CPU s a run.
"""

from __future__ import annotations

import numpy as np

from harness.methods.sir import Sir
from harness.methods.sov import Factor, Sov
from harness.methods.tilted_walk import SaddleShifts, TiltStep, with_saddle_vectors
from harness.methods.tlr_path import (
    TILED_ORDERINGS,
    TLR_CONSTRAINTS,
    TLR_CROSSOVER,
    TiledOrdering,
)
from harness.model.constraints import OneOf
from harness.model.footprint import MemoryEstimate
from harness.model.problem import Problem
from harness.model.reliability import (
    degenerate_weights,
    unconverged_saddle_point,
    unreliable_reason,
)
from harness.model.result import Estimate

WALKS = ("auto", "importance", "sequential")


class MinimaxTilting(SaddleShifts, TiledOrdering, Sov):
    """Botev's minimax exponential tilting on the SOV engine, from TLR_CROSSOVER variables on
    with resampling on twisted weights (module doc)."""

    name = "minimax-tilting"
    summary = ("minimax exponential tilting (Botev 2017): saddle-point shifted truncated-normal "
               "proposals, randomised QMC, shared-sample ratio estimator for predictions; from "
               "N = 2,048 resampled on twisted weights (the sequential walk)")
    budget_unit = "qmc points"
    constraints = {**Sov.constraints, "reorder": OneOf(*TILED_ORDERINGS), **TLR_CONSTRAINTS,
                   "walk": OneOf(*WALKS)}
    dense_reorder = "univariate"

    def __init__(self, points: str = "sobol", randomisations: int = 0, reorder: str = "auto",
                 block_size: int = 0, tile_size: int = 0, tolerance: float = 1e-8,
                 factorisation: str = "auto", walk: str = "auto", chunk_mb: float = 512.0):
        super().__init__(points=points, randomisations=randomisations, reorder=reorder,
                         block_size=block_size, chunk_mb=chunk_mb)
        self.tile_size = tile_size
        self.tolerance = tolerance
        self.factorisation = factorisation
        self.walk = walk

    # ---- the sequential walk (module doc) ----------------------------------------------
    def sequential(self, n_train: int) -> bool:
        """Whether this instance resamples at N = n_train ('auto': from TLR_CROSSOVER on)."""
        return self.walk == "sequential" or (self.walk == "auto" and n_train >= TLR_CROSSOVER)

    def resampled_walk(self) -> Sir:
        """The sequential walk: `sir` with tilting's proposal (methods.sir.Sir, proposal
        'tilted'), these settings, and this method's name (in its messages) and dense ordering
        (so it shares this method's cached factor and saddle point)."""
        twin = Sir(proposal="tilted", randomisations=self.randomisations, reorder=self.reorder,
                   block_size=self.block_size, tile_size=self.tile_size,
                   tolerance=self.tolerance, factorisation=self.factorisation,
                   chunk_mb=self.chunk_mb)
        twin.name, twin.dense_reorder = self.name, self.dense_reorder
        return twin

    def prepare(self, problem: Problem) -> None:
        if self.sequential(problem.n_train):
            return self.resampled_walk().prepare(problem)
        super().prepare(problem)
        self.shifts(problem)

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """SOV's or the tile-low-rank path's (harness.methods.tlr_path), plus the saddle
        point's work (with_saddle_vectors); the sequential walk's is sir's."""
        if self.sequential(n_train):
            return self.resampled_walk().memory_estimate(n_train, n_test, budget)
        return with_saddle_vectors(super().memory_estimate(n_train, n_test, budget), n_train)

    def _estimate_part(self, problem: Problem, budget: int, rng: np.random.Generator) -> dict:
        """Botev's estimator's part, or the sequential walk's; the set-up diagnostics say
        which (`walk`)."""
        seq = self.sequential(problem.n_train)
        part = (self.resampled_walk() if seq else super())._estimate_part(problem, budget, rng)
        if "setup" in part:
            part["setup"]["walk"] = "sequential" if seq else "importance"
        return part

    def _combine_parts(self, problem: Problem, parts: list[dict]) -> Estimate:
        if self.sequential(problem.n_train):
            return self.resampled_walk()._combine_parts(problem, parts)
        return super()._combine_parts(problem, parts)

    def make_step(self, E, rows, rng) -> TiltStep:
        return TiltStep(E, self._mu)

    def set_up(self, problem: Problem) -> tuple[Factor, dict]:
        """SOV's factor, and the saddle-point shifts μ with their diagnostics (cached per
        problem, so identical in every part of a split estimate)."""
        fac, setup = super().set_up(problem)
        self._mu, _, info = self.saddle_set_up(problem)
        return fac, {**setup, **info}

    def unreliable_reason(self, diagnostics: dict, budget: int) -> str:
        """SOV's rules, and shifts far from the saddle point (harness.model.reliability)."""
        return unreliable_reason(unconverged_saddle_point(diagnostics)
                                 + degenerate_weights(diagnostics, budget))
