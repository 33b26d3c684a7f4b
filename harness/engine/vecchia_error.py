"""The Vecchia approximation's error beside the Monte Carlo one (docs/math.md §7a, §14).

A Vecchia method estimates log Z̃_m, the orthant probability of the approximated covariance
with m neighbours, not log Z. Its approximation error δ(m) = log Z̃_m - log Z is estimated by
companion walks at m/2, m and 2m on the same random numbers (common random numbers: the same
generator state, the same budget, the variables in the same order), on a quarter of the budget
(at least COMPANION_MIN points, never more than the budget):

    Δ₁ = L(m/2) - L(m),   Δ₂ = L(m) - L(2m),   L the companions' log Ẑ,

with noise s₁, s₂ from the spread of the paired randomisations' differences (the same
randomisation at two m's walks the same points, so the difference is far less noisy than
either estimate). δ(m) = Δ₂ + δ(2m): when doubling m shrinks the error geometrically (Δ₂ = r Δ₁,
0 <= r <= RATE_MAX) the stated error is |Δ₂| / (1 - r) (the tail of that series), else |Δ₂|.
The stated `approximation_error` is that with the noise, sqrt(δ̂² + s₂²); per test point the
same with the test probabilities' differences.

The estimate is `unreliable` (its total error √(SE² + δ̂²) is not meant to cover) when the
approximation has not settled as m doubled: Δ₂ resolved from its noise and either larger than
RATE_MAX |Δ₁| or of the opposite sign (the error changes sign or grows: a larger m is needed to
say how large it is), when a companion's set-up failed or its weights are degenerate, and when
the ordering is not local (harness.engine.vecchia_factor.ordering_excess). Point estimates are
the method's walk at m, unchanged (the companions use copies of the generator).

Cost (measured in docs/studies.md, "Vecchia approximation error"): the set-up at m/2 and 2m
(O(N m³) each, 2m about 3x the set-up at m in practice) and three walks of a quarter of the
budget at m/2, m, 2m (about 0.9 of the walk at m): `approximation_error = "none"` skips them.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from harness.engine.orthant_method import OrthantMethod
from harness.engine.randomisations import SovSums, sov_run
from harness.engine.vecchia_factor import ORDERING_EXCESS_MAX, check_ordering
from harness.model.footprint import MemoryEstimate
from harness.model.problem import Problem
from harness.model.reliability import degenerate_weights
from harness.model.result import Estimate

APPROXIMATION_ERRORS = ("auto", "none")
SHARE = 4              # the companions walk budget // SHARE points ...
COMPANION_MIN = 1000   # ... at least this many (never more than the budget)
RATE_MAX = 0.7         # Δ₂ / Δ₁ beyond this: not settled
RESOLVED = 3.0         # |Δ| beyond this many of its noise: a difference, not noise ...
NEGLIGIBLE = 0.1       # ... and beyond this share of the estimate's standard error


def companion_budget(budget: int) -> int:
    """Points of each companion walk."""
    return min(budget, max(budget // SHARE, COMPANION_MIN))


def companion_ms(m: int, n_train: int) -> list[int]:
    """The neighbours of the companion walks: m/2 (when m >= 2), m and 2m, capped at N - 1
    (exact); [] when m is exact already."""
    top = max(n_train - 1, 1)
    if m >= top:
        return []
    return ([m // 2] if m >= 2 else []) + [m, min(2 * m, top)]


@dataclasses.dataclass(frozen=True)
class Differences:
    """log Ẑ's and the test probabilities' change between two companions, with its noise."""

    log_z: float
    log_z_noise: float
    test: np.ndarray
    test_noise: np.ndarray


def _paired(a: SovSums, b: SovSums) -> Differences:
    """L(a) - L(b) for two companions on the same points, the noise from the spread of the
    randomisations' differences (sd / sqrt(K))."""
    ra, rb = sov_run(a), sov_run(b)
    k = len(a.sizes)
    d = ra.log_z_k - rb.log_z_k
    noise = float(np.std(d, ddof=1) / np.sqrt(k)) if k > 1 else abs(float(ra.log_z - rb.log_z))
    test, test_noise = np.empty(0), np.empty(0)
    if a.log_wf.shape[1]:
        test = ra.test - rb.test
        pk = np.exp(a.log_wf - a.log_w[:, None]) - np.exp(b.log_wf - b.log_w[:, None])
        pk = np.where(np.isfinite(pk), pk, 0.0)
        test_noise = np.std(pk, axis=0, ddof=1) / np.sqrt(k) if k > 1 else np.abs(test)
    return Differences(float(ra.log_z - rb.log_z), noise, test, test_noise)


