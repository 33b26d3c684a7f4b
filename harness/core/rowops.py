"""Row and column copies for resampled particle arrays (numba: numpy's fancy indexing costs
~75 ns a row).

With fancy indexing the row copies dominated the rejection–bootstrap walk (docs/studies.md,
"Small implementation choices").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from harness.core.threads import over_blocks


@njit(cache=True, nogil=True)
def copy_rows(A, dst, src):
    """A[dst[r]] = A[src[r]] for every r, in place.

    The rows in dst and src must be disjoint sets (rejected vs accepted particles).
    """
    for r in range(dst.shape[0]):
        d = dst[r]
        s = src[r]
        for c in range(A.shape[1]):
            A[d, c] = A[s, c]


@njit(cache=True, nogil=True)
def gather_rows(A, idx, ncols, out):
    """out[r, :ncols] = A[idx[r], :ncols]."""
    for r in range(idx.shape[0]):
        s = idx[r]
        for c in range(ncols):
            out[r, c] = A[s, c]


@njit(cache=True, nogil=True)
def _gather_columns(A, idx, out, rows, lo, hi):
    for k in range(lo, hi):
        r = rows[k]
        a, o = A[r], out[r]
        for p in range(idx.shape[0]):
            o[p] = a[idx[p]]


def gather_columns(A: np.ndarray, idx: np.ndarray, out: np.ndarray,
                   rows: np.ndarray | None = None) -> None:
    """out[r, p] = A[r, idx[p]] for the rows `rows` (default: all) of C-contiguous A and out
    (numpy's take along axis 1 copies element by element), the rows split over the threads
    in force (harness.core.threads)."""
    rows = np.arange(A.shape[0]) if rows is None else rows
    over_blocks(lambda lo, hi: _gather_columns(A, idx, out, rows, lo, hi), len(rows), 256)


def warm_up() -> None:
    """Compile (or load from cache) the kernels, so that the first timed job does not pay."""
    A = np.zeros((2, 2))
    i = np.zeros(1, dtype=np.int64)
    copy_rows(A, i, i)
    gather_rows(A, i, 1, np.zeros((1, 2)))
    gather_columns(A, i, np.zeros((2, 1)))
