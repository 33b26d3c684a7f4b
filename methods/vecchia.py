"""Vecchia estimators of the orthant probability (Cao & Katzfuss 2024; docs/math.md §5, §7):
"vecchia-sov" and "vecchia-tilting".

They estimate P(v >= 0) for v ~ N(0, R̃), R̃ the Vecchia approximation of R with m neighbours
(harness.core.vecchia): each training variable, in a maximin (or sorted 1-D) order, depends on
its m nearest previously ordered neighbours c(i) only, v_i | v_c ~ N(b_i v_c, d_i). This is NOT
the exact Z: the answer is Z of R̃, exact only when every variable keeps all earlier ones
(m >= N - 1), and the error of the approximation is not in the reported SE (it is an
approximation, `exact=False`, kept out of the consensus). On a one-factor (global) covariance
the approximation is poor at any practical m.

The SOV walk on that structure: for each variable, t_i = b_i v_c(i) / sqrt(d_i) from the
samples' earlier draws (a gather of m of them and a dot per variable, vectorised over the
samples), then the step of `sov` (weight Φ(t_i), z_i truncated to z_i >= -t_i) or of
`minimax-tilting` (TiltStep, the shifts μ from Botev's saddle point of ψ on the sparse factor
L = U^{-1} D^{1/2}, products by sparse triangular solves: O(N m) per product), and
v_i = b_i v_c + sqrt(d_i) z_i. O(N m^3) set-up, O(N m) per sample, O(N m) memory besides the
chunk of samples. Everything after the step — randomised QMC in independent randomisations,
the SE of log Ẑ from their spread, Pareto k̂, the reliability rules, split estimates — is
SOV's (harness.methods.sov).

vecchia-tilting's sequential walk (setting `walk`, as minimax-tilting's: 'auto' is Botev's
importance sampler below N = 2,048 and from there `sir` with tilting's proposal, twisted
weights and the Gaussian look-ahead over each block of default_block_size(N) variables,
VecchiaResampled; docs/math.md §7a-§7b). The Vecchia walk hands each block its means given the
earlier blocks and its diagonal block L_BB (harness.core.vecchia.VecchiaWalk), keeps only the
v's a later block or a test variable still reads, and the random points are streamed to it a
block at a time, so a particle costs O(rows still read), not O(N): at N = 262,144 on markov1d
all 4,000 particles walk in one chunk. Measured there (rho 0.9, m = 60, exact truth): Botev's
weights 301 nats low (flagged); the sequential walk within 1.2 SE, see docs/math.md §7a.

Test probabilities: each test variable is appended with its own m nearest training inputs as
neighbours (among all training variables), c* = b* v_c, s*² = d* (its Vecchia conditional mean
and variance), and the shared-sample ratio estimator J* = Σ W Φ(c*/s*) / Σ W.

Ordering (`ordering`): 'auto' is, for a stationary kernel (RBF, Matérn), the sorted order of
1-D inputs (markov1d) and the maximin order of inputs in more dimensions, with the m nearest
earlier inputs as neighbours; otherwise (no inputs: orthant files, one-factor; or a linear
kernel, whose correlations do not fall with distance) 'strongest': variables by decreasing
Σ_j ρ_ij², with the m most correlated earlier variables as neighbours (test variables: the m
most correlated training variables). 'given' keeps the problem's order; 'maximin' forces the
maximin order (in the correlation distance 1 - |ρ| without inputs). Measured on onefactor
n = 1,000 with vecchia-tilting at 2,000 points (exact log Z -696.04; errors at m = 1, 5, 30):
maximin in correlation distance -33.0, -21.7, -7.3 nats; given order -4.4, -1.3, +0.57;
strongest first -1.3, -1.9, -0.41. On linear1d-p3 (rank-1 linear kernel, N = 400): sorted
inputs -14, +37, +57 nats; strongest first -2.6, -0.64, -0.05 (SE 0.03).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from harness.core.kernels import RBF, Matern
from harness.core.sequential import WalkResult, default_block_size
from harness.core.vecchia import (
    Conditionals,
    VecchiaFactor,
    VecchiaWalk,
    conditionals,
    correlation_maximin_order,
    correlation_neighbours,
    maximin_order,
    ordered_neighbours,
    strongest_order,
    test_correlation_neighbours,
)
from harness.methods.minimax_tilting import WALKS, MinimaxTilting
from harness.methods.sir import Sir
from harness.methods.sov import Factor, SetupFailed, Sov, test_block_bytes
from harness.methods.tilted_walk import with_saddle_vectors
from harness.model.constraints import Integer, OneOf
from harness.model.footprint import MemoryEstimate
from harness.model.ordered import cached
from harness.model.problem import Problem
from harness.model.tags import Tags

ORDERINGS = ("auto", "given", "maximin", "strongest")
# Default neighbours (benchmarks/bench_vecchia.py; vecchia-tilting, 4,000 points, 2 seeds; error of
# log Ẑ in nats at m = 10, 20, 30, 60, 120): markov1d rho = 0.9, N = 2,000: -0.07, -0.06, -0.06,
# -0.06, -0.06 (SE 0.13: converged from m = 10); gauss-p6 (2-D RBF, alpha = 5, N = 1,000, against
# the shipped reference): -21.5, -7.6, -5.4, -2.8, -0.41 (SE 0.05); onefactor n = 1,000: -0.61,
# +0.17, -0.41, -0.32, +0.0005 (SE 0.005); linear1d-p3: -0.37, -0.16, -0.09, -0.04, -0.19
# (SE 0.02). CPU per estimate at N = 1,000: 0.46, 0.52, 0.63, 0.68, 0.95 s. A short-range 2-D
# problem, gauss2class n_train = 2,000, kernel = matern32, alpha = 0.2 (against minimax-tilting
# at 16,000 points, ± 0.045), m = 10, 30, 60, 120: +3.3, +2.3, +0.09, +0.02 (SE 0.47). m = 60
# halves the error of 30 on the smooth kernel and removes it on the Matérn one, for ~10 % more
# per sample; set-up O(N m^3) and memory 16 N m bytes stay small (N = 262,144: 250 MB).
DEFAULT_M = 60


@dataclass(frozen=True)
class VecchiaStructure:
    """The ordered training variables' conditionals and the test variables' (module doc)."""

    order: np.ndarray          # training variable at each position
    train: Conditionals        # positions of earlier neighbours, coefficients, variances
    test: Conditionals | None  # neighbours (training positions) of each test variable
    kind: str                  # the order used
    seconds: float


def _pair_blocks(cov, order):
    """blocks(i, c) for training position i: (R[c, c], R[c, i]) from one tile."""
    def blocks(i, c):
        idx = order[np.append(c, i)]
        B = cov.block(idx, idx)
        return B[:-1, :-1], B[:-1, -1]
    return blocks


def _test_blocks(cov, order):
    """blocks(j, c) for test variable j: (R[c, c], B[c, j])."""
    def blocks(j, c):
        idx = order[c]
        return cov.block(idx, idx), cov.cross(idx, np.array([j]))[:, 0]
    return blocks


def distance_based(problem: Problem) -> bool:
    """Whether the problem's correlations fall with the distance of its inputs (a stationary
    kernel: RBF, Matérn), so that nearest inputs are the most correlated variables."""
    return not problem.is_orthant and isinstance(problem.kernel, RBF | Matern)


def vecchia_structure(problem: Problem, m: int, ordering: str) -> VecchiaStructure:
    """The Vecchia structure of the problem for m neighbours (cached per problem)."""
    def build():
        t0 = time.thread_time()
        cov, n = problem.cov, problem.n_train
        kind = ordering
        if kind == "auto":
            kind = "strongest" if not distance_based(problem) else \
                "sorted" if problem.X_train.shape[1] == 1 else "maximin"
        X = np.asarray(problem.X_train, dtype=float) \
            if kind != "strongest" and not problem.is_orthant else None
        if kind == "given":
            order = np.arange(n)
        elif kind == "sorted":
            order = np.argsort(X[:, 0], kind="stable")
        elif kind == "strongest":
            order = strongest_order(cov)
        elif X is not None:
            order = maximin_order(X)
        else:
            order, kind = correlation_maximin_order(cov), "maximin-correlation"
        if X is not None:
            nbrs = ordered_neighbours(X[order], m)
        else:
            nbrs = correlation_neighbours(cov, order, m)
        count = np.minimum(np.arange(n), m)
        train = conditionals(_pair_blocks(cov, order), cov.diag()[order], nbrs, count)
        test = None
        if problem.n_test:
            k = min(m, n)
            if X is not None:
                _, tn = cKDTree(X[order]).query(np.asarray(problem.X_test, dtype=float), k)
                tn = np.asarray(tn, dtype=np.intp).reshape(problem.n_test, k)
            else:
                tn = test_correlation_neighbours(cov, order, k)
            test = conditionals(_test_blocks(cov, order), cov.test_diag(), tn,
                                np.full(problem.n_test, k))
        return VecchiaStructure(order, train, test, kind, time.thread_time() - t0)

    return cached(problem, ("vecchia", m, ordering), build)


class VecchiaSov(Sov):
    """Genz's SOV on the Vecchia approximation of R (module doc)."""

    name = "vecchia-sov"
    summary = ("separation of variables on the Vecchia approximation (Cao & Katzfuss 2024): m "
               "nearest earlier neighbours, O(N m) per sample; estimates P(v >= 0) under the "
               "approximated covariance, not the exact Z")
    budget_unit = "qmc points"
    tags = Tags(exact=False)   # Z of the approximated covariance R̃ (module doc)
    constraints = {
        "m": Integer(minimum=1, says="must be an integer >= 1 (neighbours per variable)",
                     fix=f"use e.g. m={DEFAULT_M}"),
        "ordering": OneOf(*ORDERINGS),
        "points": Sov.constraints["points"],
        "randomisations": Sov.constraints["randomisations"],
        "chunk_mb": Sov.constraints["chunk_mb"],
    }

    def __init__(self, m: int = DEFAULT_M, ordering: str = "auto", points: str = "sobol",
                 randomisations: int = 10, chunk_mb: float = 512.0):
        self.m = m
        self.ordering = ordering
        self.points = points
        self.randomisations = randomisations
        self.chunk_mb = chunk_mb
        self.block_size = 0    # not a setting: the walk goes one variable at a time
        self.reorder = "none"  # not a setting: the order is `ordering`

    def structure(self, problem: Problem) -> VecchiaStructure:
        return vecchia_structure(problem, self.m, self.ordering)

    def needs_dense(self, n_train: int) -> bool:
        """Only small tiles of `problem.cov` are read."""
        return False

    def walk_block(self, n_train: int) -> int:
        """Variables per block of the walk: one (the plain walk; the resampled walk of
        vecchia-tilting takes blocks for its look-ahead)."""
        return 1

    def factor(self, problem: Problem) -> Factor:
        try:
            s = self.structure(problem)
        except np.linalg.LinAlgError as exc:
            raise SetupFailed("the Vecchia conditionals could not be solved: a neighbours' "
                              f"block R[c, c] is singular ({exc})") from None
        test, test_sd, keep = s.test, np.empty(0), None
        if test is not None:
            test_sd = np.sqrt(test.var)
            keep = np.unique(test.idx[test.read()])
        walk = VecchiaWalk(s.train, self.walk_block(problem.n_train), keep)

        def test_means(result: WalkResult, cols: slice) -> np.ndarray:
            V, rows = result.Z.T, result.columns   # the kept v's and each variable's row
            out = np.empty((V.shape[1], cols.stop - cols.start))
            for o, j in enumerate(range(cols.start, cols.stop)):
                out[:, o] = test.coef[j] @ V[rows[test.idx[j]]]
            return out

        return Factor(walk=walk, test_sd=test_sd, test_means=test_means,
                      history_rows=walk.history_rows, diagnostics={
            "approximation": f"Vecchia, m = {self.m}: estimates P(v >= 0) under the "
                             "approximated covariance",
            "m": self.m, "ordering": s.kind, "vecchia_setup_seconds": s.seconds,
            "history_rows": walk.history_rows,
            "floored_variances": s.train.floored,
            "min_conditional_variance_ratio": float(np.min(s.train.var
                                                           / problem.cov.diag()[s.order])),
        })

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """O(N m): neighbours, coefficients and variances of every variable (training and
        test); the chunked samples as for `sov` (history of v and the point set); set-up:
        batches of m x m systems and the neighbour search's blocks."""
        m = min(self.m, max(n_train - 1, 1))
        held = {"neighbour structure": (n_train + n_test) * (16 * m + 16)}
        setup = {"conditional systems": 2048 * 8 * 2 * (m + 1) ** 2,
                 "neighbour search blocks": 4 * 8 * (1 << 22),
                 "ordering": 128 * n_train}
        particles = self.particle_memory(n_train, n_test, budget, self.walk_block(n_train))
        return MemoryEstimate(held, particles, setup)


