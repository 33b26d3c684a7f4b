"""Independent randomisations of an orthant walk: their sufficient statistics and the
estimate built from them (docs/math.md §6).

K independent randomisations (or populations) each give Ẑ_k, the mean of their weights. Ẑ is
their size-weighted mean; the test probabilities are the ratio estimator
J*_j = Σ W Φ(c*_j / s_j) / Σ W with the same samples in numerator and denominator, always in
(0, 1); the standard errors come from the spread of the K randomisations (the delta method,
or the log spread over the effective number of randomisations where a few dominate;
harness.core.qmc.batch_error). Everything is in log space. The sufficient statistics
(SovSums: sizes, log Σ W and log Σ W Φ(c*/s) per randomisation, log Σ W², the largest log
weights) combine exactly by concatenation, so a split estimate is exactly the estimate of all
its parts' randomisations. Weight diagnostics: the effective sample size (Σ W)² / Σ W², the
largest weight's share and the Pareto k̂ of all the weights (harness.core.tails).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from harness.core.partdata import decode_log, decode_logs, encode_log, encode_logs
from harness.core.qmc import batch_error, ratio_standard_error, t_coverage_factor
from harness.core.tails import pareto_k, top_count


@dataclass(frozen=True)
class SovRun:
    """Per-randomisation results of one SOV run (what the Estimate is built from)."""

    sizes: np.ndarray            # points per randomisation
    log_z_k: np.ndarray          # log of each randomisation's mean weight
    log_z: float
    log_z_se: float              # reported se (qmc.BatchError.se times t_factor); NaN with
    #                              one randomisation
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
    t_factor: float = 1.0           # the SEs' factor for the t coverage (sov_run), else 1


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
    #                              populations (the resampled walk only)

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


def sov_run(sums: SovSums, t_interval: bool = False) -> SovRun:
    """The SOV estimate from its sufficient statistics (docs/math.md §6): Ẑ pooled over the
    randomisations (qmc.batch_error), J* = Σ W Φ(c*/s) / Σ W with the same samples, their
    standard errors from the spread of the randomisations (linearised ratio), at least 1 / S
    where the randomisations' J*_k agree to rounding (qmc.ratio_standard_error). With
    `t_interval` (the resampled walk's few populations: harness.engine.resampled_walk) every SE is
    multiplied by qmc.t_coverage_factor(K), so that ±2.5 SE keeps the normal coverage under
    the t with K - 1 degrees of freedom (docs/math.md §7b); the estimates are the same."""
    sizes, lse, num = sums.sizes, sums.log_w, sums.log_wf
    n_test = num.shape[1]
    log_z_k = lse - np.log(sizes)
    err = batch_error(log_z_k, sizes)
    factor = t_coverage_factor(len(sizes)) if t_interval and len(sizes) > 1 else 1.0
    total = float(logsumexp(lse))
    test, test_se = np.empty(0), np.empty(0)
    if n_test:
        test = np.clip(np.exp(logsumexp(num, axis=0) - total), 0.0, 1.0)
        test_se = factor * ratio_standard_error(np.exp(lse - total), np.exp(num - lse[:, None]),
                                                test, int(np.sum(sizes)))
    return SovRun(sizes=sizes, log_z_k=log_z_k, log_z=err.log_mean, log_z_se=factor * err.se,
                  log_z_delta_se=err.delta_se, k_eff=err.k_eff, top_share=err.top_share,
                  test=test,
                  test_se=test_se, ess=float(np.exp(2 * total - sums.log_w2)),
                  max_weight_share=float(np.exp(sums.max_log_w - total)), chunks=sums.chunks,
                  pareto_k=tail_index(sums), lineages=sums.lineages,
                  resolution_floor=err.resolution_floor, t_factor=factor)
