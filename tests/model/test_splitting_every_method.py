"""One estimate split into parts and recombined exactly, every method that splits (the method
side of harness.model.splitting; harness.execution.parts runs the parts).

For every splitting method (the SOV family through Sov, rejection-bootstrap): parts run with
the streams rng_for({**key, "part": i}) combine to the same Estimate whatever order they ran in
and after a strict JSON round trip; one part at budget b is the method's estimate at b; the
combined Ẑ is the budget-weighted mean of the parts' Ẑ and J* the Ẑ-weighted mean of their J*
(docs/math.md §5, §6); and against exact truth the combined estimate lies within its own standard
error.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import logsumexp

from harness.core.errors import InputError
from harness.core.qmc import split_budget as qmc_split
from harness.core.seeding import rng_for
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.execution.parts import part_budgets
from harness.model.splitting import splits
from harness.plugins.registry import get_method, methods
from harness.plugins.specs import make_problem

SPLITTING = [("sov", {}), ("sov", {"points": "lattice", "reorder": "univariate"}),
             ("sir", {}), ("minimax-tilting", {}), ("sov-tlr", {}),
             ("rejection-bootstrap", {"count": "hard"}), ("rejection-bootstrap", {"count": "soft"}),
             # every earlier variable a neighbour: the exact answer, which the truth tests need
             ("vecchia-sov", {"m": 1000}), ("vecchia-tilting", {"m": 1000}),
             ("vecchia-sir", {"m": 1000})]
IDS = [f"{name}-{'-'.join(map(str, s.values())) or 'default'}" for name, s in SPLITTING]
SOV_FAMILY = ("sov", "sir", "minimax-tilting", "sov-tlr", "vecchia-sov", "vecchia-tilting",
              "vecchia-sir")


def _method(name, settings):
    return get_method(name)(**settings)


def _parts(method, problem, budget, parts, order=None, key=None):
    """The parts of one split estimate, each from its keyed stream, run in `order`."""
    key = key or {"problem": "test", "method": method.label(), "budget": budget}
    budgets = method.split_budget(budget, parts)
    done = {}
    for i in order or range(len(budgets)):
        done[i] = method.estimate_part(problem, budgets[i], rng_for({**key, "part": i}))
    return [done[i] for i in range(len(budgets))]


def _assert_same(a, b):
    assert a.status == b.status != "failed" and a.reason == b.reason, (a.reason, b.reason)
    assert a.log_marginal_likelihood == b.log_marginal_likelihood
    assert a.log_marginal_likelihood_se == b.log_marginal_likelihood_se
    np.testing.assert_array_equal(a.test_probabilities, b.test_probabilities)
    if a.test_probabilities_se is None:
        assert b.test_probabilities_se is None
    else:
        np.testing.assert_array_equal(a.test_probabilities_se, b.test_probabilities_se)
    assert json.dumps(dict(a.diagnostics), sort_keys=True) == json.dumps(
        dict(b.diagnostics), sort_keys=True)


@pytest.fixture(scope="module")
def gpc():
    return linear1d(n_train=40, n_test=6, seed=2)


@pytest.mark.parametrize(("name", "settings"), SPLITTING, ids=IDS)
def test_split_budget_sums_to_the_budget(name, settings):
    method = _method(name, settings)
    for budget, parts in [(1000, 4), (1003, 3), (17, 5), (3, 8), (1, 1)]:
        b = method.split_budget(budget, parts)
        assert sum(b) == budget and 1 <= len(b) <= parts and min(b) >= 1
        assert all(isinstance(x, int) for x in b)
        assert max(b) - min(b) <= _group(method, budget // parts)
    assert len(method.split_budget(1000, 4)) == 4


@pytest.mark.parametrize(("name", "settings"), SPLITTING, ids=IDS)
def test_the_combined_estimate_does_not_depend_on_the_order_or_json(name, settings, gpc):
    """Parts computed in any order (by a fresh method each time) and parts that went through
    json.dumps(..., allow_nan=False) combine to the identical Estimate."""
    method = _method(name, settings)
    forward = _parts(method, gpc, 1200, 4)
    backward = _parts(_method(name, settings), gpc, 1200, 4, order=[3, 1, 0, 2])
    a = method.combine_parts(gpc, forward)
    _assert_same(a, _method(name, settings).combine_parts(gpc, backward))
    shipped = [json.loads(json.dumps(p, allow_nan=False)) for p in forward]
    _assert_same(a, method.combine_parts(gpc, shipped))
    assert a.diagnostics["randomisations"] == _count(name, forward)


def _group(method, budget):
    """Independent pieces per part at this part budget: SOV randomisations (0: chosen by the
    budget), rejection-bootstrap populations."""
    if hasattr(method, "sampler"):
        return method.sampler(1).walk.randomisations_for(budget)
    return method.populations


def _count(name, parts):
    """The randomisations (populations) of all the parts."""
    return sum(len(p["sizes"]) if name in SOV_FAMILY else len(p["populations"]) for p in parts)


@pytest.mark.parametrize(("name", "settings"), SPLITTING, ids=IDS)
def test_one_part_is_the_estimate_at_its_budget(name, settings, gpc):
    method = _method(name, settings)
    part = method.estimate_part(gpc, 900, np.random.default_rng(4))
    assert part["budget"] == 900
    _assert_same(method.combine_parts(gpc, [part]),
                 method.estimate(gpc, 900, np.random.default_rng(4)))


@pytest.mark.parametrize(("name", "settings"), SPLITTING, ids=IDS)
def test_parts_combine_as_the_weighted_mean_of_their_estimates(name, settings, gpc):
    """Ẑ = Σ_p (b_p / B) Ẑ_p and J* = Σ_p b_p Ẑ_p J*_p / Σ_p b_p Ẑ_p (docs/math.md §5, §6),
    computed here from each part's own estimate."""
    method = _method(name, settings)
    parts = _parts(method, gpc, 1500, 3)
    alone = [method.combine_parts(gpc, [p]) for p in parts]
    b = np.array([p["budget"] for p in parts], float)
    lz = np.array([e.log_marginal_likelihood for e in alone])
    log_share = lz + np.log(b / b.sum())
    combined = method.combine_parts(gpc, parts)
    assert combined.log_marginal_likelihood == pytest.approx(logsumexp(log_share), abs=1e-12)
    w = np.exp(log_share - logsumexp(log_share))
    J = np.array([e.test_probabilities for e in alone])
    np.testing.assert_allclose(combined.test_probabilities, w @ J, rtol=1e-12, atol=1e-15)


