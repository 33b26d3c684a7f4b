"""Genz SOV: exact cases, log-space robustness, ratio estimator, standard errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.errors import InputError
from harness.core.kernels import RBF
from harness.core.metrics import mae, mape_percent
from harness.datasets.gauss2class import gauss2class
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.engine import dense_factor, sov_step
from harness.methods.sov import Sov
from harness.model.problem import Problem
from harness.plugins.specs import make_problem

POINTS = ["sobol", "lattice", "random"]


def _est(problem, budget, seed, **settings):
    return Sov(**settings).estimate(problem, budget, np.random.default_rng(seed))


@pytest.mark.parametrize("points", POINTS)
def test_identity_covariance_is_exact(points):
    """beta -> 0: R = I, every weight is 2^-N and every ratio estimate is exactly 1/2. The
    randomisations agree exactly, which the estimator cannot tell from an event none of its
    points saw: the SEs are the resolution 1 / points, not 0."""
    problem = linear1d(n_train=60, n_test=5, scale=1e-30)
    est = _est(problem, 300, 0, points=points)
    assert est.log_marginal_likelihood == pytest.approx(-60 * np.log(2), abs=1e-12)
    np.testing.assert_allclose(est.test_probabilities, 0.5, atol=1e-15)
    assert est.diagnostics["ess"] == pytest.approx(300)
    assert est.log_marginal_likelihood_se == pytest.approx(1 / 300)
    np.testing.assert_allclose(est.test_probabilities_se, 1 / 300)
    assert est.diagnostics["se_method"].startswith("no spread")


def test_an_estimate_above_one_fails_with_its_reason(monkeypatch):
    """Ẑ > 1 is unbiased-possible (tilting's weights are not bounded by 1 away from the saddle
    point: log Ẑ = 1.3e8 was seen with the solver capped at 0 steps) but no probability: status
    failed with the reason, not an AssertionError from the output contract."""
    class Inflated(sov_step.SovStep):
        def __call__(self, j, t):
            z, r = super().__call__(j, t)
            if j == 0:
                self.logw += 900.0
            return z, r

    monkeypatch.setattr(sov_step, "SovStep", Inflated)
    est = _est(linear1d(n_train=30, n_test=2, seed=1), 200, 0)
    assert est.status == "failed" and "> 0 is not a log-probability" in est.reason


@pytest.mark.parametrize("points", POINTS)
@pytest.mark.parametrize("n", [2, 3])
def test_closed_forms_within_the_reported_error(points, n):
    problem = onefactor(n=n, seed=4, dmin=-0.9, dmax=0.9)
    R = problem.R
    if n == 2:
        exact = 0.25 + np.arcsin(R[0, 1]) / (2 * np.pi)
    else:
        exact = 0.125 + (np.arcsin(R[0, 1]) + np.arcsin(R[0, 2]) + np.arcsin(R[1, 2])) / (4 * np.pi)
    est = _est(problem, 4000, 1, points=points)
    assert abs(est.log_marginal_likelihood - np.log(exact)) <= 5 * est.log_marginal_likelihood_se


def test_z_hat_is_unbiased_at_n3():
    """E[Ẑ] = Z: the mean of many tiny pseudo-random runs against the arcsine formula."""
    problem = onefactor(n=3, seed=5, dmin=-0.9, dmax=0.9)
    R = problem.R
    exact = 0.125 + (np.arcsin(R[0, 1]) + np.arcsin(R[0, 2]) + np.arcsin(R[1, 2])) / (4 * np.pi)
    rng = np.random.default_rng(0)
    z = np.exp([Sov(points="random", randomisations=1).estimate(problem, 4, rng)
                .log_marginal_likelihood for _ in range(3000)])
    assert abs(z.mean() - exact) <= 4 * z.std(ddof=1) / np.sqrt(len(z))


def test_no_underflow_at_n2000():
    """log Z ~ -1390: everything in log space, the answer within its own error of the truth."""
    problem = onefactor(n=2000, seed=0)
    est = _est(problem, 1000, 0)
    assert est.status == "ok" and np.isfinite(est.log_marginal_likelihood)
    truth = problem.truth.log_marginal_likelihood
    assert truth < -1000
    assert abs(est.log_marginal_likelihood - truth) <= 5 * est.log_marginal_likelihood_se + 0.01


def test_standard_error_is_calibrated():
    """Over 30 seeds the spread of log Ẑ matches the mean reported standard error."""
    problem = onefactor(n=50, seed=2)
    runs = [_est(problem, 2000, s) for s in range(30)]
    lz = np.array([r.log_marginal_likelihood for r in runs])
    se = np.array([r.log_marginal_likelihood_se for r in runs])
    assert 0.6 < lz.std(ddof=1) / se.mean() < 1.6
    truth = problem.truth.log_marginal_likelihood
    assert abs(lz.mean() - truth) <= 4 * lz.std(ddof=1) / np.sqrt(30)


@pytest.mark.parametrize("points", ["sobol", "lattice"])
def test_qmc_answer_does_not_depend_on_chunking_or_block_size(points):
    problem = linear1d(n_train=90, n_test=7, seed=5)
    a = _est(problem, 3000, 9, points=points)
    b = _est(problem, 3000, 9, points=points, chunk_mb=0.3, block_size=7)
    assert b.diagnostics["chunks"] > 1 and a.diagnostics["chunks"] == 1
    assert a.log_marginal_likelihood == pytest.approx(b.log_marginal_likelihood, abs=1e-9)
    np.testing.assert_allclose(a.test_probabilities, b.test_probabilities, atol=1e-9)


def test_ratio_estimates_against_the_oracle_within_their_error():
    problem = linear1d(n_train=150, n_test=25, seed=7)
    run = Sov().sampler(problem.n_train).run(problem, 5000, np.random.default_rng(3))
    err = np.abs(run.test - problem.truth.test_probabilities)
    assert np.all(err <= 5 * run.test_se + 1e-4), (err / run.test_se).max()
    assert np.mean(err) <= 2 * np.mean(run.test_se)


def test_estimate_carries_the_per_point_standard_errors():
    """Estimate.test_probabilities_se is the run's test_se, and the errors against the exact
    linear-kernel oracle are within it; a single randomisation has none."""
    problem = linear1d(n_train=150, n_test=25, seed=7)
    est = _est(problem, 5000, 3)
    run = Sov().sampler(problem.n_train).run(problem, 5000, np.random.default_rng(3))
    np.testing.assert_array_equal(est.test_probabilities_se, run.test_se)
    err = np.abs(est.test_probabilities - problem.truth.test_probabilities)
    assert np.all(err <= 5 * est.test_probabilities_se + 1e-4)
    est.check(problem.n_test)
    assert _est(problem, 500, 0, randomisations=1).test_probabilities_se is None


def test_univariate_reordering_gives_the_same_answer():
    """Reordering changes the variance, not the target (test variables stay last)."""
    problem = linear1d(n_train=100, n_test=10, seed=8)
    est = _est(problem, 6000, 2, reorder="univariate")
    truth = problem.truth
    assert abs(est.log_marginal_likelihood - truth.log_marginal_likelihood) <= (
        5 * est.log_marginal_likelihood_se + 1e-3)
    assert mae(est.test_probabilities, truth.test_probabilities) < 0.01
    assert est.diagnostics["reorder"] == "univariate"


def test_weight_diagnostics():
    est = _est(onefactor(n=200, seed=1), 4000, 0)
    d = est.diagnostics
    assert 1 <= d["ess"] <= 4000 and 0 < d["ess_fraction"] <= 1
    assert 0 < d["max_weight_share"] <= 1
    assert d["randomisations"] == 10 and d["points_per_randomisation"] == 400
    assert d["se_method"].startswith("spread")
    assert 1 <= d["randomisations_effective"] <= 10 and 0.1 <= d["top_randomisation_share"] <= 1
    assert d["weights_degenerate"] == (d["top_randomisation_share"] > 0.5)


def test_standard_error_is_calibrated_when_the_weights_are_degenerate():
    """Short-length-scale RBF orthant (N = 256, alpha = 0.02): one randomisation often holds
    most of the weight. Over 30 seeds the spread of log Ẑ matches the reported se; the delta
    method alone (<= 1 nat by construction) understated it 2.0-2.8x (measured, 3 seed sets)."""
    X = np.random.default_rng(0).uniform(size=(256, 2))
    R = RBF(alpha=0.02)(X, X) + np.eye(256)
    problem = Problem.orthant("rbf-orthant", R)
    sampler = Sov().sampler(problem.n_train)
    runs = [sampler.run(problem, 1000, np.random.default_rng(s)) for s in range(30)]
    lz = np.array([r.log_z for r in runs])
    assert np.mean([r.top_share > 0.5 for r in runs]) > 0.3   # the regime this test is about
    assert 0.6 < lz.std(ddof=1) / np.mean([r.log_z_se for r in runs]) < 1.6


def test_single_randomisation_has_no_standard_error():
    est = _est(onefactor(n=20, seed=1), 500, 0, randomisations=1)
    assert est.status == "ok" and est.log_marginal_likelihood_se is None


def test_budget_below_randomisations():
    est = _est(onefactor(n=20, seed=1), 3, 0)
    assert est.status == "ok" and est.diagnostics["randomisations"] == 3


def test_failed_factorisation_is_a_failed_estimate(monkeypatch):
    def broken(problem, kind, tile=None):
        raise np.linalg.LinAlgError("pivot -1e-17 at step 12")

    monkeypatch.setattr(dense_factor, "ordered_problem", broken)
    est = Sov().estimate(onefactor(n=20, seed=1), 100, np.random.default_rng(0))
    assert est.status == "failed" and "factorisation" in est.reason


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_non_finite_weights_are_a_failed_estimate(monkeypatch):
    class NanStep(sov_step.SovStep):
        def __call__(self, j, t):
            z, r = super().__call__(j, t)
            self.logw[:] = np.nan
            return z, r

    monkeypatch.setattr(sov_step, "SovStep", NanStep)
    est = Sov().estimate(onefactor(n=20, seed=1), 100, np.random.default_rng(0))
    assert est.status == "failed" and "weights" in est.reason


@pytest.mark.parametrize("setting, value", [("points", "halton"), ("randomisations", -1),
                                            ("reorder", "block"), ("block_size", -1),
                                            ("chunk_mb", 0.0)])
def test_bad_settings(setting, value):
    with pytest.raises(InputError, match=setting):
        Sov(**{setting: value}).check_settings()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_train=st.integers(2, 12), n_test=st.integers(1, 4), d=st.integers(1, 3),
       log_alpha=st.floats(-2.0, 2.5), log_beta=st.floats(-3.0, 2.5),
       points=st.sampled_from(POINTS), seed=st.integers(0, 2**31))
def test_ratio_estimates_are_always_inside_0_1(n_train, n_test, d, log_alpha, log_beta,
                                               points, seed):
    """The shared-sample ratio estimator (C.7) lies strictly inside (0, 1) (docs/math.md §2, §6)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train, d)) * 2
    y = rng.choice([-1, 1], size=n_train)
    Xs = rng.normal(size=(n_test, d)) * 2
    from harness.core.kernels import RBF

    problem = Problem.classification("random", X, y, Xs, RBF(10**log_alpha, 10**log_beta))
    est = Sov(points=points, randomisations=4).estimate(problem, 64, rng)
    assert est.status == "ok"
    p = est.test_probabilities
    assert np.all((p > 0) & (p < 1)), p
    assert np.isfinite(est.log_marginal_likelihood) and est.log_marginal_likelihood < 0


