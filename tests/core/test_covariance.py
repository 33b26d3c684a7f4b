"""Covariance representations (harness/core/covariance.py) against dense references at small N."""

from __future__ import annotations

import numpy as np
import pytest

import harness.core.covariance as covariance
from harness.core.covariance import (
    DenseCovariance,
    KernelCovariance,
    LowRankCovariance,
    OneFactorCovariance,
)
from harness.core.errors import InputError
from harness.core.kernels import PRML, RBF, Linear

pytestmark = pytest.mark.usefixtures("one_blas_thread")

N, N_TEST = 13, 4


def kernel_reference(kernel, X, y, Xs):
    """R = C (K + I) C, B = C K(X, X*), 1 + k(x*, x*), written out with dense matrices."""
    C = np.diag(y)
    K = np.array([[kernel(a[None], b[None])[0, 0] for b in X] for a in X])
    Ks = np.array([[kernel(a[None], b[None])[0, 0] for b in Xs] for a in X])
    kss = np.array([kernel(b[None], b[None])[0, 0] for b in Xs])
    return C @ (K + np.eye(len(X))) @ C, C @ Ks, 1.0 + kss


def cases():
    """(representation, R, B, test variances) for every class."""
    rng = np.random.default_rng(1)
    X, Xs = rng.normal(size=(N, 2)), rng.normal(size=(N_TEST, 2))
    y = rng.choice([-1.0, 1.0], size=N)
    d = rng.uniform(-0.99, 0.99, size=N)
    R1 = np.eye(N)
    R1[~np.eye(N, dtype=bool)] = np.outer(d, d)[~np.eye(N, dtype=bool)]
    A = rng.normal(size=(N, N))
    S = A @ A.T + N * np.eye(N)
    B = rng.normal(size=(N, N_TEST))
    tv = 1.0 + rng.uniform(size=N_TEST)
    out = {
        "dense": (DenseCovariance(S, B, tv), S, B, tv),
        "one-factor": (OneFactorCovariance(d), R1, np.empty((N, 0)), np.empty(0)),
    }
    for label, kernel in (("rbf", RBF(2.0, 1.5)), ("prml", PRML(1.0, 0.5, 0.3, 0.2)),
                          ("linear", Linear(0.7))):
        rep = KernelCovariance.for_kernel(kernel, X, y, Xs)
        out[label] = (rep, *kernel_reference(kernel, X, y, Xs))
    assert isinstance(out["linear"][0], LowRankCovariance)
    assert type(out["rbf"][0]) is KernelCovariance
    return out


CASES = cases()
perm = np.random.default_rng(2).permutation(N)
INDEXES = [
    (slice(None), slice(None)),
    (slice(2, 7), slice(2, 7)),          # a diagonal tile
    (slice(2, 7), slice(5, 11)),         # overlapping: part of the diagonal
    (slice(0, 4), slice(8, 13)),         # off-diagonal tile
    (slice(9, 13), slice(0, 3)),         # below the diagonal
    (slice(1, None, 2), slice(0, None, 3)),  # strided
    (perm, perm),                         # a reordering
    (perm[:5], perm[3:9]),                # reordered tiles sharing variables
    (perm[:4], perm[8:]),                 # reordered, disjoint
    (np.array([3, 3, 1]), np.array([1, 3, 5])),  # repeated indices
]


def as_index(ix):
    return np.arange(N)[ix] if isinstance(ix, slice) else ix


