"""Exact GP regression (harness/core/gpr.py, docs/math.md §12): the log evidence against dense and
closed forms, its gradient against central differences, the optimum against a brute-force grid on
the PRML sine example, the predictive distribution against the direct formula, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from harness.core.errors import InputError
from harness.core.gpr import (
    GaussianProcessRegressor,
    factorise,
    grid_maximum,
    grid_points,
    log_evidence,
    log_evidence_grid,
)
from harness.core.kernels import PRML, RBF, Linear
from harness.core.numdiff import central_difference
from harness.datasets.sine import sine_data

pytestmark = pytest.mark.usefixtures("one_blas_thread")

KERNELS = [RBF(), PRML(1.0, 1.0, 0.5, 0.5), Linear()]


def _data(n=12, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, 2))
    return X, np.sin(3 * X[:, 0]) + X[:, 1] + rng.normal(0, 0.2, n)


def _dense(theta, X, t, kernel):
    """ln N(t | 0, K + σ² I) by slogdet and solve."""
    k, noise = kernel.with_log_params(theta[:-1]), math.exp(theta[-1])
    C = k(X, X) + noise * np.eye(len(t))
    sign, logdet = np.linalg.slogdet(C)
    assert sign > 0
    return -0.5 * logdet - 0.5 * t @ np.linalg.solve(C, t) - 0.5 * len(t) * math.log(2 * math.pi)


def _random_thetas(kernel, seed, count=5):
    """count points θ in [−2, 1]^p (σ² ≥ e⁻², so cond(C) < 100 on _data())."""
    return np.random.default_rng(seed).uniform(-2, 1, (count, len(kernel.param_names()) + 1))


# ---- the log evidence and its gradient ----------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_log_evidence_against_dense_formula(kernel):
    X, t = _data()
    for theta in _random_thetas(kernel, seed=0):
        value, _ = log_evidence(theta, X, t, kernel)
        # both are backward stable: agreement to ~cond(C) ε |value| with cond(C) < 100
        assert abs(value - _dense(theta, X, t, kernel)) < 1e-10 * max(1.0, abs(value))
        k, noise = kernel.with_log_params(theta[:-1]), math.exp(theta[-1])
        ref = scipy.stats.multivariate_normal(cov=k(X, X) + noise * np.eye(len(t))).logpdf(t)
        assert abs(value - ref) < 1e-9 * max(1.0, abs(value))


def test_log_evidence_closed_form_n1_and_n2():
    # N = 1: c = β + σ², ln p = −½ ln(2π c) − t²/(2c); ∂/∂ln β = β (t²/c − 1)/(2c), same for σ²
    X, t = np.array([[0.3]]), np.array([0.8])
    beta, noise = 1.5, 0.2
    c = beta + noise
    value, grad = log_evidence(np.log([2.0, beta, noise]), X, t, RBF())
    assert abs(value - (-0.5 * math.log(2 * math.pi * c) - 0.64 / (2 * c))) < 1e-15
    slope = (0.64 / c - 1) / (2 * c)
    np.testing.assert_allclose(grad, [0.0, beta * slope, noise * slope], rtol=1e-14, atol=1e-16)
    # N = 2: C = [[a, b], [b, a]], |C| = a² − b², tᵀC⁻¹t = (a t1² − 2 b t1 t2 + a t2²)/|C|
    X, t = np.array([[0.0], [1.0]]), np.array([0.5, -1.0])
    alpha = 2.0
    a, b = beta + noise, beta * math.exp(-1 / alpha)
    det = a * a - b * b
    quad = (a * 0.25 + 2 * b * 0.5 + a * 1.0) / det
    value, _ = log_evidence(np.log([alpha, beta, noise]), X, t, RBF())
    assert abs(value - (-0.5 * math.log(det) - 0.5 * quad - math.log(2 * math.pi))) < 1e-14


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_log_evidence_gradient_matches_central_differences(kernel):
    # h = 1e-5: truncation (h²/6)|f'''| ~ 1e-11 and rounding ~ ε |f| / h ~ 1e-10 (cond(C) < 100
    # at these θ); measured: the error is < 2e-4 of atol 1e-6 + rtol 1e-6, and it grows as h²
    # (4e-2 of the tolerance at h = 1e-3), so a gradient wrong by 1e-4 relative fails
    X, t = _data()
    for theta in _random_thetas(kernel, seed=1):
        _, grad = log_evidence(theta, X, t, kernel)
        fd = central_difference(lambda th: log_evidence(th, X, t, kernel)[0], theta, 1e-5)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)
        assert np.all(np.abs(grad) > 1e-4)   # so that a wrong sign or factor would show


def test_gradient_check_would_catch_a_wrong_noise_term():
    X, t = _data()
    theta = np.array([-0.5, 0.2, -1.0])
    _, grad = log_evidence(theta, X, t, RBF())
    fd = central_difference(lambda th: log_evidence(th, X, t, RBF())[0], theta, 1e-5)
    assert abs(grad[-1] / math.exp(theta[-1]) - fd[-1]) > 1e-3   # ∂/∂σ² instead of ∂/∂ln σ²


def test_log_evidence_grid_matches_the_single_evaluation():
    X, t = _data()
    thetas = np.random.default_rng(2).uniform(-3, 1, size=(40, 3))
    single = [log_evidence(th, X, t, RBF())[0] for th in thetas]
    np.testing.assert_allclose(log_evidence_grid(thetas, X, t, RBF(), chunk=16), single,
                               rtol=1e-12)
    # a covariance that is not positive definite is −inf, not an error
    dup = np.array([[0.0], [0.0], [1.0]])
    values = log_evidence_grid([[0.0, 0.0, -800.0 / 1.1], [0.0, 0.0, 0.0]], dup,
                               np.array([1.0, 2.0, 0.0]), RBF())
    assert values[0] == -np.inf and np.isfinite(values[1])


# ---- the optimum on the PRML sine example against a brute-force grid ------------------------
BOX = [(-6, 2), (-4, 3), (-9, 1)]   # ln α, ln β, ln σ²: holds every sensible value on [0, 0.7]


def test_grid_maximum_is_exhaustive():
    X, t = sine_data(n=6, seed=5)
    grid = grid_maximum(X, t, RBF(), [(-3, -1), (-1, 1), (-5, -3)], coarse=0.5, fine=0.25)
    assert grid["points"] == 5**3 + 5**3
    first = grid_points([np.arange(-3, -0.99, 0.5), np.arange(-1, 1.01, 0.5),
                         np.arange(-5, -2.99, 0.5)])
    values = [log_evidence(th, X, t, RBF())[0] for th in first]
    assert grid["coarse_log_evidence"] == pytest.approx(max(values), abs=1e-12)
    assert grid["log_evidence"] >= grid["coarse_log_evidence"]   # the fine grid holds the best


@pytest.mark.parametrize("seed", [0, 1])
def test_optimum_matches_brute_force_grid_on_prml_sine(seed):
    X, t = sine_data(seed=seed)   # the PRML example: n = 10 on [0, 0.7], noise sd 0.1
    gpr = GaussianProcessRegressor(RBF(), noise=0.01, n_restarts=4, seed=0).fit(X, t)
    grid = grid_maximum(X, t, RBF(), BOX, coarse=0.5, fine=0.05)
    assert grid["interior"]
    # no grid point beats the optimiser, and it lies within one fine grid cell of the best one
    assert gpr.log_evidence_ >= max(grid["log_evidence"], grid["coarse_log_evidence"]) - 1e-9
    assert np.all(np.abs(gpr.theta_ - grid["theta"]) <= 0.05)
    assert np.linalg.norm(gpr.log_evidence()[1]) < 1e-3    # a stationary point


def test_prml_kernel_reaches_the_same_optimum_as_rbf():
    # PRML(θ0, θ1) = RBF(α = 2/θ1, β = θ0): the same model, so the same maximum evidence
    X, t = sine_data(n=20, noise_sd=0.2, seed=4)
    rbf = GaussianProcessRegressor(RBF(), noise=0.01, seed=1).fit(X, t)
    prml = GaussianProcessRegressor(PRML(), noise=0.01, seed=1).fit(X, t)
    assert abs(rbf.log_evidence_ - prml.log_evidence_) < 1e-6
    assert abs(rbf.kernel_.alpha - 2 / prml.kernel_.theta1) < 1e-3 * rbf.kernel_.alpha
    assert abs(rbf.noise_ - prml.noise_) < 1e-3 * rbf.noise_


# ---- fitting: restarts, seeds, attributes ---------------------------------------------------
def test_fit_attributes_restarts_and_seed():
    X, t = sine_data(n=15, noise_sd=0.2, seed=2)
    gpr = GaussianProcessRegressor(RBF(), noise=0.05, n_restarts=3, seed=7).fit(X, t)
    assert len(gpr.starts_) == 4
    np.testing.assert_allclose(gpr.starts_[0]["start"], np.log([1.0, 1.0, 0.05]))
    assert gpr.evaluations_ == sum(s["evaluations"] for s in gpr.starts_) > 4
    assert gpr.log_evidence_ == pytest.approx(max(s["log_evidence"] for s in gpr.starts_),
                                              abs=1e-12)
    assert gpr.log_evidence_ == pytest.approx(gpr.log_evidence()[0], abs=0)
    assert isinstance(gpr.kernel_, RBF) and gpr.kernel_.alpha == pytest.approx(
        math.exp(gpr.theta_[0]), rel=1e-15)
    assert gpr.noise_ == pytest.approx(math.exp(gpr.theta_[-1]), rel=1e-15)
    again = GaussianProcessRegressor(RBF(), noise=0.05, n_restarts=3, seed=7).fit(X, t)
    np.testing.assert_array_equal(again.theta_, gpr.theta_)
    other = GaussianProcessRegressor(RBF(), noise=0.05, n_restarts=3, seed=8).fit(X, t)
    assert not np.array_equal(other.starts_[1]["start"], gpr.starts_[1]["start"])
    assert gpr.kernel == RBF()                             # the given kernel is not changed


def test_fit_without_optimising_and_bounds():
    X, t = sine_data()
    fixed = GaussianProcessRegressor(RBF(0.5, 2.0), noise=0.01, optimize=False).fit(X, t)
    assert fixed.kernel_ == RBF(0.5, 2.0) and fixed.noise_ == pytest.approx(0.01, rel=1e-15)
    assert fixed.evaluations_ == 0 and fixed.starts_ == []
    # per-parameter bounds hold: the noise may not go below 0.05
    bounds = [(1e-3, 1e3), (1e-3, 1e3), (0.05, 1.0)]
    held = GaussianProcessRegressor(RBF(), noise=0.01, bounds=bounds, n_restarts=1).fit(X, t)
    assert held.noise_ == pytest.approx(0.05, rel=1e-12)   # the start 0.01 is clipped up
    assert np.all(held.starts_[1]["start"] >= np.log([1e-3, 1e-3, 0.05]))


# ---- prediction ---------------------------------------------------------------------------
def test_predict_against_direct_formula():
    X, t = _data()
    gpr = GaussianProcessRegressor(PRML(1.2, 3.0, 0.3, 0.4), noise=0.07, optimize=False)
    gpr.fit(X, t)
    Xs = np.random.default_rng(5).uniform(-0.5, 1.5, size=(9, 2))
    k = gpr.kernel_
    C = k(X, X) + 0.07 * np.eye(len(t))
    Ks = k(Xs, X)
    mean = Ks @ np.linalg.solve(C, t)
    var = np.diag(k(Xs, Xs) - Ks @ np.linalg.solve(C, Ks.T))
    m, s, v = gpr.predict(Xs, return_std=True, return_var=True)
    np.testing.assert_allclose(m, mean, rtol=1e-10)
    np.testing.assert_allclose(v, var, rtol=1e-9)
    np.testing.assert_allclose(s, np.sqrt(var), rtol=1e-9)
    m2, v2 = gpr.predict(Xs, return_var=True, include_noise=True)    # PRML 6.67: c = k + β⁻¹
    np.testing.assert_array_equal(m2, m)
    np.testing.assert_allclose(v2, var + 0.07, rtol=1e-12)
    np.testing.assert_array_equal(gpr.predict(Xs), m)


def test_predict_limits():
    X, t = sine_data()
    # a short length scale makes K ≈ I on the data: mean = t/(1 + σ²), latent variance σ²/(1 + σ²)
    gpr = GaussianProcessRegressor(RBF(1e-6, 1.0), noise=1e-6, optimize=False).fit(X, t)
    assert np.min(np.abs(X - X.T)[~np.eye(len(X), dtype=bool)]) > 0.01   # K_ij < e⁻¹⁰⁰
    mean, var = gpr.predict(X, return_var=True)
    np.testing.assert_allclose(mean, t / (1 + 1e-6), rtol=1e-12)
    np.testing.assert_allclose(var, 1e-6 / (1 + 1e-6), rtol=1e-6)
    mean, std = gpr.predict([[50.0]], return_std=True)     # far away: the prior
    assert abs(mean[0]) < 1e-12 and std[0] == pytest.approx(1.0, rel=1e-12)


# ---- bad input ------------------------------------------------------------------------------
def test_input_errors():
    X, t = _data()
    gpr = GaussianProcessRegressor(RBF())
    with pytest.raises(InputError, match="not fitted"):
        gpr.predict(X)
    cases = [
        ({"X": np.where(X > 0.9, np.nan, X)}, "X", "NaN"),
        ({"t": np.append(t[:-1], np.inf)}, "t", "NaN or infinite"),
        ({"t": t[:-1]}, "t", "shape"),
        ({"X": np.empty((0, 2)), "t": np.empty(0)}, "X", "non-empty"),
    ]
    for change, field, text in cases:
        args = {"X": X, "t": t, **change}
        with pytest.raises(InputError, match=text) as exc:
            gpr.fit(args["X"], args["t"])
        assert exc.value.field == field
    for kwargs, field in [({"noise": 0.0}, "noise"), ({"noise": float("nan")}, "noise"),
                          ({"bounds": (1.0, 0.5)}, "bounds"), ({"bounds": [(1, 2)] * 2}, "bounds"),
                          ({"n_restarts": -1}, "n_restarts"), ({"kernel": "rbf"}, "kernel")]:
        with pytest.raises(InputError) as exc:
            GaussianProcessRegressor(**{"kernel": RBF(), **kwargs}).fit(X, t)
        assert exc.value.field == field, kwargs
    fitted = GaussianProcessRegressor(RBF(), optimize=False).fit(X, t)
    with pytest.raises(InputError) as exc:
        fitted.predict(np.zeros((3, 5)))
    assert exc.value.field == "X" and "5 features" in str(exc.value)
    with pytest.raises(InputError) as exc:
        log_evidence([0.0, 0.0], X, t, RBF())
    assert exc.value.field == "theta" and "alpha, beta, noise" in str(exc.value)


def test_non_positive_definite_covariance_reports_the_jitter():
    # a linear kernel on one feature has rank 1; with noise 1e-20 C is singular in floating point
    X, t = np.array([[1.0], [2.0], [3.0]]), np.array([1.0, 2.0, 3.1])
    with pytest.raises(InputError) as exc:
        log_evidence(np.log([1.0, 1e-20]), X, t, Linear())
    assert exc.value.field == "noise" and "not positive definite" in str(exc.value)
    jitter = float(str(exc.value).split("jitter >= ")[1].split()[0])
    factorise(Linear()(X, X), 1e-20 + jitter)              # the reported jitter is enough
    assert 0 < jitter < 1e-12
    # fit: when every start is in that region it fails with the same reason
    bounds = [(0.5, 2.0), (1e-30, 1e-25)]
    gpr = GaussianProcessRegressor(Linear(), noise=1e-28, bounds=bounds, n_restarts=1)
    with pytest.raises(InputError) as exc:
        gpr.fit(X, t)
    assert exc.value.field == "fit" and "not positive definite" in str(exc.value)
    assert [s["success"] for s in gpr.starts_] == [False, False]
    # a start there fails, the others still find the optimum
    bounds = [(0.5, 2.0), (1e-30, 1.0)]
    gpr = GaussianProcessRegressor(Linear(), noise=1e-28, bounds=bounds, n_restarts=4, seed=1)
    gpr.fit(X, t)
    assert not gpr.starts_[0]["success"] and "jitter" in gpr.starts_[0]["message"]
    assert np.isfinite(gpr.log_evidence_) and any(s["success"] for s in gpr.starts_)
