"""harness.plugins.check_suite: each generic check fails on a planted bug with a message saying why,
skips only with a reason, and check_method's report is one readable AssertionError."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.methods.sov import Sov
from harness.model.method import Method
from harness.model.result import Estimate
from harness.model.tags import CheckSettings, Tags
from harness.plugins.check_suite import (
    CHECKS,
    check_method,
    parametrize_with_checks,
    run_check,
    run_checks,
)


class Shifted(Sov):
    """SOV with log Z moved by 0.05 nats: a bias far above its spread."""

    name = "shifted"

    def _estimate(self, problem, budget, rng):
        est = super()._estimate(problem, budget, rng)
        return replace(est, log_marginal_likelihood=est.log_marginal_likelihood - 0.05)


class GlobalNoise(Sov):
    name = "global-noise"

    def _estimate(self, problem, budget, rng):
        est = super()._estimate(problem, budget, rng)
        noise = 1e-3 * np.random.standard_normal()  # noqa: NPY002 - the planted bug
        return replace(est, log_marginal_likelihood=est.log_marginal_likelihood + noise)


class ClaimsDeterministic(Sov):
    name = "claims-deterministic"
    tags = Tags(stochastic=False)


class OutOfRange(Sov):
    name = "out-of-range"

    def _estimate(self, problem, budget, rng):
        est = super()._estimate(problem, budget, rng)
        return replace(est, test_probabilities=est.test_probabilities + 1.0)


class PredictsUndeclared(Sov):
    name = "predicts-undeclared"
    tags = Tags(predicts=False)


class PartsWithNan(Sov):
    """Parts that carry a NaN: not JSON-safe."""

    name = "parts-with-nan"

    def _estimate_part(self, problem, budget, rng):
        return {**super()._estimate_part(problem, budget, rng), "spread": float("nan")}


class PartsWithState(Sov):
    """Each part's stream depends on how many parts ran before it (state between calls)."""

    name = "parts-with-state"
    calls = 0

    def _estimate_part(self, problem, budget, rng):
        PartsWithState.calls += 1
        return super()._estimate_part(problem, budget,
                                      np.random.default_rng(rng.integers(99) + self.calls))


class Toy(Method):
    """Independent variables (-N log 2, 1/2 everywhere), with a few planted faults."""

    name = "toy"
    summary = "independent variables"
    tags = Tags(exact=False, stochastic=False)

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def _estimate(self, problem, budget, rng):
        return Estimate(-problem.n_train * np.log(2) * self.scale, np.full(problem.n_test, 0.5))


class Renamed(Toy):
    name = "renamed"

    def __init__(self, scale: float = 1.0):
        self.factor = scale          # not stored under the setting's name


def _failure(cls, check):
    result = run_check(cls, check)
    assert result.status == "failed", result
    return result.detail


def test_checks_in_order():
    assert list(CHECKS) == ["contract", "settings", "bad_budgets", "determinism", "output",
                            "split", "closed_forms", "accuracy"]


def test_a_sound_method_passes_quickly():
    report = check_method(Toy, quick=True)
    assert not report.failed
    status = {r.check: r.status for r in report.results}
    assert status["closed_forms"] == status["accuracy"] == status["split"] == "skipped"
    assert "does not split" in {r.check: r.detail for r in report.results}["split"]
    assert "quick=True" in str(report)


@pytest.mark.parametrize(("cls", "check", "fragment"), [
    (Shifted, "closed_forms", "N = 1: mean log Z of 6 runs"),
    (Shifted, "accuracy", "onefactor (N = 200, budget 8000, 4 runs): mean log Z"),
    (GlobalNoise, "determinism", "never from np.random"),
    (ClaimsDeterministic, "determinism", "stochastic = False, but seeds 5 and 6"),
    (OutOfRange, "output", "test probabilities outside [0, 1]"),
    (PredictsUndeclared, "output", "predicts = False, but test probabilities"),
    (PartsWithNan, "split", "part 0 is not JSON-safe"),
    (PartsWithState, "split", "keep no state between parts"),
    (Renamed, "settings", "AttributeError: 'Renamed' object has no attribute 'scale'"),
])
def test_each_check_fails_on_a_planted_bug(cls, check, fragment):
    assert fragment in _failure(cls, check)


def test_a_broken_contract_is_reported_first_and_alone():
    class Nameless(Toy):
        name = None
        summary = ""
        checks = CheckSettings(skip={"acuracy": "typo"})

    report = run_checks(Nameless)
    assert [r.check for r in report.results] == ["contract"]
    detail = report.results[0].detail
    assert "no `name`" in detail and "empty `summary`" in detail
    assert "checks.skip names unknown checks ['acuracy']" in detail


def test_opting_out_is_explicit_and_printed():
    class Declared(Toy):
        checks = CheckSettings(skip={"determinism": "answers depend on the wall clock"})

    declared = {r.check: r for r in run_checks(Declared, quick=True).results}["determinism"]
    assert declared.status == "skipped"
    assert declared.detail == "declared by the method: answers depend on the wall clock"
    with pytest.raises(AssertionError):  # the contract cannot be skipped
        class NoContract(Toy):
            checks = CheckSettings(skip={"contract": "no"})
        check_method(NoContract, quick=True)


def test_the_older_flat_declarations_are_refused_with_what_to_write():
    class Flat(Sov):
        name = "flat"
        exact = False
        test_budget = None
        skip_checks = {"accuracy": "slow"}

        def z_unbiased(self):
            return True

    report = run_checks(Flat)
    assert [r.check for r in report.results] == ["contract"]
    detail = report.results[0].detail
    assert "`exact = False` is no longer read: write `tags = Tags(exact=False)`" in detail
    assert "write `checks = CheckSettings(test_budget=None)`" in detail
    assert "write `checks = CheckSettings(skip={'accuracy': 'slow'})`" in detail
    assert "rename the method to `unbiased_z`" in detail
    bad = run_check(type("BadTags", (Toy,), {"tags": Tags(exact="no")}), "contract")
    assert bad.status == "failed" and "`tags.exact` is 'no', not True or False" in bad.detail


def test_check_method_raises_one_readable_report():
    with pytest.raises(AssertionError) as info:
        check_method(Shifted)
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0] == ("harness.plugins.check_suite checks of method 'shifted' (Shifted): "
                        "6 passed, 2 failed, 0 skipped")
    assert any(line.startswith("  FAILED   accuracy") for line in lines)
    assert any(line.startswith("  passed   determinism") for line in lines)


@parametrize_with_checks([Toy, Shifted], quick=True)
def test_parametrize_with_checks(method, check):
    """Shifted's bias shows only in the slow checks, which quick=True skips."""
    check(method)


def test_parametrize_with_checks_ids_and_failures():
    mark = parametrize_with_checks([Toy, Shifted])
    ids = [p.id for p in mark.args[1]]
    assert ids[:2] == ["toy-contract", "toy-settings"] and "shifted-accuracy" in ids
    check = {p.id: p.values[1] for p in mark.args[1]}
    with pytest.raises(pytest.skip.Exception, match="exact = False"):
        check["toy-accuracy"](Toy)
    with pytest.raises(AssertionError, match="^closed_forms check of 'shifted'.*N = 1"):
        check["shifted-closed_forms"](Shifted)
