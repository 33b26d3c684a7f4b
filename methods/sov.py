"""Genz separation of variables with randomised QMC and the ratio estimator (docs/math.md §4, §6).

With R = L L^T and v = L z, the orthant probability Z = P(v >= 0) is an integral over the unit
cube: for a point w in [0, 1)^N walk the variables in order (Cao–Durante–Genton §2.1, Genz 1992)

    t_i = c_i / L_ii,   c_i = L[i, :i] z[:i]                        (the shared Cholesky walk, §4)
    weight *= Φ(t_i)                                                 (= 1 - d_i, d_i = Φ(-t_i))
    z_i = Φ^{-1}(d_i + w_i (1 - d_i)) = -Φ^{-1}((1 - w_i) Φ(t_i))    (z_i >= -t_i, i.e. v_i >= 0)

and Ẑ = mean of the weights, an unbiased estimate of Z. Everything is in log space: the log
weight accumulates log_ndtr(t_i), and the truncated draw is z_i = -ndtri_exp(log(1 - w_i) +
log_ndtr(t_i)), so no probability is ever formed by subtraction and nothing underflows at
N = 2000 (log Z ~ -1000 is fine). log Ẑ = log-mean-exp of the log weights.

Points: scrambled Sobol' (default), a randomly shifted Richtmyer lattice, or pseudo-random
uniforms (harness.core.qmc), in K independent randomisations; the spread of the K per-randomisation
estimates of Z gives the standard error of log Ẑ (delta method), floored where the spread
cannot see the error (docs/math.md §6): at 1 / points when the randomisations agree to rounding
(qmc.batch_error), and at eps·cond(R), the accuracy of R itself (Problem.condition).

Reordering: optionally the training variables are reordered by the univariate rule of
Gibson–Glasbey–Elston / Trinh–Genz while factorising (harness.core.reorder, O(N^3) once per problem,
done in `prepare`); the test variables stay last. It is off by default because on these GP
orthants it was measured to RAISE the variance, at 1e4 Sobol' points: linear1d-p3 weight ESS
29 % -> 0.04 % and se(log Ẑ) 0.009 -> 0.55; RBF (N = 500, alpha = 5) ESS 0.24 % -> 0.02 %;
one-factor n = 500 about neutral (median MAPE 0.0020 % vs 0.0023 % over 5 seeds).

Predictions: the ratio estimator (C.7) with the SAME samples in numerator and denominator,
    J*_j = Σ_r W_r Φ(c*_rj / s_j) / Σ_r W_r,    c*_rj = z_r · (L^{-1} B)_j,
which always lies in (0, 1) (a weighted mean of values in (0, 1)), computed as a difference of
log-sum-exps. Its standard error comes from the K randomisations (linearised ratio).

Split estimates (SplitsEstimates.split_budget, issue 15): a part is K whole randomisations at its
budget, returned as their sufficient statistics (SovSums: sizes, log Σ W and log Σ W Φ(c*/s)
per randomisation, log Σ W², the largest log weight); parts combine by concatenating their
randomisations, and one estimate is the combination of one part (sov_run builds every
estimate), so a split estimate is exactly the estimate of all P x K randomisations.

Weight diagnostics: on GP covariances the SOV weights can be heavy-tailed; then a few samples
carry the estimate and log Ẑ is biased low (Jensen, and the spread understates the error). The
effective sample size (Σ W)^2 / Σ W^2, the largest weight's share and the Pareto k̂ of all the
weights (`pareto_k`, harness.core.tails; SovSums ships the largest log weights so that split
estimates refit it exactly) are reported so that a user can see it; k̂ > 1 marks the run
unreliable (harness.model.reliability).

Sensitivity and degenerate weights (issue 14; 2-D RBF orthant, uniform points, alpha = 0.02, R =
K + I). The walk is NOT chaotic: for the same points, sov-tlr at tolerance 1e-8 and 0 gave
per-sample log weights that differ by 4e-9 (median; max 2.5e-8) at N = 4096, growing slowly and
about linearly along the walk (median 3.5e-10 at j = 512, 2e-9 at 2048, 4e-9 at 4095); dense
`sov` and tolerance 0 differ by 1e-13; log Ẑ agreed to 1e-4 or better at every tolerance (N =
2048, 1e4 points: -158.1723 at 1e-8, 1e-9, 1e-10 and 0). The reported nats-sized moves came from
the random stream: the CLI and sweeps seed a run from its job key, which holds the method's
settings (the CLI: its label, every non-default setting), so each tolerance was an independent
replication (same N = 2048 run, keyed streams: -158.0, -148.9, -141.2, -144.3). That spread is
the estimator's: here the weights are so heavy-tailed that one sample holds most of the weight
(max share >= 0.95 in 5 of 12 seeds at N = 2048; ESS ~ 1-3 of 1e4), and log Ẑ over 12 seeds had
sd 6.2 nats (range -159.6 ... -140.9). Orderings do not cure it (N = 1024, 8 seeds each, sd of
log Ẑ / runs with a >= 95 % weight: none 1.6 / 2, univariate 4.0 / 3, sov-tlr block 3.6 / 4,
points in k-d tree order 3.9 / 3; the means, -108.3, -104.5, -105.8, -103.5, differ by more than
their spreads allow, i.e. log Ẑ is biased low by several nats). tlrmvnmvt behaves the same way
(its SE is the same batch formula in probability space; its lattice shifts come from R's seed,
so a tolerance change reuses them). The delta-method se is <= 1 nat by construction
(qmc.BatchError), which is why both codes reported ~1 nat; the reported se is now max(delta se,
sd of the per-randomisation log Ẑ_k / sqrt(K_eff)), K_eff the effective number of randomisations
(qmc.batch_error), with `weights_degenerate`, `top_randomisation_share` and
`randomisations_effective` in the diagnostics. Over 30 seeds (N = 256, 1e3 points) sd(log Ẑ) /
mean se went from 2.0-2.8 to 0.9-1.3. No se covers the low bias of a degenerate run: treat such
estimates as lower-biased. A run whose weights have collapsed onto about one point (ESS < 1.1),
or whose randomisations onto one (> 99 % of Ẑ), from 100 points on, is returned with status
`unreliable` and the reason, its numbers kept (Sov.unreliable_reason, harness.model.reliability: the
thresholds and the measurements behind them; issue 17: ESS = 1.000 and log Ẑ = -1e11 on a
correlation matrix of condition 1e15).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_ndtr, logsumexp

from harness.core.conditioning import EPS
from harness.core.deadline import check_deadline
from harness.core.partdata import decode_log, decode_logs, encode_log, encode_logs, plain
from harness.core.qmc import (
    DEGENERATE_SHARE,
    KINDS,
    SOBOL_MAX_DIM,
    PointSet,
    auto_randomisations,
    batch_error,
    ratio_standard_error,
    split_budget,
)
from harness.core.reorder import REORDERINGS
from harness.core.sequential import CholeskyWalk, WalkResult, default_block_size, sampling
from harness.core.tails import pareto_k, top_count
from harness.core.truncnorm import draw_above
from harness.model.constraints import Integer, Number, OneOf
from harness.model.footprint import MemoryEstimate, dense
from harness.model.method import Method
from harness.model.ordered import ordered_problem
from harness.model.problem import Problem
from harness.model.reliability import degenerate_weights, unreliable_reason
from harness.model.result import Estimate
from harness.model.splitting import SplitsEstimates, split_evenly
from harness.model.tags import CheckSettings, Tags

_TEST_ELEMENTS = 1 << 22   # test-variable block size (particles x test points) in memory
# Bytes per particle and variable at the peak of a chunk (harness.model.footprint): generating the
# Sobol' points holds scipy's (n, N) float draws, their 2^30-scaled copy and the uint32 digits
# beside the (N, n) output (8 + 8 + 8 + 4 = 28); the walk holds E, the history Z and the
# block products' working copy of the history slice (measured with tracemalloc at N = 2000:
# 27 bytes for sobol and random points). Rounded up.
_POINT_BYTES = {"sobol": 32, "lattice": 32, "random": 32}


class SovStep:
    """One variable of the SOV walk: weight by Φ(t), draw z from N(0, 1) truncated to z >= -t.

    E holds log(1 - w) of the point set, variable-major (E[j] is variable j for every sample,
    always < 0); logw accumulates the samples' log weights. No resampling.
    """

    def __init__(self, E: np.ndarray):
        self.E = E
        self.logw = np.zeros(E.shape[1])

    def __call__(self, j: int, t: np.ndarray):
        z, lp = draw_above(t, self.E[j], overwrite=True)   # the walk hands over a fresh t
        self.logw += lp
        return z, None

    def log_weights(self) -> np.ndarray:
        """Each sample's final log weight (the estimate of its randomisation is their mean)."""
        return self.logw

    def lineages(self) -> int | None:
        """Distinct first-variable ancestors of the final samples (None: no resampling)."""
        return None


