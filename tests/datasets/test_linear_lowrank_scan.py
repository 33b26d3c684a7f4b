"""The linear-lowrank oracle against independent values over d = 1-3, beta up to 100, N = 2-400
(a past failure: numpy's hermegauss gave NaN weights from ~372 nodes, and the node doubling
reached them at small N with large beta, e.g. the case below carried a truth of NaN).

Independent computations (none goes through harness.core.oracles.low_rank_integral):
  N = 2, 3, any d      the orthant closed forms 1/4 + asin(r)/2π and 1/8 + Σ asin(r_ij)/4π of
                       the correlation matrix of R = C(β X Xᵀ + I)C (docs/math.md §2);
  d = 1                the one-factor quadrature (harness.core.oracles.one_factor_integral:
  composite
                       Gauss–Legendre in u, another code path), log Z and test probabilities;
  d = 2                nested adaptive quadrature (scipy.integrate.quad in u2 inside quad in u1)
                       around a mode found by scipy.optimize, over the region within 60 nats of
                       the maximum (the integrand is log-concave, so that region is an interval
                       in each direction and the rest holds < e^-55 of Z);
  d = 3                importance sampling from a multivariate t (5 degrees of freedom) at the
                       mode: unbiased for Z, compared within 5 of its standard errors.
The fast subset runs by default; the full scan is marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize, stats
from scipy.special import log_ndtr, logsumexp

from harness.core.oracles import one_factor_integral
from harness.datasets.linear_lowrank import linear_lowrank
from harness.plugins.specs import make_problem

_LOG_2PI = np.log(2 * np.pi)
_DROP = 60.0


def slopes(problem, beta):
    """a_i = sqrt(β) y_i x_i and b_j = sqrt(β) x*_j of the problem as built (order applied)."""
    root = np.sqrt(beta)
    return root * problem.y_train[:, None] * problem.X_train, root * problem.X_test


def log_g(A, U):
    """log φ_d(u) + Σ log Φ(a_i · u) for the rows of U."""
    U = np.atleast_2d(U)
    return (-0.5 * np.sum(U**2, axis=1) - 0.5 * U.shape[1] * _LOG_2PI
            + log_ndtr(U @ A.T).sum(axis=1))


def mode(A):
    d = A.shape[1]

    def f(u):
        t = A @ u
        m = np.exp(-0.5 * t**2 - 0.5 * _LOG_2PI - log_ndtr(t))
        return -log_g(A, u)[0], u - A.T @ m

    res = optimize.minimize(f, np.zeros(d), jac=True, method="BFGS", options={"gtol": 1e-10})
    return res.x, -res.fun


def orthant_closed_form(R):
    s = np.sqrt(np.diag(R))
    C = R / np.outer(s, s)
    if len(R) == 2:
        return 0.25 + np.arcsin(C[0, 1]) / (2 * np.pi)
    assert len(R) == 3
    return 0.125 + (np.arcsin(C[0, 1]) + np.arcsin(C[0, 2]) + np.arcsin(C[1, 2])) / (4 * np.pi)


def _bracket(h, centre, top, step=0.5):
    """Ends on both sides of `centre` where the concave h(x) is below top - _DROP."""
    ends = []
    for sign in (-1.0, 1.0):
        s = step
        while h(centre + sign * s) > top - _DROP:
            s *= 2.0
        ends.append(centre + sign * s)
    return ends


def nested_quad_log_z(A):
    """d = 2: log ∫∫ φ_2(u) Π Φ(a_i · u) du by scipy.integrate.quad in u2 inside quad in u1."""
    u_hat, top = mode(A)
    width = 1.0 / np.sqrt(1.0 + np.sum(A**2, axis=0))      # a scale for the first steps

    def inner_max(u1):
        r = optimize.minimize_scalar(lambda u2: -log_g(A, [u1, u2])[0],
                                     bracket=(u_hat[1] - width[1], u_hat[1] + width[1]))
        return r.x, -r.fun

    def inner(u1):
        c, m = inner_max(u1)
        if m < top - _DROP - 5:
            return 0.0
        lo, hi = _bracket(lambda u2: log_g(A, [u1, u2])[0], c, m, width[1])
        val, _ = integrate.quad(lambda u2: np.exp(log_g(A, [u1, u2])[0] - top), lo, hi,
                                points=[c], epsabs=0.0, epsrel=1e-12, limit=400)
        return val

    lo, hi = _bracket(lambda u1: inner_max(u1)[1], u_hat[0], top, width[0])
    val, _ = integrate.quad(inner, lo, hi, points=[u_hat[0]], epsabs=0.0, epsrel=1e-11,
                            limit=400)
    return top + np.log(val)


def t_importance_log_z(A, draws=200_000, seed=0):
    """log Ẑ by importance sampling from a t_5 at the mode (scale: the inverse curvature) and
    the standard error of log Ẑ (delta method)."""
    u_hat, _ = mode(A)
    t = A @ u_hat
    m = np.exp(-0.5 * t**2 - 0.5 * _LOG_2PI - log_ndtr(t))
    H = np.eye(A.shape[1]) + (A * (m * (t + m))[:, None]).T @ A
    q = stats.multivariate_t(loc=u_hat, shape=1.5 * np.linalg.inv(H), df=5)
    U = q.rvs(size=draws, random_state=np.random.default_rng(seed))
    logw = np.concatenate([log_g(A, U[s : s + 20_000]) for s in range(0, draws, 20_000)])
    logw -= q.logpdf(U)
    log_z = logsumexp(logw) - np.log(draws)
    w = np.exp(logw - log_z)
    return log_z, float(np.std(w, ddof=1) / np.sqrt(draws))


def check(n, d, beta, seed=0, n_test=4):
    """The family's truth at (n, d, beta, seed) against an independent value; where the
    oracle's own convergence check fails (REFUSED) it must refuse, never return a value."""
    if (n, d, beta) in REFUSED:
        with pytest.raises(ArithmeticError, match="did not converge"):
            linear_lowrank(n_train=n, n_test=n_test, d=d, beta=beta, seed=seed)
        return
    problem = linear_lowrank(n_train=n, n_test=n_test, d=d, beta=beta, seed=seed)
    truth = problem.truth
    assert np.isfinite(truth.log_marginal_likelihood)
    assert np.all(np.isfinite(truth.test_probabilities))
    A, B = slopes(problem, beta)
    lz = truth.log_marginal_likelihood
    if n <= 3:
        R = A @ A.T + np.eye(n)
        assert lz == pytest.approx(np.log(orthant_closed_form(R)), abs=1e-10)
        if n == 2:   # J*_j = P(v_1, v_2, v*_j >= 0) / P(v_1, v_2 >= 0)
            for j in range(len(B)):
                F = np.vstack([A, B[j]])
                joint = orthant_closed_form(F @ F.T + np.eye(3))
                assert truth.test_probabilities[j] == pytest.approx(joint / np.exp(lz),
                                                                    abs=1e-10)
    if d == 1:
        ref = one_factor_integral(A[:, 0], B[:, 0])
        assert lz == pytest.approx(ref.log_integral, abs=1e-9)
        np.testing.assert_allclose(truth.test_probabilities, ref.test_probabilities,
                                   atol=1e-9)
    elif d == 2:
        assert lz == pytest.approx(nested_quad_log_z(A), abs=1e-8)
    elif n > 3:
        ref, se = t_importance_log_z(A)
        assert abs(lz - ref) <= 5 * se + 1e-9, (lz, ref, se)


