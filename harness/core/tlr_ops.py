"""What the samplers and the saddle point do with a TileLowRankFactor (docs/math.md §6-§7).

`TileLowRankWalk`: the shared Cholesky walk (harness.core.sequential) over the tiles. Per
batch of particles (every tile operation is a matrix product over the batch):
  after tile j is drawn:   P_j = Z_j [V_{j+1,j} ... V_{T,j}]     one GEMM, scattered into the
                           per-target buffers H_i = [Z_1 V_i1, ..., Z_{i-1} V_{i,i-1}]
  before tile i:           c_i = H_i [U_i1 ... U_{i,i-1}]^T       one GEMM
  inside tile i:           the dense diagonal tile, as in the dense walk.
With ranks k the cost per particle is ~ 2 k N^2 / b + N b flops: O(N^{3/2}) for b ~ sqrt(N)
and k = O(1), against N^2 for the dense walk. The projections H are per-particle state: when
a step resamples, the walk permutes H's columns with the particles (`_resampled`), as it
gathers the rows of the dense history.

`TileLowRankOperator`: the factor protocol of harness.core.saddle_point.TriangularFactor
(products L v and Lᵀ u tile by tile, O(N b + k N^2 / b) each, and the mean path as a walk of
one particle), so the minimax saddle point is solved without forming L.
"""

from __future__ import annotations

import numpy as np

from harness.core.progress import phase
from harness.core.rowops import gather_columns
from harness.core.sequential import CholeskyWalk
from harness.core.tlr import TileLowRankFactor


class TileLowRankWalk(CholeskyWalk):
    """The shared Cholesky walk over a TileLowRankFactor (no dense L; module doc)."""

    def __init__(self, factor: TileLowRankFactor):
        self.L = None
        self.factor = factor
        self.n_vars = factor.n_vars
        self.block_size = factor.tile
        self.pivots = factor.pivots
        self.Ht = None
        self._spare = None
        # each row of H: the tile whose draws it projects and the tile that reads it
        self._source = np.empty(factor.h_cols, dtype=np.intp)
        for j, idx in enumerate(factor.h_idx):
            self._source[idx] = j
        self._target = np.empty(factor.h_cols, dtype=np.intp)
        for r, (h0, h1) in enumerate(factor.h_range):
            self._target[h0:h1] = r

    def run(self, n: int, step):
        f = self.factor
        # H transposed (one row per projection): the scatter after each tile copies whole
        # contiguous rows, and each target's H_i is a contiguous block of rows
        self.Ht = np.empty((f.h_cols, n))
        self._spare = None
        self._P = np.empty((max((v.shape[1] for v in f.v_cat), default=0), n))
        return super().run(n, step)

    def _block_means(self, Z, i0, i1, out):
        r = i0 // self.factor.tile
        h0, h1 = self.factor.h_range[r]
        if h1 > h0:
            np.matmul(self.Ht[h0:h1].T, self.factor.u_cat[r].T, out=out)
        else:
            out[:] = 0.0

    def _diagonal_block(self, i0, i1):
        return self.factor.diag[i0 // self.factor.tile]

    def _resampled(self, anc: np.ndarray, i0: int) -> None:
        """Particle p continues particle anc[p]: so do its projections (columns of H). Only
        the rows still to be read are gathered: written by an earlier tile, read by a later
        one or a test row (the others are read already, or written after this tile)."""
        if self._spare is None:
            self._spare = np.empty_like(self.Ht)
        tile = i0 // self.factor.tile            # the tile being walked
        live = np.flatnonzero((self._source < tile) & (self._target > tile))
        gather_columns(self.Ht, anc, self._spare, live)
        self.Ht, self._spare = self._spare, self.Ht

    def _block_done(self, Z, i0, i1):
        j = i0 // self.factor.tile
        V = self.factor.v_cat[j]
        if V.shape[1]:
            P = self._P[: V.shape[1]]   # one buffer for every tile: no fresh pages each time
            np.matmul(V.T, Z[:, i0:i1].T, out=P)
            self.Ht[self.factor.h_idx[j]] = P

    def test_means(self, cols: slice) -> np.ndarray:
        """Conditional means c* of the test variables `cols` for the last run's samples."""
        f = self.factor
        start, stop = cols.start, cols.stop
        out = np.empty((self.Ht.shape[1], stop - start))
        for t in range(start // f.tile, (stop - 1) // f.tile + 1):
            c0, c1 = t * f.tile, min((t + 1) * f.tile, f.n_test)
            a, b = max(c0, start), min(c1, stop)
            h0, h1 = f.h_range[f.n_tiles + t]
            if h1 == h0:
                out[:, a - start : b - start] = 0.0
                continue
            U = f.u_cat[f.n_tiles + t][a - c0 : b - c0]
            out[:, a - start : b - start] = self.Ht[h0:h1].T @ U.T
        return out


class TileLowRankOperator:
    """The saddle point's factor protocol (harness.core.saddle_point.TriangularFactor) for the
    training part of a TileLowRankFactor: n, diag, lower, upper, mean_path (module doc)."""

    def __init__(self, factor: TileLowRankFactor):
        self.factor = factor
        self.n = factor.n_vars
        self.diag = factor.pivots
        starts = np.cumsum([0] + [len(D) for D in factor.diag])
        self._tiles = list(zip(starts[:-1], starts[1:], strict=True))

    def lower(self, v: np.ndarray) -> np.ndarray:
        """L v: the projections V_j^T v_j of every source tile, then per target tile
        D_r v_r + U_r,cat H_r."""
        f = self.factor
        h = np.zeros(f.h_cols)
        for j, (a, b) in enumerate(self._tiles):
            if f.v_cat[j].shape[1]:
                h[f.h_idx[j]] = f.v_cat[j].T @ v[a:b]
        out = np.empty(self.n)
        for r, (a, b) in enumerate(self._tiles):
            out[a:b] = f.diag[r] @ v[a:b]
            h0, h1 = f.h_range[r]
            if h1 > h0:
                out[a:b] += f.u_cat[r] @ h[h0:h1]
        return out

    def upper(self, u: np.ndarray) -> np.ndarray:
        """Lᵀ u: per target tile G_r = U_r,cat^T u_r, then per source tile
        D_j^T u_j + V_j,cat G[its columns] (test rows contribute nothing)."""
        f = self.factor
        g = np.zeros(f.h_cols)
        for r, (a, b) in enumerate(self._tiles):
            h0, h1 = f.h_range[r]
            if h1 > h0:
                g[h0:h1] = f.u_cat[r].T @ u[a:b]
        out = np.empty(self.n)
        for j, (a, b) in enumerate(self._tiles):
            out[a:b] = f.diag[j].T @ u[a:b]
            if f.v_cat[j].shape[1]:
                out[a:b] += f.v_cat[j] @ g[f.h_idx[j]]
        return out

    def mean_path(self, value) -> np.ndarray:
        """x_j = value(t_j), t_j = L_{j,<j} x_{<j} / L_jj, x_N = 0: the walk of one particle."""
        def step(j, t):
            return value(t), None

        with phase("mean path"):
            x = TileLowRankWalk(self.factor).run(1, step).Z[0]
        x[-1] = 0.0
        return x

    def weighted_gram(self, w: np.ndarray) -> np.ndarray:
        raise NotImplementedError("the tile-low-rank factor has no weighted Gram matrix: use "
                                  "linear_solver='cg'")
