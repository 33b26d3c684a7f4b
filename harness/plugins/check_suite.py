"""The generic checks every method plugin must pass, installed with the harness (in the spirit
of scikit-learn's check_estimator and parametrize_with_checks).

    from harness.plugins.check_suite import check_method, parametrize_with_checks

    def test_my_method_passes_the_generic_checks():
        check_method(MyMethod)        # AssertionError with a readable report if a check fails

    @parametrize_with_checks([MyMethod])   # or: one pytest test per check
    def test_generic(method, check):
        check(method)

`python -m harness check NAME` runs the same checks on a registered method.

The checks (CHECKS, in this order):
- contract: the class attributes and settings (harness.plugins.contract); `cls()` builds;
- settings: from_settings({}) round trip, label() == name, plain-data settings, every default
  given back as a string (`--set key=value`) gives the same settings, an unknown setting is
  an InputError;
- bad_budgets: 0, -3, 2.5, True and "100" are InputErrors naming the budget;
- determinism: the same seed gives the same answer whatever the global numpy and `random`
  states (use only the generator given); another seed gives another answer for a stochastic
  method, the same for a deterministic one (tags.stochastic False);
- output: status ok at checks.smoke_budget on a 30-point GPC problem; log Z finite and < 0
  (None without tags.estimates_log_z), its SE finite and >= 0 or None, one test probability
  in [0, 1] per test point (None without tags.predicts), plain-data diagnostics;
- split: a method that splits only (harness.model.splitting): the part budgets sum to the
  budget; parts are JSON-safe (json.dumps(allow_nan=False)) and combine to a valid Estimate,
  the same after a JSON round trip and in another order; one part alone combines too;
- closed_forms: N = 1, 2, 3 orthant probabilities against the arcsine formulas (docs/math.md
  §2): the mean of 6 runs within 5 SEs (+ 0.02 nats, 0.1 for approximations);
- accuracy: exact methods only, at checks.test_budget, against the exact oracles at N = 200
  (one-factor orthant, docs/math.md §3a; linear-kernel GPC, §3b): log Z's mean of 4 runs
  within 5 SEs of that mean (+ 1e-3); the test probabilities' mean error within 3 mean SEs and
  every point within 6 SEs (+ 5e-3).

Opting out is explicit: `checks = CheckSettings(skip={"accuracy": "why"})`; the report
prints the reason. Checks that do not apply (closed forms without log Z or orthant support;
accuracy for an approximation) are skipped with the reason. quick=True: small problems only.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from harness.core.errors import InputError
from harness.core.oracles import orthant_closed_form
from harness.core.progress import advance, phase
from harness.model.debugging import exception_reason
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.result import ANSWERED, Estimate
from harness.model.splitting import splits
from harness.plugins.contract import contract_violations, positive_int

CHECKS: dict[str, Callable[[type[Method]], str]] = {}
SLOW_CHECKS = ("closed_forms", "accuracy")   # left out by quick=True
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


class SkipCheck(Exception):
    """Raised by a check that does not apply to the method (the message says why)."""


def _check(fn: Callable[[type[Method]], str | None]) -> Callable[[type[Method]], str | None]:
    CHECKS[fn.__name__.removeprefix("check_")] = fn
    return fn


# ---- results --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckResult:
    check: str
    status: str          # passed, failed or skipped
    detail: str = ""     # what was checked (passed), why not (failed), the reason (skipped)


@dataclass
class CheckReport:
    """The outcome of every check on one method class; str() is the readable report."""

    method: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == FAILED]

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in (PASSED, FAILED, SKIPPED)}

    def to_json(self) -> dict:
        """Plain data (`check --json`): the method, the counts and every check's outcome."""
        return {"method": self.method, **self.counts(),
                "checks": [{"check": r.check, "status": r.status, "detail": r.detail}
                           for r in self.results]}

    def __str__(self) -> str:
        counts = self.counts()
        head = (f"harness.plugins.check_suite checks of method {self.method}: "
                f"{counts[PASSED]} passed, {counts[FAILED]} failed, {counts[SKIPPED]} skipped")
        no_answer = [r for r in self.failed if r.detail.startswith(RUN_FAILED)]
        if len(no_answer) > 1 and len(no_answer) == len(self.failed):
            head += ("\n  every run of the method failed, so the checks could compare nothing: "
                     "make one run work first (python -m harness run ... --method ...)")
        width = max((len(r.check) for r in self.results), default=0)
        lines = [head] + [f"  {r.status.upper() if r.status == FAILED else r.status:<8} "
                          f"{r.check:<{width}}  {r.detail}".rstrip() for r in self.results]
        return "\n".join(lines)


