"""Univariate and block reordering while factorising (harness.core.reorder)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, ndtr
from scipy.stats import norm

from harness.core.reorder import mills, pivoted_cholesky
from harness.datasets.linear1d import linear1d
from harness.model.ordered import ordered_problem


def _random_orthant_cov(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    R = A @ A.T / n + 0.5 * np.eye(n)
    s = np.sqrt(np.diag(R))
    return R / np.outer(s, s) * rng.uniform(0.5, 2.0)


def naive_univariate_order(R):
    """Gibson–Glasbey–Elston, one variable at a time with dense solves (slow, obvious)."""
    N = len(R)
    placed, y = [], []
    for _ in range(N):
        best, best_t = None, np.inf
        for j in range(N):
            if j in placed:
                continue
            if placed:
                Lpp = np.linalg.cholesky(R[np.ix_(placed, placed)])
                lj = np.linalg.solve(Lpp, R[placed, j])
                m, s2 = lj @ np.array(y), R[j, j] - lj @ lj
            else:
                m, s2 = 0.0, R[j, j]
            t = m / np.sqrt(s2)
            if t < best_t - 1e-12:
                best, best_t = j, t
        placed.append(best)
        y.append(norm.pdf(best_t) / ndtr(best_t))
    return np.array(placed)


@pytest.mark.parametrize("panel", [1, 3, 64])
def test_univariate_order_matches_the_naive_rule(panel):
    R = _random_orthant_cov(14, 1)
    ro = pivoted_cholesky(R, "univariate", panel=panel)
    np.testing.assert_array_equal(ro.order, naive_univariate_order(R))
    P = R[np.ix_(ro.order, ro.order)]
    np.testing.assert_allclose(ro.chol @ ro.chol.T, P, atol=1e-12)
    assert np.allclose(np.triu(ro.chol, 1), 0) and np.all(np.diag(ro.chol) > 0)


@pytest.mark.parametrize("tile", [1, 4, 5, 23])
def test_block_order_keeps_tiles_contiguous(tile):
    R = _random_orthant_cov(23, 2)
    ro = pivoted_cholesky(R, "block", tile)
    np.testing.assert_allclose(ro.chol @ ro.chol.T, R[np.ix_(ro.order, ro.order)], atol=1e-12)
    for p0 in range(0, 23, tile):
        got = ro.order[p0 : p0 + tile] // tile
        assert len(set(got.tolist())) == 1, ro.order   # one original tile per position tile
    assert sorted(ro.order.tolist()) == list(range(23))
    if tile == 1:
        np.testing.assert_array_equal(ro.order, pivoted_cholesky(R).order)


def test_mills_ratio_is_accurate_in_the_tails():
    t = np.array([-40.0, -5.0, 0.0, 3.0, 40.0])
    direct = norm.pdf(t[1:4]) / ndtr(t[1:4])
    np.testing.assert_allclose(mills(t[1:4]), direct, rtol=1e-12)
    assert mills(np.array([-40.0]))[0] == pytest.approx(40.0 + 1 / 40, rel=1e-3)
    assert mills(np.array([40.0]))[0] < 1e-300
    assert np.all(np.isfinite(log_ndtr(t)))


def test_not_positive_definite_raises():
    R = np.ones((3, 3))
    R[0, 1] = R[1, 0] = 1.5
    with pytest.raises(np.linalg.LinAlgError):
        pivoted_cholesky(R)


def test_ordered_problem_keeps_test_variables_last_and_is_cached():
    p = linear1d(n_train=40, n_test=6, seed=3)
    op = ordered_problem(p, "univariate")
    assert op is ordered_problem(p, "univariate")
    R = p.R[np.ix_(op.order, op.order)]
    np.testing.assert_allclose(op.chol @ op.chol.T, R, atol=1e-12)
    np.testing.assert_allclose(op.chol @ op.test_rows, p.test_cross[op.order], atol=1e-12)
    np.testing.assert_allclose(op.test_sd, p.test_sd, rtol=1e-10)   # order-independent
    none = ordered_problem(p, "none")
    assert none.chol is p.chol and np.array_equal(none.order, np.arange(40))


def test_kdtree_order_is_factorised_from_the_representation():
    """The reordered factor and test rows from cov.block / cov.cross, without a dense R."""
    import scipy.linalg

    from harness.datasets.gauss2class import gauss2class

    problem = gauss2class(n_train=150, n_test=7, d=2, alpha=0.5, seed=2)
    op = ordered_problem(problem, "kdtree", 32)
    assert "R" not in problem.__dict__ and "chol" not in problem.__dict__
    order = op.order
    assert sorted(order) == list(range(150)) and not np.array_equal(order, np.arange(150))
    R = problem.R[np.ix_(order, order)]
    np.testing.assert_allclose(op.chol, np.linalg.cholesky(R), rtol=1e-10, atol=1e-12)
    W = scipy.linalg.solve_triangular(op.chol, problem.test_cross[order], lower=True)
    np.testing.assert_allclose(op.test_rows, W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(op.test_sd, problem.test_sd, rtol=1e-10)   # order-free pivots
