"""Mean-field variational approximation (methods/vb_meanfield.py): CAVI, ELBO, predictions."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.methods.vb_meanfield import VbMeanfield, truncated_moments
from harness.plugins.specs import make_problem


def test_truncated_moments_against_scipy():
    from scipy.stats import truncnorm
    m, s = np.array([-3.0, -0.5, 0.0, 2.0, -30.0]), np.array([1.0, 2.0, 0.5, 1.5, 1.0])
    mean, var, ent = truncated_moments(m, s)
    ref = truncnorm(-m[:4] / s[:4], 40.0, loc=m[:4], scale=s[:4])  # 40 sd: as good as inf
    np.testing.assert_allclose(mean[:4], ref.mean(), rtol=1e-9)
    np.testing.assert_allclose(var[:4], ref.var(), rtol=1e-7)
    np.testing.assert_allclose(ent[:4], ref.entropy(), rtol=1e-9, atol=1e-12)
    assert np.all(np.isfinite(mean)) and mean[4] > 0 and mean[4] < 0.04


def test_independent_variables_are_exact():
    """beta -> 0: R = I, q is the exact posterior: ELBO = log Z = -N log 2 and J* = 1/2."""
    problem = linear1d(n_train=40, n_test=5, scale=1e-30)
    est = VbMeanfield().estimate(problem, 2000, np.random.default_rng(0))
    assert est.log_marginal_likelihood == pytest.approx(-40 * np.log(2), abs=1e-9)
    np.testing.assert_allclose(est.test_probabilities, 0.5, atol=1e-12)


def test_elbo_is_below_log_z_and_close():
    for problem in (make_problem("linear1d-p1"), linear1d(n_train=80, n_test=5, seed=4)):
        est = VbMeanfield().estimate(problem, 500, np.random.default_rng(0))
        truth = problem.truth.log_marginal_likelihood
        assert est.log_marginal_likelihood < truth
        assert est.log_marginal_likelihood > truth - 0.05 * abs(truth)
        assert est.diagnostics["converged"] == 1


def test_predictions_within_005_mae_on_linear1d_p1():
    problem = make_problem("linear1d-p1")
    est = VbMeanfield().estimate(problem, 20000, np.random.default_rng(1))
    mae = np.mean(np.abs(est.test_probabilities - problem.truth.test_probabilities))
    assert mae <= 0.05
    assert mae <= 0.005   # measured 0.0011


def test_iteration_cap_is_reported():
    problem = linear1d(n_train=60, n_test=3, seed=2)
    est = VbMeanfield(max_iter=1).estimate(problem, 100, np.random.default_rng(0))
    assert est.status == "ok" and est.diagnostics["sweeps"] == 1
    assert est.diagnostics["converged"] == 0


def test_pure_orthant_problem_is_refused():
    est = VbMeanfield().estimate(onefactor(n=5, seed=1), 100, np.random.default_rng(0))
    assert est.status == "failed" and "GPC problem" in est.reason


@pytest.mark.parametrize("bad", [{"tol": 0.0}, {"tol": -1.0}, {"max_iter": 0},
                                 {"chunk_mb": 0.0}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(InputError, match=next(iter(bad))):
        VbMeanfield(**bad).check_settings()