def test_block_bytes(n: int, n_test: int) -> int:
    """The test variables' conditional means for n particles, taken _TEST_ELEMENTS at a time
    (Sov._accumulate_tests), with two work arrays of that size."""
    return 3 * 8 * min(n * n_test, max(_TEST_ELEMENTS, n))


@dataclass
class Factor:
    """What the SOV engine needs from a factorisation of the problem (dense or structured)."""

    walk: CholeskyWalk
    test_sd: np.ndarray
    test_means: Callable[[WalkResult, slice], np.ndarray]  # (n, |cols|) conditional means c*
    extra_bytes_per_particle: int = 0
    test_tile: int = 1           # test variables are best taken in multiples of this
    history_rows: int | None = None   # rows of the walk's history (None: one per variable)
    diagnostics: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SovRun:
    """Per-randomisation results of one SOV run (what the Estimate is built from)."""

    sizes: np.ndarray            # points per randomisation
    log_z_k: np.ndarray          # log of each randomisation's mean weight
    log_z: float
    log_z_se: float              # reported se (qmc.BatchError.se); NaN with one randomisation
    log_z_delta_se: float        # the delta-method part alone (<= 1 nat by construction)
    k_eff: float                 # effective number of randomisations, 1 / Σ p_k^2
    top_share: float             # largest randomisation's share of Σ W
    test: np.ndarray             # ratio estimates J*
    test_se: np.ndarray          # their standard errors (NaN with a single randomisation)
    ess: float
    max_weight_share: float
    chunks: int
    pareto_k: float | None = None   # PSIS tail index of all the weights (tail_index)
    lineages: int | None = None     # SovSums.lineages
    resolution_floor: bool = False  # the randomisations agree to rounding: se = 1 / S


