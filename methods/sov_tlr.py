"""Tile-low-rank separation of variables (Cao, Genton, Keyes & Turkiyyah 2021; MATH.md §6).

The same estimator as `sov` (harness.methods.sov: log-space weights, randomised QMC, ratio
estimator), walking a tile-low-rank representation of the Cholesky factor instead of the dense
one. The variables are cut into tiles of b ~ sqrt(N) consecutive variables; the diagonal tiles
L_ii stay dense and every off-diagonal tile is compressed by a truncated QR with column
pivoting, L_ij ~ U_ij V_ij^T with the smallest rank k_ij whose Frobenius error is at most
tolerance * sqrt(max R_ii).
The test variables are appended as further tile rows: their Cholesky rows (L^{-1} B)^T are
compressed the same way, so a prediction also costs O(k) per tile instead of O(N).

Per batch of samples (every tile operation is a matrix product over the batch):
  after tile j is drawn:   P_j = Z_j [V_{j+1,j} ... V_{T,j}]     one GEMM, scattered into the
                           per-target buffers H_i = [Z_1 V_i1, ..., Z_{i-1} V_{i,i-1}]
  before tile i:           c_i = H_i [U_i1 ... U_{i,i-1}]^T       one GEMM
  inside tile i:           the dense diagonal tile, as in the dense walk.
With ranks k the cost per sample is ~ 2 k N^2 / b + N b flops: O(N^{3/2}) for b ~ sqrt(N) and
k = O(1), against N^2 for the dense walk. This is the shared CholeskyWalk with its three hooks
(block means, diagonal block, block done) overridden; SOV never resamples, so the walk refuses a
step that does.

Ordering (harness.reorder): as given ('none'); 'kdtree', the training inputs in k-d tree order so
that every tile is spatially compact (the geometric ordering tile-low-rank methods need: on 2-D
RBF problems it cuts the mean tile rank at N = 4000, b = 63, tolerance 1e-8 from ~50-62 to
~13-15; classification problems only); or 'block', the block reordering of Cao et al. 2021
(tiles placed by smallest crude probability, univariate order inside each tile).

What is NOT the paper's full method, said plainly: the factor is computed densely (LAPACK /
the reordering's blocked Cholesky, N^3/3 flops) and then compressed tile by tile (O(N^{5/2})
flops for b ~ sqrt(N)); the paper's tile-low-rank Cholesky factorisation, which never forms the
dense factor (O(N^{5/2}) flops and O(N^{3/2}) memory for the factor), is not implemented. Up to
N ~ 10^4 on one machine the dense factorisation is a few seconds to a minute and happens once per
problem in `prepare`, outside the timed region (like the dense factor of every other method);
the per-sample cost, which is what the budget buys, is the O(N^{3/2}) of the paper.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from harness.deadline import check_deadline
from harness.errors import InputError
from harness.footprint import MemoryEstimate, dense
from harness.methods.sov import Factor, Sov
from harness.problem import Problem
from harness.reorder import cached, ordered_problem
from harness.sequential import CholeskyWalk, WalkResult

TLR_REORDERINGS = ("none", "kdtree", "block")
# Off-diagonal tile rank assumed by the memory estimate (harness.footprint) before the factor
# exists: one-factor covariances have rank 1; 2-D RBF problems at tolerance 1e-8 measured mean
# ranks 13-15 in k-d tree order and 50-62 as given (N = 4000, b = 63). Capped at the tile size,
# and the full tile size when tolerance = 0.
ASSUMED_RANK = 32


def tlr_memory(n_vars: int, n_test: int, tile: int, rank: int) -> tuple[dict[str, int], int]:
    """({part: bytes} of a tile-low-rank factor, columns of the walk's projection buffer H).

    Diagonal tiles b x b (N b numbers); each of the ~(N/b)^2 / 2 off-diagonal tiles and the
    (n_test / b)(N / b) test tiles stores U and V, 2 b k numbers.
    """
    nb, tb = -(-n_vars // tile), -(-n_test // tile)
    off, test = nb * (nb - 1) // 2, tb * nb
    return ({"diagonal tiles": 8 * n_vars * tile,
             f"off-diagonal tiles (assumed rank {rank})": 8 * off * 2 * tile * rank,
             f"test tiles (assumed rank {rank})": 8 * test * 2 * tile * rank},
            (off + test) * rank)


def default_tile(n_vars: int) -> int:
    return int(min(n_vars, max(16, round(np.sqrt(n_vars)))))


@dataclass
class TileLowRankFactor:
    """A Cholesky factor (and test rows) in tile-low-rank form; see the module doc."""

    n_vars: int
    tile: int
    diag: list[np.ndarray]           # dense lower-triangular diagonal tiles
    pivots: np.ndarray               # diagonal of L
    h_cols: int                      # columns of the projection buffer H
    v_cat: list[np.ndarray]          # source tile j: [V_ij ...] (b_j x K_j)
    h_idx: list[np.ndarray]          # source tile j: the H columns its projections go to
    u_cat: list[np.ndarray]          # target row r: [U_rj ...] (b_r x K_r)
    h_range: list[tuple[int, int]]   # target row r: its H columns [h0, h1)
    n_test: int
    test_sd: np.ndarray
    ranks: np.ndarray                # k of every compressed off-diagonal tile (zeros included)
    seconds: float                   # compression time
    order_kind: str
    order_seconds: float

    @property
    def n_tiles(self) -> int:
        return len(self.diag)

    def stored_fraction(self) -> float:
        """Numbers stored / numbers in the dense lower triangle (training part only)."""
        dense = self.n_vars * (self.n_vars + 1) / 2
        diag = sum(d.shape[0] * (d.shape[0] + 1) / 2 for d in self.diag)
        low = sum(v.size for v in self.v_cat) + sum(u.size for u in self.u_cat[: self.n_tiles])
        return float((diag + low) / dense)


def _compress(block: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(U, V) with |block - U V^T|_F <= threshold, by QR with column pivoting; None if rank 0.

    block[:, P] = Q R, so block = Q R P^T; keeping k rows of R leaves the error |R[k:, :]|_F
    exactly (R is upper triangular), so k is the smallest rank whose tail is below threshold.
    (3.5x cheaper than an SVD on 63 x 63 tiles, at ranks at most a little above the SVD's.)
    """
    if np.sqrt(np.sum(block * block)) <= threshold:
        return None
    Q, R, P = scipy.linalg.qr(block, mode="economic", pivoting=True, check_finite=False)
    tail = np.sqrt(np.cumsum(np.sum(R * R, axis=1)[::-1])[::-1])   # tail[k] = |R[k:, :]|_F
    k = int(np.count_nonzero(tail > threshold))
    if k == 0:
        return None
    V = np.empty((block.shape[1], k))
    V[P] = R[:k].T
    return np.ascontiguousarray(Q[:, :k]), V


def build_tile_low_rank(L: np.ndarray, test_rows: np.ndarray, test_sd: np.ndarray, tile: int,
                        tolerance: float, scale: float, order_kind: str = "none",
                        order_seconds: float = 0.0) -> TileLowRankFactor:
    """Compress the dense factor L (and the test rows L^{-1} B) into tile-low-rank form."""
    t0 = time.thread_time()
    N = len(L)
    n_test = test_rows.shape[1]
    bounds = [(i, min(i + tile, N)) for i in range(0, N, tile)]
    test_bounds = [(i, min(i + tile, n_test)) for i in range(0, n_test, tile)]
    nb = len(bounds)
    threshold = tolerance * scale
    # targets: training tile rows 0..nb-1 (row 0 has no sources), then the test tile rows
    pieces: list[list[tuple[int, np.ndarray, np.ndarray]]] = []
    ranks = []
    for r in range(nb + len(test_bounds)):
        check_deadline()
        row = []
        sources = range(r) if r < nb else range(nb)
        for j in sources:
            j0, j1 = bounds[j]
            if r < nb:
                r0, r1 = bounds[r]
                block = L[r0:r1, j0:j1]
            else:
                c0, c1 = test_bounds[r - nb]
                block = test_rows[j0:j1, c0:c1].T
            uv = _compress(block, threshold)
            ranks.append(0 if uv is None else uv[0].shape[1])
            if uv is not None:
                row.append((j, uv[0], uv[1]))
        pieces.append(row)
    # H layout: columns grouped by target row, then by source tile
    h_range, u_cat, col = [], [], 0
    per_source: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(nb)]
    for r, row in enumerate(pieces):
        h0 = col
        b_r = (bounds[r][1] - bounds[r][0]) if r < nb else (
            test_bounds[r - nb][1] - test_bounds[r - nb][0])
        us = []
        for j, U, V in row:
            k = U.shape[1]
            per_source[j].append((V, np.arange(col, col + k)))
            us.append(U)
            col += k
        h_range.append((h0, col))
        u_cat.append(np.ascontiguousarray(np.hstack(us)) if us else np.zeros((b_r, 0)))
    v_cat = [np.ascontiguousarray(np.hstack([V for V, _ in ps])) if ps
             else np.zeros((bounds[j][1] - bounds[j][0], 0)) for j, ps in enumerate(per_source)]
    h_idx = [np.concatenate([idx for _, idx in ps]) if ps else np.zeros(0, dtype=np.intp)
             for ps in per_source]
    return TileLowRankFactor(
        n_vars=N, tile=tile,
        diag=[np.ascontiguousarray(L[a:b, a:b]) for a, b in bounds],
        pivots=np.ascontiguousarray(np.diag(L)), h_cols=col, v_cat=v_cat, h_idx=h_idx,
        u_cat=u_cat, h_range=h_range, n_test=n_test, test_sd=test_sd,
        ranks=np.array(ranks, dtype=np.int64), seconds=time.thread_time() - t0,
        order_kind=order_kind, order_seconds=order_seconds)


