"""Tile-low-rank (TLR) Cholesky factors (Cao, Genton, Keyes & Turkiyyah 2021; docs/math.md §6).

The variables are cut into tiles of b ~ sqrt(N) consecutive variables (in the order used);
the diagonal tiles L_cc of the Cholesky factor stay dense and every off-diagonal tile is stored
as L_ic ~ U_ic V_ic^T with the smallest rank whose Frobenius error is at most
threshold = tolerance * sqrt(max R_ii). Test variables (classification problems) are further
tile rows: their Cholesky rows (L^{-1} B)^T, never pivoted, compressed the same way, and their
pivots test_sd = sqrt(1 + k(x*, x*) - |row|^2).

`build_tile_low_rank(L, ...)` compresses a dense factor tile by tile (the "dense" path: LAPACK
Cholesky first, N^3/3 flops and 8 N^2 bytes). `tlr_cholesky(cov, tile, tolerance, reorder)`
factorises straight from a covariance representation (harness.core.covariance), never holding
an N x N array, LEFT-LOOKING over tile columns: for tile column c (the next tile placed) and
every tile row i still to come (training tiles, then the test tiles),

    panel     P_i = R_ic - sum_{l placed} U_il (V_il^T V_cl) U_cl^T        (R_ic from cov.block)
    diagonal  L_cc = chol(P_c)            (block reordering: pivoted inside the tile, below)
    below     L_ic = P_i L_cc^{-T}        (one triangular solve for the whole panel)
    compress  L_ic ~ U_ic V_ic^T           (batched pivoted Gram-Schmidt over all tiles of the
                                            panel at once, `compress_tiles`)

The panel update is organised as the sampler's walk is (harness.methods.sov_tlr): per placed
source tile l ONE product G_l = (V_l^T V_cl) U_cl^T for all its targets (V_l = [V_il ...]), per
target row ONE product U_i,cat @ G[rows of i] (U_i,cat = [U_il ...]). So the factorisation
takes O(T^2) numpy calls (T = N / b tiles), O(N^{5/2} k) flops (ranks k) in BLAS-3 products
and O(N b) work space plus the factor, O(k N^{3/2}); a right-looking update would recompress
every trailing tile at every step (T^3 / 6 = 2.8 million QR/SVD calls at T = 256). Its cost
against the dense path: docs/studies.md, "Tile-low-rank Cholesky".

Block reordering (reorder="block"), inside the factorisation: before each tile column the
remaining tile with the smallest crude log-probability sum_j log Phi(m_j / s_j) is placed next,
its variables by the univariate rule inside the tile, exactly as
harness.core.reorder.pivoted_cholesky(kind="block") defines them (so with tolerance 0 the
orders agree). Other orders ("none", "kdtree") are passed as an index permutation `order`.

Error: per tile, the factor is the exact Cholesky factor of R + Delta with Delta_cc = 0 and
Delta_ic = E_ic L_cc^T, |E_ic|_F <= threshold (the compression error), so
|Delta_ic|_F <= threshold * |L_cc|_2 (a backward error; tests/core/test_tlr.py checks it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.special import log_ndtr

from harness.core.covariance import Covariance
from harness.core.deadline import check_deadline
from harness.core.progress import advance, phase
from harness.core.reorder import mills

TLR_REORDERINGS = ("none", "kdtree", "block")
_UPDATE_TILES = 64   # tiles per deflation product in compress_tiles (bounds its temporaries)


class NotLowRankWarning(UserWarning):
    """A tile-low-rank factor that stores at least as many numbers as the dense one (one line
    in the CLI): its walk costs more per sample than the dense walk."""

    one_line = True


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
    seconds: float                   # compression (dense path) or factorisation CPU time
    order_kind: str
    order_seconds: float
    order: np.ndarray | None = None  # position p holds variable order[p] (None: as given)
    factorisation: str = "dense"     # "dense" (compressed dense factor) or "tlr"
    workspace_bytes: int = 0         # peak work space of the factorisation (tlr), estimated
    wall_seconds: float = 0.0        # wall time of the factorisation (tlr)

    @property
    def n_tiles(self) -> int:
        return len(self.diag)

    def stored_fraction(self) -> float:
        """Numbers stored / numbers in the dense lower triangle (training part only)."""
        dense = self.n_vars * (self.n_vars + 1) / 2
        diag = sum(d.shape[0] * (d.shape[0] + 1) / 2 for d in self.diag)
        low = sum(v.size for v in self.v_cat) + sum(u.size for u in self.u_cat[: self.n_tiles])
        return float((diag + low) / dense)

    def not_low_rank(self) -> str:
        """Why this factor is not low-rank ('' if it is): it stores >= 100 % of a dense
        factor, so its off-diagonal tiles are nearly full rank."""
        fraction = self.stored_fraction()
        if fraction < 1.0 or self.n_tiles < 2:
            return ""
        nz = self.ranks[self.ranks > 0]
        return (f"the tile-low-rank factor is not low-rank: it stores {fraction:.0%} of a dense "
                f"factor (mean tile rank {nz.mean() if len(nz) else 0:.1f} at tile size "
                f"{self.tile}, order {self.order_kind}), so each sample costs more than with "
                "the dense factor")

    def to_dense(self) -> tuple[np.ndarray, np.ndarray]:
        """(L, W): the expanded training factor and test rows (N x n_test); small N only."""
        N, nb = self.n_vars, self.n_tiles
        start = np.concatenate([[0], np.cumsum([len(D) for D in self.diag])])
        L = np.zeros((N + self.n_test, N))
        for j, D in enumerate(self.diag):
            L[start[j] : start[j + 1], start[j] : start[j + 1]] = D
        source = np.empty(self.h_cols, dtype=np.intp)   # H column -> (source tile, V column)
        vcol = np.empty(self.h_cols, dtype=np.intp)
        for j, idx in enumerate(self.h_idx):
            source[idx], vcol[idx] = j, np.arange(len(idx))
        for r, (h0, h1) in enumerate(self.h_range):
            r0 = start[r] if r < nb else N + (r - nb) * self.tile
            for h in range(h0, h1):
                j = source[h]
                u, v = self.u_cat[r][:, h - h0], self.v_cat[j][:, vcol[h]]
                L[r0 : r0 + len(u), start[j] : start[j + 1]] += np.outer(u, v)
        return L[:N], L[N:].T

    def nbytes(self) -> int:
        """Bytes the factor holds."""
        arrays = [*self.diag, *self.v_cat, *self.h_idx, *self.u_cat, self.pivots]
        return int(sum(a.nbytes for a in arrays))


def compress_tile(block: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray] | None:
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


def compress_tiles(A: np.ndarray, threshold: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compress the n tiles A[a] (m x p) at once: ranks k_a and U (n, m, K), V (n, p, K).

    Pivoted Gram-Schmidt by deflation, batched over the tiles: while a tile's residual has
    Frobenius norm > threshold (and fewer than min(m, p) steps were taken), take its largest
    residual column a_j, q = a_j / |a_j|, v = A^T q and deflate A -= q v^T. In exact arithmetic
    this is QR with column pivoting truncated at the same rank as `compress_tile`; the residual
    is formed explicitly, so |A - U V^T|_F <= threshold holds as computed. Columns k >= k_a of
    U[a], V[a] are zero. A is overwritten. Cost: 4 m p flops per tile per step (memory bound),
    O(max rank) numpy calls: cheaper than LAPACK's QR (4/3 b^3 per tile) for low ranks.
    """
    n, m, p = A.shape
    t2 = threshold * threshold
    ranks = np.zeros(n, dtype=np.int64)
    cn2 = np.einsum("amp,amp->ap", A, A)
    active = np.flatnonzero(cn2.sum(axis=1) > t2)
    W = A if len(active) == n else A[active]
    cn2 = cn2[active]
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while len(active) and len(steps) < min(m, p):
        ar = np.arange(len(active))
        col = W[ar, :, np.argmax(cn2, axis=1)]                      # (na, m)
        q = col / np.sqrt(np.einsum("am,am->a", col, col))[:, None]
        v = np.matmul(q[:, None, :], W)[:, 0, :]                    # (na, p)
        for a0 in range(0, len(active), _UPDATE_TILES):
            a1 = a0 + _UPDATE_TILES
            W[a0:a1] -= q[a0:a1, :, None] * v[a0:a1, None, :]
        steps.append((active, q, v))
        ranks[active] += 1
        cn2 = np.einsum("amp,amp->ap", W, W)
        keep = cn2.sum(axis=1) > t2
        if not keep.all():
            W, cn2, active = W[keep], cn2[keep], active[keep]
    U = np.zeros((n, m, len(steps)))
    V = np.zeros((n, p, len(steps)))
    for s, (idx, q, v) in enumerate(steps):
        U[idx, :, s] = q
        V[idx, :, s] = v
    return ranks, U, V


