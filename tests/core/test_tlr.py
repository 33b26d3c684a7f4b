"""The tile-low-rank Cholesky (harness.core.tlr) against the dense factor at small N."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from harness.core.covariance import (
    DenseCovariance,
    KernelCovariance,
    LowRankCovariance,
    OneFactorCovariance,
)
from harness.core.kernels import RBF, Linear
from harness.core.memory import peak_memory
from harness.core.reorder import kdtree_order, pivoted_cholesky
from harness.core.tlr import compress_tile, compress_tiles, tlr_cholesky

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _onefactor(n, seed):
    return OneFactorCovariance(np.random.default_rng(seed).uniform(-0.99, 0.99, n))


def _rbf(n, n_test, seed):
    rng = np.random.default_rng(seed)
    X, Xs = rng.uniform(size=(n, 2)), rng.uniform(size=(n_test, 2))
    y = np.where(X[:, 0] + 0.2 * rng.standard_normal(n) > 0.5, 1.0, -1.0)
    return KernelCovariance(RBF(alpha=0.02, beta=1.0), X, y, Xs), X


def _linear(n, n_test, seed):
    rng = np.random.default_rng(seed)
    X, Xs = rng.standard_normal((n, 3)), rng.standard_normal((n_test, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    return LowRankCovariance(Linear(scale=2.0), X, y, Xs)


def _random_spd(n, n_test, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n + n_test, n + n_test + 5))
    S = A @ A.T / n + 0.1 * np.eye(n + n_test)
    return DenseCovariance(S[:n, :n], S[:n, n:], np.diag(S)[n:].copy())


def _cases():
    rbf, X = _rbf(600, 40, 1)
    return {
        "onefactor": (_onefactor(500, 2), 32, None),
        "rbf-kdtree": (rbf, 24, kdtree_order(X, 24)),
        "linear": (_linear(430, 50, 3), 32, None),
        "random-spd": (_random_spd(300, 20, 4), 16, None),
    }


CASES = _cases()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("tolerance", [0.0, 1e-6, 1e-3])
def test_factor_against_the_dense_cholesky(case, tolerance):
    """Tile by tile: L~ L~^T - R has zero diagonal tiles and off-diagonal tiles within
    tau |L~_cc|_2 (the backward error of harness.core.tlr), the same for the test rows; and
    |L - L~|_F within the first-order perturbation bound |L|_2 |L^{-1}|_2^2 |Delta|_F (x2)."""
    cov, tile, order = CASES[case]
    f = tlr_cholesky(cov, tile, tolerance, order=order)
    perm = np.arange(cov.n) if order is None else order
    assert np.array_equal(f.order, perm)
    R = cov.dense()[np.ix_(perm, perm)]
    B = cov.dense_cross()[perm]
    Lt, Wt = f.to_dense()
    tau = tolerance * np.sqrt(cov.diag().max())
    rounding = 1e-11 * np.abs(R).max()
    bounds = np.concatenate([[0], np.cumsum([len(D) for D in f.diag])])
    delta = Lt @ Lt.T - R
    delta_test = Lt @ Wt - B
    total2 = 0.0
    for c in range(f.n_tiles):
        cols = slice(bounds[c], bounds[c + 1])
        bound = tau * np.linalg.norm(f.diag[c], 2) + rounding
        assert np.abs(delta[cols, cols]).max() <= rounding
        for i in range(c + 1, f.n_tiles):
            rows = slice(bounds[i], bounds[i + 1])
            assert np.linalg.norm(delta[rows, cols]) <= bound, (i, c)
            total2 += 2 * bound**2
        for t0 in range(0, cov.n_test, tile):
            block = delta_test[cols, t0 : t0 + tile]
            assert np.linalg.norm(block) <= bound, (t0, c)
    L = np.linalg.cholesky(R)
    Linv = scipy.linalg.solve_triangular(L, np.eye(len(L)), lower=True)
    forward = 2 * np.linalg.norm(L, 2) * np.linalg.norm(Linv, 2) ** 2 * np.sqrt(total2)
    assert np.linalg.norm(L - Lt) <= forward + 1e-9
    if cov.n_test:
        W = scipy.linalg.solve_triangular(L, B, lower=True)
        assert np.linalg.norm(W - Wt) <= 2 * forward + 1e-9
        sd = np.sqrt(cov.test_diag() - np.sum(W * W, axis=0))
        np.testing.assert_allclose(f.test_sd, sd, rtol=1e-9 + 10 * forward)
    if tolerance == 1e-6 and case == "onefactor":
        assert f.ranks.max() == 1
    if tolerance == 1e-6 and case == "rbf-kdtree":
        assert f.ranks.mean() < 0.6 * tile        # spatially compact tiles: low rank


@pytest.mark.parametrize("n, tile", [(310, 20), (256, 32)])
def test_block_order_equals_pivoted_cholesky(n, tile):
    """With tolerance 0 the block reordering inside the factorisation is pivoted_cholesky's."""
    for cov in (_onefactor(n, n), _random_spd(n, 0, n)):
        f = tlr_cholesky(cov, tile, 0.0, reorder="block")
        ro = pivoted_cholesky(cov.dense(), "block", tile)
        assert np.array_equal(f.order, ro.order)
        L, _ = f.to_dense()
        np.testing.assert_allclose(L, ro.chol, atol=1e-10)
        assert f.order_kind == f"block{tile}"


def test_block_order_keeps_test_rows_last():
    cov = _random_spd(200, 30, 7)
    f = tlr_cholesky(cov, 16, 0.0, reorder="block")
    o = f.order
    R, B = cov.dense()[np.ix_(o, o)], cov.dense_cross()[o]
    L = np.linalg.cholesky(R)
    Lt, Wt = f.to_dense()
    np.testing.assert_allclose(Lt, L, atol=1e-10)
    np.testing.assert_allclose(Wt, scipy.linalg.solve_triangular(L, B, lower=True), atol=1e-10)


@pytest.mark.parametrize("threshold", [0.0, 1e-8, 1e-2, 1.0])
def test_batched_compression_matches_the_qr(threshold):
    rng = np.random.default_rng(0)
    A = np.stack([rng.standard_normal((20, k)) @ rng.standard_normal((k, 16)) * 0.3
                  + 1e-6 * rng.standard_normal((20, 16)) for k in (0, 1, 3, 8, 16)])
    ranks, U, V = compress_tiles(A.copy(), threshold)
    for a in range(len(A)):
        uv = compress_tile(A[a], threshold)
        assert ranks[a] == (0 if uv is None else uv[0].shape[1])
        err = np.linalg.norm(A[a] - U[a] @ V[a].T)
        assert err <= max(threshold, 1e-12 * np.linalg.norm(A[a]))


def test_not_positive_definite_is_an_error():
    R = np.eye(40)
    R[30, 31] = R[31, 30] = 1.5
    with pytest.raises(np.linalg.LinAlgError):
        tlr_cholesky(DenseCovariance(R), 8, 1e-8)


def test_no_dense_matrix_is_allocated():
    """N = 8192 one-factor: the factorisation's peak is far below the 8 N^2 = 512 MiB of R."""
    N = 8192
    cov = _onefactor(N, 0)
    with peak_memory() as peak:
        f = tlr_cholesky(cov, 91, 1e-8)
    assert f.ranks.max() == 1
    assert peak.mb < 0.1 * 8 * N * N / 2**20
    assert f.workspace_bytes < 0.1 * 8 * N * N