def _stated(d2: float, s2: float, d1: float | None, s1: float | None,
            se: float) -> tuple[float, str]:
    """(δ̂ of one quantity, why not settled or ''): module doc. A difference within RESOLVED
    of its noise, or below NEGLIGIBLE of the estimate's SE `se`, is not one."""
    if not abs(d2) > max(RESOLVED * s2, NEGLIGIBLE * se):
        return float(np.hypot(d2, s2)), ""
    if d1 is None or not abs(d1) > max(RESOLVED * s1, NEGLIGIBLE * se):
        return float(np.hypot(d2, s2)), ""
    r = d2 / d1
    if 0.0 <= r <= RATE_MAX:
        return float(np.hypot(abs(d2) / (1.0 - r), s2)), ""
    return float(np.hypot(abs(d2) + abs(d1), s2)), "grows" if r > RATE_MAX else "changes sign"


SETTING_HELP = {"approximation_error": "auto: estimate the Vecchia approximation's error "
                                       "from companion walks at m/2 and 2m on a quarter "
                                       "of the budget (same random numbers); none: skip"}


def with_m(self, m: int):
    """The same method with m neighbours (no companions of its own)."""
    other = copy.copy(self)
    other.m, other.approximation_error = m, "none"
    return other


def _companions(self, n_train: int) -> list[int]:
    """The companions' m's ([] when not estimated)."""
    return companion_ms(self.m, n_train) if self.approximation_error == "auto" else []


def _memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
    """The method's at m, the companions' factors held beside it (cached on the problem),
    their particles one walk at a time (the largest, at 2m)."""
    base = OrthantMethod.memory_estimate(self, n_train, n_test, budget)
    held, work = dict(base.held), dict(base.work)
    for mm in _companions(self, n_train):
        if mm == self.m:
            continue
        fm = with_m(self, mm).sampler(n_train).factor.memory(n_train, n_test)
        held.update({f"{k} (m = {mm})": v for k, v in fm.held.items()})
    if _companions(self, n_train):
        top = with_m(self, _companions(self, n_train)[-1]).memory_estimate(
            n_train, n_test, companion_budget(budget))
        if top.job_bytes > base.job_bytes:
            work = {f"{k} (companion)": v for k, v in top.work.items()}
    return MemoryEstimate(held, work, base.setup)


def _prepare(self, problem: Problem) -> None:
    OrthantMethod.prepare(self, problem)
    for mm in _companions(self, problem.n_train):
        if mm != self.m:   # the companions' factors, without a warning of their own
            OrthantMethod.prepare(with_m(self, mm), problem)


def _estimate_part_with_companions(self, problem: Problem, budget: int,
                                   rng: np.random.Generator) -> dict:
    """The walk at m, and the companions' sufficient statistics on copies of the generator
    as it was before the walk ("approximation")."""
    ms = _companions(self, problem.n_train)
    start = copy.deepcopy(rng) if ms else None
    part = OrthantMethod._estimate_part(self, problem, budget, rng)
    if part.get("failed"):
        return part
    excess = check_ordering(problem, self.m, self.ordering, self.label())   # one warning a run
    if excess is not None:
        part["setup"]["ordering_excess_nats"] = excess
    if not ms:
        return part
    sub = companion_budget(budget)
    sums = []
    for mm in ms:
        if mm == self.m and sub == budget:   # the walk at m on the same numbers: itself
            sums.append({k: v for k, v in part.items() if k != "setup"})
            continue
        got = with_m(self, mm).sampler(problem.n_train).part(problem, sub,
                                                            copy.deepcopy(start))
        if got.get("failed"):
            part["approximation"] = {"failed": f"m = {mm}: {got['failed']}"}
            return part
        sums.append({k: v for k, v in got.items() if k != "setup"})
    part["approximation"] = {"m": ms, "budget": sub, "sums": sums}
    return part


def _combine_with_error(self, problem: Problem, parts: list[dict]) -> Estimate:
    """The estimate at m (every part's walk at m) with the approximation error of every
    part's companions pooled (their randomisations concatenated, as the walk's)."""
    est = OrthantMethod._combine_parts(self, problem, parts)
    if est.status == "failed" or (not _companions(self, problem.n_train)
                                  and est.diagnostics.get("ordering_excess_nats") is None):
        return est
    return _with_error(self, problem, est, [p.get("approximation") for p in parts])