# ---- assembling the factor ------------------------------------------------------------------
Pieces = list[list[tuple[int, np.ndarray, np.ndarray]]]   # per target row: (source, U, V)


def assemble(diag: list[np.ndarray], pieces: Pieces, sizes: list[int], n_test: int,
             test_sd: np.ndarray, ranks: np.ndarray, **info) -> TileLowRankFactor:
    """The walk's layout from the compressed tiles: H columns grouped by target row (training
    rows, then test rows), then by source tile; pieces[r] lists row r's tiles by source."""
    nb = len(diag)
    h_range, u_cat, col = [], [], 0
    per_source: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(nb)]
    for r, row in enumerate(pieces):
        h0 = col
        us = []
        for j, U, V in row:
            k = U.shape[1]
            per_source[j].append((V, np.arange(col, col + k)))
            us.append(U)
            col += k
        h_range.append((h0, col))
        u_cat.append(np.ascontiguousarray(np.hstack(us)) if us else np.zeros((sizes[r], 0)))
    v_cat = [np.ascontiguousarray(np.hstack([V for V, _ in ps])) if ps
             else np.zeros((sizes[j], 0)) for j, ps in enumerate(per_source)]
    h_idx = [np.concatenate([idx for _, idx in ps]) if ps else np.zeros(0, dtype=np.intp)
             for ps in per_source]
    pivots = np.concatenate([np.diag(D) for D in diag]) if diag else np.empty(0)
    return TileLowRankFactor(
        n_vars=int(sum(sizes[:nb])), diag=diag, pivots=pivots, h_cols=col, v_cat=v_cat,
        h_idx=h_idx, u_cat=u_cat, h_range=h_range, n_test=n_test, test_sd=test_sd,
        ranks=np.asarray(ranks, dtype=np.int64), **info)