@dataclass(frozen=True)
class SovSums:
    """Sufficient statistics of K independent SOV randomisations (docs/math.md §6): everything the
    estimate is built from, so randomisations run apart (parts of a split estimate) combine
    exactly by concatenation (`concat`). Log-sums are -inf when a sum is zero."""

    sizes: np.ndarray            # (K,) points per randomisation
    log_w: np.ndarray            # (K,) log Σ W over each randomisation
    log_wf: np.ndarray           # (K, n_test) log Σ W Φ(c*/s) over each randomisation
    log_w2: float                # log Σ W² over every point
    max_log_w: float             # the largest log weight
    chunks: int                  # memory chunks the points were walked in
    top_log_w: np.ndarray = field(default_factory=lambda: np.empty(0))
    #                              the largest log weights (descending): at least the
    #                              tails.top_count(Σ sizes) that Pareto k̂ is fitted to
    lineages: int | None = None  # distinct first-variable ancestors, summed over the
    #                              populations (resampling methods only: methods.sir)

    def to_json(self) -> dict:
        """Plain JSON-safe data (harness.core.partdata: -inf log-sums as None)."""
        return {"sizes": [int(m) for m in self.sizes], "log_sum_w": encode_logs(self.log_w),
                "log_sum_w_test": encode_logs(self.log_wf), "log_sum_w2": encode_log(self.log_w2),
                "max_log_w": encode_log(self.max_log_w), "chunks": int(self.chunks),
                "top_log_w": encode_logs(self.top_log_w),
                **({} if self.lineages is None else {"lineages": int(self.lineages)})}

    @classmethod
    def from_json(cls, data: dict, n_test: int) -> SovSums:
        sizes = np.asarray(data["sizes"], dtype=np.int64)
        log_wf = decode_logs(data["log_sum_w_test"]).reshape(len(sizes), n_test)
        return cls(sizes, decode_logs(data["log_sum_w"]).reshape(len(sizes)), log_wf,
                   decode_log(data["log_sum_w2"]), decode_log(data["max_log_w"]),
                   int(data["chunks"]), decode_logs(data.get("top_log_w", [])).ravel(),
                   None if data.get("lineages") is None else int(data["lineages"]))

    @classmethod
    def concat(cls, sums: list[SovSums]) -> SovSums:
        """The randomisations of every element, in order (one element: itself, unchanged)."""
        if len(sums) == 1:
            return sums[0]
        return cls(np.concatenate([s.sizes for s in sums]),
                   np.concatenate([s.log_w for s in sums]),
                   np.concatenate([s.log_wf for s in sums]),
                   float(np.logaddexp.reduce([s.log_w2 for s in sums])),
                   max(s.max_log_w for s in sums), sum(s.chunks for s in sums),
                   top_log_weights(np.concatenate([s.top_log_w for s in sums]),
                                   top_count(int(sum(s.sizes.sum() for s in sums)))),
                   None if any(s.lineages is None for s in sums)
                   else sum(s.lineages for s in sums))


