"""The exact oracles at N = 10^4 and 10^5 (docs/math.md §3), against an independent rule.

The reference here shares nothing with harness.core.oracles but scipy's log_ndtr: its own Newton
iteration for the mode û and curvature H of g(u) = log φ_d(u) + Σ log Φ(a_i·u), and a tensor
*trapezoid* rule in the whitened variable z (u = û + C z, C Cᵀ = H⁻¹) on a uniform grid of step
h over [-T, T]^d. For an analytic integrand of unit width the trapezoid error is
O(exp(-2π²/h²)) (h = 0.3: e^-219) and the truncation error O(exp(-T²/2)); both are far below
the floor below.

The double-precision floor of log I, relative: each term log Φ(t_i) is computed to a few ulps
and its argument t_i = a_i·u carries a relative rounding ε, which moves log Φ(t) by
|t φ(t)/Φ(t)| ε ≤ 2|log Φ(t)| ε + O(ε) (t → -∞: log Φ ≈ -t²/2). All terms are ≤ 0, so the
sum Σ log Φ, of magnitude ≈ |log I|, is accurate to ~(4 + log₂ N) ε relative with pairwise
summation (N = 10^5: ~21 ε ≈ 5e-15); the quadrature weights add only an absolute O(ε).
The oracles stop at a relative difference of 1e-13 (one-factor) and 1e-11 (low-rank) between
successive rules; in practice they agree with the reference to ~1e-15. The tolerance below,
1e-12 relative, is 200 times the floor: a rule that loses one significant digit of log I
at N = 10^5 (an absolute error of 7e-8 nats) fails it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import log_ndtr, logsumexp

from harness.core import oracles
from harness.core.oracles import low_rank_integral, one_factor_integral

pytestmark = pytest.mark.usefixtures("one_blas_thread")

RTOL_LOG = 1e-12    # relative, in log I (see the module docstring)
ATOL_PROB = 1e-10   # absolute, test probabilities


def _mode(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Newton for the mode of g and the Cholesky factor of the inverse curvature there."""
    u = np.zeros(A.shape[1])
    for _ in range(100):
        t = A @ u
        m = np.exp(-0.5 * t**2 - 0.5 * math.log(2 * math.pi) - log_ndtr(t))
        H = np.eye(len(u)) + A.T @ (A * (m * (t + m))[:, None])
        step = np.linalg.solve(H, A.T @ m - u)
        u += step
        if np.max(np.abs(step)) < 1e-13:
            break
    return u, np.linalg.cholesky(np.linalg.inv(H))


def trapezoid(A, B=None, h: float = 0.3, half: float = 9.0, exact_sum: bool = False):
    """(log ∫ φ_d Π Φ(a_i·u) du, J*_j for the rows of B) by the whitened trapezoid rule."""
    A = np.atleast_2d(A)
    d = A.shape[1]
    mode, C = _mode(A)
    z = np.arange(-half, half + h / 2, h)
    Z = np.stack([g.ravel() for g in np.meshgrid(*([z] * d), indexing="ij")], axis=1)
    U = mode + Z @ C.T
    G = np.empty(len(U))
    for k in range(0, len(U), 64):   # 64 nodes at a time
        terms = log_ndtr(U[k : k + 64] @ A.T)
        G[k : k + 64] = ([math.fsum(r) for r in terms] if exact_sum else terms.sum(axis=1))
    G += -0.5 * np.sum(U**2, axis=1) - d * 0.5 * math.log(2 * math.pi)
    log_jac = float(np.sum(np.log(np.diag(C)))) + d * math.log(h)
    log_z = float(logsumexp(G)) + log_jac
    if B is None:
        return log_z, np.empty(0)
    log_num = logsumexp(G[None, :] + log_ndtr(np.atleast_2d(B) @ U.T), axis=1) + log_jac
    return log_z, np.exp(log_num - log_z)


def onefactor_slopes(n: int, seed: int = 1, lo: float = -0.99, hi: float = 0.99,
                     random_signs: bool = False) -> np.ndarray:
    """The slopes a_i = d_i / sqrt(1 - d_i²) of harness.datasets.onefactor (docs/math.md §3a)."""
    rng = np.random.default_rng(seed)
    d = rng.uniform(lo, hi, n)
    if random_signs:
        d *= rng.choice([-1.0, 1.0], n)
    return d / np.sqrt(1 - d**2)


def linear_slopes(n: int, d: int, beta: float, n_test: int = 6, seed: int = 0):
    """A = sqrt(β) y x and B = sqrt(β) x* for two Gaussian classes (datasets.linear_lowrank)."""
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, -1.0, 1.0)
    X = rng.standard_normal((n, d)) + y[:, None] * (1.0 / np.sqrt(d))
    Xs = rng.standard_normal((n_test, d)) * 1.5
    return np.sqrt(beta) * y[:, None] * X, np.sqrt(beta) * Xs


