"""The generic suite every registered method must pass (like scikit-learn's
parametrize_with_checks): settings, input validation, determinism, output contract, and
accuracy against the exact oracles with tolerances derived from the method's own spread."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.errors import InputError
from harness.registry import methods

METHODS = list(methods().values())
IDS = [m.name for m in METHODS]


@pytest.fixture(scope="module")
def small_gpc():
    return linear1d(n_train=30, n_test=8, seed=1)


@pytest.fixture(scope="module")
def oracle_problems():
    """Exact-truth problems with N in the hundreds."""
    return {
        "onefactor": onefactor(n=200, seed=11),
        "linear1d": linear1d(n_train=200, n_test=20, mu_pos=1.0, seed=12),
    }


def _run(cls, problem, seed, budget=None):
    return cls().estimate(problem, budget or cls.test_budget, np.random.default_rng(seed))


@pytest.mark.parametrize("cls", METHODS, ids=IDS)
def test_settings_round_trip(cls):
    method = cls.from_settings({})
    assert method.get_settings() == cls.setting_defaults()
    assert method.label() == cls.name
    assert cls.summary and cls.budget_unit


@pytest.mark.parametrize("cls", METHODS, ids=IDS)
def test_unknown_setting_is_refused(cls):
    with pytest.raises(InputError, match="not_a_setting"):
        cls.from_settings({"not_a_setting": "1"})


@pytest.mark.parametrize("cls", METHODS, ids=IDS)
@pytest.mark.parametrize("budget", [0, -3, 2.5, True, "100"])
def test_bad_budget_is_refused(cls, budget, small_gpc):
    with pytest.raises(InputError, match="budget"):
        cls().estimate(small_gpc, budget, np.random.default_rng(0))


@pytest.mark.parametrize("cls", METHODS, ids=IDS)
def test_same_seed_same_answer(cls, small_gpc):
    a, b = _run(cls, small_gpc, 5, cls.smoke_budget), _run(cls, small_gpc, 5, cls.smoke_budget)
    assert a.log_marginal_likelihood == b.log_marginal_likelihood
    if cls.predicts:
        np.testing.assert_array_equal(a.test_probabilities, b.test_probabilities)
    if cls.stochastic:
        c = _run(cls, small_gpc, 6, cls.smoke_budget)
        assert (c.log_marginal_likelihood != a.log_marginal_likelihood
                or not np.array_equal(c.test_probabilities, a.test_probabilities))


@pytest.mark.parametrize("cls", METHODS, ids=IDS)
def test_output_contract(cls, small_gpc):
    est = _run(cls, small_gpc, 0, cls.smoke_budget)
    assert est.status == "ok", est.reason
    if cls.estimates_log_z:
        assert np.isfinite(est.log_marginal_likelihood) and est.log_marginal_likelihood < 0
    else:
        assert est.log_marginal_likelihood is None
    if cls.predicts:
        p = est.test_probabilities
        assert p.shape == (small_gpc.n_test,)
        assert np.all((p >= 0) & (p <= 1))
    json.dumps(dict(est.diagnostics))  # plain data only


@pytest.mark.parametrize("cls", METHODS, ids=IDS)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_closed_forms_small_orthant(cls, n):
    """N <= 3 one-factor orthant probabilities against the arcsine formulas (MATH.md §2)."""
    if not cls.estimates_log_z:
        pytest.skip("method does not estimate log Z")
    if not cls.handles_orthant:
        pytest.skip("latent-space method: needs a GPC problem, not a pure orthant one")
    problem = onefactor(n=n, seed=3, dmin=-0.9, dmax=0.9)
    R = problem.R
    if n == 1:
        exact = 0.5
    elif n == 2:
        exact = 0.25 + np.arcsin(R[0, 1]) / (2 * np.pi)
    else:
        exact = 0.125 + (np.arcsin(R[0, 1]) + np.arcsin(R[0, 2]) + np.arcsin(R[1, 2])) / (4 * np.pi)
    runs = np.array([_run(cls, problem, s, 4000).log_marginal_likelihood for s in range(6)])
    spread = max(runs.std(ddof=1), 1e-12)
    tol = 5 * spread / np.sqrt(len(runs)) + (0.02 if cls.exact else 0.1)
    assert abs(runs.mean() - np.log(exact)) <= tol


@pytest.mark.parametrize("cls", [m for m in METHODS if m.exact], ids=[m.name for m in METHODS
                                                                      if m.exact])
@pytest.mark.parametrize("family", ["onefactor", "linear1d"])
def test_accuracy_against_oracle(cls, family, oracle_problems):
    """Mean of 4 runs within 5 standard errors (of that mean) of the exact answer, N = 200."""
    if family == "onefactor" and not cls.handles_orthant:
        pytest.skip("latent-space method: needs a GPC problem, not a pure orthant one")
    if cls.test_budget is None:
        pytest.skip("method cannot converge at N = 200 in a test's time (see its own tests)")
    problem = oracle_problems[family]
    ests = [_run(cls, problem, s) for s in range(4)]
    assert all(e.status == "ok" for e in ests), [e.reason for e in ests]
    if cls.estimates_log_z:
        lz = np.array([e.log_marginal_likelihood for e in ests])
        se = lz.std(ddof=1) / np.sqrt(len(lz))
        assert abs(lz.mean() - problem.truth.log_marginal_likelihood) <= 5 * se + 1e-3, (
            lz, problem.truth.log_marginal_likelihood)
    if cls.predicts and problem.n_test:
        P = np.array([e.test_probabilities for e in ests])
        se = P.std(axis=0, ddof=1) / np.sqrt(len(P))
        err = np.abs(P.mean(axis=0) - problem.truth.test_probabilities)
        assert np.mean(err) <= 3 * np.mean(se) + 1e-3
        assert np.all(err <= 6 * se + 5e-3)