def top_log_weights(log_w: np.ndarray, m: int) -> np.ndarray:
    """The m largest of log_w (all of them if fewer), descending."""
    if len(log_w) > m:
        log_w = np.partition(log_w, len(log_w) - m)[len(log_w) - m:]
    return np.sort(log_w)[::-1]


def tail_index(sums: SovSums) -> float | None:
    """Pareto k̂ of all the weights of every randomisation (harness.core.tails) from the
    shipped largest log weights; None when it cannot be computed (fewer than 5 points, too
    few largest weights shipped — parts from before the diagnostic) or is infinite (fewer
    than 5 weights within 708 nats of the largest: collapse, which the ESS rule sees)."""
    S = int(sums.sizes.sum())
    if S < 5 or len(sums.top_log_w) < top_count(S):
        return None
    k = pareto_k(sums.top_log_w, S)
    return float(k) if np.isfinite(k) else None


def sov_run(sums: SovSums) -> SovRun:
    """The SOV estimate from its sufficient statistics (docs/math.md §6): Ẑ pooled over the
    randomisations (qmc.batch_error), J* = Σ W Φ(c*/s) / Σ W with the same samples, their
    standard errors from the spread of the randomisations (linearised ratio), at least 1 / S
    where the randomisations' J*_k agree to rounding (qmc.ratio_standard_error)."""
    sizes, lse, num = sums.sizes, sums.log_w, sums.log_wf
    n_test = num.shape[1]
    log_z_k = lse - np.log(sizes)
    err = batch_error(log_z_k, sizes)
    total = float(logsumexp(lse))
    test, test_se = np.empty(0), np.empty(0)
    if n_test:
        test = np.clip(np.exp(logsumexp(num, axis=0) - total), 0.0, 1.0)
        test_se = ratio_standard_error(np.exp(lse - total), np.exp(num - lse[:, None]), test,
                                       int(np.sum(sizes)))
    return SovRun(sizes=sizes, log_z_k=log_z_k, log_z=err.log_mean, log_z_se=err.se,
                  log_z_delta_se=err.delta_se, k_eff=err.k_eff, top_share=err.top_share,
                  test=test,
                  test_se=test_se, ess=float(np.exp(2 * total - sums.log_w2)),
                  max_weight_share=float(np.exp(sums.max_log_w - total)), chunks=sums.chunks,
                  pareto_k=tail_index(sums), lineages=sums.lineages,
                  resolution_floor=err.resolution_floor)