def test_the_issue_case_has_its_independent_value():
    """linear-lowrank:n_train=10,n_test=10,d=2,beta=9,seed=0 was NaN with hermegauss."""
    problem = make_problem("linear-lowrank:n_train=10,n_test=10,d=2,beta=9,seed=0")
    assert problem.truth.log_marginal_likelihood == pytest.approx(-4.7965928538589, abs=1e-10)
    assert np.all(np.isfinite(problem.truth.test_probabilities))
    A, _ = slopes(problem, 9.0)
    assert nested_quad_log_z(A) == pytest.approx(-4.7965928538589, abs=1e-10)


# (n, d, beta) where the Gauss–Hermite rule does not reach its tolerance by the node cap
# (small N with a large beta: the integrand is close to a product of steps, far from
# Gaussian), so the family raises ArithmeticError instead of returning a truth (seed 0,
# n_test = 4). Measured on the full scan below: 88 of its 96 cases agree with the independent
# value, these 8 refuse (error estimates 2e-8 ... 2e-3 at the caps of 512^2 and 160^3 nodes).
REFUSED = {(3, 2, 100.0), (5, 2, 100.0), (3, 3, 9.0), (10, 3, 9.0),
           (2, 3, 100.0), (3, 3, 100.0), (5, 3, 100.0), (10, 3, 100.0)}

FAST = [(2, 1, 100.0), (3, 1, 100.0), (30, 1, 9.0), (400, 1, 100.0), (30, 2, 1.0),
        (3, 2, 100.0), (2, 3, 1.0), (30, 3, 0.1), (100, 3, 1.0)]


@pytest.mark.parametrize("n, d, beta", FAST)
def test_scan_fast_subset(n, d, beta):
    check(n, d, beta)


SCAN = [(n, d, beta) for d in (1, 2, 3) for beta in (0.1, 1.0, 9.0, 100.0)
        for n in (2, 3, 5, 10, 30, 100, 200, 400) if (n, d, beta) not in FAST]


@pytest.mark.slow
@pytest.mark.parametrize("n, d, beta", SCAN)
def test_scan_full(n, d, beta):
    check(n, d, beta)