def test_rbf_large_n_family_runs():
    problem = gauss2class(n_train=300, n_test=20, d=3)
    est = _est(problem, 2000, 0)
    # heavy-tailed weights here (Pareto k̂ 1.23, ESS 15 of 2000; log Ẑ -126.32 ± 0.21 against
    # tilting's -125.773 ± 0.005 at 2e4 points): flagged unreliable, its numbers kept
    assert est.status in ("ok", "unreliable") and est.test_probabilities.shape == (20,)
    assert problem.family == "gauss2class" and problem.truth is None


# ---- accuracy targets at 1e4 points ------------------------------------------------------
@pytest.mark.slow
def test_onefactor_500_at_1e4():
    """Median MAPE of log I over 5 seeds <= 0.02 % (measured: ~0.002 %)."""
    mapes = []
    for seed in range(5):
        problem = onefactor(n=500, seed=seed)
        est = _est(problem, 10_000, seed)
        truth = problem.truth.log_marginal_likelihood
        assert abs(est.log_marginal_likelihood - truth) <= 5 * est.log_marginal_likelihood_se
        mapes.append(mape_percent(est.log_marginal_likelihood, truth))
    assert np.median(mapes) <= 0.02, mapes


@pytest.mark.slow
def test_linear1d_p3_at_1e4():
    """MAE <= 0.002 and MAPE of log Z <= 0.02 % (measured: MAE ~1e-4, MAPE ~0.005 %)."""
    problem = make_problem("linear1d-p3")
    est = _est(problem, 10_000, 7)
    assert mae(est.test_probabilities, problem.truth.test_probabilities) <= 0.002
    assert mape_percent(est.log_marginal_likelihood,
                        problem.truth.log_marginal_likelihood) <= 0.02