class SetupFailed(Exception):
    """The set-up of an SOV-family estimate failed (the message is the Estimate's reason)."""


class Sov(SplitsEstimates, Method):
    """Genz separation of variables with randomised QMC (docs/math.md §6); see the module doc."""

    name = "sov"
    summary = ("Genz separation of variables, randomised QMC (Sobol'/lattice), univariate "
               "reordering, shared-sample ratio estimator for predictions")
    budget_unit = "qmc points"
    tags = Tags(unbiased_z=True)   # the mean of the weights (log of the mean,
    #                                qmc.batch_standard_error)
    checks = CheckSettings(test_budget=8000)
    constraints = {
        "points": OneOf(*KINDS),
        "randomisations": Integer(minimum=1, also=(0,),
                                  says="must be an integer >= 0 (0: 10 to 40 by the budget)",
                                  fix="use >= 2 for a standard error; 10 is usual, 0 chooses "
                                      "by the budget (harness.core.qmc.auto_randomisations)"),
        "reorder": OneOf(*REORDERINGS),
        "block_size": Integer(minimum=0, says="must be an integer >= 0 (0 chooses "
                                              "automatically)"),
        "chunk_mb": Number(low=0, low_open=True),
    }

    def __init__(self, points: str = "sobol", randomisations: int = 10,
                 reorder: str = "none", block_size: int = 0, chunk_mb: float = 512.0):
        self.points = points
        self.randomisations = randomisations
        self.reorder = reorder
        self.block_size = block_size
        self.chunk_mb = chunk_mb

    # ---- the factorisation (overridden by the tile-low-rank variant) ----------------------
    def dense_reorder_kind(self) -> str:
        """The reordering of the dense factor (harness.core.reorder)."""
        return self.reorder

    def ordering(self, problem: Problem) -> tuple[str, int | None]:
        """(kind, tile) of the dense factor's harness.model.ordered.ordered_problem."""
        return self.dense_reorder_kind(), None

    def factor(self, problem: Problem) -> Factor:
        op = ordered_problem(problem, *self.ordering(problem))
        W = op.test_rows

        def test_means(result: WalkResult, cols: slice) -> np.ndarray:
            return result.Z @ W[:, cols]

        return Factor(
            walk=CholeskyWalk(op.chol, self.block_size or None),
            test_sd=op.test_sd,
            test_means=test_means,
            diagnostics={"reorder": op.kind, "reorder_seconds": op.seconds},
        )

    def prepare(self, problem: Problem) -> None:
        self.factor(problem)   # the (cached) reordering and factor, outside the timed region

    # ---- memory (harness.model.footprint) -------------------------------------------------------
    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """The dense factor's (dense_memory); chunked particles."""
        held, setup = self.dense_memory(n_train, n_test)
        block = self.block_size or default_block_size(n_train)
        return MemoryEstimate(held, self.particle_memory(n_train, n_test, budget, block), setup)

    def dense_memory(self, n_train: int, n_test: int) -> tuple[dict[str, int], dict[str, int]]:
        """(held, set-up) bytes of the dense factor: R, L and test rows, plus a reordered copy
        of both and the reordering's Schur complement."""
        held = {"dense R": dense(n_train), "dense factor L": dense(n_train),
                "test rows": 2 * dense(n_train, n_test)}          # B and W = L^{-1} B
        setup = {}
        if self.dense_reorder_kind() != "none":
            held["reordered factor"] = dense(n_train)
            held["reordered test rows"] = dense(n_train, n_test)
            setup["reordering Schur complement"] = dense(n_train)
        return held, setup

    def particle_memory(self, n_vars: int, n_test: int, budget: int, block: int,
                        extra: int = 0, per_variable: int | None = None) -> dict[str, int]:
        """Bytes of one chunk's arrays: point set and history, and the test block."""
        n = min(budget, self.points_per_chunk(n_vars, n_test, block, extra))
        per = _POINT_BYTES[self.points] if per_variable is None else per_variable
        out = {"particles (points, history)": n * (per * n_vars + extra + 8 * 3 * block)}
        if n_test:
            out["test block"] = test_block_bytes(n, n_test)
        return out

    def point_kind(self, n_vars: int) -> str:
        """The point set used: the `points` setting, except that Sobol' points (which exist up
        to SOBOL_MAX_DIM = 21201 dimensions in scipy) become the lattice above that (recorded
        in the diagnostics' `points`), so the defaults run at any N."""
        if self.points == "sobol" and n_vars > SOBOL_MAX_DIM:
            return "lattice"
        return self.points

    # ---- the estimator --------------------------------------------------------------------
    def make_step(self, E: np.ndarray, rows, rng: np.random.Generator) -> SovStep:
        """The walk's step for one chunk (SIR overrides it with a resampling step)."""
        return SovStep(E)

    def points_per_chunk(self, n_vars: int, n_test: int, block: int, extra: int = 0,
                         history: int | None = None) -> int:
        """Particles whose arrays (log(1 - w), a history of `history` rows, by default
        n_vars, block, test block) fit in chunk_mb."""
        rows = self.point_rows(n_vars, block) + (n_vars if history is None else history)
        per = 8 * (rows + 3 * block + min(n_test, 64)) + extra
        return max(1, int(self.chunk_mb * 2**20 // per))

    def point_rows(self, n_vars: int, block: int) -> int:
        """Rows of log(1 - w) held at a time: all n_vars (a method streaming random points
        to its walk, block by block, holds `block`: harness.core.qmc.StreamedLogComplement)."""
        return n_vars

    def run(self, problem: Problem, budget: int, rng: np.random.Generator) -> SovRun:
        """The SOV estimate with its per-randomisation parts (see SovRun); raises SetupFailed
        if the set-up fails."""
        return sov_run(self.sums(problem, budget, rng, self.set_up(problem)[0]))

    def sums(self, problem: Problem, budget: int, rng: np.random.Generator,
             fac: Factor) -> SovSums:
        """Walk `budget` points in `randomisations` independent randomisations (near-equal
        sizes, qmc.split_budget) through the factor, in memory-bounded chunks: their
        sufficient statistics (SovSums)."""
        N, n_test = problem.n_train, problem.n_test
        sizes = split_budget(budget, self.randomisations_for(budget))
        K = len(sizes)
        points = PointSet(self.point_kind(N), N, sizes, rng)
        block = fac.walk.block_size
        rows_max = self.points_per_chunk(N, n_test, block, fac.extra_bytes_per_particle,
                                         fac.history_rows)
        streamed = self.point_rows(N, block) < N
        per_base = max(1, rows_max // K)
        lse = np.full(K, -np.inf)                 # log Σ W over each randomisation
        num = np.full((K, n_test), -np.inf)       # log Σ W Φ(c*/s) over each randomisation
        lse2, max_logw, chunks = -np.inf, -np.inf, 0
        keep = top_count(int(sizes.sum()))        # the largest log weights k̂ needs
        top = np.empty(0)
        lineages = 0
        with sampling(int(sizes.sum()), N):   # the progress every chunk's walk reports
            for a in range(0, int(sizes.max()), per_base):
                b = min(a + per_base, int(sizes.max()))
                E, rows = points.log_complement_streamed(a, b, block) if streamed \
                    else points.log_complement(a, b)
                step = self.make_step(E, rows, rng)
                result = fac.walk.run(E.shape[1], step)
                del E, step.E
                logw = step.log_weights()
                for k, r0, m in rows:
                    lse[k] = np.logaddexp(lse[k], logsumexp(logw[r0 : r0 + m]))
                lse2 = np.logaddexp(lse2, logsumexp(2.0 * logw))
                max_logw = max(max_logw, float(logw.max()))
                top = top_log_weights(np.concatenate([top, logw]), keep)
                chunk_lineages = step.lineages()
                lineages = None if chunk_lineages is None or lineages is None \
                    else lineages + chunk_lineages
                if n_test:
                    self._accumulate_tests(fac, result, logw, rows, num)
                chunks += 1
        return SovSums(sizes, lse, num, float(lse2), max_logw, chunks, top, lineages)

    @staticmethod
    def _accumulate_tests(fac: Factor, result: WalkResult, logw, rows, num) -> None:
        n = len(logw)
        n_test = len(fac.test_sd)
        group = max(1, _TEST_ELEMENTS // n)
        group = max(fac.test_tile, group - group % fac.test_tile)
        for s in range(0, n_test, group):
            check_deadline()
            cols = slice(s, min(s + group, n_test))
            T = fac.test_means(result, cols)
            T /= fac.test_sd[cols]
            log_ndtr(T, out=T)
            T += logw[:, None]
            for k, r0, m in rows:
                num[k, cols] = np.logaddexp(num[k, cols], logsumexp(T[r0 : r0 + m], axis=0))

    # ---- one estimate, or one split into parts (SplitsEstimates) ---------------------
    def set_up(self, problem: Problem) -> tuple[Factor, dict]:
        """The factor and the set-up diagnostics (the same for every part of a split
        estimate; cached per problem). Raises SetupFailed with the reason."""
        try:
            fac = self.factor(problem)
        except np.linalg.LinAlgError as exc:
            raise SetupFailed(f"the reordered Cholesky factorisation failed: {exc}") from None
        return fac, {"points": self.point_kind(problem.n_train),
                     "block_size": fac.walk.block_size, **fac.diagnostics}

    def split_budget(self, budget: int, parts: int) -> list[int]:
        """A part is a set of `randomisations` whole randomisations: each part runs this
        method's estimate at its budget (K = `randomisations` independent randomisations of
        near-equal size), and the combined estimate pools the P x K randomisations of all
        parts (docs/math.md §6: Ẑ weighted by size, ratio estimator's sums added, standard errors
        from the spread of all P x K). The part budgets are cut so that all P x K
        randomisations have the same size up to one point, as one estimate at `budget` with
        P x K randomisations would. At most budget // K parts.

        The points per randomisation are budget / (P K), and QMC's advantage within a
        randomisation shrinks with its size: measured for minimax-tilting on onefactor n = 100
        at budget 40000 (12 seeds), RMSE of log Ẑ 1.0e-4 unsplit (K = 10), 2.6e-4 in 4 parts
        and 4.7e-4 in 16 parts of K = 10 each, but 1.3e-4 with K = 3 in 4 parts and 1.6e-4
        with K = 2 in 8 (plain sov there: no loss). So a long split estimate should run with
        a small `randomisations` (P K of about 10-20 in all)."""
        return split_evenly(budget, parts, self.randomisations_for(budget // max(1, parts)))

    def randomisations_for(self, budget: int) -> int:
        """K at this budget: the `randomisations` setting, or for 0 the budget's own
        (harness.core.qmc.auto_randomisations)."""
        return self.randomisations or auto_randomisations(budget)

    def _estimate_part(self, problem: Problem, budget: int, rng: np.random.Generator) -> dict:
        """SovSums of K randomisations at this budget, and the set-up diagnostics."""
        try:
            fac, setup = self.set_up(problem)
        except SetupFailed as exc:
            return {"failed": str(exc)}
        sums = self.sums(problem, budget, rng, fac)
        bad = [v for v in (sums.log_w, sums.log_wf, sums.log_w2, sums.max_log_w, sums.top_log_w)
               if np.any(np.isnan(v) | (np.asarray(v) == np.inf))]
        if bad:
            return {"failed": "the SOV weights are not finite (NaN or +inf log-sums)"}
        return {**sums.to_json(), "setup": plain(setup)}

    def _combine_parts(self, problem: Problem, parts: list[dict]) -> Estimate:
        """The estimate of the randomisations of every part, concatenated in part order
        (sov_run); set-up diagnostics (identical in every part but for timings) from the
        first part."""
        sums = SovSums.concat([self._part_sums(p, i, problem.n_test)
                               for i, p in enumerate(parts)])
        return self._sov_estimate(problem, sov_run(sums), parts[0]["setup"])

    def _part_sums(self, part: dict, index: int, n_test: int) -> SovSums:
        try:
            return SovSums.from_json(part, n_test)
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"part {index} is not a {self.name} part for a problem with "
                             f"{n_test} test points ({type(exc).__name__}: {exc})") from None

    def _sov_estimate(self, problem: Problem, run: SovRun, setup: dict) -> Estimate:
        """The Estimate and its diagnostics from a SovRun (every SOV-family estimate)."""
        diagnostics = {
            "randomisations": len(run.sizes),
            "points_per_randomisation": int(run.sizes[0]),
            "chunks": run.chunks,
            "ess": run.ess,
            "ess_fraction": run.ess / int(run.sizes.sum()),
            "max_weight_share": run.max_weight_share,
            "pareto_k": run.pareto_k,
            **({} if run.lineages is None else {
                "ancestor_lineages": run.lineages,
                "ancestor_lineage_fraction": run.lineages / int(run.sizes.sum())}),
            **setup,
        }
        if not np.isfinite(run.log_z):
            return Estimate.failed(
                f"the SOV weights are all zero or not finite (log Ẑ = {run.log_z})",
                **diagnostics)
        if run.log_z > 1e-9:   # Ẑ > 1: unbiased, but no probability (tilting's weights can)
            return Estimate.failed(
                f"log Ẑ = {run.log_z:.3g} > 0 is not a log-probability: the weights are "
                "degenerate", **diagnostics)
        se = None
        if len(run.sizes) > 1:
            cond = problem.condition
            rounding = EPS * cond if cond is not None and np.isfinite(cond) else 0.0
            se = max(run.log_z_se, rounding)
            diagnostics["se_method"] = (
                f"rounding: eps x cond(R) = {rounding:.2g}, the relative accuracy of R's "
                "smallest eigenvalues in double precision" if se > run.log_z_se else
                "no spread: the randomisations agree to rounding, so the SE is 1 / points, the "
                "probability of an event no point saw" if run.resolution_floor else
                "spread of independent randomisations (delta method, or log spread / "
                "sqrt(effective randomisations))")
            diagnostics["log_z_spread_se"] = run.log_z_se
            diagnostics["log_z_randomisation_sd"] = float(np.std(run.log_z_k, ddof=1))
            diagnostics["log_z_delta_se"] = run.log_z_delta_se
            diagnostics["randomisations_effective"] = run.k_eff
            diagnostics["top_randomisation_share"] = run.top_share
            diagnostics["weights_degenerate"] = bool(run.top_share > DEGENERATE_SHARE)
            if problem.n_test:
                diagnostics["test_se_mean"] = float(np.mean(run.test_se))
                diagnostics["test_se_max"] = float(np.max(run.test_se))
        reason = self.unreliable_reason(diagnostics, int(run.sizes.sum()))
        return Estimate(run.log_z, run.test if problem.n_test else np.empty(0),
                        log_marginal_likelihood_se=se, diagnostics=diagnostics,
                        test_probabilities_se=run.test_se if se is not None else None,
                        status="unreliable" if reason else "ok", reason=reason)

    def unreliable_reason(self, diagnostics: dict, budget: int) -> str:
        """Why the run's own diagnostics call the estimate degenerate ('' if they do not):
        the weights or one randomisation hold the whole estimate (harness.model.reliability)."""
        return unreliable_reason(degenerate_weights(diagnostics, budget))
