"""The SOV step over a whole block of variables, compiled (docs/math.md §4, §6 and §6b).

Inside a block [i0, i1) of the Cholesky walk, variable i0 + o of a particle has conditional
mean c_o = W_o + Σ_{q<o} D_oq z_q (W_o: the block-start mean from the history, D the block's
diagonal tile of L, z_q the draws already made in the block), and the SOV step weights it by
Φ(t_o), t_o = c_o / L_jj, and draws z_o = −Φ⁻¹(e^(log(1 − w_o) + log Φ(t_o))). `sov_block`
does all of it for all particles in one compiled call: particles in tiles of TILE, each tile's
block transposed so that every step is a loop over contiguous particles (the in-block sums as
vectorised multiply-adds, four rows by four draws a pass; log Φ and Φ⁻¹ by
harness.core.special's kernels), instead of a
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
PAD = 16        # scratch rows TILE + PAD long: a power-of-two row stride would put a
#                 column's elements in one cache set
BLOCK = 128     # variables a block: the history's product is then wide enough to run near
#                 BLAS's peak, and the in-block sums are compiled


def block_size(n_vars: int) -> int:
    """Variables per block of a walk whose every block is one sov_block call."""
    return min(n_vars, BLOCK)


_FLAGS = {"fastmath": {"contract"}, "error_model": "numpy", "nogil": True}


@njit(cache=True, inline="always", **_FLAGS)
def _group_sums(Wt, D, o0, m):
    """Rows o0..o0+3 += the draws of rows 0..o0-1 times D, four rows by four draws a pass
    (each row's sum in the order of its draws, as one draw a pass would add them)."""
    a0, a1, a2, a3 = Wt[o0, :m], Wt[o0 + 1, :m], Wt[o0 + 2, :m], Wt[o0 + 3, :m]
    for q in range(0, o0, 4):
        z0, z1, z2, z3 = Wt[q, :m], Wt[q + 1, :m], Wt[q + 2, :m], Wt[q + 3, :m]
        d00, d01, d02, d03 = D[o0, q], D[o0, q + 1], D[o0, q + 2], D[o0, q + 3]
        d10, d11, d12, d13 = D[o0 + 1, q], D[o0 + 1, q + 1], D[o0 + 1, q + 2], D[o0 + 1, q + 3]
        d20, d21, d22, d23 = D[o0 + 2, q], D[o0 + 2, q + 1], D[o0 + 2, q + 2], D[o0 + 2, q + 3]
        d30, d31, d32, d33 = D[o0 + 3, q], D[o0 + 3, q + 1], D[o0 + 3, q + 2], D[o0 + 3, q + 3]
        for p in range(m):
            x0, x1, x2, x3 = z0[p], z1[p], z2[p], z3[p]
            a0[p] = (((a0[p] + x0 * d00) + x1 * d01) + x2 * d02) + x3 * d03
            a1[p] = (((a1[p] + x0 * d10) + x1 * d11) + x2 * d12) + x3 * d13
            a2[p] = (((a2[p] + x0 * d20) + x1 * d21) + x2 * d22) + x3 * d23
            a3[p] = (((a3[p] + x0 * d30) + x1 * d31) + x2 * d32) + x3 * d33


@njit(cache=True, inline="always", **_FLAGS)
def _row_sums(Wt, D, o, q, m):
    """Row o += the draws of rows q..o-1 times D, in order (four draws a pass)."""
    a = Wt[o, :m]
    while q + 4 <= o:
        d0, d1, d2, d3 = D[o, q], D[o, q + 1], D[o, q + 2], D[o, q + 3]
        z0, z1, z2, z3 = Wt[q, :m], Wt[q + 1, :m], Wt[q + 2, :m], Wt[q + 3, :m]
        for p in range(m):
            a[p] = (((a[p] + z0[p] * d0) + z1[p] * d1) + z2[p] * d2) + z3[p] * d3
        q += 4
    for r in range(q, o):
        d = D[o, r]
        z = Wt[r, :m]
        for p in range(m):
            a[p] += z[p] * d


@njit(cache=True, inline="always", **_FLAGS)
def _draw(Wt, o, piv, E, logw, p0, m, L, mu):
    """Row o: t = c / L_jj + μ_o, weight by Φ(t) and draw y = −Φ⁻¹(e^(log(1 − w) + log Φ(t)));
    the draw is z = y + μ_o, and a shift (mu not empty) weights by Botev's
    log Φ(t) − μ_o²/2 − μ_o y instead (docs/math.md §7)."""
    shifted = mu.size > 0
    s = mu[o] if shifted else 0.0
    a = Wt[o, :m]
    lw = L[:m]
    for p in range(m):
        lw[p] = log_ndtr_(a[p] / piv + s)
    e = E[o, p0:p0 + m]
    far = 0
    for p in range(m):
        x = e[p] + lw[p]
        a[p] = -ndtri_exp_(x)
        far += x < Y_FAR
    if far:
        for p in range(m):
            x = e[p] + lw[p]
            if x < Y_FAR:
                a[p] = -ndtri_exp_far_(x)
    w = logw[p0:p0 + m]
    if shifted:
        h = 0.5 * s * s
        for p in range(m):
            w[p] += (lw[p] - h) - s * a[p]
            a[p] += s
    else:
        for p in range(m):
            w[p] += lw[p]


@njit(cache=True, **_FLAGS)
def _tile(W, D, pivots, E, logw, mu, p0, m, Wt, L):
    """Particles p0 .. p0+m-1 through the block (Wt: a (block x TILE) scratch, L: TILE)."""
    kb = W.shape[1]
    for p in range(m):
        for o in range(kb):
            Wt[o, p] = W[p0 + p, o]
    for o0 in range(0, kb, 4):
        whole = o0 + 4 <= kb
        if whole:                       # the earlier groups' draws, four rows at once
            _group_sums(Wt, D, o0, m)
        for o in range(o0, min(o0 + 4, kb)):
            _row_sums(Wt, D, o, o0 if whole else 0, m)
            _draw(Wt, o, pivots[o], E, logw, p0, m, L, mu)
    for p in range(m):
        for o in range(kb):
            W[p0 + p, o] = Wt[o, p]


@njit(cache=True, **_FLAGS)
def _serial(W, D, pivots, E, logw, mu):
    n, kb = W.shape
    Wt = np.empty((kb, TILE + PAD))
    L = np.empty(TILE)
    for p0 in range(0, n, TILE):
        _tile(W, D, pivots, E, logw, mu, p0, min(TILE, n - p0), Wt, L)


@njit(cache=True, parallel=True, **_FLAGS)
def _parallel(W, D, pivots, E, logw, mu):
    n, kb = W.shape
    for t in prange((n + TILE - 1) // TILE):
        p0 = t * TILE
        _tile(W, D, pivots, E, logw, mu, p0, min(TILE, n - p0), np.empty((kb, TILE + PAD)),
              np.empty(TILE))


_NO_SHIFT = np.empty(0)


def sov_block(W: np.ndarray, D: np.ndarray, pivots: np.ndarray, E: np.ndarray,
              logw: np.ndarray, shift: np.ndarray | None = None) -> None:
    """The SOV step for variables i0 .. i1-1 of every particle, in place (module doc).

    Parameters
    ----------
    W : ndarray
        (particles x block), unit stride along a row (the walk hands its history's block
        columns): the block-start conditional means in, the draws z out.
    D : ndarray
        (block x block): the block's diagonal tile of L (its strictly lower part is read).
    pivots : ndarray
        L_jj of the block's variables.
    E : ndarray
        (block x particles), C-contiguous: log(1 − w) of the block's variables.
    logw : ndarray
        The particles' log weights, to which each variable's log weight is added.
    shift : ndarray, optional
        μ of the block's variables: the tilted step (harness.engine.tilted_step) with
        Botev's weights; None: the SOV step.
    """
    D = np.ascontiguousarray(D)
    pivots = np.ascontiguousarray(pivots)
    mu = _NO_SHIFT if shift is None else np.ascontiguousarray(shift, dtype=float)
    run = _parallel if threads() > 1 and len(W) >= 2 * TILE else _serial
    run(W, D, pivots, E, logw, mu)