def test_sov_parts_hold_whole_randomisations_of_equal_size():
    """P parts of K randomisations are the P K near-equal randomisations of one estimate."""
    problem = onefactor(n=30, seed=1)
    method = get_method("sov")(randomisations=5)
    parts = _parts(method, problem, 1003, 4)
    assert [len(p["sizes"]) for p in parts] == [5] * 4
    np.testing.assert_array_equal(np.concatenate([p["sizes"] for p in parts]),
                                  qmc_split(1003, 20))
    est = method.combine_parts(problem, parts)
    assert est.diagnostics["randomisations"] == 20


@pytest.mark.parametrize("name", ["minimax-tilting", "sov-tlr"])
def test_set_up_diagnostics_survive_the_combination(name, gpc):
    method = get_method(name)()
    parts = _parts(method, gpc, 800, 2)
    assert parts[0]["setup"] == {**parts[1]["setup"], **{
        k: v for k, v in parts[0]["setup"].items() if "seconds" in k}}
    d = method.combine_parts(gpc, parts).diagnostics
    keys = ("saddle_converged", "mu_max_abs") if name == "minimax-tilting" else (
        "rank_mean", "rank_max", "tile_size")
    for k in keys:
        assert d[k] == parts[0]["setup"][k]


def _truth_cases():
    return [("onefactor-200", lambda: onefactor(n=200, seed=11)),
            ("linear1d-p1", lambda: make_problem("linear1d-p1"))]


@pytest.fixture(scope="module")
def truth_problems():
    return {name: build() for name, build in _truth_cases()}


@pytest.mark.parametrize("problem_name", [c[0] for c in _truth_cases()])
@pytest.mark.parametrize(("name", "settings"), SPLITTING, ids=IDS)
def test_four_parts_against_exact_truth(name, settings, problem_name, truth_problems):
    """The combined estimate of 4 parts within 4 of its own standard errors of the exact
    log Z, and (where the method states them) the test probabilities within theirs."""
    problem = truth_problems[problem_name]
    method = _method(name, settings)
    budget = 8000
    est = method.combine_parts(problem, _parts(method, problem, budget, 4))
    truth = problem.truth
    err = abs(est.log_marginal_likelihood - truth.log_marginal_likelihood)
    assert err <= 4 * est.log_marginal_likelihood_se + 1e-3, (err, est.log_marginal_likelihood_se)
    if not problem.n_test:
        return
    perr = np.abs(est.test_probabilities - truth.test_probabilities)
    if est.test_probabilities_se is not None:
        se = est.test_probabilities_se
        assert np.all(perr <= 5 * se + 1e-4), (perr / se).max()
        assert np.mean(perr) <= 2 * np.mean(se) + 1e-4
    else:   # rejection-bootstrap states no test SE: its usual accuracy bound
        assert np.mean(perr) < 0.02


