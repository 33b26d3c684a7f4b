"""Rejection–bootstrap orthant sampler, "GPC-MC" (Atiya et al. §5; docs/math.md §4–5).

For i = 1..N, with M particles:
  1. draw v_i(m) ~ N(c_i(m), L_ii^2) for every particle (c_i from the Cholesky walk);
  2. P_i = #{v_i(m) >= 0} / M                       hard count (A.57)
     P_i = (1/M) Σ_m Φ(c_i(m) / L_ii)               soft count (A.62; lower variance)
  3. drop the particles with v_i(m) < 0 and refill their places by sampling with replacement
     from the accepted ones (the accepted particles stay as they are);
  4. log Ẑ = Σ_i log P_i.
Test point j, after the training variables: J*_j = (1/M) Σ_m Φ(c*_j(m) / s_j) (soft) or the
accepted fraction (hard), from the final population, with no resampling.

Ẑ is a particle-filter estimate of Z: with the hard count it is exactly unbiased (each accepted
particle has M / #accepted expected offspring); the soft count replaces each count by its
conditional expectation given the particles, which keeps the bias of Ẑ of order 1/M and lowers
the variance.

Populations. The budget is split into K = `populations` (default 10) independent runs of
near-equal size, each in memory-bounded chunks (again independent runs); all recombine
exactly: Ẑ = Σ_c (M_c / M) Ẑ_c and J* = Σ_c M_c Ẑ_c J*_c / Σ_c M_c Ẑ_c. With K >= 2 the
standard errors come from the spread of the populations, as for SOV's randomisations
(harness.core.qmc.batch_error, ratio_standard_error), and a run whose populations' log Ẑ_k
spread by more than a nat is `unreliable`: one population's binomial standard error (A.44,
used with K = 1, no test SEs) ignores path degeneracy and was tens of SEs off on short-range
problems (docs/studies.md, "Rejection-bootstrap populations"). A part of a split estimate is
K whole populations; parts pool their populations.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import logsumexp

from harness.core.acceptance import split_accepted
from harness.core.partdata import plain
from harness.core.progress import advance
from harness.core.qmc import batch_error, ratio_standard_error, split_budget
from harness.core.rowops import warm_up
from harness.core.sequential import CholeskyWalk, Resample, sampling
from harness.core.special import log_ndtr, ndtr
from harness.model.constraints import Integer, Number, OneOf
from harness.model.footprint import MemoryEstimate, dense
from harness.model.method import Method
from harness.model.ordered import walk_factor
from harness.model.problem import Problem
from harness.model.reliability import (
    degenerate_weights,
    spread_randomisations,
    unreliable_reason,
)
from harness.model.result import Estimate
from harness.model.splitting import SplitsEstimates, split_evenly

COUNTS = ("hard", "soft")


@dataclass(frozen=True)
class _Chunk:
    """The result of one independent run over a chunk of the particles."""

    particles: int
    log_z: float
    rel_var: float          # A.44: (1/M_c) Σ (1 - P_i) / P_i, the variance of log Ẑ_c
    min_log_p: float
    min_p_variable: int
    ancestors: int          # distinct first-variable ancestors of the final particles
    distinct: int           # distinct final particles
    test: np.ndarray

    def to_json(self) -> dict:
        """Plain JSON-safe data (an infinite rel_var, from a step probability below ~1e-308,
        as None)."""
        return {**plain({k: v for k, v in asdict(self).items() if k != "test"}),
                "rel_var": self.rel_var if np.isfinite(self.rel_var) else None,
                "test": [float(x) for x in self.test]}

    @classmethod
    def from_json(cls, data: dict) -> _Chunk:
        rel_var = np.inf if data["rel_var"] is None else data["rel_var"]
        return cls(**{**data, "rel_var": rel_var, "test": np.asarray(data["test"], float)})


class AllRejected(Exception):
    def __init__(self, variable: int):
        super().__init__(variable)
        self.variable = variable


class _BootstrapStep:
    """One variable of the rejection–bootstrap sampler: count, reject, refill."""

    def __init__(self, n: int, n_vars: int, soft: bool, rng: np.random.Generator):
        self.n, self.soft, self.rng = n, soft, rng
        self.log_p = np.empty(n_vars)
        self.phi = np.empty(n)                 # Φ(t) of the soft count

    def __call__(self, j: int, t: np.ndarray):
        eps = self.rng.standard_normal(self.n)
        acc, rej = split_accepted(t, eps, self.soft, self.phi)   # v_j = c_j + L_jj eps >= 0
        if len(acc) == 0:
            raise AllRejected(j)
        if self.soft:
            p = float(np.mean(self.phi))
            self.log_p[j] = np.log(p) if p > 1e-300 else logsumexp(log_ndtr(t)) - np.log(self.n)
        else:
            self.log_p[j] = np.log(len(acc) / self.n)
        if len(acc) == self.n:
            return eps, None
        src = acc[self.rng.integers(0, len(acc), size=len(rej))]
        return eps, Resample(src=src, dst=rej)


def _pooled(runs: list[_Chunk], budget: int, n_test: int):
    """(log Ẑ, each run's share of Ẑ, J*) of independent runs with `budget` particles in all:
    Ẑ = Σ_c (M_c / M) Ẑ_c (runs missing from `runs` died: Ẑ_c = 0), J* = Σ_c share_c J*_c."""
    M = np.array([r.particles for r in runs])
    log_mass = np.array([r.log_z for r in runs]) + np.log(M / budget)
    total = float(logsumexp(log_mass))
    w = np.exp(log_mass - total)
    test = np.clip(w @ np.array([r.test for r in runs]), 0.0, 1.0) if n_test else np.empty(0)
    return total, w, test


def _populations(pops: list[list[dict]], n_test: int):
    """Sizes, log Ẑ_k (-inf for a population whose every chunk died) and J*_k (rows; zeros
    for a dead one) of each population, each pooled over its chunks (_pooled)."""
    sizes = np.array([sum(c["particles"] for c in q) for q in pops], dtype=float)
    log_z = np.full(len(pops), -np.inf)
    test = np.zeros((len(pops), n_test))
    for k, q in enumerate(pops):
        runs = [_Chunk.from_json(c) for c in q if "dead_variable" not in c]
        if runs:
            log_z[k], _, test[k] = _pooled(runs, int(sizes[k]), n_test)
    return sizes, log_z, test


class RejectionBootstrap(SplitsEstimates, Method):
    """Rejection–bootstrap sampler with hard or soft counts (Atiya et al., docs/math.md §5)."""

    name = "rejection-bootstrap"
    summary = "rejection–bootstrap particle sampler (Atiya et al.), hard or soft count"
    budget_unit = "particles"
    constraints = {
        "count": OneOf(*COUNTS),
        "populations": Integer(minimum=1, says="must be an integer >= 1",
                               fix="use >= 2 for a standard error from the populations' "
                                   "spread; 10 is usual"),
        "block_size": Integer(minimum=0, says="must be an integer >= 0 (0 chooses "
                                              "automatically)"),
        "chunk_mb": Number(low=0, low_open=True),
    }
    setting_help = {"count": "hard: the fraction of particles accepted at each variable; soft: "
                             "the mean of their acceptance probabilities (lower variance)",
                    "populations": "independent populations the budget is split into; their "
                                   "spread gives the standard errors"}

    def __init__(self, count: str = "soft", populations: int = 10, block_size: int = 0,
                 chunk_mb: float = 512.0):
        self.count = count
        self.populations = populations
        self.block_size = block_size
        self.chunk_mb = chunk_mb

    def prepare(self, problem: Problem) -> None:
        warm_up()
        walk_factor(problem)

    def unbiased_z(self) -> bool:
        """With count=hard only: its Ẑ is exactly unbiased (module doc), the soft count's is
        not (bias O(1/M); docs/studies.md, "Rejection-bootstrap populations")."""
        return self.count == "hard"

    def chunk_sizes(self, budget: int, n_vars: int, n_test: int) -> list[int]:
        """Split the budget into near-equal chunks whose particle arrays fit in chunk_mb."""
        bytes_per_particle = 8 * (2 * n_vars + 3 * max(self.block_size, 128) + 2 * n_test)
        per_chunk = max(1, int(self.chunk_mb * 2**20 // bytes_per_particle))
        n_chunks = -(-budget // per_chunk)
        base, extra = divmod(budget, n_chunks)
        return [base + (c < extra) for c in range(n_chunks)]

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """Dense R, L and test rows; one chunk (of the largest population)'s history, its
        spare copy for the resampling gathers and the block products' working copy (24 bytes
        per particle and variable; measured with tracemalloc at N = 2000: 21.6) and the test
        block."""
        n = self.chunk_sizes(int(split_budget(budget, self.populations)[0]), n_train, n_test)[0]
        block = max(self.block_size, 128)
        work = {"particles (history, spare)": n * 8 * (3 * n_train + 3 * block)}
        if n_test:
            work["test block"] = 3 * 8 * min(n * n_test, max(2**22, n))
        return MemoryEstimate(
            held={"dense R": dense(n_train), "dense factor L": dense(n_train),
                  "dense factor L in C order (the walk's)": dense(n_train),
                  "test rows": 2 * dense(n_train, n_test)}, work=work)

    # ---- one estimate, or one split into parts (SplitsEstimates) ---------------------
    def split_budget(self, budget: int, parts: int) -> list[int]:
        """A part is `populations` whole populations: each part runs this method's estimate
        at its budget (independent particle-filter runs, each in memory chunks), and the
        combination pools the P x K populations of all parts, cut so that they have the same
        size up to one particle, as one estimate with P x K populations would (docs/math.md
        §5). The hard count's Ẑ stays unbiased; the soft count's O(1/M) bias is that of the
        population size M. At most budget // populations parts."""
        return split_evenly(budget, parts, self.populations)

    def _estimate_part(self, problem: Problem, budget: int, rng: np.random.Generator) -> dict:
        """The results of this budget's populations (near-equal sizes, qmc.split_budget),
        each the list of its memory chunks' results (independent runs), as plain data."""
        walk = CholeskyWalk(walk_factor(problem), self.block_size or None)
        populations = []
        with sampling(budget, problem.n_train):   # the progress every chunk's walk reports
            for size in split_budget(budget, self.populations):
                chunks = []
                for n in self.chunk_sizes(int(size), problem.n_train, problem.n_test):
                    try:
                        chunks.append(self._run_chunk(walk, problem, n, rng).to_json())
                    except AllRejected as exc:  # Ẑ_c = 0: still part of the unbiased mean
                        chunks.append({"particles": n, "dead_variable": exc.variable})
                        # the walk counted its whole blocks before the dead variable: the rest
                        # of this chunk's work is done too
                        start = exc.variable - exc.variable % walk.block_size
                        advance(n * (problem.n_train - start))
                populations.append(chunks)
        return {"populations": populations, "block_size": walk.block_size}

    def _combine_parts(self, problem: Problem, parts: list[dict]) -> Estimate:
        """Ẑ = Σ_c (M_c / M) Ẑ_c over the chunks of every population of every part (dead
        chunks: Ẑ_c = 0), test probabilities the Ẑ-share-weighted mean of the chunks' J*_c
        (docs/math.md §5). Standard errors: with K >= 2 populations from their spread
        (log Ẑ: qmc.batch_error; test probabilities: linearised ratio), with one the
        binomial variance (A.44) of each chunk combined with the squared shares."""
        if not all(isinstance(p.get("populations"), list) and p["populations"]
                   and all(isinstance(q, list) and q for q in p["populations"]) for p in parts):
            raise ValueError(f"not {self.name} parts (each holds a list of populations, each "
                             "a list of chunk results)")
        pops = [q for p in parts for q in p["populations"]]
        every = [c for q in pops for c in q]
        budget = sum(c["particles"] for c in every)
        runs = [_Chunk.from_json(c) for c in every if "dead_variable" not in c]
        dead = [c["dead_variable"] for c in every if "dead_variable" in c]
        if not runs:
            return Estimate.failed(
                f"all particles rejected at variable {min(dead) + 1} of {problem.n_train} in "
                f"every chunk ({len(every)} of {every[0]['particles']}): the orthant "
                "probability is too small for this budget",
                failed_variable=min(dead), chunks=len(every),
            )
        total, w, test = _pooled(runs, budget, problem.n_test)
        worst = min(runs, key=lambda r: r.min_log_p)
        diagnostics = {
            "chunks": len(every),
            "dead_chunks": len(dead),
            "particles_per_chunk": every[0]["particles"],
            "block_size": parts[0]["block_size"],
            "min_log_p_step": worst.min_log_p,
            "min_p_variable": worst.min_p_variable,
            "distinct_ancestors": sum(r.ancestors for r in runs),
            "distinct_final_particles": sum(r.distinct for r in runs),
        }
        if len(pops) == 1:
            var = np.array([r.rel_var for r in runs])
            return Estimate(total, test,
                            log_marginal_likelihood_se=float(np.sqrt(np.sum(w**2 * var))),
                            diagnostics={**diagnostics,
                                         "se_method": "binomial approximation A.44"})
        return self._from_populations(problem, pops, total, test, diagnostics)

    def _from_populations(self, problem: Problem, pops: list[list[dict]], total: float,
                          test: np.ndarray, diagnostics: dict) -> Estimate:
        """The Estimate of K >= 2 populations (log Ẑ = total, J* = test): standard errors
        and diagnostics from their spread, the status from harness.model.reliability."""
        sizes, log_z_k, test_k = _populations(pops, problem.n_test)
        budget = int(sizes.sum())
        err = batch_error(log_z_k, sizes)
        share = np.exp(log_z_k + np.log(sizes / budget) - total)
        test_k[np.isneginf(log_z_k)] = test   # a dead population has no J*_k (and no share)
        test_se = (ratio_standard_error(share, test_k, test, budget) if problem.n_test
                   else np.empty(0))
        diagnostics.update({
            "randomisations": len(pops),
            "dead_populations": int(np.sum(np.isneginf(log_z_k))),
            "se_method": "spread of independent populations (delta method, or log spread / "
                         "sqrt(effective populations))",
            "log_z_randomisation_sd": err.log_sd if np.isfinite(err.log_sd) else None,
            "log_z_delta_se": err.delta_se,
            "randomisations_effective": err.k_eff,
            "top_randomisation_share": err.top_share,
            **({"test_se_mean": float(np.mean(test_se)), "test_se_max": float(np.max(test_se))}
               if problem.n_test else {}),
        })
        reason = unreliable_reason(self.unreliable_reasons(diagnostics, budget))
        return Estimate(total, test, log_marginal_likelihood_se=err.se, diagnostics=diagnostics,
                        test_probabilities_se=test_se if problem.n_test else None,
                        status="unreliable" if reason else "ok", reason=reason)

    def unreliable_reasons(self, diagnostics: dict, budget: int) -> list[str]:
        """Why the populations' spread cannot be trusted (harness.model.reliability): one
        population holds Ẑ, or their log Ẑ_k spread more than LOG_Z_SD_MAX."""
        return degenerate_weights(diagnostics, budget) + spread_randomisations(diagnostics,
                                                                               budget)

    def _run_chunk(self, walk: CholeskyWalk, problem: Problem, n: int, rng) -> _Chunk:
        """One independent run with n particles (raises AllRejected if it dies)."""
        soft = self.count == "soft"
        step = _BootstrapStep(n, problem.n_train, soft, rng)
        result = walk.run(n, step)
        p = np.exp(step.log_p)
        return _Chunk(
            particles=n,
            log_z=float(step.log_p.sum()),
            rel_var=float(np.sum((1.0 - p) / p) / n),
            min_log_p=float(step.log_p.min()),
            min_p_variable=int(step.log_p.argmin()) + 1,
            ancestors=len(np.unique(result.lineage)),
            distinct=len(np.unique(result.Z[:, -1])),
            test=self._test_probabilities(result.Z, problem, soft, rng),
        )

    @staticmethod
    def _test_probabilities(Z, problem: Problem, soft: bool, rng, max_elements: int = 2**22):
        """J*_j from the final population: mean Φ(c*_j / s_j) (soft) or accepted fraction."""
        n_test = problem.n_test
        if n_test == 0:
            return np.empty(0)
        out = np.empty(n_test)
        group = max(1, max_elements // len(Z))
        for s in range(0, n_test, group):
            cols = slice(s, s + group)
            t = (Z @ problem.test_rows[:, cols]) / problem.test_sd[cols]
            if soft:
                out[cols] = ndtr(t).mean(axis=0)
            else:
                out[cols] = (rng.standard_normal(t.shape) >= -t).mean(axis=0)
        return out