def _title(cls) -> str:
    name = getattr(cls, "name", None)
    return f"{name!r} ({getattr(cls, '__qualname__', cls)})" if name else repr(cls)


def declared_skip(cls: type[Method], check: str, quick: bool = False) -> str | None:
    """The reason `cls` does not run `check` (declared, deprecated or quick), or None."""
    reasons = _skips(cls)
    if check != "contract" and reasons.get(check):
        return f"declared by the method: {reasons[check]}"
    if quick and check in SLOW_CHECKS:
        return "quick=True (only the checks on small problems)"
    return None


def _skips(cls) -> Mapping[str, str]:
    """The checks `cls` declares it skips, with the reasons (none if its `checks` is not a
    CheckSettings: the contract check reports that)."""
    skip = getattr(getattr(cls, "checks", None), "skip", None)
    return skip if isinstance(skip, Mapping) else {}


def run_check(cls: type[Method], check: str, *, quick: bool = False) -> CheckResult:
    """Run one check; a failure or crash becomes a failed result with the reason."""
    skip = declared_skip(cls, check, quick)
    if skip:
        return CheckResult(check, SKIPPED, skip)
    try:
        detail = CHECKS[check](cls) or ""
    except SkipCheck as exc:
        return CheckResult(check, SKIPPED, str(exc))
    except AssertionError as exc:
        return CheckResult(check, FAILED, str(exc) or "assertion failed")
    except Exception as exc:  # noqa: BLE001 - the method crashed: reported, with the line
        return CheckResult(check, FAILED, "raised " + exception_reason(exc, cls))
    return CheckResult(check, PASSED, detail)


def run_checks(cls: type[Method], *, quick: bool = False) -> CheckReport:
    """Every check on `cls`, in order; later checks still run when one fails (after a broken
    contract only the contract is reported)."""
    report = CheckReport(_title(cls))
    with phase("checks", total=len(CHECKS)):   # harness.core.progress
        for check in CHECKS:
            with phase(check):
                report.results.append(run_check(cls, check, quick=quick))
            advance()
            if check == "contract" and report.failed:
                break
    return report


def check_method(cls: type[Method], *, quick: bool = False) -> CheckReport:
    """Run every generic check on a method class; AssertionError with the report if one fails.

    Returns the report (print it to see what was skipped and why).
    """
    report = run_checks(cls, quick=quick)
    if report.failed:
        raise AssertionError(str(report))
    return report


class _PytestCheck:
    """One check as a pytest test body: skipped checks are pytest skips with the reason."""

    def __init__(self, check: str, quick: bool):
        self.check, self.quick = check, quick

    def __repr__(self) -> str:
        return self.check

    def __call__(self, cls: type[Method]) -> None:
        import pytest

        skip = declared_skip(cls, self.check, self.quick)
        if skip:
            pytest.skip(skip)
        try:
            CHECKS[self.check](cls)
        except SkipCheck as exc:
            pytest.skip(str(exc))
        except AssertionError as exc:
            raise AssertionError(f"{self.check} check of {_title(cls)}: {exc}") from None


def parametrize_with_checks(classes: Iterable[type[Method]], *, quick: bool = False):
    """A pytest.mark.parametrize over (method class, check), one test per check:

        @parametrize_with_checks([MyMethod])
        def test_generic(method, check):
            check(method)

    Test ids are '<name>-<check>'; an exception of the method propagates with its traceback.
    """
    import pytest

    params = [pytest.param(cls, _PytestCheck(check, quick),
                           id=f"{getattr(cls, 'name', cls.__name__)}-{check}")
              for cls in classes for check in CHECKS]
    return pytest.mark.parametrize(("method", "check"), params)


# ---- problems (built once per process; their factors are cached on them) --------------------
@cache
def small_gpc() -> Problem:
    """A 30-point linear-kernel GPC problem with 8 test points (the quick checks)."""
    from harness.datasets.linear1d import linear1d

    return linear1d(n_train=30, n_test=8, seed=1)


