"""The walk and the saddle-point operator on a tile-low-rank factor against the dense ones."""

from __future__ import annotations

import numpy as np
import pytest
from test_sequential import RecordingStep

from harness.core.saddle_point import TriangularFactor, mean_path, solve_saddle_point
from harness.core.sequential import CholeskyWalk
from harness.core.tlr import tlr_cholesky
from harness.core.tlr_ops import TileLowRankOperator, TileLowRankWalk
from harness.datasets.gauss2class import gauss2class
from harness.datasets.markov1d import markov1d


def _exact_tiles(problem, tile, reorder="none"):
    """The tile-low-rank factor at tolerance 0 (the exact factor up to rounding) and its dense L."""
    f = tlr_cholesky(problem.cov, tile, 0.0, reorder)
    return f, f.to_dense()[0]


@pytest.mark.parametrize("mode", ["sparse", "full"])
def test_resampling_walk_matches_the_dense_walk(mode):
    """Resampling permutes the projections H with the particles: the same draws, weights-free
    steps and resamplings give the dense walk's history and test means."""
    problem = gauss2class(n_train=70, n_test=9, d=2)
    f, L = _exact_tiles(problem, 11)
    n = 32
    a, b = RecordingStep(n, mode, 3), RecordingStep(n, mode, 3)
    dense = CholeskyWalk(L, 11).run(n, a)
    walk = TileLowRankWalk(f)
    tiled = walk.run(n, b)
    for ta, tb in zip(a.ts, b.ts, strict=True):
        np.testing.assert_allclose(tb, ta, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(tiled.Z, dense.Z, atol=1e-9)
    np.testing.assert_array_equal(tiled.lineage, dense.lineage)
    W = f.to_dense()[1]
    np.testing.assert_allclose(walk.test_means(slice(0, 9)), dense.Z @ W, atol=1e-9)


def test_operator_products_and_mean_path_are_the_dense_ones():
    problem = markov1d(n_train=150, n_test=0, rho=0.9, seed=2)
    f, L = _exact_tiles(problem, 16, "block")
    op, ref = TileLowRankOperator(f), TriangularFactor(L)
    v = np.random.default_rng(0).standard_normal(150)
    np.testing.assert_allclose(op.lower(v), L @ v, atol=1e-12)
    np.testing.assert_allclose(op.upper(v), L.T @ v, atol=1e-12)
    np.testing.assert_allclose(op.diag, np.diag(L), rtol=0, atol=0)
    np.testing.assert_allclose(mean_path(op), mean_path(ref), atol=1e-12)


def test_saddle_point_on_tiles_is_the_dense_one():
    problem = gauss2class(n_train=300, n_test=0, d=2, alpha=0.5)
    f, L = _exact_tiles(problem, 20)
    a = solve_saddle_point(L)
    b = solve_saddle_point(TileLowRankOperator(f))
    assert a.converged and b.converged
    np.testing.assert_allclose(b.mu, a.mu, atol=1e-8)
    np.testing.assert_allclose(b.x, a.x, atol=1e-8)