def _with_error(self, problem: Problem, est: Estimate, companions: list) -> Estimate:
    diag = dict(est.diagnostics)
    reasons = [est.reason] if est.reason else []
    excess = diag.get("ordering_excess_nats")
    if excess is not None and excess > ORDERING_EXCESS_MAX:
        reasons.append(
            f"approximation: ordering={self.ordering} is not local (its Vecchia "
            f"approximation is {excess:.3g} nats of KL farther from R than "
            "ordering=auto's), so its error is not estimated reliably: use ordering=auto")
    if not _companions(self, problem.n_train):
        return dataclasses.replace(est, status="unreliable" if reasons else est.status,
                                   reason="; ".join(reasons))
    missing = [c.get("failed", "") if c else "missing from a part" for c in companions
               if not c or c.get("failed")]
    if missing:
        reasons.append(f"approximation: its error was not estimated (companion walk at "
                       f"{missing[0]}): try another m or ordering")
        return dataclasses.replace(est, status="unreliable", reason="; ".join(reasons))
    ms = companions[0]["m"]
    n_test = problem.n_test
    sums = [SovSums.concat([SovSums.from_json(c["sums"][i], n_test) for c in companions])
            for i in range(len(ms))]
    runs = [sov_run(s) for s in sums]
    top = len(ms) - 1
    d2 = _paired(sums[top - 1], sums[top])
    d1 = _paired(sums[0], sums[1]) if len(ms) == 3 else None
    exact_top = ms[-1] >= problem.n_train - 1
    use1 = d1 is not None and not exact_top
    delta, why = _stated(d2.log_z, d2.log_z_noise, d1.log_z if use1 else None,
                         d1.log_z_noise if use1 else None,
                         est.log_marginal_likelihood_se or 0.0)
    test_delta, test_unsettled = None, 0
    test_se = est.test_probabilities_se if est.test_probabilities_se is not None \
        else np.zeros(n_test)
    if n_test:
        stated = [_stated(d2.test[j], d2.test_noise[j], d1.test[j] if use1 else None,
                          d1.test_noise[j] if use1 else None, float(test_se[j]))
                  for j in range(n_test)]
        test_delta = np.array([x for x, _ in stated])
        test_unsettled = sum(1 for _, w in stated if w)
    diag.update({
        "approximation_m": ms, "approximation_budget": int(sums[0].sizes.sum()),
        "approximation_log_z": [float(r.log_z) for r in runs],
        "approximation_delta": d2.log_z, "approximation_delta_noise": d2.log_z_noise,
        **({} if d1 is None else {"approximation_delta_half": d1.log_z,
                                   "approximation_delta_half_noise": d1.log_z_noise}),
    })
    bad = [f"m = {mm}: {'; '.join(r)}" for mm, s in zip(ms, sums, strict=True)
           if (r := degenerate_weights(_weights(s), int(s.sizes.sum()), tail=False))]
    if why:
        half = max(1, self.m // 2)
        reasons.append(
            f"approximation: log Z did not settle as m doubled (m = {half} -> {self.m}: "
            f"{d1.log_z:+.3g} nats, {self.m} -> {ms[-1]}: {d2.log_z:+.3g}; the error "
            f"{why}), so its error is not estimated reliably: use a larger m "
            f"(e.g. m={2 * self.m})"
            + ("" if self.ordering == "auto" else " or ordering=auto"))
    if test_unsettled:
        reasons.append(
            f"approximation: {test_unsettled} of {n_test} test probabilities did not settle "
            f"as m doubled (m = {max(1, self.m // 2)} -> {self.m} -> {ms[-1]}), so their error "
            f"is not estimated reliably: use a larger m (e.g. m={2 * self.m})")
    if bad:
        reasons.append("approximation: a companion walk's weights are degenerate ("
                       + "; ".join(bad) + "), so its error is not estimated reliably")
    return dataclasses.replace(
        est, approximation_error=delta, test_approximation_error=test_delta,
        status="unreliable" if reasons else est.status, reason="; ".join(reasons),
        diagnostics=diag)


def _weights(sums: SovSums) -> dict:
    """The weight diagnostics the reliability rules read, for a companion's sums."""
    r = sov_run(sums)
    return {"ess": r.ess, "max_weight_share": r.max_weight_share,
            "randomisations": len(r.sizes), "top_randomisation_share": r.top_share}


def states_approximation_error(cls):
    """Class decorator of an OrthantMethod on the Vecchia factor (settings `m`, `ordering`,
    `approximation_error`): its estimate states the approximation's error and its status
    judges it (module doc); memory and set-up count the companions."""
    cls.memory_estimate = _memory_estimate
    cls.prepare = _prepare
    cls._estimate_part = _estimate_part_with_companions
    cls._combine_parts = _combine_with_error
    cls.setting_help = {**vars(cls).get("setting_help", {}), **SETTING_HELP}
    return cls