@pytest.mark.parametrize("kind", CASES)
@pytest.mark.parametrize("rows,cols", INDEXES)
def test_block_matches_dense(kind, rows, cols):
    rep, R, _, _ = CASES[kind]
    expected = R[np.ix_(as_index(rows), as_index(cols))]
    np.testing.assert_allclose(rep.block(rows, cols), expected, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("kind", CASES)
def test_dense_diag_and_test_quantities(kind):
    rep, R, B, tv = CASES[kind]
    assert rep.n == N and rep.n_test == B.shape[1]
    np.testing.assert_allclose(rep.dense(), R, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(rep.diag(), np.diag(R), rtol=1e-14)
    np.testing.assert_allclose(rep.dense_cross(), B, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(rep.test_diag(), tv, rtol=1e-14)
    assert rep.dense_nbytes == 8 * N * N
    assert rep.describe() == {"kind": rep.kind, "n": N, "n_test": B.shape[1],
                              "nbytes": rep.nbytes}
    rep.check()   # valid: no error


@pytest.mark.parametrize("kind", [k for k in CASES if CASES[k][2].shape[1]])
@pytest.mark.parametrize("rows,cols", [(slice(None), slice(None)), (slice(3, 9), slice(1, 3)),
                                       (perm, np.array([2, 0])), (perm[:5], slice(None))])
def test_cross_matches_dense(kind, rows, cols):
    rep, _, B, _ = CASES[kind]
    expected = B[np.ix_(as_index(rows), np.arange(N_TEST)[cols])]
    np.testing.assert_allclose(rep.cross(rows, cols), expected, rtol=1e-13, atol=1e-14)


def test_one_factor_has_no_test_variables():
    with pytest.raises(ValueError, match="no test variables"):
        CASES["one-factor"][0].cross(slice(None), slice(None))


@pytest.mark.parametrize("kind", CASES)
@pytest.mark.parametrize("shape", [(N,), (N, 1), (N, 5), (N, 3, 2), (N, 0)])
def test_matmul_matches_dense(kind, shape, monkeypatch):
    monkeypatch.setattr(covariance, "_MATMUL_ROWS", 3 * N)   # several bands of rows
    rep, R, _, _ = CASES[kind]
    X = np.random.default_rng(3).normal(size=shape)
    expected = np.einsum("ij,j...->i...", R, X)
    np.testing.assert_allclose(rep.matmul(X), expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="rows"):
        rep.matmul(np.ones(N + 1))


def test_structured_representations_hold_O_N_bytes():
    n = 4000
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(n, 2)), rng.choice([-1.0, 1.0], size=n)
    for rep in (OneFactorCovariance(rng.uniform(-0.9, 0.9, n)), KernelCovariance(RBF(), X, y),
                KernelCovariance.for_kernel(Linear(), X, y)):
        assert rep.nbytes <= 8 * 4 * n < rep.dense_nbytes / 100


def test_full_blocks_match_the_former_dense_construction_exactly():
    """R as the problems built it before (np.outer, K * outer(y, y) + I), bit for bit."""
    rep, *_ = CASES["one-factor"]
    R = np.outer(rep.d, rep.d)
    R[np.diag_indices(N)] = 1.0
    np.testing.assert_array_equal(rep.dense(), R)
    for kind in ("rbf", "linear", "prml"):
        rep = CASES[kind][0]
        R = rep.kernel(rep.X, rep.X) * np.outer(rep.y, rep.y)
        R[np.diag_indices(N)] += 1.0
        np.testing.assert_array_equal(rep.dense(), R)
        np.testing.assert_array_equal(rep.dense_cross(),
                                      rep.y[:, None] * rep.kernel(rep.X, rep.X_test))


# ---- cheap validation ----------------------------------------------------------------------
@pytest.mark.parametrize("d,why", [([0.5, 1.0], "|d_i| < 1"), ([0.5, np.nan], "|d_i| < 1"),
                                   ([], "non-empty")])
def test_bad_one_factor(d, why):
    with pytest.raises(InputError) as exc:
        OneFactorCovariance(np.array(d)).check("cov")
    assert exc.value.field == "cov" and why in str(exc.value)


def test_overflowing_linear_kernel_is_caught_from_the_diagonal():
    X, y = np.array([[1e200], [1.0], [2.0]]), np.array([1.0, -1.0, 1.0])
    with np.errstate(over="ignore"):
        rep = KernelCovariance.for_kernel(Linear(), X, y)
        with pytest.raises(InputError, match="NaN or infinite"):
            rep.check("kernel matrix", "rescale the features")
    with np.errstate(over="ignore"), pytest.raises(InputError, match="NaN or infinite"):
        KernelCovariance(Linear(), X[1:], y[1:], X[:1]).check()   # a test point's variance


@pytest.mark.parametrize("R,why", [([[1.0, np.nan], [np.nan, 1.0]], "NaN"),
                                   ([[1.0, 0.5], [0.2, 1.0]], "symmetric"),
                                   ([[1.0, 0.0], [0.0, -1.0]], "positive definite")])
def test_bad_dense(R, why):
    with pytest.raises(InputError) as exc:
        DenseCovariance(np.array(R)).check("cov")
    assert why in str(exc.value)
