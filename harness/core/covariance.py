"""Orthant covariances as representations, not dense arrays (docs/math.md §2; docs/design.md "Large
problems").

A problem's training variables v ~ N(0, R) and its test variables v*_j (each with the training
variables, docs/math.md §2, A.28) are described by a `Covariance` that produces what a method asks
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
    OneFactorCovariance(d)              R = d d^T + diag(1 - d^2)          (docs/math.md §3a)
    KernelCovariance(kernel, X, y, X*)  R = C (K + I) C,  B = C K(X, X*)   (docs/math.md §2, A.30)
    LowRankCovariance(...)              the same for the linear kernel: R = F F^T + I with
                                        F = C X sqrt(scale), so R @ X costs O(N d)
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from harness.core.errors import InputError
from harness.core.kernels import Kernel, Linear
from harness.core.linalg import check_covariance

Index = slice | np.ndarray

_MATMUL_ROWS = 1 << 22   # elements of R generated at a time by the blocked matmul


def _indices(ix: Index, n: int) -> np.ndarray:
    """The index array of a slice or index array over range(n)."""
    if isinstance(ix, slice):
        return np.arange(n)[ix]
    return np.asarray(ix, dtype=np.intp)


def _diagonal_flat(rows: Index, cols: Index, n: int, m: int) -> slice | np.ndarray:
    """Where R's diagonal lies in the C-ordered block R[rows][:, cols] (m columns), as flat
    positions: a strided slice for step-1 slices (a view: no index arrays at all), else the
    positions i m + j with rows[i] == cols[j], in O(len(rows) + len(cols)) memory for index
    arrays without repeats (orders, tiles); repeated indices fall back to a mask.
    """
    if isinstance(rows, slice) and isinstance(cols, slice):
        r0, r1, rs = rows.indices(n)
        c0, c1, cs = cols.indices(n)
        if rs == 1 and cs == 1:
            lo, hi = max(r0, c0), min(r1, c1)
            if hi <= lo:
                return slice(0, 0)
            start = (lo - r0) * m + (lo - c0)
            return slice(start, start + (hi - lo - 1) * (m + 1) + 1, m + 1)
    r, c = _indices(rows, n), _indices(cols, n)
    if len(np.unique(r)) == len(r) and len(np.unique(c)) == len(c):
        _, i, j = np.intersect1d(r, c, assume_unique=True, return_indices=True)
    else:
        i, j = np.nonzero(np.equal.outer(r, c))
    return i * m + j


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
        """R @ X for X of shape (n,) or (n, ...): the product along X's first axis."""
        X = np.asarray(X, dtype=float)
        if X.shape[:1] != (self.n,):
            raise ValueError(f"matmul needs {self.n} rows, got shape {X.shape}")
        return self._matmul(X.reshape(self.n, int(np.prod(X.shape[1:])))).reshape(X.shape)

    def _matmul(self, X: np.ndarray) -> np.ndarray:
        """R @ X (X is n x k), generating R a band of rows at a time (O(n * rows) memory)."""
        out = np.empty_like(X)
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

    def check(self, field: str = "cov", fix: str = "check how the covariance was built") -> None:
        """Cheap (O(n)) validation, raising InputError naming `field`.

        At least one variable, and a finite, positive diagonal and finite test variances: for a
        covariance, |R_ij| <= sqrt(R_ii R_jj) (Cauchy–Schwarz), so a finite diagonal bounds
        every entry of R and of B (e.g. it catches a linear kernel overflowing on huge
        features without generating a single tile).
        """
        if self.n < 1:
            raise InputError(field, "must be a non-empty square matrix, got 0 variables")
        diag = self.diag()
        if not (np.isfinite(diag).all() and np.isfinite(self.test_diag()).all()):
            raise InputError(field, "has NaN or infinite entries", fix)
        if not diag.min() > 0:
            i = int(np.argmin(diag))
            raise InputError(field, f"is not positive definite (diagonal entry {i} is "
                             f"{diag[i]:.3g})", fix)

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

    def check(self, field="cov", fix="remove or impute them"):
        """The full O(n^2) check of harness.core.linalg.check_covariance: the matrix is at hand."""
        check_covariance(self.R, field)
        if self.B.shape[0] != self.n or self.test_var.shape != (self.n_test,):
            raise InputError(field, f"test covariances of shape {self.B.shape} and variances of "
                             f"shape {self.test_var.shape} do not fit {self.n} variables")
        super().check(field, fix)

    def cross(self, rows, test_cols):
        if isinstance(rows, slice) and isinstance(test_cols, slice):
            return self.B[rows, test_cols].copy()
        return self.B[np.ix_(_indices(rows, self.n), _indices(test_cols, self.n_test))]

    def test_diag(self):
        return self.test_var.copy()

    def _matmul(self, X):
        return self.R @ X

    def dense(self):
        return self.R

    @property
    def nbytes(self):
        return self.R.nbytes + self.B.nbytes + self.test_var.nbytes


class OneFactorCovariance(Covariance):
    """R = d d^T + diag(1 - d^2), |d_i| < 1: unit variances, R_ij = d_i d_j (docs/math.md §3a)."""

    kind = "one-factor"

    def __init__(self, d: np.ndarray):
        self.d = np.asarray(d, dtype=float)
        self.n = len(self.d)

    def block(self, rows, cols):
        out = np.multiply.outer(self.d[rows], self.d[cols])
        out.reshape(-1)[_diagonal_flat(rows, cols, self.n, out.shape[1])] = 1.0
        return out

    def diag(self):
        return np.ones(self.n)

    def check(self, field="cov", fix="draw the loadings d_i from (-1, 1)"):
        if not np.all(np.abs(self.d) < 1):   # also catches NaN
            raise InputError(field, "needs one-factor loadings with |d_i| < 1", fix)
        super().check(field, fix)

    def _matmul(self, X):
        return np.outer(self.d, self.d @ X) + (1.0 - self.d**2)[:, None] * X

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
        out = np.ascontiguousarray(self.kernel(self.X[rows], self.X[cols]))
        out *= self.y[rows][:, None]     # C K C in place: no second n x n temporary
        out *= self.y[cols][None, :]
        out.reshape(-1)[_diagonal_flat(rows, cols, self.n, out.shape[1])] += 1.0
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

    def _matmul(self, X):
        F = self.X * (self.y * np.sqrt(self.kernel.scale))[:, None]
        return F @ (F.T @ X) + X