class TileLowRankWalk(CholeskyWalk):
    """The shared Cholesky walk over a TileLowRankFactor (no dense L; no resampling)."""

    def __init__(self, factor: TileLowRankFactor):
        self.L = None
        self.factor = factor
        self.n_vars = factor.n_vars
        self.block_size = factor.tile
        self.pivots = factor.pivots
        self.Ht = None

    def run(self, n: int, step):
        f = self.factor
        # H transposed (one row per projection): the scatter after each tile copies whole
        # contiguous rows, and each target's H_i is a contiguous block of rows
        self.Ht = np.empty((f.h_cols, n))
        self._P = np.empty((max((v.shape[1] for v in f.v_cat), default=0), n))

        def no_resampling(j, t):
            z, resample = step(j, t)
            if resample is not None:
                raise NotImplementedError("the tile-low-rank walk does not resample")
            return z, None

        return super().run(n, no_resampling)

    def _block_means(self, Z, i0, i1, out):
        r = i0 // self.factor.tile
        h0, h1 = self.factor.h_range[r]
        if h1 > h0:
            np.matmul(self.Ht[h0:h1].T, self.factor.u_cat[r].T, out=out)
        else:
            out[:] = 0.0

    def _diagonal_block(self, i0, i1):
        return self.factor.diag[i0 // self.factor.tile]

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


class SovTlr(Sov):
    """Tile-low-rank SOV (Cao et al. 2021): `sov` with an O(N^{3/2})-per-sample walk."""

    name = "sov-tlr"
    summary = ("tile-low-rank separation of variables (Cao et al. 2021): tiles ~ sqrt(N), "
               "QR-compressed off-diagonal tiles, optional block reordering; ratio estimator")
    exact = True
    unbiased_z = False  # unbiased for the compressed factor's Z, not for Z itself
    budget_unit = "qmc points"
    test_budget = 8000

    def __init__(self, points: str = "sobol", randomisations: int = 10, reorder: str = "none",
                 tile_size: int = 0, tolerance: float = 1e-8, chunk_mb: float = 512.0):
        self.points = points
        self.randomisations = randomisations
        self.reorder = reorder
        self.tile_size = tile_size
        self.tolerance = tolerance
        self.chunk_mb = chunk_mb
        self.block_size = 0   # the tile size is the block size; not a setting here
        self._check_common()
        field = f"method {self.name}: setting"
        if reorder not in TLR_REORDERINGS:
            raise InputError(f"{field} 'reorder'",
                             f"must be one of {TLR_REORDERINGS}, got {reorder!r}")
        if isinstance(tile_size, bool) or not isinstance(tile_size, int) or tile_size < 0:
            raise InputError(f"{field} 'tile_size'", "must be an integer >= 0 (0: ~sqrt(N))")
        if not (np.isfinite(tolerance) and 0 <= tolerance < 1):
            raise InputError(f"{field} 'tolerance'", f"must be in [0, 1), got {tolerance!r}")

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """Dense R and L (the factor is still computed densely, then compressed: module doc),
        the compressed factor at an assumed rank (ASSUMED_RANK), and SOV's chunked particles
        with the projection buffer H (8 bytes per particle and column)."""
        tile = min(self.tile_size or default_tile(n_train), n_train)
        rank = tile if self.tolerance == 0 else min(tile, ASSUMED_RANK)
        factor, h_cols = tlr_memory(n_train, n_test, tile, rank)
        held = {"dense R": dense(n_train), "dense factor L": dense(n_train),
                "test rows": 2 * dense(n_train, n_test), **factor}
        setup = {"compression copies": sum(factor.values())}
        if self.reorder != "none":
            held["reordered factor"] = dense(n_train)
            held["reordered test rows"] = dense(n_train, n_test)
            setup["reordering Schur complement"] = dense(n_train)
        return MemoryEstimate(held, self.particle_memory(n_train, n_test, budget, tile,
                                                         extra=8 * h_cols), setup)

    def tlr_factor(self, problem: Problem) -> TileLowRankFactor:
        """The (cached) tile-low-rank factor of the problem for these settings."""
        tile = self.tile_size or default_tile(problem.n_train)
        tile = min(tile, problem.n_train)

        def build():
            op = ordered_problem(problem, self.reorder, tile)
            scale = float(np.sqrt(np.max(np.diag(problem.R))))
            return build_tile_low_rank(op.chol, op.test_rows, op.test_sd, tile, self.tolerance,
                                       scale, op.kind, op.seconds)

        return cached(problem, ("tlr", self.reorder, tile, self.tolerance), build)

    def factor(self, problem: Problem) -> Factor:
        f = self.tlr_factor(problem)
        walk = TileLowRankWalk(f)

        def test_means(result: WalkResult, cols: slice) -> np.ndarray:
            return walk.test_means(cols)

        nz = f.ranks[f.ranks > 0]
        return Factor(
            walk=walk, test_sd=f.test_sd, test_means=test_means,
            extra_bytes_per_particle=8 * f.h_cols, test_tile=f.tile,
            diagnostics={
                "reorder": f.order_kind, "reorder_seconds": f.order_seconds,
                "tile_size": f.tile, "tiles": f.n_tiles,
                "compress_seconds": f.seconds,
                "rank_mean": float(nz.mean()) if len(nz) else 0.0,
                "rank_max": int(f.ranks.max()) if len(f.ranks) else 0,
                "zero_tiles": int(np.count_nonzero(f.ranks == 0)),
                "stored_fraction": f.stored_fraction(),
            },
        )
