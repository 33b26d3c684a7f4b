"""The Vecchia structure (harness.core.vecchia): orders, neighbours, the sparse factor."""

from __future__ import annotations

import numpy as np
import pytest
from test_sequential import EnteringStep, RecordingStep, naive_walk

from harness.core import vecchia as vc
from harness.core.covariance import DenseCovariance, OneFactorCovariance
from harness.core.saddle_point import TriangularFactor, mean_path, solve_saddle_point


def _points(n, d, seed):
    return np.random.default_rng(seed).uniform(size=(n, d))


def _dense_factor(R, m):
    """VecchiaFactor of R (given order, m most correlated earlier neighbours) and the dense L."""
    n = len(R)
    cov = DenseCovariance(R)
    order = np.arange(n)
    nbrs = vc.correlation_neighbours(cov, order, m)
    count = np.minimum(order, m)

    def blocks(i, c):
        return R[np.ix_(c, c)], R[c, i]

    f = vc.VecchiaFactor(vc.conditionals(blocks, np.diag(R).copy(), nbrs, count))
    return f, np.column_stack([f.lower(e) for e in np.eye(n)])


def _spd(n, seed):
    A = np.random.default_rng(seed).standard_normal((n, n))
    return A @ A.T / n + 0.3 * np.eye(n)


@pytest.mark.parametrize("d", [1, 2])
def test_maximin_order_takes_the_farthest_point_each_time(d):
    X = _points(300, d, 1)
    order = vc.maximin_order(X)
    assert sorted(order) == list(range(300))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    for k in range(1, 300):
        dist = D[np.ix_(order[:k], order[k:])].min(axis=0)
        assert dist[0] == pytest.approx(dist.max(), rel=1e-12), k


def test_ordered_neighbours_are_the_nearest_earlier_points():
    X = _points(400, 2, 2)[vc.maximin_order(_points(400, 2, 2))]
    m = 7
    nbrs = vc.ordered_neighbours(X, m)
    for i in range(1, 400):
        d = ((X[:i] - X[i]) ** 2).sum(-1)
        k = min(i, m)
        assert np.allclose(np.sort(d[nbrs[i, :k]]), np.sort(d)[:k]), i


def test_correlation_neighbours_and_order():
    R = _spd(60, 3)
    cov = DenseCovariance(R)
    order = vc.correlation_maximin_order(cov)
    assert sorted(order) == list(range(60))
    rho = np.abs(R / np.sqrt(np.outer(np.diag(R), np.diag(R))))
    # each next variable has the smallest largest |ρ| to the ordered ones
    for k in range(1, 59):
        closest = rho[np.ix_(order[:k], order[k:])].max(axis=0)
        assert closest[0] == pytest.approx(closest.min(), rel=1e-12)
    nbrs = vc.correlation_neighbours(cov, order, 5)
    for i in range(5, 60):
        r = rho[order[i], order[:i]]
        assert np.allclose(np.sort(r[nbrs[i]]), np.sort(r)[-5:])


def test_all_earlier_neighbours_give_the_cholesky_factor():
    R = _spd(40, 4)
    f, L = _dense_factor(R, 39)
    np.testing.assert_allclose(L, np.linalg.cholesky(R), atol=1e-12)
    u = np.random.default_rng(0).standard_normal(40)
    np.testing.assert_allclose(f.upper(u), L.T @ u, atol=1e-12)
    np.testing.assert_allclose(mean_path(f), mean_path(TriangularFactor(L)), atol=1e-12)


def test_few_neighbours_give_a_sparse_inverse_factor():
    """L⁻¹ = D^{-1/2} U has at most m + 1 non-zeros per row, and Lᵀ is L's transpose."""
    R = OneFactorCovariance(np.linspace(-0.9, 0.9, 30)).dense()
    f, L = _dense_factor(R, 3)
    Linv = np.linalg.inv(L)
    assert np.all(np.count_nonzero(np.abs(Linv) > 1e-12, axis=1) <= 4)
    u = np.random.default_rng(1).standard_normal(30)
    np.testing.assert_allclose(f.upper(u), L.T @ u, atol=1e-10)
    sp = solve_saddle_point(f)
    assert sp.converged and np.allclose(sp.mu, solve_saddle_point(L).mu, atol=1e-7)


def test_strongest_order_puts_the_largest_loadings_first():
    d = np.random.default_rng(5).uniform(-0.95, 0.95, 50)
    order = vc.strongest_order(OneFactorCovariance(d))
    assert np.all(np.diff(np.abs(d[order])) <= 0)


@pytest.mark.parametrize("mode", ["none", "sparse", "full"])
@pytest.mark.parametrize("block", [1, 3, 7, 23])
def test_the_blocked_vecchia_walk_is_the_walk_on_its_dense_factor(mode, block):
    """In blocks, resampling or not, the Vecchia walk gives every variable the t of the walk
    on the dense L = U^{-1} D^{1/2}, and its final v's of the `keep` variables are that walk's
    Z Lᵀ (the rows of the others are reused: not in the result)."""
    R = _spd(23, 5)
    f, L = _dense_factor(R, 4)
    keep = np.array([2, 9, 22])
    n = 40
    fast, slow = EnteringStep(n, mode, 7), RecordingStep(n, mode, 7)
    walk = vc.VecchiaWalk(f.cond, block, keep)
    result = walk.run(n, fast)
    Z, lineage = naive_walk(L, n, slow)
    for a, b in zip(fast.ts, slow.ts, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(result.lineage, lineage)
    assert np.flatnonzero(result.columns >= 0).tolist() == keep.tolist()
    np.testing.assert_allclose(result.Z[:, result.columns[keep]], (Z @ L.T)[:, keep],
                               rtol=1e-10, atol=1e-10)
    for i0, i1, _, D in fast.blocks:     # the walk's diagonal block is L's
        np.testing.assert_allclose(D, L[i0:i1, i0:i1], atol=1e-12)


def test_the_vecchia_walk_holds_only_the_rows_still_read():
    """On a banded (markov) structure with m = 2 in blocks of 8, the history needs the last
    two variables before a block and the kept one, 3 rows, not 60; with blocks of one, 3 too
    (a variable is read by the next two)."""
    n_vars = 60
    R = 0.8 ** np.abs(np.subtract.outer(np.arange(n_vars), np.arange(n_vars)))
    f, L = _dense_factor(R, 2)
    assert sorted(f.cond.idx[5, :2].tolist()) == [3, 4]
    for block in (8, 1):
        walk = vc.VecchiaWalk(f.cond, block, keep=np.array([10]))
        assert walk.history_rows == 3
        step = RecordingStep(30, "full", 2)
        result = walk.run(30, step)
        Z, _ = naive_walk(L, 30, RecordingStep(30, "full", 2))
        np.testing.assert_allclose(result.Z[:, result.columns[10]], (Z @ L.T)[:, 10],
                                   atol=1e-10)