@cache
def oracle_problem(family: str) -> Problem:
    """Exact-truth problems with N = 200: 'onefactor' (orthant) and 'linear1d' (GPC)."""
    from harness.datasets.linear1d import linear1d
    from harness.datasets.onefactor import onefactor

    if family == "onefactor":
        return onefactor(n=200, seed=11)
    return linear1d(n_train=200, n_test=20, mu_pos=1.0, seed=12)


@cache
def small_orthant(n: int) -> Problem:
    from harness.datasets.onefactor import onefactor

    return onefactor(n=n, seed=3, dmin=-0.9, dmax=0.9)


def _run(cls: type[Method], problem: Problem, seed: int, budget: int) -> Estimate:
    return cls().estimate(problem, budget, np.random.default_rng(seed))


RUN_FAILED = "the run failed"   # how a check's detail starts when the method gave no answer


def _answered(est: Estimate, where: str) -> Estimate:
    """est, or AssertionError saying that the run itself failed (status and reason): a check
    that compares answers must not blame a run that gave none on what it compares."""
    if not isinstance(est, Estimate) or est.status not in ANSWERED:
        status = getattr(est, "status", type(est).__name__)
        raise AssertionError(f"{RUN_FAILED} ({where}): status {status!r}: "
                             f"{getattr(est, 'reason', '')}".rstrip(": "))
    return est


# ---- the checks -----------------------------------------------------------------------------
@_check
def check_contract(cls):
    found = contract_violations(cls)
    unknown = sorted(set(_skips(cls)) - set(CHECKS))
    if unknown:
        found.append(f"checks.skip names unknown checks {unknown} (known: {', '.join(CHECKS)})")
    if "contract" in _skips(cls):
        found.append("the contract check cannot be skipped")
    assert not found, "; ".join(found)
    cls()
    return "class attributes, settings with defaults, cls() builds"


@_check
def check_settings(cls):
    method = cls.from_settings({})
    defaults = cls.setting_defaults()
    assert method.get_settings() == defaults, (
        f"from_settings({{}}).get_settings() = {method.get_settings()} differs from the "
        f"__init__ defaults {defaults}: store each setting unchanged in an attribute of its name")
    assert method.label() == cls.name, f"label() of the defaults is {method.label()!r}"
    try:
        json.dumps(defaults, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"settings must be plain data (numbers, strings, bools): {exc}"
                             ) from None
    as_text = {k: str(v).lower() if isinstance(v, bool) else str(v)
               for k, v in defaults.items() if v is not None}
    again = cls.from_settings(as_text).get_settings()
    assert again == defaults, f"the defaults given as strings (--set) build {again}"
    try:
        cls.from_settings({"not_a_setting": "1"})
    except InputError as exc:
        assert "not_a_setting" in str(exc), f"the error does not name the setting: {exc}"
    else:
        raise AssertionError("an unknown setting 'not_a_setting' was accepted")
    return f"{len(defaults)} settings round trip"


@_check
def check_bad_budgets(cls):
    for budget in (0, -3, 2.5, True, "100"):
        try:
            cls().estimate(small_gpc(), budget, np.random.default_rng(0))
        except InputError as exc:
            assert "budget" in str(exc), f"budget {budget!r}: the error does not name it: {exc}"
        else:
            raise AssertionError(f"budget {budget!r} was accepted (want an InputError)")
    return "0, -3, 2.5, True, '100' refused"


def _same(a: Estimate, b: Estimate) -> bool:
    return (a.log_marginal_likelihood == b.log_marginal_likelihood
            and (a.test_probabilities is None) == (b.test_probabilities is None)
            and (a.test_probabilities is None
                 or np.array_equal(a.test_probabilities, b.test_probabilities, equal_nan=True)))


def _with_global_seed(seed: int, fn):
    """fn() with numpy's and Python's global random states seeded (then restored): a method
    that draws from them gives different answers for the same rng (on purpose here)."""
    np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    np.random.seed(seed)  # noqa: NPY002
    random.seed(seed)
    try:
        return fn()
    finally:
        np.random.set_state(np_state)  # noqa: NPY002
        random.setstate(py_state)


