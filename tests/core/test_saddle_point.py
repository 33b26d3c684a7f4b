"""Botev's saddle point by damped Newton (harness.core.saddle_point, docs/math.md §7): the
eliminated Newton step against the full Jacobian, and the solution against MINPACK hybrj."""

from __future__ import annotations

import decimal

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from harness.core.saddle_point import (
    SaddleSystem,
    TriangularFactor,
    _cg,
    mean_path,
    mills_and_slope,
    saddle_point_system,
    solve_saddle_point,
    solve_saddle_point_hybr,
    truncated_mean,
    truncated_mean_inverse,
)
from harness.core.truncnorm import inverse_mills
from harness.datasets.gauss2class import gauss2class
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.model.ordered import ordered_problem
from harness.model.problem import Problem
from harness.plugins.specs import make_problem


def _rbf_orthant(n, seed, length=0.1, beta=1.0):
    """The 2-D RBF orthant problem of the large-N studies: uniform points, R = K + I."""
    X = np.random.default_rng(seed).random((n, 2))
    R = beta * np.exp(-cdist(X, X, "sqeuclidean") / (2 * length**2)) + np.eye(n)
    return Problem.orthant("rbf-orthant", R)


pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _left(t: float, f):
    """f(P, T) in 250-digit Decimal at s = -t, T = t, P = φ(t)/Φ(-t) from Laplace's continued
    fraction t + 1/(t + 2/(t + 3/(t + ...)))."""
    with decimal.localcontext() as ctx:
        ctx.prec = 250
        T = decimal.Decimal(t)
        v = T
        for k in range(400, 0, -1):
            v = T + k / v
        return f(v, T)


def _mills_and_slope_left(t: float) -> tuple[float, float]:
    """(P, 1 + P') at s = -t."""
    return _left(t, lambda P, T: (float(P), float(1 - P * (P - T))))


def _truncated_mean_left(t: float) -> float:
    """G(-t) = P(-t) - t, subtracted in 250 digits (no cancellation)."""
    return _left(t, lambda P, T: float(P - T))


def _hard(n, seed):
    return onefactor(n=n, seed=seed, dmin=0.95, dmax=0.999, random_signs=True)