def _tile_bounds(n: int, tile: int) -> list[tuple[int, int]]:
    return [(i, min(i + tile, n)) for i in range(0, n, tile)]


def build_tile_low_rank(L: np.ndarray, test_rows: np.ndarray, test_sd: np.ndarray, tile: int,
                        tolerance: float, scale: float, order_kind: str = "none",
                        order_seconds: float = 0.0, order: np.ndarray | None = None
                        ) -> TileLowRankFactor:
    """Compress the dense factor L (and the test rows L^{-1} B) into tile-low-rank form."""
    t0 = time.thread_time()
    N = len(L)
    n_test = test_rows.shape[1]
    bounds = _tile_bounds(N, tile)
    test_bounds = _tile_bounds(n_test, tile)
    nb = len(bounds)
    threshold = tolerance * scale
    # targets: training tile rows 0..nb-1 (row 0 has no sources), then the test tile rows
    pieces: Pieces = []
    ranks = []
    with phase("compression", total=nb * (nb - 1) // 2 + len(test_bounds) * nb):  # tiles
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
                uv = compress_tile(block, threshold)
                ranks.append(0 if uv is None else uv[0].shape[1])
                if uv is not None:
                    row.append((j, uv[0], uv[1]))
            pieces.append(row)
            advance(len(sources))
    sizes = [b - a for a, b in bounds + test_bounds]
    return assemble([np.ascontiguousarray(L[a:b, a:b]) for a, b in bounds], pieces, sizes,
                    n_test, test_sd, np.array(ranks), tile=tile,
                    seconds=time.thread_time() - t0, order_kind=order_kind,
                    order_seconds=order_seconds, order=order, factorisation="dense")


# ---- the tile-low-rank Cholesky ---------------------------------------------------------------
class _Growing:
    """Columns appended to a (rows x cap) buffer that doubles when full."""

    def __init__(self, rows: int):
        self.buf = np.empty((rows, 4))
        self.n = 0

    def append(self, X: np.ndarray) -> int:
        k = X.shape[1]
        if self.n + k > self.buf.shape[1]:
            new = np.empty((self.buf.shape[0], max(2 * self.buf.shape[1], self.n + k)))
            new[:, : self.n] = self.buf[:, : self.n]
            self.buf = new
        self.buf[:, self.n : self.n + k] = X
        self.n += k
        return self.n - k

    @property
    def cols(self) -> np.ndarray:
        return self.buf[:, : self.n]


class _BlockChooser:
    """Cao et al.'s block reordering, as harness.core.reorder.pivoted_cholesky(kind='block') does
    it: conditional means m and variances d of every variable, and the positions used to break
    ties (the same swaps as pivoted_cholesky makes)."""

    def __init__(self, cov: Covariance, tile: int):
        N = cov.n
        self.N, self.tile = N, tile
        self.d = cov.diag().astype(float)
        self.m = np.zeros(N)
        self.pos_var = np.arange(N)      # position -> variable
        self.var_pos = np.arange(N)      # variable -> position
        self.tile_of = np.arange(N) // tile
        self.placed_tiles = np.zeros(-(-N // tile), dtype=bool)
        self.next_pos = 0

    def choose_tile(self) -> int:
        rest = self.pos_var[self.next_pos :]
        logp = log_ndtr(self.m[rest] / np.sqrt(np.maximum(self.d[rest], 1e-300)))
        crude = np.bincount(self.tile_of[rest], weights=logp, minlength=len(self.placed_tiles))
        crude[self.placed_tiles] = np.inf
        if np.count_nonzero(~self.placed_tiles) > 1 and self.N % self.tile:
            crude[-1] = np.inf   # a short last tile stays last
        c = int(np.argmin(crude))
        self.placed_tiles[c] = True
        return c

    def factor_tile(self, D: np.ndarray, variables: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pivoted Cholesky of the tile's Schur complement D (variables in the given order):
        (perm, L_cc, y) with D[perm][:, perm] = L_cc L_cc^T and y the truncated expectations."""
        b = len(D)
        m, d = self.m[variables].copy(), self.d[variables].copy()
        Lc = np.zeros((b, b))
        free = np.ones(b, dtype=bool)
        perm = np.empty(b, dtype=np.intp)
        y = np.empty(b)
        for o in range(b):
            cand = np.flatnonzero(free)
            t = m[cand] / np.sqrt(np.maximum(d[cand], 1e-300))
            best = cand[t == t.min()]
            k = int(best[np.argmin(self.var_pos[variables[best]])])   # ties: lowest position
            self._swap(self.next_pos, variables[k])
            self.next_pos += 1
            free[k] = False
            col = D[:, k] - Lc[:, :o] @ Lc[k, :o]
            if not col[k] > 0:
                raise np.linalg.LinAlgError(
                    f"covariance not positive definite at reordered step {self.next_pos} "
                    f"(pivot {col[k]:.3g})")
            lii = np.sqrt(col[k])
            rest = np.flatnonzero(free)
            Lc[rest, o] = col[rest] / lii
            Lc[k, o] = lii
            perm[o], y[o] = k, mills(m[k] / lii)
            d[rest] -= Lc[rest, o] ** 2
            m[rest] += Lc[rest, o] * y[o]
        return perm, np.ascontiguousarray(Lc[perm]), y

    def update(self, variables: np.ndarray, L_rows: np.ndarray, y: np.ndarray) -> None:
        """The remaining variables' m and d after a tile column (their rows L_rows of it)."""
        self.m[variables] += L_rows @ y
        self.d[variables] -= np.einsum("ij,ij->i", L_rows, L_rows)

    def _swap(self, p: int, var: int) -> None:
        q = self.var_pos[var]
        other = self.pos_var[p]
        self.pos_var[p], self.pos_var[q] = var, other
        self.var_pos[var], self.var_pos[other] = p, q


def tlr_cholesky(cov: Covariance, tile: int, tolerance: float, reorder: str = "none",
                 order: np.ndarray | None = None, order_kind: str | None = None
                 ) -> TileLowRankFactor:
    """The tile-low-rank Cholesky factor of cov (module doc), never forming an N x N array.

    Its progress (harness.core.progress) counts each tile column's work, ~ (tiles placed + 4)
    x (tiles left + test tiles): the update per placed tile, then the panel and compression
    weighing about 4 more (as timed at N = 8000, ranks ~88).

    Parameters
    ----------
    cov : Covariance
        The covariance representation (harness.core.covariance), with its test rows.
    tile : int
        The tile size b (~ sqrt(N)).
    tolerance : float
        The compression tolerance: each off-diagonal tile's Frobenius error is at most
        tolerance * sqrt(max R_ii).
    reorder : str
        'none' (the given order, or `order`) or 'block' (Cao et al.'s block reordering inside
        the factorisation, starting from `order` if given).
    order : ndarray, optional
        A permutation applied as index sets, e.g. harness.core.reorder.kdtree_order.
    order_kind : str, optional
        The order's name recorded in the factor (default: from `reorder` and the tile size).

    Returns
    -------
    TileLowRankFactor
        The factor of the training variables and the test rows.

    Raises
    ------
    numpy.linalg.LinAlgError
        If the covariance is not numerically positive definite.
    """
    T, n_targets = -(-cov.n // tile), -(-cov.n // tile) + -(-cov.n_test // tile)
    with phase("tile-low-rank factorisation",
               total=sum(_column_work(n_targets, s) for s in range(T))):
        return _tlr_cholesky(cov, tile, tolerance, reorder, order, order_kind)


def _column_work(n_targets: int, step: int) -> int:
    """Progress units of tile column `step` of tlr_cholesky (its doc)."""
    return (n_targets - step) * (step + 4)


def _tlr_cholesky(cov: Covariance, tile: int, tolerance: float, reorder: str,
                  order: np.ndarray | None, order_kind: str | None) -> TileLowRankFactor:
    t0, w0 = time.thread_time(), time.perf_counter()
    N, n_test = cov.n, cov.n_test
    if reorder not in ("none", "block", "kdtree"):
        raise ValueError(f"unknown reordering {reorder!r}")
    base = np.arange(N) if order is None else np.asarray(order, dtype=np.intp)
    threshold = tolerance * float(np.sqrt(np.max(cov.diag())))
    T = -(-N // tile)
    # targets: training tiles 0..T-1 (variable sets in the base order), then test tiles
    tvars = [base[a:b] for a, b in _tile_bounds(N, tile)]
    test_tiles = _tile_bounds(n_test, tile)
    n_targets = T + len(test_tiles)
    size = np.array([len(v) for v in tvars] + [b - a for a, b in test_tiles])
    chooser = _BlockChooser(cov, tile) if reorder == "block" else None
    if chooser is not None and order is not None:
        chooser.pos_var, chooser.var_pos = base.copy(), np.argsort(base)
        chooser.tile_of[base] = np.arange(N) // tile

    U = [_Growing(int(s)) for s in size]           # U_i,cat per target (sources by placement)
    U_src: list[dict[int, tuple[int, int]]] = [{} for _ in range(n_targets)]  # step: (col, k)
    gidx: list[np.ndarray] = [np.zeros(0, dtype=np.intp) for _ in range(n_targets)]
    V_cat: list[np.ndarray] = []                   # per placed step: [V_ic ...] (b_c x K_c)
    V_cols: list[dict[int, tuple[int, int]]] = []  # per placed step: target -> its columns
    g_off = [0]                                    # G rows of each placed step
    rank = np.zeros((n_targets, T), dtype=np.int64)  # by target id and placement step
    placed: list[int] = []
    diag: list[np.ndarray] = []
    test_sq = np.zeros(n_test)
    remaining = np.ones(T, dtype=bool)
    workspace = 0
    for s in range(T):
        check_deadline()
        c = chooser.choose_tile() if chooser is not None else s
        remaining[c] = False
        b_c = int(size[c])
        later = [int(t) for t in np.flatnonzero(remaining)] + list(range(T, n_targets))
        later.sort(key=lambda t: (size[t] != tile, t))   # full-size tiles first (batched)
        targets = [c] + later
        offsets = np.concatenate([[0], np.cumsum(size[targets])])
        panel = np.empty((offsets[-1], b_c))
        is_train = [t < T for t in targets]
        rows = np.concatenate([tvars[t] for t, tr in zip(targets, is_train, strict=True) if tr])
        train_at = np.concatenate([np.arange(offsets[i], offsets[i + 1])
                                   for i, tr in enumerate(is_train) if tr])
        panel[train_at] = cov.block(rows, tvars[c])
        test_at = np.zeros(0, dtype=np.intp)
        if n_test:   # every test tile is a target at every step, in id order
            test_at = np.concatenate([np.arange(offsets[i], offsets[i + 1])
                                      for i, tr in enumerate(is_train) if not tr])
            panel[test_at] = cov.cross(tvars[c], slice(None)).T
        # left-looking update: per source one product for all its targets, per target one
        G = np.empty((g_off[-1], b_c))
        for step, (Vs, cols) in enumerate(zip(V_cat, V_cols, strict=True)):
            k = rank[c, step]
            rows_g = slice(g_off[step], g_off[step + 1])
            if k == 0:
                G[rows_g] = 0.0
                continue
            a, b = cols[c]
            u0 = U_src[c][step][0]
            G[rows_g] = (Vs.T @ Vs[:, a:b]) @ U[c].cols[:, u0 : u0 + k].T
        for t, r0 in zip(targets, offsets[:-1], strict=True):
            if U[t].n:
                panel[r0 : r0 + size[t]] -= U[t].cols @ G[gidx[t]]
        workspace = max(workspace, panel.nbytes + G.nbytes)
        del G
        # diagonal tile, then the panel below it
        D = panel[:b_c]
        if chooser is not None:
            perm, Lcc, y = chooser.factor_tile(D, tvars[c])
            tvars[c] = tvars[c][perm]
            U[c].buf[: b_c] = U[c].buf[perm]
            below = panel[b_c:, perm]
        else:
            Lcc = np.linalg.cholesky(D)
            below = panel[b_c:]
        del panel
        if len(below):
            below = np.ascontiguousarray(scipy.linalg.solve_triangular(
                Lcc, below.T, lower=True, check_finite=False).T)
        if chooser is not None and len(rows) > b_c:
            chooser.update(rows[b_c:], below[train_at[b_c:] - b_c], y)
        if n_test:
            W = below[test_at - b_c]
            test_sq += np.einsum("ij,ij->i", W, W)
        diag.append(Lcc)
        # compress the tiles below: the full-size ones at once, a short one (at most two) alone
        n_full = sum(1 for t in later if size[t] == tile)
        ranks_f, Uf, Vf = compress_tiles(   # overwrites these rows of `below` (not used again)
            below[: n_full * tile].reshape(n_full, tile, b_c), threshold)
        V_here, cols_here, r = [], {}, n_full * tile
        ncol = 0
        for i, t in enumerate(later):
            if i < n_full:
                k = int(ranks_f[i])
                u, v = Uf[i, :, :k], Vf[i, :, :k]
            else:
                uv = compress_tile(below[r : r + size[t]], threshold)
                r += size[t]
                k = 0 if uv is None else uv[0].shape[1]
                u, v = uv if uv is not None else (None, None)
            rank[t, s] = k
            if k:
                U_src[t][s] = (U[t].append(u), k)
                V_here.append(v)
                cols_here[t] = (ncol, ncol + k)
                gidx[t] = np.concatenate([gidx[t], np.arange(g_off[-1] + ncol,
                                                             g_off[-1] + ncol + k)])
                ncol += k
        workspace = max(workspace, 3 * below.nbytes + Uf.nbytes + Vf.nbytes)
        V_cat.append(np.hstack(V_here) if V_here else np.zeros((b_c, 0)))
        V_cols.append(cols_here)
        g_off.append(g_off[-1] + ncol)
        placed.append(c)
        advance(_column_work(n_targets, s))

    # the walk's layout, by position: target row p is tile placed[p], then the test tiles
    targets = placed + list(range(T, n_targets))
    pieces: Pieces = []
    ranks = []
    for p, t in enumerate(targets):
        row = []
        for step, (col, k) in U_src[t].items():
            a, b = V_cols[step][t]
            row.append((step, U[t].cols[:, col : col + k], V_cat[step][:, a:b]))
        pieces.append(row)
        ranks.extend(rank[t, : p if t < T else T])
    test_var = cov.test_diag() - test_sq
    test_sd = np.sqrt(np.maximum(test_var, 1e-300))
    final = np.concatenate([tvars[c] for c in placed])
    kind = order_kind or ("none" if reorder == "none" else
                          f"block{tile}" if reorder == "block" else f"kdtree{tile}")
    factor = assemble(diag, pieces, [int(size[t]) for t in targets], n_test, test_sd,
                      np.array(ranks), tile=tile, seconds=time.thread_time() - t0,
                      order_kind=kind, order_seconds=0.0, order=final, factorisation="tlr",
                      workspace_bytes=int(workspace), wall_seconds=time.perf_counter() - w0)
    return factor
