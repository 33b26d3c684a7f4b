"""Variable reordering for the sequential estimators, done while factorising (docs/math.md §6).

Univariate reordering (Gibson, Glasbey & Elston 1994; Trinh & Genz 2015): build the Cholesky
factor of the orthant covariance one column at a time and, at each step, put next the variable
whose conditional probability of v_j >= 0 is smallest, given that every variable already placed
sits at its truncated conditional expectation:

    v_j | placed ~ N(m_j, s_j^2),   m_j = Σ_k L_jk y_k,   s_j^2 = R_jj - Σ_k L_jk^2,
    choose j minimising Φ(m_j / s_j),  then  y_i = E[z | z >= -t] = φ(t) / Φ(t),  t = m_i / s_i.

Block reordering (Cao, Genton, Keyes & Turkiyyah 2021, for the tile-low-rank SOV): the
variables are cut into tiles of consecutive variables (in the given order); at each block step
the remaining tile with the smallest crude probability is placed next, the crude probability
being the product of its variables' univariate conditional probabilities Π_j Φ(m_j / s_j) (our
choice of crude estimate), and the variables inside it are placed by the univariate rule. The
tiles stay contiguous in the new order (a short last tile stays last), so they are the tiles of
the tile-low-rank factor.

Both are right-looking blocked pivoted Cholesky factorisations: within a panel each column
needs a matrix-vector product with the panel's earlier columns, and the trailing matrix is
updated by matrix products per panel (in blocks of rows, in place), so the cost is
~ (2/3) N^3 flops at BLAS speed.
A problem's reordered factor is built and cached per problem by harness.model.ordered.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr

from harness.core.deadline import check_deadline
from harness.core.progress import advance, phase

REORDERINGS = ("univariate", "none")
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_UPDATE_ROWS = 256


@dataclass(frozen=True)
class Reordering:
    """A variable order and the Cholesky factor of the reordered covariance."""

    order: np.ndarray   # position p holds original variable order[p]
    chol: np.ndarray    # lower factor of R[order][:, order]
    kind: str
    seconds: float      # thread CPU time spent building it


def mills(t: np.ndarray) -> np.ndarray:
    """φ(t) / Φ(t) in log space (accurate for t far below 0, where it is ~ -t)."""
    t = np.asarray(t, dtype=float)
    return np.exp(-0.5 * t * t - _LOG_SQRT_2PI - log_ndtr(t))


def pivoted_cholesky(R: np.ndarray, kind: str = "univariate", tile: int | None = None,
                     panel: int = 64) -> Reordering:
    """Reorder the variables of the orthant P(v >= 0), v ~ N(0, R), while factorising R.

    kind='univariate' (tile ignored) or 'block' (tiles of `tile` consecutive variables).
    Raises numpy.linalg.LinAlgError if R is not numerically positive definite. Its progress
    (harness.core.progress) counts the trailing update's work, (N - i)^2 for variable i.
    """
    n = len(R)
    with phase("reordering", total=float(np.sum((n - np.arange(n, dtype=float)) ** 2))):
        return _pivoted_cholesky(R, kind, tile, panel)


def _pivoted_cholesky(R: np.ndarray, kind: str, tile: int | None, panel: int) -> Reordering:
    t0 = time.thread_time()
    R = np.asarray(R, dtype=float)
    N = len(R)
    if kind == "block":
        if not tile or tile < 1:
            raise ValueError("block reordering needs a tile size >= 1")
        tile_of = np.arange(N) // tile
    elif kind == "univariate":
        tile_of = None
    else:
        raise ValueError(f"unknown reordering {kind!r}")
    A = np.array(R, dtype=float, order="C")          # trailing Schur complement (at panel start)
    L = np.zeros((N, N))
    order = np.arange(N)
    d = np.diag(R).copy()                            # conditional variances s_j^2
    m = np.zeros(N)                                  # conditional means m_j
    i = 0
    while i < N:
        check_deadline()
        p0 = i
        if tile_of is None:
            p1 = min(N, p0 + panel)
            chosen = None
        else:  # the remaining tile with the smallest crude log-probability
            logp = log_ndtr(m[p0:] / np.sqrt(np.maximum(d[p0:], 1e-300)))
            tiles, inverse = np.unique(tile_of[p0:], return_inverse=True)
            crude = np.bincount(inverse, weights=logp, minlength=len(tiles))
            if len(tiles) > 1 and N % tile:   # a short last tile stays last: the tiles of
                crude[tiles == (N - 1) // tile] = np.inf   # the new order are aligned
            chosen = tiles[int(np.argmin(crude))]
            p1 = p0 + int(np.count_nonzero(tile_of[p0:] == chosen))
        for i in range(p0, p1):
            cand = slice(i, N)
            t = m[cand] / np.sqrt(np.maximum(d[cand], 1e-300))
            if chosen is not None:
                t = np.where(tile_of[cand] == chosen, t, np.inf)
            j = i + int(np.argmin(t))
            if j != i:
                _swap(A, L, order, d, m, tile_of, i, j, p0)
            col = A[i:, i] - L[i:, p0:i] @ L[i, p0:i]
            if not col[0] > 0:
                raise np.linalg.LinAlgError(
                    f"covariance not positive definite at reordered step {i + 1} "
                    f"(pivot {col[0]:.3g})")
            lii = np.sqrt(col[0])
            L[i:, i] = col / lii
            ti = m[i] / lii
            below = L[i + 1 :, i]
            d[i + 1 :] -= below * below
            m[i + 1 :] += below * mills(ti)
        i = p1
        advance(float(np.sum((N - np.arange(p0, p1, dtype=float)) ** 2)))
        if p1 < N:  # trailing update with the panel's columns, one matrix product per block
            Lp = L[p1:, p0:p1]      # of rows: no (N - p1)^2 temporary (1.8x faster at N >= 8000)
            for r0 in range(p1, N, _UPDATE_ROWS):
                r1 = min(N, r0 + _UPDATE_ROWS)
                A[r0:r1, p1:] -= L[r0:r1, p0:p1] @ Lp.T
    return Reordering(order=order, chol=L, kind=kind if tile_of is None else f"block{tile}",
                      seconds=time.thread_time() - t0)


def _swap(A, L, order, d, m, tile_of, i, j, p0):
    """Exchange variables i and j (j > i) in every array of the factorisation."""
    A[[i, j], p0:] = A[[j, i], p0:]
    A[p0:, [i, j]] = A[p0:, [j, i]]
    L[[i, j], :i] = L[[j, i], :i]
    for v in (order, d, m) if tile_of is None else (order, d, m, tile_of):
        v[i], v[j] = v[j], v[i]


def kdtree_order(X: np.ndarray, leaf: int) -> np.ndarray:
    """Training points in k-d tree order: recursive median bisection along the widest coordinate.

    Every leaf holds `leaf` consecutive points (the last one possibly fewer), so the leaves are
    exactly the tiles range(0, N, leaf) of the new order, and each tile is spatially compact.
    This is the geometric ordering tile-low-rank methods rely on: far-apart tiles of a smooth
    kernel then have low numerical rank (Cao et al. 2021 use a Morton order for the same end).
    """
    X = np.asarray(X, dtype=float)
    out: list[np.ndarray] = []
    stack = [np.arange(len(X))]
    while stack:
        ix = stack.pop()
        if len(ix) <= leaf:
            out.append(ix)
            continue
        P = X[ix]
        axis = int(np.argmax(P.max(axis=0) - P.min(axis=0)))
        ix = ix[np.argsort(P[:, axis], kind="stable")]
        half = (-(-len(ix) // leaf) // 2) * leaf   # whole leaves on the left
        stack.append(ix[half:])
        stack.append(ix[:half])                    # popped first: left before right
    return np.concatenate(out)