@pytest.mark.parametrize("name", ["sov", "minimax-tilting"])
def test_the_combined_standard_error_is_calibrated(name):
    """Over 30 seeds the spread of the combined log Ẑ of 4 parts matches its mean stated SE
    (the spread of all 4 x 10 randomisations), and its test SEs cover the errors."""
    problem = linear1d(n_train=50, n_test=8, seed=6)
    method = get_method(name)()
    runs = [method.combine_parts(problem, _parts(method, problem, 2000, 4, key={"seed": s}))
            for s in range(30)]
    lz = np.array([r.log_marginal_likelihood for r in runs])
    se = np.array([r.log_marginal_likelihood_se for r in runs])
    assert 0.6 < lz.std(ddof=1) / se.mean() < 1.6
    assert abs(lz.mean() - problem.truth.log_marginal_likelihood) <= 4 * lz.std(ddof=1) / 30**0.5
    z = np.abs([r.test_probabilities - problem.truth.test_probabilities for r in runs]) / [
        r.test_probabilities_se for r in runs]
    assert np.mean(z > 3) < 0.05 and np.median(z) < 1.0


def test_a_failed_part_fails_the_combination(gpc):
    method = get_method("sov")()
    good = method.estimate_part(gpc, 100, np.random.default_rng(0))
    est = method.combine_parts(gpc, [good, {"budget": 100, "failed": "the factor broke"}])
    assert est.status == "failed" and est.reason == "the factor broke"
    with pytest.raises(ValueError, match="part 1"):
        method.combine_parts(gpc, [good, {"nonsense": 1}])
    with pytest.raises(ValueError, match="at least one"):
        method.combine_parts(gpc, [])


def test_parts_of_another_method_or_problem_are_refused(gpc):
    sov, rb = get_method("sov")(), get_method("rejection-bootstrap")()
    sov_part = sov.estimate_part(gpc, 100, np.random.default_rng(0))
    rb_part = rb.estimate_part(gpc, 100, np.random.default_rng(0))
    with pytest.raises(ValueError, match="part 0 is not a sov part"):
        sov.combine_parts(gpc, [rb_part])
    with pytest.raises(ValueError, match="not rejection-bootstrap parts"):
        rb.combine_parts(gpc, [sov_part])
    other = linear1d(n_train=40, n_test=5, seed=2)
    with pytest.raises(ValueError, match="5 test points"):
        sov.combine_parts(other, [sov_part])


def test_all_rejected_parts_are_a_failed_estimate():
    """Dead rejection-bootstrap chunks count as Ẑ = 0 in every part: all dead is a failure."""
    problem = onefactor(n=120, seed=1, dmin=-0.99, dmax=0.99)
    method = get_method("rejection-bootstrap")(count="hard")
    parts = _parts(method, problem, 4, 2)
    assert all("dead_variable" in c for p in parts for q in p["populations"] for c in q)
    est = method.combine_parts(problem, [json.loads(json.dumps(p, allow_nan=False))
                                         for p in parts])
    assert est.status == "failed" and "rejected" in est.reason


def test_methods_that_do_not_split_say_so():
    splitting = {name for name, _ in SPLITTING}
    for name, cls in methods().items():
        method = cls()
        assert splits(method) == (name in splitting)
        if name not in splitting:
            assert not hasattr(method, "split_budget") and not hasattr(method, "estimate_part")
            with pytest.raises(InputError, match="cannot split an estimate into parts"):
                part_budgets(method, 1000, 4)


@pytest.mark.parametrize("name", SOV_FAMILY)
def test_pareto_k_of_a_split_estimate_is_that_of_all_its_weights(name, monkeypatch):
    """Each part ships its top_count(part size) largest log weights; the combination fits k̂
    to the union's top_count(S) largest, the same as the k̂ of every weight of every part
    (harness.core.tails). Exact whenever no part holds more of the global top than it
    shipped (here: 4 exchangeable parts)."""
    from harness.core.tails import pareto_k
    from harness.engine.importance_walk import Importance
    from harness.engine.resampled_walk import Resampled

    seen = []
    for walk in (Importance, Resampled):   # record each chunk's final weights
        def recording(self, step, rows, rng, original=walk.wrap):
            stepped = original(self, step, rows, rng)
            final = stepped.log_weights

            def log_weights():
                lw = final()
                seen.append(lw.copy())
                return lw

            stepped.log_weights = log_weights
            return stepped

        monkeypatch.setattr(walk, "wrap", recording)
    problem = make_problem("markov1d:n_train=60,rho=0.9,n_test=4,seed=3")
    method = get_method(name)()
    parts = _parts(method, problem, 2000, 4)
    shipped = [json.loads(json.dumps(p, allow_nan=False)) for p in parts]
    combined = method.combine_parts(problem, shipped)
    k_all = pareto_k(np.concatenate(seen))
    assert combined.diagnostics["pareto_k"] == pytest.approx(k_all, abs=1e-12)
    assert all(len(p["top_log_w"]) <= 3 * np.sqrt(p["budget"]) + 2 for p in parts)
    if name == "sir":   # distinct first-variable ancestors add up over the populations
        assert combined.diagnostics["ancestor_lineages"] == sum(p["lineages"] for p in parts)
