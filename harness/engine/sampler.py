"""The orthant sampler: a factor, a step and a walk composed (docs/math.md §4-§7).

`OrthantSampler` walks `budget` particles through the factor in memory-bounded chunks, in the
walk's independent randomisations (or populations), with the step's proposal; it accumulates
their sufficient statistics (harness.engine.randomisations.SovSums) and builds the Estimate:
log Ẑ and the test probabilities with their standard errors, the weight diagnostics, and the
status from the walk's and the step's reliability rules (harness.model.reliability). A part of
a split estimate is the sufficient statistics of its randomisations as plain data; parts
combine by concatenation, so a split estimate equals the unsplit one of all their points.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from harness.core.conditioning import EPS
from harness.core.deadline import check_deadline
from harness.core.partdata import plain
from harness.core.qmc import COVERAGE_SIGMAS, DEGENERATE_SHARE, PointSet, split_budget
from harness.core.sequential import WalkResult, sampling
from harness.core.special import log_ndtr
from harness.core.tails import top_count
from harness.engine.dense_factor import DenseCholesky
from harness.engine.factor import Factor, SetupFailed
from harness.engine.importance_walk import Importance
from harness.engine.randomisations import SovRun, SovSums, sov_run, top_log_weights
from harness.engine.resampled_walk import Resampled
from harness.engine.sov_step import SovProposal
from harness.engine.tilted_step import Tilted
from harness.engine.tlr_factor import TileLowRank
from harness.engine.vecchia_factor import Vecchia
from harness.model.footprint import MemoryEstimate
from harness.model.problem import Problem
from harness.model.result import Estimate

TEST_ELEMENTS = 1 << 22   # test-variable block size (particles x test points) in memory


def test_block_bytes(n: int, n_test: int) -> int:
    """The test variables' conditional means for n particles, taken TEST_ELEMENTS at a time,
    with two work arrays of that size."""
    return 3 * 8 * min(n * n_test, max(TEST_ELEMENTS, n))


@dataclass(frozen=True)
class OrthantSampler:
    """Estimate log Z = log P(v >= 0) and the test probabilities of a problem.

    Parameters
    ----------
    factor : DenseCholesky, TileLowRank or Vecchia
        The factor walked (harness.engine.dense_factor, tlr_factor, vecchia_factor).
    step : SovProposal or Tilted
        The proposal of each variable (harness.engine.sov_step, tilted_step).
    walk : Importance or Resampled
        How the particles are used (harness.engine.importance_walk, resampled_walk).
    name : str
        The method's name, in messages.
    chunk_mb : float
        Memory of one chunk of particles, in MiB.
    diagnostics : mapping
        Set-up diagnostics the method adds (e.g. which walk it chose).
    """

    factor: DenseCholesky | TileLowRank | Vecchia
    step: SovProposal | Tilted
    walk: Importance | Resampled
    name: str
    chunk_mb: float = 512.0
    diagnostics: Mapping = field(default_factory=dict)

    # ---- memory (harness.model.footprint) -------------------------------------------------
    def needs_dense(self, n_train: int) -> bool:
        return self.factor.needs_dense(n_train)

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """The factor's memory, one chunk of particles, and the step's set-up."""
        fm = self.factor.memory(n_train, n_test)
        particles = self.particle_memory(n_train, n_test, budget, self.factor.block(n_train),
                                         self.walk.bytes_per_projection * fm.projections)
        return MemoryEstimate(fm.held, particles, {**fm.setup,
                                                   **self.step.setup_memory(n_train)})

    def streams(self) -> bool:
        """Whether random points reach the walk a block at a time (a factor whose history
        holds only the rows still read, and a walk on random points)."""
        return self.factor.streams_points and self.walk.streams

    def point_rows(self, n_vars: int, block: int) -> int:
        """Rows of log(1 - w) held at a time: all n_vars, or a block when streamed."""
        return block if self.streams() else n_vars

    def points_per_chunk(self, n_vars: int, n_test: int, block: int, extra: int = 0,
                         history: int | None = None) -> int:
        """Particles whose arrays (log(1 - w), a history of `history` rows, by default
        n_vars, block, test block, `extra` bytes each) fit in chunk_mb."""
        rows = self.point_rows(n_vars, block) + (n_vars if history is None else history)
        per = 8 * (rows + 3 * block + min(n_test, 64)) + extra
        return max(1, int(self.chunk_mb * 2**20 // per))

    def particle_memory(self, n_vars: int, n_test: int, budget: int, block: int,
                        extra: int = 0) -> dict[str, int]:
        """Bytes of one chunk's arrays: points and history, the step's block look-ahead, the
        test block. Streamed: the history at its largest (N rows; the walk holds only the
        rows still read, so a run fits more particles) and the per-particle block arrays for
        as many particles as a chunk may hold with the smallest history."""
        n = min(budget, self.points_per_chunk(n_vars, n_test, block, extra))
        out = {}
        if self.streams():
            most = min(budget, self.points_per_chunk(n_vars, n_test, block, extra, history=0))
            out["particles (history, points)"] = \
                n * (8 * (n_vars + block) + extra) + most * 8 * 3 * block
            n = most
        else:
            out["particles (points, history)"] = \
                n * (self.walk.bytes_per_variable * n_vars + extra + 8 * 3 * block)
        if self.step.looks_ahead:
            out["block look-ahead"] = n * 8 * 4 * block
        if n_test:
            out["test block"] = test_block_bytes(n, n_test)
        return out

    # ---- set-up -----------------------------------------------------------------------------
    def prepare(self, problem: Problem) -> None:
        """The (cached) factor and the step's set-up, outside the timed region."""
        self.factor.build(problem)
        self.step.prepare(problem, self.factor)

    def set_up(self, problem: Problem) -> tuple[Factor, Callable[[np.ndarray], object], dict]:
        """(the factor, the step's maker, the set-up diagnostics), the same for every part of
        a split estimate (cached per problem). Raises SetupFailed with the reason."""
        try:
            fac = self.factor.build(problem)
        except np.linalg.LinAlgError as exc:
            raise SetupFailed(f"the reordered Cholesky factorisation failed: {exc}") from None
        diagnostics = {"points": self.walk.point_kind(problem.n_train),
                       "block_size": fac.walk.block_size, **fac.diagnostics}
        make_step, info = self.step.set_up(problem, self.factor)
        return fac, make_step, {**diagnostics, **info, **self.diagnostics}

    # ---- the walk -----------------------------------------------------------------------------
    def sums(self, problem: Problem, budget: int, rng: np.random.Generator, fac: Factor,
             make_step: Callable[[np.ndarray], object]) -> SovSums:
        """Walk `budget` particles in the walk's independent randomisations (near-equal sizes)
        through the factor, in memory-bounded chunks: their sufficient statistics."""
        N, n_test = problem.n_train, problem.n_test
        sizes = split_budget(budget, self.walk.randomisations_for(budget))
        K = len(sizes)
        points = PointSet(self.walk.point_kind(N), N, sizes, rng)
        block = fac.walk.block_size
        extra = self.walk.bytes_per_projection * fac.projections
        rows_max = self.points_per_chunk(N, n_test, block, extra, fac.history_rows)
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
                step = self.walk.wrap(make_step(E), rows, rng)
                result = fac.walk.run(E.shape[1], step)
                del E
                step.release()
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
                    accumulate_tests(fac, result, logw, rows, num)
                chunks += 1
        return SovSums(sizes, lse, num, float(lse2), max_logw, chunks, top, lineages)

    def run(self, problem: Problem, budget: int, rng: np.random.Generator) -> SovRun:
        """The estimate's per-randomisation parts (SovRun); raises SetupFailed."""
        fac, make_step, _ = self.set_up(problem)
        return sov_run(self.sums(problem, budget, rng, fac, make_step), self.walk.t_interval)

    # ---- one estimate, or one split into parts ----------------------------------------------
    def part(self, problem: Problem, budget: int, rng: np.random.Generator) -> dict:
        """SovSums of the walk's randomisations at this budget and the set-up diagnostics,
        as plain data ({"failed": reason} if the set-up fails)."""
        try:
            fac, make_step, setup = self.set_up(problem)
        except SetupFailed as exc:
            return {"failed": str(exc)}
        sums = self.sums(problem, budget, rng, fac, make_step)
        bad = [v for v in (sums.log_w, sums.log_wf, sums.log_w2, sums.max_log_w, sums.top_log_w)
               if np.any(np.isnan(v) | (np.asarray(v) == np.inf))]
        if bad:
            return {"failed": "the SOV weights are not finite (NaN or +inf log-sums)"}
        return {**sums.to_json(), "setup": plain(setup)}

    def combine(self, problem: Problem, parts: list[dict]) -> Estimate:
        """The estimate of the randomisations of every part, concatenated in part order;
        set-up diagnostics (identical in every part but for timings) from the first."""
        sums = SovSums.concat([self._part_sums(p, i, problem.n_test)
                               for i, p in enumerate(parts)])
        return self.estimate(problem, sov_run(sums, self.walk.t_interval), parts[0]["setup"])

    def _part_sums(self, part: dict, index: int, n_test: int) -> SovSums:
        try:
            return SovSums.from_json(part, n_test)
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"part {index} is not a {self.name} part for a problem with "
                             f"{n_test} test points ({type(exc).__name__}: {exc})") from None

    def estimate(self, problem: Problem, run: SovRun, setup: dict) -> Estimate:
        """The Estimate and its diagnostics from a SovRun: standard errors at least the
        rounding floor eps · cond(R) (docs/math.md §6), the status from the rules."""
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
                "sqrt(effective randomisations))" + (
                    f" x {run.t_factor:.4g}: the t with {len(run.sizes) - 1} degrees of "
                    f"freedom's {COVERAGE_SIGMAS:g}-sigma quantile over the normal's"
                    if run.t_factor != 1.0 else ""))
            diagnostics["log_z_spread_se"] = run.log_z_se
            if run.t_factor != 1.0:
                diagnostics["se_t_factor"] = run.t_factor
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

    def unreliable_reason(self, diagnostics: Mapping, budget: int) -> str:
        """Why the run's own diagnostics call the estimate unreliable ('' if they do not):
        the walk's rules with the step's (harness.model.reliability)."""
        return self.walk.reasons(diagnostics, budget, self.step.reasons(diagnostics))


def accumulate_tests(fac: Factor, result: WalkResult, logw: np.ndarray, rows, num: np.ndarray
                     ) -> None:
    """Add each randomisation's log Σ W Φ(c*/s) of a finished chunk to `num`, the test
    variables taken TEST_ELEMENTS particle-test pairs at a time."""
    n = len(logw)
    n_test = len(fac.test_sd)
    group = max(1, TEST_ELEMENTS // n)
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