@_check
def check_determinism(cls):
    problem, budget = small_gpc(), cls.checks.smoke_budget
    where = f"seed 5, budget {budget}, N = {problem.n_train}"
    a = _answered(_with_global_seed(1, lambda: _run(cls, problem, 5, budget)), where)
    b = _answered(_with_global_seed(2, lambda: _run(cls, problem, 5, budget)), where)
    assert _same(a, b), (
        f"seed 5 gave two different answers (log Z {a.log_marginal_likelihood} and "
        f"{b.log_marginal_likelihood}): draw every random number from the rng argument, never "
        "from np.random.* or random.*, and keep no state between calls")
    c = _answered(_run(cls, problem, 6, budget), where.replace("seed 5", "seed 6"))
    if cls.tags.stochastic:
        assert not _same(a, c), ("seeds 5 and 6 gave the same answer: use the rng argument "
                                 "(or declare tags = Tags(stochastic=False))")
        return "same seed, same answer; another seed, another answer"
    assert _same(a, c), "tags.stochastic = False, but seeds 5 and 6 gave different answers"
    return "the same answer for every seed (tags.stochastic = False)"


@_check
def check_output(cls):
    problem = small_gpc()
    est = _run(cls, problem, 0, cls.checks.smoke_budget)
    assert isinstance(est, Estimate), f"_estimate returned {type(est).__name__}, not an Estimate"
    where = f"checks.smoke_budget = {cls.checks.smoke_budget} on N = {problem.n_train}"
    _answered(est, where)
    assert est.status == "ok", f"status {est.status!r} at {where}: {est.reason}"
    lz, se = est.log_marginal_likelihood, est.log_marginal_likelihood_se
    if cls.tags.estimates_log_z:
        assert lz is not None and np.isfinite(lz) and lz < 0, f"log Z is {lz!r}"
    else:
        assert lz is None, f"tags.estimates_log_z = False, but log Z is {lz!r}"
    assert se is None or (np.isfinite(se) and se >= 0), f"log Z standard error is {se!r}"
    p = est.test_probabilities
    if cls.tags.predicts:
        assert p is not None, "tags.predicts = True, but no test probabilities"
        p = np.asarray(p)
        assert p.shape == (problem.n_test,), f"test probabilities of shape {p.shape}"
        assert np.all((p >= 0) & (p <= 1)), f"test probabilities outside [0, 1] or NaN: {p}"
    else:
        assert p is None, "tags.predicts = False, but test probabilities were returned"
    try:
        json.dumps(dict(est.diagnostics), allow_nan=True)
    except TypeError as exc:
        raise AssertionError(f"diagnostics must be plain numbers and strings: {exc}") from None
    return f"status ok, shapes and ranges (N = {problem.n_train})"


@_check
def check_split(cls):
    if not splits(cls):
        raise SkipCheck("the method does not split an estimate into parts (it is not a "
                        "harness.model.splitting.SplitsEstimates)")
    method = cls()
    budget = cls.checks.smoke_budget
    budgets = method.split_budget(budget, 3)
    assert (isinstance(budgets, list) and 1 <= len(budgets) <= 3
            and all(positive_int(b) for b in budgets) and sum(budgets) == budget), (
        f"split_budget({budget}, 3) = {budgets!r}: want a list of 1 to 3 positive ints summing "
        f"to {budget}")
    problem = small_gpc()
    seeds = range(10, 10 + len(budgets))

    def run_parts(order):
        done = {i: cls().estimate_part(problem, budgets[i], np.random.default_rng(seeds[i]))
                for i in order}
        return [done[i] for i in range(len(budgets))]

    parts = run_parts(range(len(budgets)))
    shipped = []
    for i, part in enumerate(parts):
        assert isinstance(part, dict) and part.get("budget") == budgets[i], (
            f"estimate_part returned {type(part).__name__} without \"budget\": {budgets[i]}")
        try:
            shipped.append(json.loads(json.dumps(part, allow_nan=False)))
        except (TypeError, ValueError) as exc:
            raise AssertionError(f"part {i} is not JSON-safe (plain numbers, lists, strings, "
                                 f"None; no NaN or inf): {exc}") from None
    est = cls().combine_parts(problem, shipped)
    assert isinstance(est, Estimate) and est.status == "ok", (
        f"combine_parts of {len(budgets)} parts: {getattr(est, 'status', est)!r} "
        f"{getattr(est, 'reason', '')}")
    assert _same(est, cls().combine_parts(problem, parts)), (
        "the parts combine to another estimate after a JSON round trip")
    assert _same(est, cls().combine_parts(problem, run_parts(reversed(range(len(budgets)))))), (
        "parts run in another order combine to another estimate: keep no state between parts")
    one = cls().combine_parts(problem, shipped[:1])
    assert one.status == "ok", f"combine_parts of one part failed: {one.reason}"
    return f"{len(budgets)} parts, JSON-safe, combined the same in any order"


