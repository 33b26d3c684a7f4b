"""The exact oracles (harness/core/oracles.py) against closed forms, brute force and limits.

one_factor_integral(a, b) = log ∫ φ(u) ∏ Φ(a_i u) du (and J*_j for the slopes b_j) is the ground
truth of every exact problem family, so it is checked against answers that do not use it:
the N = 1, 2, 3 orthant closed forms (docs/math.md §2), brute-force Monte Carlo, and limits.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from threadpoolctl import threadpool_limits

from harness.core.oracles import one_factor_integral

pytestmark = pytest.mark.usefixtures("one_blas_thread")


TWO_PI = 2.0 * np.pi


# ---- closed forms (docs/math.md §2) -----------------------------------------------------------
def orthant_2(r):
    """P(v1 >= 0, v2 >= 0) for unit variances and correlation r."""
    return 0.25 + np.arcsin(r) / TWO_PI


def orthant_3(r12, r13, r23):
    return 0.125 + (np.arcsin(r12) + np.arcsin(r13) + np.arcsin(r23)) / (2.0 * TWO_PI)


def correlations(S):
    s = np.sqrt(np.diag(S))
    return S / np.outer(s, s)


def slopes(d):
    """One-factor slopes a_i = d_i / sqrt(1 - d_i^2) of R_ij = d_i d_j (docs/math.md §3a)."""
    d = np.asarray(d, float)
    return d / np.sqrt(1.0 - d**2)


def one_factor_cov(d):
    R = np.outer(d, d)
    R[np.diag_indices_from(R)] = 1.0
    return R


def random_d(rng, n, limit):
    return rng.uniform(-limit, limit, size=n)


LIMITS = [0.5, 0.99, 0.9999, 0.999999]  # |d| close to 1: slopes up to ~700


# ---- N = 1 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("a", [0.0, 1e-12, 0.3, -0.3, 2.0, -7.0, 50.0, -1e4, 1e8])
def test_n1_is_one_half(a):
    res = one_factor_integral([a])
    assert abs(np.exp(res.log_integral) - 0.5) < 1e-9
    assert abs(res.log_integral + np.log(2.0)) < 1e-9
    assert res.test_probabilities.shape == (0,)


# ---- N = 2 and N = 3 -----------------------------------------------------------------------
@pytest.mark.parametrize("limit", LIMITS)
def test_n2_matches_arcsine_formula(limit):
    rng = np.random.default_rng(int(1e6 * limit))
    for _ in range(20):
        d = random_d(rng, 2, limit)
        exact = orthant_2(d[0] * d[1])
        res = one_factor_integral(slopes(d))
        assert abs(np.exp(res.log_integral) - exact) < 1e-9
        # relative accuracy too (P can be ~1e-5 for strongly anti-correlated pairs)
        assert abs(res.log_integral - np.log(exact)) < 1e-9


@pytest.mark.parametrize("limit", LIMITS)
def test_n3_matches_arcsine_formula(limit):
    rng = np.random.default_rng(7 + int(1e6 * limit))
    for _ in range(20):
        d = random_d(rng, 3, limit)
        exact = orthant_3(d[0] * d[1], d[0] * d[2], d[1] * d[2])
        res = one_factor_integral(slopes(d))
        assert abs(np.exp(res.log_integral) - exact) < 1e-9
        assert abs(res.log_integral - np.log(exact)) < 1e-9


def test_n2_known_value():
    # d = (0.6, 0.8): rho = 0.48, P = 1/4 + asin(0.48)/(2 pi) = 0.3296817...
    res = one_factor_integral([0.75, 4.0 / 3.0])
    assert abs(np.exp(res.log_integral) - (0.25 + np.arcsin(0.48) / TWO_PI)) < 1e-12
    assert abs(np.exp(res.log_integral) - 0.3296817) < 1e-7


# ---- test probabilities: J* = P3 / P2 for the linear kernel --------------------------------
def linear_joint_cov(x, y, x_star, scale=1.0):
    """[[C(K+I)C, C k*], [k*^T C, 1 + k**]] with K = scale x x^T, C = diag(y) (docs/math.md §2)."""
    K = scale * np.outer(x, x)
    C = np.diag(y)
    k_star = scale * x * x_star
    top = np.hstack([C @ (K + np.eye(len(x))) @ C, (C @ k_star)[:, None]])
    bottom = np.hstack([(C @ k_star)[None, :], [[1.0 + scale * x_star**2]]])
    return np.vstack([top, bottom])


@pytest.mark.parametrize("scale", [1.0, 0.3, 4.0])
def test_test_probability_is_ratio_of_closed_forms(scale):
    rng = np.random.default_rng(11)
    for _ in range(25):
        x = rng.normal(0.5, 1.5, size=2)
        y = rng.choice([-1.0, 1.0], size=2)
        x_star = rng.normal(0.0, 2.0)
        rho = correlations(linear_joint_cov(x, y, x_star, scale))
        p2 = orthant_2(rho[0, 1])
        p3 = orthant_3(rho[0, 1], rho[0, 2], rho[1, 2])
        root = np.sqrt(scale)
        res = one_factor_integral(root * y * x, [root * x_star])
        assert abs(np.exp(res.log_integral) - p2) < 1e-9
        assert res.test_probabilities.shape == (1,)
        assert abs(res.test_probabilities[0] - p3 / p2) < 1e-9


def test_several_test_points_at_once_match_one_at_a_time():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=2), np.array([1.0, -1.0])
    xs = np.array([-3.0, -0.2, 0.0, 0.7, 2.5])
    together = one_factor_integral(y * x, xs).test_probabilities
    for j, x_star in enumerate(xs):
        rho = correlations(linear_joint_cov(x, y, x_star))
        exact = orthant_3(rho[0, 1], rho[0, 2], rho[1, 2]) / orthant_2(rho[0, 1])
        assert abs(together[j] - exact) < 1e-9
    assert abs(together[2] - 0.5) < 1e-12  # x* = 0: Φ(0) = 1/2 whatever the data


def test_test_probability_symmetry_and_range():
    """Φ(-b u) = 1 - Φ(b u), so J*(-b) = 1 - J*(b); every J* lies in [0, 1]."""
    rng = np.random.default_rng(8)
    a = rng.normal(0.3, 1.0, size=60)
    b = rng.normal(0.0, 3.0, size=15)
    res = one_factor_integral(a, np.concatenate([b, -b]))
    p, q = res.test_probabilities[:15], res.test_probabilities[15:]
    assert np.all((res.test_probabilities >= 0) & (res.test_probabilities <= 1))
    np.testing.assert_allclose(p + q, 1.0, atol=1e-10)


def test_reflection_invariance():
    """u -> -u: the integral for -a equals the one for a."""
    rng = np.random.default_rng(9)
    a = rng.normal(0.5, 2.0, size=200)
    assert abs(one_factor_integral(a).log_integral
               - one_factor_integral(-a).log_integral) < 1e-10


# ---- brute-force Monte Carlo ---------------------------------------------------------------
def mc_orthant(S, n_train, draws, rng, chunk=250_000):
    """Brute force with v ~ N(0, S) drawn through a Cholesky factor of S: the number of draws
    with v_i >= 0 for all i < n_train, and the number of those that also have v_N >= 0."""
    L = scipy.linalg.cholesky(S, lower=True)
    hits_train = hits_both = 0
    done = 0
    while done < draws:
        m = min(chunk, draws - done)
        with threadpool_limits(1):  # threaded BLAS on a 6-column product only adds overhead
            v = rng.standard_normal((m, len(S))) @ L.T
        ok = np.all(v[:, :n_train] >= 0, axis=1)
        hits_train += int(ok.sum())
        hits_both += int((ok & (v[:, -1] >= 0)).sum())
        done += m
    return hits_train, hits_both


def test_monte_carlo_one_factor_n6():
    rng = np.random.default_rng(2024)
    d = np.array([0.9, -0.4, 0.7, 0.2, 0.6, -0.1])
    exact = np.exp(one_factor_integral(slopes(d)).log_integral)
    draws = 2_000_000
    hits, _ = mc_orthant(one_factor_cov(d), 6, draws, rng)
    se = np.sqrt(exact * (1 - exact) / draws)
    assert exact > 0.01  # a meaningful test: tens of thousands of hits
    assert abs(hits / draws - exact) < 4 * se


def test_monte_carlo_linear_kernel_with_test_point():
    rng = np.random.default_rng(99)
    x = np.array([0.3, -1.1, 0.8, 1.6, -0.2])
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    x_star = 0.9
    res = one_factor_integral(y * x, [x_star])
    z, j_star = np.exp(res.log_integral), res.test_probabilities[0]
    draws = 1_000_000
    hits, hits_both = mc_orthant(linear_joint_cov(x, y, x_star), 5, draws, rng)
    assert abs(hits / draws - z) < 4 * np.sqrt(z * (1 - z) / draws)
    assert abs(hits_both / hits - j_star) < 4 * np.sqrt(j_star * (1 - j_star) / hits)


# ---- limits and large N --------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 10, 200])
def test_vanishing_slopes_give_two_to_minus_n(n):
    rng = np.random.default_rng(n)
    for a in (np.zeros(n), 1e-10 * rng.normal(size=n)):
        res = one_factor_integral(a, [0.0, 1.5, -4.0])
        assert abs(res.log_integral + n * np.log(2.0)) < 1e-9 * max(1.0, n * np.log(2.0))
        # a -> 0: the training data carry no information, so J* = ∫ φ Φ(b u) = 1/2
        np.testing.assert_allclose(res.test_probabilities, 0.5, atol=1e-9)


def test_alpha_to_zero_like_limit_with_small_slopes():
    # slopes 1e-6: log P = -N log 2 + O(N a^2) ~ 1e-10 away
    n = 50
    res = one_factor_integral(np.full(n, 1e-6))
    assert abs(res.log_integral + n * np.log(2.0)) < 1e-8


@pytest.mark.parametrize("limit,random_signs", [(0.99, False), (0.999, True)])
def test_large_n_is_finite_and_stable_under_more_nodes(limit, random_signs):
    rng = np.random.default_rng(2000)
    n = 2000
    d = rng.uniform(0.95 if random_signs else -limit, limit, size=n)
    if random_signs:
        d *= rng.choice([-1.0, 1.0], size=n)
    a = slopes(d)
    b = np.array([-1.0, 0.3, 2.0])
    base = one_factor_integral(a, b)
    finer = one_factor_integral(a, b, start_nodes=64)
    assert np.isfinite(base.log_integral)
    # much smaller than 1 (thousands of factors) but far above -N log(huge)
    assert -n * 10 < base.log_integral < -100
    assert abs(finer.log_integral - base.log_integral) <= 1e-10 * abs(base.log_integral)
    np.testing.assert_allclose(finer.test_probabilities, base.test_probabilities, atol=1e-10)
    assert base.error_estimate <= 1e-8


def test_result_fields():
    res = one_factor_integral([0.5, -0.2, 1.0], [0.1, -0.1])
    assert isinstance(res.log_integral, float)
    assert res.nodes > 0
    assert 0 <= res.error_estimate <= 1e-8
    assert res.test_probabilities.shape == (2,)


@pytest.mark.parametrize("a,b", [([1.0, np.nan], None), ([1.0, np.inf], None),
                                 ([1.0, 2.0], [np.nan])])
def test_non_finite_slopes_are_rejected(a, b):
    with pytest.raises(ValueError):
        one_factor_integral(a, b)
