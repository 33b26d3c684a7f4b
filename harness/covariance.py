"""Orthant covariances as representations, not dense arrays (MATH.md §2; DESIGN "Large problems").

A problem's training variables v ~ N(0, R) and its test variables v*_j (each with the training
variables, MATH.md §2, A.28) are described by a `Covariance` that produces what a method asks
for, without ever holding an N x N matrix unless asked to:

    block(rows, cols)        R[rows][:, cols]            a tile, generated on demand
    cross(rows, test_cols)   B[rows][:, test_cols]       B = C K(X_train, X_test)
    diag(), test_diag()      R_ii, and 1 + k(x*_j, x*_j)
    matmul(X)                R @ X                        without forming R
    dense()                  R                            the last resort (8 N^2 bytes)

`rows` and `cols` are slices or integer index arrays (a reordering is a permutation of
indices, so a reordered tile costs no more than a tile in the given order).

Representations:
    DenseCovariance(R[, B, test_var])   user files: the matrix itself
    OneFactorCovariance(d)              R = d d^T + diag(1 - d^2)          (MATH.md §3a)
    KernelCovariance(kernel, X, y, X*)  R = C (K + I) C,  B = C K(X, X*)   (MATH.md §2, A.30)
    LowRankCovariance(...)              the same for the linear kernel: R = F F^T + I with
                                        F = C X sqrt(scale), so R @ X costs O(N d)
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from harness.kernels import Kernel, Linear

Index = slice | np.ndarray

_MATMUL_ROWS = 1 << 22   # elements of R generated at a time by the blocked matmul


def _indices(ix: Index, n: int) -> np.ndarray:
    """The index array of a slice or index array over range(n)."""
    if isinstance(ix, slice):
        return np.arange(n)[ix]
    return np.asarray(ix, dtype=np.intp)


def _identity_part(rows: Index, cols: Index, n: int) -> np.ndarray | None:
    """The (rows, cols) block of the identity, or None when it is all zeros (disjoint slices)."""
    if isinstance(rows, slice) and isinstance(cols, slice):
        r0, r1, rs = rows.indices(n)
        c0, c1, cs = cols.indices(n)
        if rs == 1 and cs == 1 and (r1 <= c0 or c1 <= r0):
            return None
    return np.equal.outer(_indices(rows, n), _indices(cols, n))


class Covariance(ABC):
    """R (n x n) of the training variables and B (n x n_test) of the test variables."""

    kind: str = "abstract"
    n: int
    n_test: int = 0

    @abstractmethod
    def block(self, rows: Index, cols: Index) -> np.ndarray:
        """R[rows][:, cols] as a new array."""

    @abstractmethod
    def diag(self) -> np.ndarray:
        """The diagonal of R (variances of the training variables)."""

    def cross(self, rows: Index, test_cols: Index) -> np.ndarray:
        """B[rows][:, test_cols]: covariances of training and test variables."""
        raise ValueError(f"a {self.kind} covariance has no test variables")

    def test_diag(self) -> np.ndarray:
        """Variance of each test variable, 1 + k(x*, x*)."""
        return np.empty(0)

    def matmul(self, X: np.ndarray) -> np.ndarray:
        """R @ X, generating R a band of rows at a time (O(n * rows) memory)."""
        X = np.asarray(X, dtype=float)
        out = np.empty((self.n,) + X.shape[1:])
        rows = max(1, _MATMUL_ROWS // max(self.n, 1))
        for r0 in range(0, self.n, rows):
            r1 = min(r0 + rows, self.n)
            out[r0:r1] = self.block(slice(r0, r1), slice(None)) @ X
        return out

    def dense(self) -> np.ndarray:
        """R as a dense array: 8 n^2 bytes; only for methods that really need it."""
        return self.block(slice(None), slice(None))

    def dense_cross(self) -> np.ndarray:
        """B as a dense array (n x n_test)."""
        if self.n_test == 0:
            return np.empty((self.n, 0))
        return self.cross(slice(None), slice(None))

    @property
    def dense_nbytes(self) -> int:
        """Bytes of the dense R."""
        return 8 * self.n * self.n

    @property
    @abstractmethod
    def nbytes(self) -> int:
        """Bytes this representation holds."""

    def describe(self) -> dict:
        """Plain description for summaries and planning."""
        return {"kind": self.kind, "n": self.n, "n_test": self.n_test, "nbytes": self.nbytes}


class DenseCovariance(Covariance):
    """The matrix itself (user files; small problems)."""

    kind = "dense"

    def __init__(self, R: np.ndarray, B: np.ndarray | None = None,
                 test_var: np.ndarray | None = None):
        self.R = np.asarray(R, dtype=float)
        self.n = len(self.R)
        self.B = np.empty((self.n, 0)) if B is None else np.asarray(B, dtype=float)
        self.test_var = np.empty(0) if test_var is None else np.asarray(test_var, dtype=float)
        self.n_test = self.B.shape[1]

    def block(self, rows, cols):
        if isinstance(rows, slice) and isinstance(cols, slice):
            return self.R[rows, cols].copy()
        return self.R[np.ix_(_indices(rows, self.n), _indices(cols, self.n))]

    def diag(self):
        return np.diag(self.R).copy()

    def cross(self, rows, test_cols):
        if isinstance(rows, slice) and isinstance(test_cols, slice):
            return self.B[rows, test_cols].copy()
        return self.B[np.ix_(_indices(rows, self.n), _indices(test_cols, self.n_test))]

    def test_diag(self):
        return self.test_var.copy()

    def matmul(self, X):
        return self.R @ X

    def dense(self):
        return self.R

    @property
    def nbytes(self):
        return self.R.nbytes + self.B.nbytes + self.test_var.nbytes


class OneFactorCovariance(Covariance):
    """R = d d^T + diag(1 - d^2), |d_i| < 1: unit variances, R_ij = d_i d_j (MATH.md §3a)."""

    kind = "one-factor"

    def __init__(self, d: np.ndarray):
        self.d = np.asarray(d, dtype=float)
        self.n = len(self.d)

    def block(self, rows, cols):
        out = np.multiply.outer(self.d[rows], self.d[cols])
        eye = _identity_part(rows, cols, self.n)
        if eye is not None:
            out[eye] = 1.0
        return out

    def diag(self):
        return np.ones(self.n)

    def matmul(self, X):
        X = np.asarray(X, dtype=float)
        scale = (1.0 - self.d**2).reshape((-1,) + (1,) * (X.ndim - 1))
        return np.multiply.outer(self.d, self.d @ X) + scale * X

    @property
    def nbytes(self):
        return self.d.nbytes


class KernelCovariance(Covariance):
    """R = C (K + I) C and B = C K(X, X*), generated tile by tile from the data (A.28-30)."""

    kind = "kernel"

    def __init__(self, kernel: Kernel, X: np.ndarray, y: np.ndarray,
                 X_test: np.ndarray | None = None):
        self.kernel = kernel
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.X_test = np.empty((0, self.X.shape[1])) if X_test is None else np.asarray(X_test,
                                                                                       float)
        self.n = len(self.X)
        self.n_test = len(self.X_test)

    @classmethod
    def for_kernel(cls, kernel: Kernel, X, y, X_test=None) -> KernelCovariance:
        """The best representation for this kernel: low rank for the linear kernel."""
        if isinstance(kernel, Linear) and np.shape(X)[1] < np.shape(X)[0]:
            return LowRankCovariance(kernel, X, y, X_test)
        return cls(kernel, X, y, X_test)

    def block(self, rows, cols):
        out = self.kernel(self.X[rows], self.X[cols])
        out *= np.multiply.outer(self.y[rows], self.y[cols])
        eye = _identity_part(rows, cols, self.n)
        if eye is not None:
            out[eye] += 1.0
        return out

    def diag(self):
        return 1.0 + self.kernel.diag(self.X)

    def cross(self, rows, test_cols):
        out = self.kernel(self.X[rows], self.X_test[test_cols])
        out *= self.y[rows][:, None]
        return out

    def test_diag(self):
        return 1.0 + self.kernel.diag(self.X_test)

    @property
    def nbytes(self):
        return self.X.nbytes + self.y.nbytes + self.X_test.nbytes


class LowRankCovariance(KernelCovariance):
    """Linear kernel: R = F F^T + I, F = C X sqrt(scale) (rank <= features); R @ X in O(N d)."""

    kind = "low-rank"

    def matmul(self, X):
        X = np.asarray(X, dtype=float)
        F = self.X * (self.y * np.sqrt(self.kernel.scale))[:, None]
        return F @ (F.T @ X) + X