@_check
def check_closed_forms(cls):
    if not cls.tags.estimates_log_z:
        raise SkipCheck("tags.estimates_log_z = False: the method does not estimate log Z")
    if not cls.tags.handles_orthant:
        raise SkipCheck("tags.handles_orthant = False: needs a GPC problem, not a pure orthant one")
    worst = []
    for n in (1, 2, 3):
        problem = small_orthant(n)
        exact = np.log(orthant_closed_form(problem.R))
        runs = np.array([_answered(_run(cls, problem, s, 4000), f"N = {n}, seed {s}, budget "
                                   "4000").log_marginal_likelihood for s in range(6)])
        spread = max(runs.std(ddof=1), 1e-12)
        tol = 5 * spread / np.sqrt(len(runs)) + (0.02 if cls.tags.exact else 0.1)
        err = abs(runs.mean() - exact)
        assert err <= tol, (f"N = {n}: mean log Z of 6 runs (budget 4000) {runs.mean():.6f}, "
                            f"exact {exact:.6f}: error {err:.3g} > tolerance {tol:.3g}")
        worst.append(err / tol)
    return f"N = 1, 2, 3 within {max(worst):.0%} of the tolerance"


@_check
def check_accuracy(cls):
    if not cls.tags.exact:
        raise SkipCheck("tags.exact = False: an approximation's error does not vanish with the "
                        "budget (compare it in a sweep)")
    notes = []
    for family in ("onefactor", "linear1d"):
        if family == "onefactor" and not cls.tags.handles_orthant:
            notes.append("onefactor skipped (tags.handles_orthant = False)")
            continue
        notes.append(_accuracy_on(cls, family, oracle_problem(family)))
    return "; ".join(notes)


def _accuracy_on(cls, family: str, problem: Problem) -> str:
    where = f"{family} (N = {problem.n_train}, budget {cls.checks.test_budget}, 4 runs)"
    ests = [_run(cls, problem, s, cls.checks.test_budget) for s in range(4)]
    for e in ests:
        _answered(e, where)
    bad = [e.reason for e in ests if e.status != "ok"]
    assert not bad, f"{where}: unreliable runs: {bad}"
    truth, done = problem.truth, []
    if cls.tags.estimates_log_z:
        lz = np.array([e.log_marginal_likelihood for e in ests])
        se = lz.std(ddof=1) / np.sqrt(len(lz))
        err, tol = abs(lz.mean() - truth.log_marginal_likelihood), 5 * se + 1e-3
        assert err <= tol, (
            f"{where}: mean log Z {lz.mean():.6f}, exact {truth.log_marginal_likelihood:.6f}: "
            f"error {err:.3g} > {tol:.3g} (5 standard errors of the mean + 1e-3)")
        done.append(f"log Z error {err:.2g} <= {tol:.2g}")
    if cls.tags.predicts and problem.n_test:
        P = np.array([e.test_probabilities for e in ests])
        se = P.std(axis=0, ddof=1) / np.sqrt(len(P))
        err = np.abs(P.mean(axis=0) - truth.test_probabilities)
        tol = 3 * np.mean(se) + 1e-3
        assert np.mean(err) <= tol, (f"{where}: test probabilities' mean error "
                                     f"{np.mean(err):.3g} > {tol:.3g} (3 mean SEs + 1e-3)")
        worst = int(np.argmax(err - 6 * se))
        assert np.all(err <= 6 * se + 5e-3), (
            f"{where}: test point {worst}: error {err[worst]:.3g} > "
            f"{6 * se[worst] + 5e-3:.3g} (6 SEs + 5e-3)")
        done.append(f"probabilities' MAE {np.mean(err):.2g} <= {tol:.2g}")
    return f"{family}: {', '.join(done)}"
