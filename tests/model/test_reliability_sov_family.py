"""No wrong answer stored as ok: the SOV family's own diagnostics mark a degenerate estimate
`unreliable`, with the reason, and keep its numbers (harness.model.reliability).

Two cases: an orthant with a 50 x 50 correlation matrix of condition ~1e15, and a linear kernel
with inputs scaled by 1e6 (one feature, so that the one-dimensional oracle gives the exact
log Z to compare with). Both were once stored as `ok` with log Ẑ off by 1e3 to 1e11 nats. The
quick sweep's problems must stay `ok` (measured thresholds: harness.model.reliability).
"""

from __future__ import annotations

import numpy as np
import pytest
from edge_problems import duplicated_pairs, ill_conditioned_cov

from harness.api import as_problem
from harness.core.oracles import one_factor_integral, orthant_closed_form
from harness.model.problem import Problem
from harness.plugins.registry import get_method

SOV_FAMILY = ("sov", "sov-tlr", "sir", "minimax-tilting")
QUICK = ["onefactor:n=100", "linear1d-p1", "linear1d-p2",
         "linear-lowrank:n_train=60,n_test=20,d=2,beta=9",
         "onefactor:n=100,dmin=0.95,dmax=0.999,random_signs=true"]
# the methods' budgets in sweeps/quick.toml (sir and minimax-tilting take the sweep's)
QUICK_BUDGETS = {"sov": [1000, 10000], "sov-tlr": [1000, 10000], "sir": [100, 1000],
                 "minimax-tilting": [100, 1000]}


@pytest.fixture(scope="module")
def ill_problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("ill") / "ill.npz"
    np.savez(path, cov=ill_conditioned_cov())
    return as_problem(str(path))


@pytest.fixture(scope="module")
def scaled_problem(tmp_path_factory):
    """Linear kernel, one feature scaled by 1e6, and its exact log Z (docs/math.md §3b)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(60)
    y = np.where(x + 0.5 * rng.standard_normal(60) > 0, 1, -1)
    path = tmp_path_factory.mktemp("scaled") / "scaled.npz"
    np.savez(path, X_train=1e6 * x[:, None], y_train=y, X_test=np.zeros((0, 1)),
             kernel="linear", alpha=1.0, beta=1.0, standardize=False)   # the raw 1e6 scale
    return as_problem(str(path)), one_factor_integral(1e6 * y * x).log_integral


def _estimate(name, problem, budget=1000, seed=0):
    return get_method(name)().estimate(problem, budget, np.random.default_rng(seed))


def _is_unreliable_with_numbers(est):
    assert est.status == "unreliable", (est.status, est.log_marginal_likelihood)
    assert est.reason and est.log_marginal_likelihood is not None   # numbers kept
    est.check(0)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", SOV_FAMILY)
def test_ill_conditioned_orthant_is_not_ok(ill_problem, name):
    est = _estimate(name, ill_problem)
    _is_unreliable_with_numbers(est)
    if name == "sir":   # resampling resets the weights: one population holds Ẑ
        assert est.reason.startswith("randomisations degenerate: one of 10")
    else:   # tilting too: its saddle point is (nearly) converged, R's rounding is not (in a
        # loaded parallel run its Newton steps once stopped at λ² 1.36 > 1, so the saddle-point
        # reason came first: the weights' reason is then the second)
        assert "weights degenerate: effective sample size 1 of 1000" in est.reason
    if name in ("sov", "sov-tlr"):
        assert est.log_marginal_likelihood < -1e6   # the wrong answer it would have stored


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", SOV_FAMILY)
def test_linear_kernel_with_huge_inputs_is_not_ok(scaled_problem, name):
    """Every flagged estimate is far from the exact log Z (-26.9): the flag is right. Tilting
    is right since its saddle point converges on nearly singular covariances (it
    stopped unconverged before): ok, within 3 SE, its SE at least the rounding floor
    eps cond(R) = 0.011 (cond 4.9e13; with 10 randomisations it was that floor, with the
    default 40 of 25 points their spread is larger)."""
    problem, exact = scaled_problem
    est = _estimate(name, problem)
    if name == "minimax-tilting":
        assert est.status == "ok" and est.diagnostics["saddle_converged"] == 1
        assert abs(est.log_marginal_likelihood - exact) <= 3 * est.log_marginal_likelihood_se
        assert est.log_marginal_likelihood_se >= 0.011
        return
    _is_unreliable_with_numbers(est)
    assert abs(est.log_marginal_likelihood - exact) > 100


@pytest.mark.parametrize("name", SOV_FAMILY)
def test_quick_sweep_problems_stay_ok(name):
    """Seed 0 of every quick-sweep problem at the method's quick budgets (10 seeds were
    measured: smallest ESS 44, largest randomisation share 0.85; harness.model.reliability)."""
    for spec in QUICK:
        problem = as_problem(spec)
        for budget in QUICK_BUDGETS[name]:
            est = _estimate(name, problem, budget)
            assert est.status == "ok", (spec, budget, est.reason)


def test_a_planted_degenerate_weight_is_caught(monkeypatch):
    """One sample given all the weight on an easy problem makes sov unreliable: the check
    reads the run's real diagnostics (not the problem)."""
    from harness.engine import sov_step

    class OneHeavy(sov_step.SovStep):
        def __call__(self, j, t):
            z, r = super().__call__(j, t)
            if j == 0:
                self.logw[1:] -= 800.0   # sample 0 holds all of Ẑ
            return z, r

    monkeypatch.setattr(sov_step, "SovStep", OneHeavy)
    est = _estimate("sov", as_problem("onefactor:n=100"))
    assert est.status == "unreliable" and "weights degenerate" in est.reason
    assert "randomisations degenerate" in est.reason