class VecchiaSaddle:
    """The saddle point of ψ on the sparse Vecchia factor (shared by vecchia-tilting's two
    walks, so both use one cached solve)."""

    m: int
    ordering: str

    def saddle_factor(self, problem: Problem):
        """The sparse Vecchia factor (SaddleShifts.shifts solves the saddle point with it)."""
        return (("vecchia-tilting", self.m, self.ordering),
                lambda: VecchiaFactor(self.structure(problem).train))

    def vecchia_memory(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """vecchia-sov's, plus the saddle point's few dozen vectors of length N."""
        return with_saddle_vectors(VecchiaSov.memory_estimate(self, n_train, n_test, budget),
                                   n_train)


class VecchiaResampled(VecchiaSaddle, VecchiaSov, Sir):
    """vecchia-tilting's sequential walk: `sir` with tilting's proposal and twisted weights
    (methods.sir, proposal 'tilted'; docs/math.md §7b) on the Vecchia walk in blocks of
    default_block_size(N) variables, with the Gaussian look-ahead over each block
    (methods.tilted_walk.BlockTwist). Not a plugin of its own: VecchiaTilting.resampled_walk."""

    name = "vecchia-tilting"

    def __init__(self, m: int = DEFAULT_M, ordering: str = "auto", randomisations: int = 0,
                 chunk_mb: float = 512.0):
        VecchiaSov.__init__(self, m=m, ordering=ordering, points="random",
                            randomisations=randomisations, chunk_mb=chunk_mb)
        self.ess_threshold, self.resampling, self.proposal = 0.5, "systematic", "tilted"
        self.tile_size, self.tolerance, self.factorisation = 0, 1e-8, "auto"   # unused

    def walk_block(self, n_train: int) -> int:
        return default_block_size(n_train)

    def point_rows(self, n_vars: int, block: int) -> int:
        """Random points, streamed to the walk a block at a time."""
        return block

    def particle_memory(self, n_vars, n_test, budget, block, extra=0, per_variable=None):
        """One chunk's particles: the history at its largest (N rows; the walk holds only the
        rows still read, VecchiaWalk.history_rows, so a run fits more particles in chunk_mb),
        a block of log(1 - w), the walk's and the look-ahead's block arrays (BlockTwist), and
        the test block (the per-particle block arrays for as many particles as a chunk may
        hold with the smallest history)."""
        n = min(budget, self.points_per_chunk(n_vars, n_test, block, extra))
        most = min(budget, self.points_per_chunk(n_vars, n_test, block, extra, history=0))
        out = {"particles (history, points)": n * (8 * (n_vars + block) + extra)
               + most * 8 * 3 * block,
               "block look-ahead": most * 8 * 4 * block}
        if n_test:
            out["test block"] = test_block_bytes(most, n_test)
        return out

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        return self.vecchia_memory(n_train, n_test, budget)


class VecchiaTilting(VecchiaSaddle, VecchiaSov, MinimaxTilting):
    """Botev's minimax tilting on the Vecchia approximation (module doc): MinimaxTilting's step,
    set-up and reliability rules, with the saddle point of ψ for the sparse factor; from
    N = 2,048 on ('walk' auto) resampled on twisted weights (VecchiaResampled)."""

    name = "vecchia-tilting"
    summary = ("minimax exponential tilting on the Vecchia approximation (Cao & Katzfuss 2024): "
               "saddle point on the sparse factor, O(N m) per sample, from N = 2,048 resampled "
               "on twisted weights; estimates P(v >= 0) under the approximated covariance, not "
               "the exact Z")
    constraints = {**VecchiaSov.constraints, "walk": OneOf(*WALKS)}

    def __init__(self, m: int = DEFAULT_M, ordering: str = "auto", points: str = "sobol",
                 randomisations: int = 0, walk: str = "auto", chunk_mb: float = 512.0):
        VecchiaSov.__init__(self, m=m, ordering=ordering, points=points,
                            randomisations=randomisations, chunk_mb=chunk_mb)
        self.walk = walk

    def resampled_walk(self) -> VecchiaResampled:
        """The sequential walk with these settings (MinimaxTilting.sequential says when)."""
        return VecchiaResampled(m=self.m, ordering=self.ordering,
                                randomisations=self.randomisations, chunk_mb=self.chunk_mb)

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        if self.sequential(n_train):
            return self.resampled_walk().memory_estimate(n_train, n_test, budget)
        return self.vecchia_memory(n_train, n_test, budget)
