"""scipy-genz: the same call as scipy.stats.multivariate_normal.cdf, and its limits reported."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from harness.core.errors import InputError
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.methods import scipy_genz
from harness.methods.scipy_genz import ScipyGenz, scipy_orthant
from harness.model.problem import Problem


@pytest.mark.parametrize("abseps", [0.0, 1e-5])
def test_same_value_as_the_public_function(abseps):
    problem = onefactor(n=25, seed=2)
    public = multivariate_normal.cdf(np.zeros(25), cov=problem.R, maxpts=3000, abseps=abseps,
                                     rng=np.random.default_rng(4))
    ours = scipy_orthant(problem.R, 3000, abseps, np.random.default_rng(4))[0]
    assert ours == public
    est = ScipyGenz(abseps=abseps).estimate(problem, 3000, np.random.default_rng(4))
    assert est.log_marginal_likelihood == pytest.approx(np.log(public), rel=1e-15)


@pytest.mark.parametrize("n", [1, 2])
def test_exact_in_one_and_two_dimensions(n):
    problem = onefactor(n=n, seed=3, dmin=-0.9, dmax=0.9)
    exact = 0.5 if n == 1 else 0.25 + np.arcsin(problem.R[0, 1]) / (2 * np.pi)
    est = ScipyGenz().estimate(problem, 100, np.random.default_rng(0))
    assert est.log_marginal_likelihood == pytest.approx(np.log(exact), abs=1e-12)


def test_log_z_only_and_error_within_its_estimate():
    problem = linear1d(n_train=60, n_test=5, seed=1)
    ests = [ScipyGenz().estimate(problem, 20_000, np.random.default_rng(s)) for s in range(4)]
    for est in ests:
        assert est.test_probabilities is None and est.status == "ok"
        assert est.diagnostics["points_used"] >= 20_000
        assert not est.diagnostics["error_estimate_useless"]
        assert abs(est.log_marginal_likelihood - problem.truth.log_marginal_likelihood) <= (
            5 * est.log_marginal_likelihood_se)


def test_abseps_default_of_scipy_stops_after_one_pass():
    """SciPy's abseps = 1e-5 is 'converged' at once for a tiny probability: one pass only."""
    problem = onefactor(n=20, seed=1)       # log Z ~ -14: P ~ 1e-6 < abseps
    one = ScipyGenz(abseps=1e-5).estimate(problem, 200_000, np.random.default_rng(0))
    spend = ScipyGenz().estimate(problem, 200_000, np.random.default_rng(0))
    assert one.diagnostics["points_used"] < 40_000 <= 200_000 <= spend.diagnostics["points_used"]


@pytest.mark.parametrize("value, err, status, flag", [
    (0.0, 0.0, "failed", None),            # underflow of the probability
    (float("nan"), 0.0, "failed", None),   # NaN
    (1e-200, 0.0, "ok", True),             # the error estimate underflowed
    (1e-20, 3e-20, "ok", True),            # error larger than the value
    (1e-20, 3e-22, "ok", False),
])
def test_degenerate_outputs_are_reported(monkeypatch, value, err, status, flag):
    monkeypatch.setattr(scipy_genz, "scipy_orthant", lambda R, m, a, rng: (value, err, 1234))
    est = ScipyGenz().estimate(onefactor(n=5, seed=0), 100, np.random.default_rng(0))
    assert est.status == status
    if status == "failed":
        assert est.reason and est.log_marginal_likelihood is None
    else:
        assert est.diagnostics["error_estimate_useless"] is flag
        assert (est.log_marginal_likelihood_se is None) is flag
        if not flag:
            assert est.log_marginal_likelihood_se == pytest.approx(0.03 / 3)


def test_bad_setting():
    with pytest.raises(InputError, match="abseps"):
        ScipyGenz(abseps=-1.0).check_settings()


def _pairs(n_pairs, rho=-0.5):
    """Block-diagonal orthant of n_pairs pairs with correlation rho: exact log P."""
    R = np.kron(np.eye(n_pairs), np.array([[1.0, rho], [rho, 1.0]]))
    exact = n_pairs * np.log(0.25 + np.arcsin(rho) / (2 * np.pi))
    return Problem.orthant(f"pairs{n_pairs}", R), exact


@pytest.mark.slow
def test_real_underflow_and_useless_error_estimate():
    """220 pairs (log P = -394, P ~ 1e-171): the error estimate underflows to 0; 450 pairs
    (log P = -806): the probability itself underflows and SciPy returns 0."""
    from harness.methods.sov import Sov

    a_problem, a_exact = _pairs(220)
    a = ScipyGenz().estimate(a_problem, 2000, np.random.default_rng(0))
    assert a.status == "ok" and a.diagnostics["error_estimate_useless"]
    assert a.log_marginal_likelihood_se is None
    b_problem, b_exact = _pairs(450)
    assert b_exact < -745
    b = ScipyGenz().estimate(b_problem, 2000, np.random.default_rng(0))
    assert b.status == "failed" and "0" in b.reason
    # sov stays finite (log space), but on 450 independent pairs its weight is a product of
    # 450 independent factors (relative variance ~ (1 + cv^2)^450): the weights degenerate,
    # log Ẑ comes out ~10 too low; the ESS diagnostic shows it (a handful of samples) and the
    # weights' Pareto k̂ makes the run `unreliable`, its finite numbers kept (docs/math.md §13)
    c = Sov().estimate(b_problem, 2000, np.random.default_rng(0))
    assert c.status == "unreliable" and np.isfinite(c.log_marginal_likelihood)
    assert "heavy-tailed" in c.reason or "degenerate" in c.reason
    assert c.diagnostics["ess"] < 20
    assert c.log_marginal_likelihood < b_exact - 3 * c.log_marginal_likelihood_se