@pytest.mark.slow
@pytest.mark.parametrize("name", SOV_FAMILY)
def test_quick_sweep_problems_stay_ok_over_seeds(name):
    """Seeds 1-5 (the thresholds were set from 10 seeds, harness.model.reliability)."""
    for spec in QUICK:
        problem = as_problem(spec)
        for budget in QUICK_BUDGETS[name]:
            for seed in range(1, 6):
                est = _estimate(name, problem, budget, seed)
                assert est.status == "ok", (spec, budget, seed, est.reason)


MARKOV = "markov1d:n_train=150,rho=0.9,beta=1,n_test=10,seed={}"


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", SOV_FAMILY)
def test_every_ok_run_on_a_short_range_problem_is_within_three_se(name):
    """Status `ok` promises that the error bars cover the error. On a small
    markov1d problem (OU latent, exact log Z and test probabilities, docs/math.md §3e) plain
    SOV's weights are heavy-tailed (Pareto k̂ 1.05-1.6; seeds 1 and 3: a test probability 5.5
    and 3.05 SE off with ESS 3 and 12, which the ESS and randomisation rules pass): every run
    stored ok lies within 3 SE of the exact log Z and of every exact test probability, the
    others are unreliable with a reason. Fails without the k̂ rule (checked)."""
    for seed in (1, 2, 3, 4):
        problem = as_problem(MARKOV.format(seed))
        truth = problem.truth
        est = _estimate(name, problem, 1000, seed)
        if est.status != "ok":
            assert est.status == "unreliable" and est.reason, (seed, est.status)
            continue
        z = abs(est.log_marginal_likelihood - truth.log_marginal_likelihood)
        assert z <= 3 * est.log_marginal_likelihood_se, (seed, z, est.diagnostics)
        err = np.abs(est.test_probabilities - truth.test_probabilities)
        assert np.all(err <= 3 * est.test_probabilities_se), (seed, err, est.diagnostics)


@pytest.mark.parametrize("name", SOV_FAMILY)
def test_identical_randomisations_are_not_a_zero_standard_error(name):
    """A hard exact problem: a 2-D orthant of correlation 1 - 2e-10. The second variable's
    conditional sd is 2e-5, so Φ(t_2) rounds to 1 unless z_1 < ~1e-4: at 1e3 and 1e4 points
    every weight was exactly 1/2, the randomisations agreed to 1e-16, and the SE (1.5e-16) did
    not cover the error (6.4e-6). Now the SE is at least 1 / points (qmc.batch_error), says so,
    and covers the error."""
    rho = 1.0 - 2e-10
    problem = Problem.orthant("near-singular-2d", np.array([[1.0, rho], [rho, 1.0]]))
    exact = np.log(orthant_closed_form(problem.R))
    for budget in (1000, 10_000):
        est = _estimate(name, problem, budget)
        assert est.status == "ok"
        err = abs(est.log_marginal_likelihood - exact)
        assert 1e-6 < err <= 3 * est.log_marginal_likelihood_se, (budget, err)
        # sir's resampled populations differ at 1e4 (one saw the event): a real spread
        no_spread = est.diagnostics["se_method"].startswith(("no spread", "rounding"))
        assert no_spread or (name == "sir" and budget == 10_000)


@pytest.mark.parametrize("name", SOV_FAMILY)
def test_duplicated_points_with_mixed_labels(name):
    """A hard exact problem: each input twice with labels +1 and -1, RBF beta = 1e6, exact
    truth (edge_problems.duplicated_pairs). Plain SOV's weights collapse (ESS 1; `sov` was once
    ok with SE 48.6 nats and a test probability 0.412 for 1/2) and `sir`'s paths: unreliable,
    with a reason. Tilting is right (its previous shifts left k̂ = 2.5: unreliable)."""
    problem = duplicated_pairs()
    truth = problem.truth
    est = _estimate(name, problem, 10_000)
    if name != "minimax-tilting":
        assert est.status == "unreliable" and est.reason
        return
    assert est.status == "ok", est.reason
    assert abs(est.log_marginal_likelihood - truth.log_marginal_likelihood) \
        <= 3 * est.log_marginal_likelihood_se
    assert np.all(np.abs(est.test_probabilities - 0.5) <= 3 * est.test_probabilities_se)