@pytest.mark.parametrize("order", ["C", "F"])
def test_factor_products(order):
    L = np.asarray(onefactor(n=30, seed=1).chol, order=order)
    f = TriangularFactor(L)
    rng = np.random.default_rng(0)
    v, w = rng.normal(size=30), rng.random(30)
    np.testing.assert_allclose(f.lower(v), L @ v, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(f.upper(v), L.T @ v, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(np.tril(f.weighted_gram(w)), np.tril(L.T @ (w[:, None] * L)),
                               atol=1e-12)
    np.testing.assert_array_equal(f.diag, np.diag(L))


def test_mills_ratio_and_slope_against_derivative_and_tail_series():
    s = np.linspace(-30.0, 30.0, 601)
    P, slope1 = mills_and_slope(s)
    np.testing.assert_allclose(P, inverse_mills(s), rtol=1e-12)
    h = 1e-5
    numeric = (inverse_mills(s + h) - inverse_mills(s - h)) / (2 * h)
    np.testing.assert_allclose(slope1 - 1.0, numeric, atol=1e-7)
    # far left (no cancellation allowed) against Laplace's continued fraction in 250 digits
    t = np.array([10.0, 49.0, 60.0, 1e3, 1e5, 1e50])
    P, slope1 = mills_and_slope(-t)
    ref = np.array([_mills_and_slope_left(v) for v in t])
    np.testing.assert_allclose(P, ref[:, 0], rtol=1e-14)
    np.testing.assert_allclose(slope1, ref[:, 1], rtol=2e-9)
    # the series takes over continuously at s = -50
    _, both = mills_and_slope(np.array([-50.0 * (1 + 1e-12), -50.0 * (1 - 1e-12)]))
    assert both[0] == pytest.approx(both[1], rel=1e-9)
    assert mills_and_slope(np.array([40.0]))[0][0] == 0.0


@pytest.mark.parametrize("problem", [onefactor(n=9, seed=2), _hard(12, 3),
                                     linear1d(n_train=15, n_test=0, seed=4)],
                         ids=["onefactor", "hard", "linear1d"])
@pytest.mark.parametrize("linear_solver", ["cg", "cholesky"])
def test_newton_step_solves_the_full_jacobian_system(problem, linear_solver):
    L = problem.chol
    N, n = len(L), len(L) - 1
    _, grad = saddle_point_system(L)
    y = np.random.default_rng(1).normal(size=2 * n)
    g, J = grad(y)
    full = np.linalg.solve(J, -g)
    system = SaddleSystem(TriangularFactor(L))
    x, mu = np.zeros(N), np.zeros(N)
    x[:n], mu[:n] = y[:n], y[n:]
    gx, gm, s = system.gradient(x, mu)
    np.testing.assert_allclose(np.concatenate([gx[:n], gm[:n]]), g, atol=1e-12)
    assert gx[-1] == gm[-1] == 0.0
    dx, dmu, its = system.newton_step(gx, gm, s, linear_solver, forcing=1e-14)
    np.testing.assert_allclose(np.concatenate([dx[:n], dmu[:n]]), full, atol=1e-9)
    assert dx[-1] == dmu[-1] == 0.0
    assert (its > 0) == (linear_solver == "cg")


_AGAINST_HYBR = {
    "onefactor n=2": lambda: onefactor(n=2, seed=0),
    "onefactor n=300": lambda: onefactor(n=300, seed=7),
    "hard n=2": lambda: _hard(2, 2),
    "hard n=3": lambda: _hard(3, 1),
    "hard n=10": lambda: _hard(10, 0),
    "hard n=250": lambda: _hard(250, 5),
    "linear1d-p1": lambda: make_problem("linear1d-p1"),
    "gauss-p5": lambda: make_problem("gauss-p5"),
    "rbf alpha=0.1 beta=10": lambda: gauss2class(n_train=120, n_test=0, alpha=0.1, beta=10.0,
                                                 seed=3),
    "rbf beta=100": lambda: gauss2class(n_train=150, n_test=0, alpha=5.0, beta=100.0, seed=4),
    "rbf orthant": lambda: _rbf_orthant(200, 5),
}


@pytest.mark.parametrize("reorder", ["univariate", "none"])
@pytest.mark.parametrize("name", list(_AGAINST_HYBR))
def test_newton_finds_the_hybr_saddle_point(name, reorder):
    L = ordered_problem(_AGAINST_HYBR[name](), reorder).chol
    ref = solve_saddle_point_hybr(L)
    sp = solve_saddle_point(L)
    assert ref.converged and sp.converged and sp.residual <= 1e-10
    np.testing.assert_allclose(sp.mu, ref.mu, atol=1e-8)
    np.testing.assert_allclose(sp.x, ref.x, atol=1e-8)
    assert sp.mu[-1] == sp.x[-1] == 0.0
    assert sp.iterations <= 20 and sp.evaluations >= sp.iterations + 1


def test_cholesky_steps_reach_the_same_point():
    L = _hard(60, 9).chol
    a, b = solve_saddle_point(L), solve_saddle_point(L, linear_solver="cholesky")
    assert b.converged and b.cg_iterations == 0
    np.testing.assert_allclose(a.mu, b.mu, atol=1e-9)


def test_one_variable_and_an_iteration_cap():
    sp = solve_saddle_point(np.ones((1, 1)))
    assert sp.converged and sp.mu.tolist() == [0.0]
    capped = solve_saddle_point(_hard(40, 1).chol, max_iter=1)
    assert not capped.converged and capped.iterations == 1 and capped.residual > 1e-10
    d = capped.diagnostics()
    assert d["saddle_converged"] == 0 and d["saddle_residual"] == capped.residual
    with pytest.raises(ValueError, match="linear solver"):
        solve_saddle_point(_hard(5, 1).chol, linear_solver="qr")


class _ProductsOnly:
    """A factor that offers only the protocol's products and row blocks (as a tile-low-rank
    factor would)."""

    def __init__(self, L):
        self._L, self.n, self.diag = L, len(L), np.diag(L).copy()
        self.calls = 0

    def lower(self, v):
        self.calls += 1
        return self._L @ v

    def upper(self, u):
        self.calls += 1
        return self._L.T @ u

    def rows(self, i, j):
        return self._L[i:j, :j]


def test_any_factor_with_the_products_will_do():
    L = _hard(80, 4).chol
    factor = _ProductsOnly(L)
    sp = solve_saddle_point(factor)
    assert sp.converged and factor.calls > 0
    np.testing.assert_allclose(sp.mu, solve_saddle_point(L).mu, atol=1e-10)


# ---- nearly singular covariances (hard exact problems) --------------------------------------
def _near_singular(d: str, n: int = 10):
    return make_problem(f"onefactor:n={n},dmin={d},dmax={d},random_signs=true")


def test_truncated_mean_and_its_inverse_to_rounding():
    """G(r) = r + P(r) against 250-digit Laplace continued fractions on the left (where r + P
    cancels), and G⁻¹ back to a few eps from 1e-14 to 1e3."""
    t = np.array([3.5, 10.0, 49.0, 60.0, 1e3, 1e8])
    ref = np.array([_truncated_mean_left(v) for v in t])
    np.testing.assert_allclose(truncated_mean(-t), ref, rtol=2e-15)
    np.testing.assert_allclose(truncated_mean(np.array([0.0, 2.0])),
                               [np.sqrt(2 / np.pi), 2.0 + inverse_mills(np.array([2.0]))[0]],
                               rtol=1e-15)
    a = np.logspace(-14, 3, 300)
    np.testing.assert_allclose(truncated_mean(truncated_mean_inverse(a)), a, rtol=1e-14)


def test_profile_gradient_is_the_joint_gradient_at_the_inner_minimum():
    """At μ(x) = argmin_μ ψ(x; μ) the μ-equations hold and ∇φ is g_x (envelope theorem)."""
    L = _hard(12, 3).chol
    system = SaddleSystem(TriangularFactor(L))
    x = 0.5 * mean_path(system.factor)          # inside the cone: (L x)_j > 0, j < N
    prof = system.profile(x)
    g, mu = system.profile_gradient(x, prof)
    gx, gm, _ = system.gradient(x, mu)
    np.testing.assert_allclose(gm, 0.0, atol=1e-12)
    np.testing.assert_allclose(g, gx, atol=1e-12)
    h = 1e-6
    numeric = [(system.profile(x + h * e).value - system.profile(x - h * e).value) / (2 * h)
               for e in np.eye(12)[:11]]
    np.testing.assert_allclose(g[:11], numeric, atol=1e-6)
    assert system.profile(-x) is None            # outside the cone φ = -∞


@pytest.mark.filterwarnings("ignore::UserWarning")   # 1 - 1e-13: condition 5e13, warned
@pytest.mark.parametrize("d", ["0.999999999", "0.99999999995", "0.9999999999999"])
def test_newton_converges_on_nearly_singular_one_factor_covariances(d):
    """|d_i| = 1 - 1e-9 ... 1 - 1e-13, mixed signs: the previous solver (Newton on the joint
    equations, backtracking on |∇ψ|²) stopped after 100 steps at max |∇ψ| 129-307; the
    profile's Newton converges, its point inside the cone."""
    L = ordered_problem(_near_singular(d), "univariate").chol
    sp = solve_saddle_point(L)
    assert sp.converged and sp.decrement <= 1e-20 and sp.iterations <= 15
    assert np.all((L @ sp.x)[:-1] > 0)
    assert sp.mu[0] < -1e4                       # x_1 ~ 1e-6: the first variable's slab


def test_conjugate_gradients_stop_on_the_error_not_the_residual():
    """One unknown 1e15 times stiffer than the others and a right-hand side dominated by it
    (the nearly singular case at a point on the way): after one step |r| <= 0.1 |b|, yet
    bᵀx was 7e-11 of the 10.9 it should be; the energy-error estimate keeps going."""
    A = np.diag(np.concatenate([[9.2e14], np.arange(1.0, 9.0) * 10.0]))
    b = np.concatenate([[257.0], np.full(8, 1.0)])
    x, its = _cg(lambda v: A @ v, b, 0.1)
    exact = b @ np.linalg.solve(A, b)
    assert b @ x == pytest.approx(exact, rel=0.02) and its > 1
