"""The SOV step over a whole block of variables, compiled (docs/math.md §4, §6 and §6b).

Inside a block [i0, i1) of the Cholesky walk, variable i0 + o of a particle has conditional
mean c_o = W_o + Σ_{q<o} D_oq z_q (W_o: the block-start mean from the history, D the block's
diagonal tile of L, z_q the draws already made in the block), and the SOV step weights it by
Φ(t_o), t_o = c_o / L_jj, and draws z_o = −Φ⁻¹(e^(log(1 − w_o) + log Φ(t_o))). `sov_block`
does all of it for all particles in one compiled call: particles in tiles of TILE, each tile's
block transposed so that every step is a loop over contiguous particles (the in-block sums as
vectorised multiply-adds, log Φ and Φ⁻¹ by harness.core.special's kernels), instead of a
Python loop over the variables with a matrix-vector product and numpy temporaries for each.
The random stream is unchanged (the same log(1 − w)); the sums run in another order than
numpy's, so the last bits differ from the per-variable walk.

With several threads in force (harness.core.threads) the tiles are spread over them; a
particle's arithmetic does not depend on which thread runs its tile.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from harness.core.special import Y_FAR, log_ndtr_, ndtri_exp_, ndtri_exp_far_
from harness.core.threads import threads

TILE = 256      # particles a tile holds: the tile's (block x TILE) draws stay in cache
_FLAGS = {"fastmath": {"contract"}, "error_model": "numpy", "nogil": True}


@njit(cache=True, **_FLAGS)
def _tile(W, D, pivots, E, logw, p0, m, Wt, L):
    """Particles p0 .. p0+m-1 through the block (Wt: a (block x TILE) scratch, L: TILE)."""
    kb = W.shape[1]
    for p in range(m):
        for o in range(kb):
            Wt[o, p] = W[p0 + p, o]
    for o in range(kb):
        a = Wt[o, :m]
        for q in range(o):
            d = D[o, q]
            z = Wt[q, :m]
            for p in range(m):
                a[p] += z[p] * d
        piv = pivots[o]
        lw = L[:m]
        for p in range(m):
            lw[p] = log_ndtr_(a[p] / piv)
        e = E[o, p0:p0 + m]
        w = logw[p0:p0 + m]
        far = 0
        for p in range(m):
            x = e[p] + lw[p]
            a[p] = -ndtri_exp_(x)
            w[p] += lw[p]
            far += x < Y_FAR
        if far:
            for p in range(m):
                x = e[p] + lw[p]
                if x < Y_FAR:
                    a[p] = -ndtri_exp_far_(x)
    for p in range(m):
        for o in range(kb):
            W[p0 + p, o] = Wt[o, p]


@njit(cache=True, **_FLAGS)
def _serial(W, D, pivots, E, logw):
    n, kb = W.shape
    Wt = np.empty((kb, TILE))
    L = np.empty(TILE)
    for p0 in range(0, n, TILE):
        _tile(W, D, pivots, E, logw, p0, min(TILE, n - p0), Wt, L)


@njit(cache=True, parallel=True, **_FLAGS)
def _parallel(W, D, pivots, E, logw):
    n, kb = W.shape
    for t in prange((n + TILE - 1) // TILE):
        p0 = t * TILE
        _tile(W, D, pivots, E, logw, p0, min(TILE, n - p0), np.empty((kb, TILE)),
              np.empty(TILE))


def sov_block(W: np.ndarray, D: np.ndarray, pivots: np.ndarray, E: np.ndarray,
              logw: np.ndarray) -> None:
    """The SOV step for variables i0 .. i1-1 of every particle, in place (module doc).

    Parameters
    ----------
    W : ndarray
        (particles x block), C-contiguous: the block-start conditional means in, the draws z
        out.
    D : ndarray
        (block x block): the block's diagonal tile of L (its strictly lower part is read).
    pivots : ndarray
        L_jj of the block's variables.
    E : ndarray
        (block x particles), C-contiguous: log(1 − w) of the block's variables.
    logw : ndarray
        The particles' log weights, to which log Φ(t) of every variable is added.
    """
    D = np.ascontiguousarray(D)
    pivots = np.ascontiguousarray(pivots)
    run = _parallel if threads() > 1 and len(W) >= 2 * TILE else _serial
    run(W, D, pivots, E, logw)