def _close(got: float, ref: float) -> None:
    assert abs(got - ref) <= RTOL_LOG * abs(ref), (got, ref, (got - ref) / abs(ref))


# ---- one-factor orthant (docs/math.md §3a) and linear kernel, one feature (§3b) ---------------
@pytest.mark.parametrize("n", [10_000, pytest.param(100_000, marks=pytest.mark.slow)])
@pytest.mark.parametrize("hard", [False, True], ids=["paper-range", "hard"])
def test_one_factor_log_integral_at_large_n(n, hard):
    a = (onefactor_slopes(n, lo=0.95, hi=0.999, random_signs=True) if hard
         else onefactor_slopes(n))
    res = one_factor_integral(a)
    ref, _ = trapezoid(a[:, None], h=0.2, half=12.0, exact_sum=True)
    assert hard or -0.75 * n < ref < -0.6 * n    # the paper's range: log I ≈ -0.7 N
    _close(res.log_integral, ref)


@pytest.mark.parametrize("n", [10_000, pytest.param(100_000, marks=pytest.mark.slow)])
def test_linear_one_feature_with_test_points_at_large_n(n):
    A, B = linear_slopes(n, 1, beta=4.0)
    res = one_factor_integral(A[:, 0], B[:, 0])
    ref, probs = trapezoid(A, B, h=0.2, half=12.0, exact_sum=True)
    _close(res.log_integral, ref)
    np.testing.assert_allclose(res.test_probabilities, probs, rtol=0, atol=ATOL_PROB)
    assert 0 < probs.min() < 0.3 and 0.7 < probs.max() < 1    # the test points discriminate


# ---- linear kernel, d = 1..3 features: Laplace-centred Gauss–Hermite (docs/math.md §3c) --------
@pytest.mark.parametrize(("n", "d", "beta"), [
    (10_000, 1, 1.0), (10_000, 2, 9.0),
    pytest.param(5_000, 3, 1.0, marks=pytest.mark.slow),
    pytest.param(10_000, 3, 9.0, marks=pytest.mark.slow),
    pytest.param(100_000, 1, 9.0, marks=pytest.mark.slow),
    pytest.param(100_000, 2, 1.0, marks=pytest.mark.slow),
])
def test_low_rank_at_large_n(n, d, beta):
    A, B = linear_slopes(n, d, beta)
    res = low_rank_integral(A, B)
    h, half = (0.3, 9.0) if d < 3 else (0.7, 7.0)
    ref, probs = trapezoid(A, B, h=h, half=half)
    _close(res.log_integral, ref)
    np.testing.assert_allclose(res.test_probabilities, probs, rtol=0, atol=ATOL_PROB)
    if d == 1:   # and the independent one-dimensional oracle
        _close(res.log_integral, one_factor_integral(A[:, 0]).log_integral)


def test_large_n_rules_fit_the_peak():
    """From N = 4096 on: the low-rank rule starts at 12^3 nodes for d = 3 (not 40^3), and the
    one-factor bracket is fitted to the peak's width (a few hundred nodes, not thousands)."""
    A, B = linear_slopes(5000, 3, 1.0)
    assert low_rank_integral(A, B).nodes == 12
    A, B = linear_slopes(20_000, 1, 9.0)
    assert one_factor_integral(A[:, 0], B[:, 0]).nodes <= 512


def test_low_rank_many_hermite_nodes_are_finite():
    """numpy 2.4's hermegauss gives NaN weights from ~372 nodes; the oracle must not."""
    A, B = linear_slopes(50, 1, 1.0)
    res = low_rank_integral(A, B, nodes=800)
    assert np.isfinite(res.log_integral) and np.all(np.isfinite(res.test_probabilities))
    _close(res.log_integral, one_factor_integral(A[:, 0]).log_integral)


def test_low_rank_non_finite_rule_raises(monkeypatch):
    """A rule that yields NaN is an error, never a returned truth."""
    def broken(nodes):
        return np.linspace(-3, 3, nodes), np.full(nodes, np.nan)

    monkeypatch.setattr(oracles, "_hermite_log", broken)
    A, B = linear_slopes(50, 2, 1.0)
    with pytest.raises(ArithmeticError, match="non-finite"):
        low_rank_integral(A, B)


def test_one_factor_block_size_bounds_memory_and_keeps_values(monkeypatch):
    """The node blocks shrink with N (memory ~ _BLOCK, not nodes × N) without changing g."""
    a = onefactor_slopes(3000)
    u = np.linspace(-0.2, 0.2, 50)
    whole = oracles._log_integrand(a, u)
    monkeypatch.setattr(oracles, "_BLOCK", 3000 * 7)
    assert oracles._rows(len(a)) == 7
    np.testing.assert_array_equal(oracles._log_integrand(a, u), whole)
