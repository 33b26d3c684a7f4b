"""Reference values: one unbiased estimator run until its stated precision is reached.

`compute_reference` runs an estimator whose Ẑ is unbiased for Z (Method.unbiased_z: the SOV
family, minimax tilting, rejection–bootstrap with the hard count; docs/math.md §5–7) in rounds of
new independent parts (harness.model.splitting: split_budget, estimate_part, combine_parts).
Part i's random stream is rng_for(harness.execution.parts.part_key(key, i)), every part has
the same budget, and after each round all parts so far are combined exactly
(SplitsEstimates.combine_parts: Ẑ the budget-weighted mean of the parts' Ẑ, the ratio estimator's
sums added before dividing, the SE from the spread of all independent randomisations). It stops when
the log Z standard error is <= target_se and every test probability's is <= target_test_se, or when
the budget or the CPU time is spent. The result depends only on the problem, the method and its
settings, the part budget, the targets and the seed: rounds
grow from the estimates alone, never from the number of workers.

Then a second unbiased method (the check method, check_method_name: sir for a tilting
reference) is run the same way with a quarter of the CPU, and the record states its checks
with their numbers:
  agreement  |Δ log Z| <= 3 combined SEs, and every test probability's |Δp| / combined SE
             below the 3-sigma level made family-wise over the test points (Bonferroni:
             two-sided 0.27 % over all of them together);
  weights    the reference's weight diagnostics are healthy: not degenerate (no randomisation
             holds half of Σ W), at least half of the randomisations effective, no single
             sample above WEIGHT_SHARE_MAX of Σ W, weight ESS fraction >= ESS_FRACTION_MIN.
A standard error estimated from heavy-tailed weights understates the error (docs/math.md §6, the
sov module doc); the weights check is what says whether the stated SE can be trusted.

The record has the field names of `run --json` for the values (log_marginal_likelihood,
log_marginal_likelihood_se, test_probabilities, test_probabilities_se, method, budget,
cpu_seconds, ...) and harness.model.reference_values's for identity and files (format, fingerprint).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
from scipy.special import ndtri

from harness.core.errors import InputError
from harness.core.progress import phase
from harness.execution.provenance import machine, versions
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.reference_values import FORMAT, fingerprint
from harness.model.result import ANSWERED
from harness.model.splitting import splits

AGREEMENT_SIGMAS = 3.0
WEIGHT_SHARE_MAX = 0.01       # no single sample carries more than 1 % of Σ W
ESS_FRACTION_MIN = 1e-3       # weight ESS at least 0.1 % of the points
EFFECTIVE_RANDOMISATIONS_MIN = 0.5   # of all randomisations
CHECK_CPU_SHARE = 0.25        # the check method's CPU, as a share of the reference's
ROUNDING = 1e-12              # floor of a combined SE: two estimates of a probability near 1/2
#                               with SEs of 1e-16 differ by 7e-15 from rounding alone
#                               (as on digits-3v5), and such SEs are not resolvable
DEFAULT_PARTS_PER_ROUND = 8
UNBIASED_HINT = "use minimax-tilting (the default), sov, sir or rejection-bootstrap[count=hard]"


class ReferenceFailed(RuntimeError):
    """The reference estimate itself failed (a part failed, or the combination did); `reason`
    is the method's reason alone (the message also names the problem and the method)."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason


def first_round_budget(max_budget: int, parts_per_round: int,
                       budget_per_round: int | None = None) -> int:
    """The first round's budget: budget_per_round, default max_budget / 16 (at least one
    point per part)."""
    return budget_per_round or max(max_budget // 16, parts_per_round)


def resolved_check_method(method: str, check_method: str | None) -> str | None:
    """The agreement check's method: None skips it, "auto" is check_method_name(method)."""
    if check_method is None:
        return None
    return check_method_name(method) if check_method == "auto" else check_method


def check_method_name(method: str) -> str:
    """The default check method for a reference method: sir for minimax tilting, tilting for
    the others. Not sov: its heavy-tailed weights make its SE understate its error on real
    data (breast-cancer: sov 2.9 % largest weight share, 3.0 combined SEs below the
    tilting reference; sir and rejection-bootstrap[count=hard] within 1.1 of theirs)."""
    return "sir" if method == "minimax-tilting" else "minimax-tilting"


PART_RANDOMISATIONS = 10   # randomisations per part where the method would choose (0)


def unbiased_method(name: str, settings: dict[str, Any], field: str = "--method") -> Method:
    """A registered method instance whose Ẑ is unbiased and whose estimate splits into parts.
    A QMC method that would choose its randomisations by the budget (`randomisations = 0`,
    minimax-tilting's default) gets PART_RANDOMISATIONS per part unless they are set: a
    reference pools tens of parts, so its standard errors have hundreds of degrees of freedom
    already, and larger randomisations keep QMC's gain (docs/math.md §6). Methods with random
    points (`sir`: populations of about 200 particles) keep their own choice."""
    from harness.plugins.registry import get_method

    try:
        cls = get_method(name)
    except InputError as exc:
        raise InputError(field, str(exc).partition(": ")[2]) from None
    method = cls.from_settings(settings)
    if getattr(method, "randomisations", None) == 0 and "randomisations" not in settings \
            and getattr(method, "points", "random") != "random":
        method = cls.from_settings({**settings, "randomisations": PART_RANDOMISATIONS})
    if not method.unbiased_z():
        raise InputError(field, f"{method.label()} does not give an unbiased Ẑ, so it cannot "
                         "state a reference's precision", UNBIASED_HINT)
    if not splits(method):
        raise InputError(field, f"{method.label()} cannot split an estimate into parts",
                         UNBIASED_HINT)
    return method


# ---- running parts ------------------------------------------------------------------------
VALUE_FIELDS = ("status", "reason", "log_marginal_likelihood", "log_marginal_likelihood_se",
                "test_probabilities", "test_probabilities_se", "diagnostics")


class PartRunner:
    """The parts of one method on one problem, run by harness.execution.parts.run_split (in this
    process, or across a Dask client's workers) and combined: each round passes the parts already
    run (done_parts), so only the new ones run; part i's stream is rng_for(part_key(key, i))."""

    def __init__(self, spec: str, problem: Problem, method: Method, key: dict[str, Any],
                 client=None):
        self.spec, self.problem, self.method, self.key = spec, problem, method, key
        self.client = client
        self.parts: list[dict[str, Any]] = []   # part records (harness.execution.parts.run_part)

    def run(self, n_parts: int, part_budget: int) -> dict[str, Any]:
        """Run parts len(self.parts) .. n_parts - 1 (budget part_budget each), then combine
        all of them: the value fields of the combined estimate."""
        from harness.execution.parts import run_split

        budgets = self.method.split_budget(n_parts * part_budget, n_parts)
        if budgets is None or list(budgets) != [part_budget] * n_parts:
            raise InputError("--round-budget", f"{self.method.label()} does not split "
                             f"{n_parts * part_budget} into {n_parts} parts of {part_budget}",
                             "choose a round budget that is a multiple of the parts per round "
                             "times the method's randomisations")
        new: list[dict[str, Any]] = []
        record = run_split(self.spec, self.method.name, self.method.get_settings(),
                           n_parts * part_budget, self.key, parts=n_parts, client=self.client,
                           on_part=new.append, done_parts=self.parts)
        bad = next((p for p in new if p.get("status") != "ok"), None)
        if bad is not None:
            raise ReferenceFailed(f"part {bad['part']} of the reference of {self.spec} "
                                  f"({self.method.label()}) failed: {bad.get('reason')}",
                                  str(bad.get("reason") or ""))
        self.parts = sorted([*self.parts, *new], key=lambda p: p["part"])
        return {k: record.get(k) for k in VALUE_FIELDS}

    @property
    def setup_cpu_seconds(self) -> float:
        """The set-up (Method.prepare) each worker paid once for this problem."""
        return sum(float(p.get("setup_cpu_seconds") or 0.0) for p in self.parts
                   if p.get("setup_cached") is False)

    @property
    def cpu_seconds(self) -> float:
        """CPU time of the parts and of their set-ups."""
        return self.setup_cpu_seconds + sum(float(p.get("cpu_seconds") or 0.0)
                                            for p in self.parts)

    @property
    def budget(self) -> int:
        return sum(int(p["budget"]) for p in self.parts)

    @property
    def workers(self) -> int:
        return len({p.get("worker") for p in self.parts})


# ---- the procedure ------------------------------------------------------------------------
def _precision(fields: dict[str, Any]) -> tuple[float, float]:
    """(log Z SE, largest test-probability SE) of an estimate (inf when unknown)."""
    se = fields.get("log_marginal_likelihood_se")
    pse = fields.get("test_probabilities_se")
    lz_se = math.inf if se is None or fields.get("status") not in ANSWERED else float(se)
    if fields.get("test_probabilities") is None or not len(fields["test_probabilities"]):
        return lz_se, 0.0
    if pse is None or any(v is None for v in pse):
        return lz_se, math.inf
    return lz_se, float(max(pse))


def next_parts(n_parts: int, first: int, precision: tuple[float, float],
               targets: tuple[float, float]) -> int:
    """Parts to add: enough for the targets if SE ∝ 1/√budget (with 20 % to spare), at
    least a first round's and at most doubling."""
    ratio = max((s / t) ** 2 if math.isfinite(s) else 4.0
                for s, t in zip(precision, targets, strict=True))
    want = math.ceil(n_parts * ratio * 1.2) - n_parts
    return int(min(max(want, first), n_parts))


def run_rounds(runner: PartRunner, part_budget: int, parts_per_round: int,
               targets: tuple[float, float], max_budget: int, max_cpu_seconds: float | None,
               on_round: Callable[[dict[str, Any]], None] | None = None
               ) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Rounds of new parts until the targets are met or the budget/CPU is spent:
    (combined value fields, the rounds' history, why it stopped)."""
    history: list[dict[str, Any]] = []
    n_parts = min(parts_per_round, max_budget // part_budget)
    if n_parts < 1:
        raise InputError("--budget", f"the budget {max_budget} is below one part "
                         f"({part_budget})", "raise --budget or lower --round-budget")
    while True:
        with phase(f"round {len(history) + 1} ({n_parts} parts)"):   # harness.core.progress
            fields = runner.run(n_parts, part_budget)
        precision = _precision(fields)
        history.append({"round": len(history) + 1, "parts": n_parts, "budget": runner.budget,
                        "log_marginal_likelihood": fields.get("log_marginal_likelihood"),
                        "log_marginal_likelihood_se": precision[0],
                        "test_probabilities_se_max": precision[1],
                        "cpu_seconds": runner.cpu_seconds})
        if on_round is not None:
            on_round(history[-1])
        if fields.get("status") not in ANSWERED:
            return fields, history, f"the estimate failed: {fields.get('reason')}"
        if all(s <= t for s, t in zip(precision, targets, strict=True)):
            return fields, history, "targets reached"
        add = next_parts(n_parts, parts_per_round, precision, targets)
        add = min(add, max_budget // part_budget - n_parts)
        if add < 1:
            return fields, history, "budget spent"
        if max_cpu_seconds is not None:
            per_part = (runner.cpu_seconds - runner.setup_cpu_seconds) / n_parts
            room = max_cpu_seconds - runner.cpu_seconds
            add = min(add, int(room // per_part) if per_part > 0 else add)
            if add < 1:
                return fields, history, "CPU time spent"
        n_parts += add


def canonical_spec(spec: str) -> str:
    """A problem spec in the sweeps' canonical form (typed sorted options, absolute paths)."""
    from pathlib import Path

    from harness.model.settings import Where
    from harness.plugins.specs import canonical_problem, split_spec

    head, options = split_spec(spec)
    return canonical_problem(Where("PROBLEM"), head, head, options, Path.cwd())


def reference_key(spec: str, method: Method, part_budget: int, seed: int) -> dict[str, Any]:
    return {"kind": "reference", "problem": spec, "method": method.name,
            "settings": method.get_settings(), "part_budget": int(part_budget),
            "seed": int(seed)}


def part_budget_for(method: Method, round_budget: int, parts_per_round: int) -> int:
    """Each part's budget: the first round's budget shared by its parts, made the largest
    size at or below it that the method splits into equal parts (e.g. whole SOV
    randomisations), so that every round's parts have the same budget."""
    size = round_budget // parts_per_round
    for b in range(size, max(size - 10_000, 0), -1):
        if method.split_budget(parts_per_round * b, parts_per_round) == [b] * parts_per_round:
            return b
    raise InputError("--round-budget", f"{round_budget} does not split into "
                     f"{parts_per_round} equal parts for {method.label()}",
                     "raise --round-budget or lower --parts-per-round")


def compute_reference(problem_spec: str, method: str = "minimax-tilting",
                      settings: dict[str, Any] | None = None, *, max_budget: int = 10**7,
                      budget_per_round: int | None = None,
                      parts_per_round: int = DEFAULT_PARTS_PER_ROUND, target_se: float = 0.01,
                      target_test_se: float = 1e-4, max_cpu_seconds: float | None = None,
                      client=None, check_method: str | None = "auto",
                      check_settings: dict[str, Any] | None = None, seed: int = 0,
                      out: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The reference record of a problem: an unbiased estimator run in rounds of independent
    parts until its standard errors reach the targets, then checked (module doc).

    Parameters
    ----------
    problem_spec : str
        The problem (a spec, a preset or a file path).
    method, settings
        The reference method (unbiased Ẑ) and its settings.
    max_budget : int
        The total budget at most.
    budget_per_round : int, optional
        The first round's budget (default max_budget / 16, made a multiple of the parts per
        round); later rounds add parts of the same size.
    parts_per_round : int
        Independent parts per round.
    target_se, target_test_se : float
        Stop once the log Z standard error and every test probability's are at most these.
    max_cpu_seconds : float, optional
        The reference method's CPU time at most (the check method gets CHECK_CPU_SHARE of
        what the reference used).
    client : dask.distributed.Client, optional
        Run the parts on a cluster (default: in this process).
    check_method, check_settings
        The second unbiased method of the agreement check and its settings; None skips the
        check, "auto" picks check_method_name(method).
    seed : int
        The seed: with the rest it fixes the result, whatever the number of workers.
    out : callable, optional
        Receives one line per round.

    Returns
    -------
    dict
        The reference record (harness.model.reference_values: its format, fingerprint,
        values, standard errors, provenance and checks).
    """
    from harness.plugins.specs import make_problem

    if not (target_se > 0 and target_test_se > 0):
        raise InputError("--target-se", "targets must be > 0")
    spec = canonical_spec(problem_spec)
    problem = make_problem(spec)
    ref = unbiased_method(method, settings or {})
    part_budget = part_budget_for(
        ref, first_round_budget(max_budget, parts_per_round, budget_per_round), parts_per_round)
    key = reference_key(spec, ref, part_budget, seed)
    say = out or (lambda _text: None)
    wall0 = time.perf_counter()

    def progress(label):
        return lambda h: say(f"{label} round {h['round']}: {h['parts']} parts, budget "
                             f"{h['budget']:,}, log Z {h['log_marginal_likelihood']}, SE "
                             f"{h['log_marginal_likelihood_se']:.3g}, test SE max "
                             f"{h['test_probabilities_se_max']:.3g}, CPU "
                             f"{h['cpu_seconds']:.1f} s")

    runner = PartRunner(spec, problem, ref, key, client)
    targets = (target_se, target_test_se)
    fields, history, stopped = run_rounds(runner, part_budget, parts_per_round, targets,
                                          max_budget, max_cpu_seconds, progress(ref.label()))
    if fields.get("status") not in ANSWERED:
        raise ReferenceFailed(f"the reference estimate of {spec} ({ref.label()}) failed: "
                              f"{fields.get('reason')}", str(fields.get("reason") or ""))
    precision = _precision(fields)
    checks = [weights_check(fields)]
    check_record = None
    name = resolved_check_method(ref.name, check_method)
    if name:
        other = unbiased_method(name, check_settings or {}, "--check-method")
        o_part = part_budget_for(other, part_budget * parts_per_round, parts_per_round)
        o_runner = PartRunner(spec, problem, other, reference_key(spec, other, o_part, seed),
                              client)
        o_fields, o_history, o_stopped = run_rounds(
            o_runner, o_part, parts_per_round, targets, max_budget,
            CHECK_CPU_SHARE * runner.cpu_seconds, progress(f"check {other.label()}"))
        checks.insert(0, agreement_check(fields, o_fields, other.label(),
                                         weights_check(o_fields)))
        check_record = {"method": other.label(), "method_name": other.name,
                        "settings": other.get_settings(), "budget": o_runner.budget,
                        "parts": len(o_runner.parts), "cpu_seconds": o_runner.cpu_seconds,
                        "stopped": o_stopped, "rounds": o_history,
                        **{k: o_fields.get(k) for k in (
                            "status", "reason", "log_marginal_likelihood",
                            "log_marginal_likelihood_se", "test_probabilities",
                            "test_probabilities_se", "diagnostics")}}
    summary = problem.summary()
    return {
        "format": FORMAT,
        "problem": problem.name,
        "problem_spec": spec,
        "problem_summary": {k: v for k, v in summary.items()
                            if not k.startswith("true_") and k not in (
                                "truth_kind", "truth_source", "reference")},
        "fingerprint": fingerprint(problem),
        "n_train": problem.n_train, "n_test": problem.n_test,
        "kernel": problem.kernel_summary(),
        "status": fields["status"], "reason": fields.get("reason") or "",
        "log_marginal_likelihood": fields["log_marginal_likelihood"],
        "log_marginal_likelihood_se": fields["log_marginal_likelihood_se"],
        "test_probabilities": fields.get("test_probabilities"),
        "test_probabilities_se": fields.get("test_probabilities_se"),
        "method": ref.label(), "method_name": ref.name, "settings": ref.get_settings(),
        "budget": runner.budget, "budget_unit": ref.budget_unit,
        "parts": len(runner.parts), "part_budget": part_budget,
        "parts_per_round": parts_per_round, "rounds": history,
        "targets": {"log_marginal_likelihood_se": target_se,
                    "test_probabilities_se": target_test_se, "max_budget": int(max_budget),
                    "max_cpu_seconds": max_cpu_seconds},
        "targets_reached": {"log_marginal_likelihood_se": precision[0] <= target_se,
                            "test_probabilities_se": precision[1] <= target_test_se},
        "stopped": stopped,
        "key": key, "seed": int(seed),
        "versions": versions(), "machine": machine(),
        "cpu_seconds": runner.cpu_seconds + (check_record or {}).get("cpu_seconds", 0.0),
        "reference_cpu_seconds": runner.cpu_seconds,
        "setup_cpu_seconds": runner.setup_cpu_seconds,
        "wall_seconds": time.perf_counter() - wall0,
        "workers": runner.workers,
        "diagnostics": fields.get("diagnostics") or {},
        "checks": checks, "check_run": check_record,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# ---- checks -------------------------------------------------------------------------------
def family_threshold(n: int, sigmas: float = AGREEMENT_SIGMAS) -> float:
    """|z| level with the two-sided tail of `sigmas` shared by n comparisons (Bonferroni)."""
    tail = math.erfc(sigmas / math.sqrt(2.0))        # 0.0027 for 3 sigma
    return float(-ndtri(tail / (2.0 * max(n, 1))))


def agreement_check(ref: dict[str, Any], other: dict[str, Any], label: str,
                    other_weights: dict[str, Any] | None = None) -> dict[str, Any]:
    """Two unbiased estimates agree within their combined SEs (module doc).

    other_weights: the check method's own weights_check. When it failed, a disagreement is
    reported with that reason: the check method's SE then understates its error (docs/math.md §6),
    so the disagreement may be the check method's, not the reference's.
    """
    out: dict[str, Any] = {"name": "agreement", "method": label, "sigmas": AGREEMENT_SIGMAS}
    if other_weights is not None:
        out["check_weights_healthy"] = bool(other_weights["passed"])
    if other.get("status") not in ANSWERED or other.get("log_marginal_likelihood_se") is None:
        return {**out, "passed": False, "reason": f"{label} gave no estimate with an SE: "
                f"{other.get('reason') or 'no SE'}"}
    d = abs(ref["log_marginal_likelihood"] - other["log_marginal_likelihood"])
    se = math.hypot(ref["log_marginal_likelihood_se"], other["log_marginal_likelihood_se"],
                    ROUNDING * max(1.0, abs(ref["log_marginal_likelihood"])))
    out.update(log_z_difference=d, log_z_combined_se=se, log_z_z=d / se if se > 0 else math.inf)
    passed = d <= AGREEMENT_SIGMAS * se
    p, q = ref.get("test_probabilities"), other.get("test_probabilities")
    if p and q:
        sp = np.asarray(ref["test_probabilities_se"], float)
        sq = np.asarray(other.get("test_probabilities_se") or np.full(len(q), np.nan), float)
        z = np.abs(np.asarray(p) - np.asarray(q)) / np.hypot(np.hypot(sp, sq), ROUNDING)
        z = np.where(np.isnan(z), np.inf, z)
        level = family_threshold(len(z))
        out.update(test_z_max=float(z.max()), test_z_level=level,
                   test_beyond_3_sigma=int(np.sum(z > AGREEMENT_SIGMAS)),
                   test_combined_se_max=float(np.nanmax(np.hypot(sp, sq))))
        passed = passed and bool(z.max() <= level)
    if not passed and other_weights is not None and not other_weights["passed"]:
        out["reason"] = (f"inconclusive: {label}'s own weights are unhealthy "
                         f"({other_weights['reason']}), so its SE understates its error")
    return {**out, "passed": bool(passed)}


def weights_check(estimate: dict[str, Any]) -> dict[str, Any]:
    """An estimate's weight diagnostics are healthy (module doc); an estimate the method
    itself calls unreliable (harness.model.reliability) is not."""
    diagnostics = estimate.get("diagnostics") or {}

    def num(key):
        v = diagnostics.get(key)
        return None if v is None else float(v)

    found = {"weights_degenerate": diagnostics.get("weights_degenerate"),
             "randomisations": num("randomisations"),
             "randomisations_effective": num("randomisations_effective"),
             "max_weight_share": num("max_weight_share"), "ess_fraction": num("ess_fraction")}
    failed = []
    if estimate.get("status") == "unreliable":
        failed.append(f"the method calls it unreliable ({estimate.get('reason')})")
    if found["weights_degenerate"] is not False:
        failed.append("weights degenerate (or not reported)")
    k, k_eff = found["randomisations"], found["randomisations_effective"]
    if k is None or k_eff is None or k_eff < EFFECTIVE_RANDOMISATIONS_MIN * k:
        failed.append(f"effective randomisations {k_eff} of {k}")
    if found["max_weight_share"] is None or found["max_weight_share"] > WEIGHT_SHARE_MAX:
        failed.append(f"largest weight share {found['max_weight_share']}")
    if found["ess_fraction"] is None or found["ess_fraction"] < ESS_FRACTION_MIN:
        failed.append(f"weight ESS fraction {found['ess_fraction']}")
    return {"name": "weights", "passed": not failed, **found,
            "limits": {"randomisations_effective_share": EFFECTIVE_RANDOMISATIONS_MIN,
                       "max_weight_share": WEIGHT_SHARE_MAX,
                       "ess_fraction": ESS_FRACTION_MIN},
            "reason": "; ".join(failed)}


def reference_status(record: dict[str, Any]) -> tuple[str, str]:
    """A computed reference's (status, reason) in the words of a sweep's jobs
    (harness.model.status_summary), as `reference` and reference sweeps count it: unreliable
    when its method calls it so or one of its checks failed, timeout when it stopped (its
    budget or CPU time spent) before its SE targets, else ok. One that could not be computed
    at all (ReferenceFailed) is failed."""
    if record.get("status") != "ok":
        return record.get("status") or "failed", record.get("reason") or ""
    failed = [c for c in record.get("checks") or () if not c["passed"]]
    if failed:
        return "unreliable", "; ".join(f"{c['name']} check failed" + (
            f": {c['reason']}" if c.get("reason") else "") for c in failed)
    names = {"log_marginal_likelihood_se": "log Z SE", "test_probabilities_se": "test SE"}
    missed = [names.get(k, k) for k, reached in (record.get("targets_reached") or {}).items()
              if not reached]
    if missed:
        return "timeout", (f"targets not reached: {record.get('stopped')} before the "
                           f"{' and '.join(missed)} target{'s' if len(missed) > 1 else ''}")
    return "ok", ""
