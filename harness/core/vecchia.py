"""The Vecchia approximation of an orthant covariance (docs/math.md §5, §7; Cao & Katzfuss 2024).

The training variables v ~ N(0, R) are put in an order and each variable i is conditioned on at
most m previously ordered neighbours c(i) only:

    v_i | v_c(i) ~ N(b_i v_c(i), d_i),   b_i = R[i, c] R[c, c]^{-1},   d_i = R_ii - b_i R[c, i],

a joint Gaussian whose inverse Cholesky factor U (unit lower triangular, U[i, c(i)] = -b_i) is
sparse: U v = D^{1/2} z with z ~ N(0, I), so the factor of the approximated R is
L = U^{-1} D^{1/2} (diag L = sqrt(d)). With m >= i for every i (all previous variables) it is the
exact Cholesky factor of R. Set-up O(N m^3) flops and O(N m) memory; L v and L^T u are sparse
triangular solves, O(N m) (numba).

Orders: `maximin_order` (inputs: each next point the one farthest from the points already
ordered, Guinness 2018), the sorted order for 1-D inputs, a maximin order in the correlation
distance 1 - |ρ_ij| (`correlation_maximin_order`, one row of R at a time), and the strongest
variables first (`strongest_order`, decreasing Σ_j ρ_ij²: for global covariances).
Neighbours: the m nearest previously ordered inputs (`ordered_neighbours`,
scipy.spatial.cKDTree), or the m most correlated previous variables
(`correlation_neighbours`, blocks of rows of R). None ever holds an N x N array.

`VecchiaWalk`: the shared Cholesky walk over these conditionals, in blocks (each block's means
given the earlier ones and its diagonal block of L by forward substitution), O(N m) per sample
for blocks of one; its history holds only the rows a later block still reads, reused
(`_history_slots`). The saddle point's factor (`VecchiaFactor`) takes its starting path from
it, with one particle.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.spatial import cKDTree

from harness.core.covariance import Covariance
from harness.core.deadline import check_deadline
from harness.core.progress import phase
from harness.core.sequential import CholeskyWalk, WalkResult

_BLOCK_ELEMENTS = 1 << 22   # entries of R (or of a neighbour query) generated at a time
_BATCH = 2048               # variables whose conditionals are solved together
_VAR_FLOOR = 1e-12          # d_i >= this times R_ii (rounding of a near-singular R[c, c])


def maximin_order(X: np.ndarray) -> np.ndarray:
    """Greedy maximin order of the rows of X: start nearest the centroid, then repeatedly the
    point whose distance to the ordered ones is largest (exact; a k-d tree finds the points
    whose distance a new point can lower, those within the distance it was chosen at, so the
    work is ~ N log N for spread-out points)."""
    X = np.asarray(X, dtype=float)
    n = len(X)
    if n <= 2:
        return np.arange(n)
    tree = cKDTree(X)
    first = int(np.argmin(np.sum((X - X.mean(axis=0)) ** 2, axis=1)))
    dist = np.sqrt(np.sum((X - X[first]) ** 2, axis=1))
    chosen = np.zeros(n, dtype=bool)
    order = np.empty(n, dtype=np.intp)
    order[0], chosen[first] = first, True
    heap = [(-d, i) for i, d in enumerate(dist.tolist()) if i != first]
    heapq.heapify(heap)
    for k in range(1, n):
        if k % 4096 == 0:
            check_deadline()
        while True:   # lazy deletion: skip entries whose distance has since dropped
            negd, p = heapq.heappop(heap)
            if not chosen[p] and -negd == dist[p]:
                break
        order[k], chosen[p] = p, True
        near = np.asarray(tree.query_ball_point(X[p], -negd), dtype=np.intp)
        if len(near):
            near = near[~chosen[near]]
            d = np.sqrt(np.sum((X[near] - X[p]) ** 2, axis=1))
            lower = d < dist[near]
            for i, di in zip(near[lower].tolist(), d[lower].tolist(), strict=True):
                dist[i] = di
                heapq.heappush(heap, (-di, i))
    return order


def _correlation_rows(cov: Covariance, rows: np.ndarray, cols: np.ndarray,
                      sd: np.ndarray) -> np.ndarray:
    """|ρ| of R[rows][:, cols] (sd = sqrt(diag R), indexed like the variables)."""
    out = np.abs(cov.block(rows, cols))
    out /= sd[rows][:, None]
    out /= sd[cols][None, :]
    return out


def correlation_maximin_order(cov: Covariance) -> np.ndarray:
    """Maximin order in the distance 1 - |ρ_ij| (no inputs): variable 0 first, then always the
    variable whose largest |correlation| with the ordered ones is smallest. O(N^2) time (one
    row of R per variable), O(N) memory."""
    n = cov.n
    sd = np.sqrt(cov.diag())
    every = np.arange(n)
    closeness = np.full(n, -np.inf)   # max |ρ| to the ordered variables
    chosen = np.zeros(n, dtype=bool)
    order = np.empty(n, dtype=np.intp)
    p = 0
    for k in range(n):
        if k % 1024 == 0:
            check_deadline()
        order[k], chosen[p] = p, True
        np.maximum(closeness, _correlation_rows(cov, np.array([p]), every, sd)[0],
                   out=closeness)
        closeness[p] = np.inf
        if k < n - 1:
            p = int(np.argmin(closeness))
    return order


def strongest_order(cov: Covariance) -> np.ndarray:
    """Variables by decreasing Σ_j ρ_ij² (the squared norm of their correlation row), ties in
    the given order: for a global (one-factor, low-rank) covariance the most strongly loaded
    variables first, so that every later one is conditioned on those that pin the common
    factor down best. O(N^2) time by blocks of rows, O(N) memory per row."""
    n = cov.n
    sd = np.sqrt(cov.diag())
    every = np.arange(n)
    strength = np.empty(n)
    rows_per = max(1, _BLOCK_ELEMENTS // max(n, 1))
    for a in range(0, n, rows_per):
        check_deadline()
        rows = every[a:a + rows_per]
        strength[rows] = np.sum(_correlation_rows(cov, rows, every, sd) ** 2, axis=1)
    return np.argsort(-strength, kind="stable")


def _first_earlier(cand: np.ndarray, rows: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """For candidate lists (sorted nearest first) of variables `rows`, the first m candidates
    ordered before the row (positions < row), and whether m were found."""
    earlier = cand < rows[:, None]
    found = earlier.sum(axis=1) >= m
    key = np.where(earlier, 0, 1) * cand.shape[1] + np.arange(cand.shape[1])
    pick = np.argsort(key, axis=1, kind="stable")[:, :m]
    return np.take_along_axis(cand, pick, axis=1), found


def ordered_neighbours(X: np.ndarray, m: int) -> np.ndarray:
    """(N, m) positions of the m nearest previously ordered points of each row of X (X in the
    chosen order); rows i < m get all i earlier points, padded with 0 (the counts are
    min(i, m)). A k-d tree over all points is asked for k nearest, doubling k for the rows with
    fewer than m earlier ones among them (brute force once k reaches N)."""
    n = len(X)
    nbrs = np.zeros((n, m), dtype=np.intp)
    for i in range(min(m, n)):
        nbrs[i, :i] = np.arange(i)
    if n <= m:
        return nbrs
    tree = cKDTree(X)
    todo = np.arange(m, n)
    k = min(n, 3 * m + 1)
    while len(todo):
        check_deadline()
        if k >= n:   # brute force for what is left (few points: early in a maximin order)
            for i in todo.tolist():
                d = np.sum((X[:i] - X[i]) ** 2, axis=1)
                nbrs[i] = np.argsort(d, kind="stable")[:m]
            break
        rows_per = max(1, _BLOCK_ELEMENTS // k)
        left = []
        for a in range(0, len(todo), rows_per):
            rows = todo[a:a + rows_per]
            _, cand = tree.query(X[rows], k)
            cand = np.asarray(cand, dtype=np.intp).reshape(len(rows), k)
            first, found = _first_earlier(cand, rows, m)
            nbrs[rows[found]] = first[found]
            left.append(rows[~found])
        todo = np.concatenate(left)
        k = min(n, 2 * k)
    return nbrs


def correlation_neighbours(cov: Covariance, order: np.ndarray, m: int) -> np.ndarray:
    """(N, m) positions (in `order`) of the m previously ordered variables most correlated
    with each variable (|ρ|), by blocks of rows of R: O(N^2) time, O(N) memory per row."""
    n = len(order)
    sd = np.sqrt(cov.diag())
    nbrs = np.zeros((n, m), dtype=np.intp)
    for i in range(min(m, n)):
        nbrs[i, :i] = np.arange(i)
    rows_per = max(1, _BLOCK_ELEMENTS // max(n, 1))
    for a in range(m, n, rows_per):
        check_deadline()
        b = min(n, a + rows_per)
        rho = _correlation_rows(cov, order[a:b], order[:b], sd)
        rho[np.arange(b - a)[:, None] <= np.arange(b)[None, :] - a] = -1.0   # not earlier
        nbrs[a:b] = np.argpartition(-rho, m - 1, axis=1)[:, :m]
    return nbrs


def test_correlation_neighbours(cov: Covariance, order: np.ndarray, m: int) -> np.ndarray:
    """(n_test, m) positions (in `order`) of the m training variables most correlated with
    each test variable (|B_ij| / sqrt(R_ii), the test variance being common to a column)."""
    sd = np.sqrt(cov.diag())[order]
    out = np.empty((cov.n_test, m), dtype=np.intp)
    cols_per = max(1, _BLOCK_ELEMENTS // max(cov.n, 1))
    for a in range(0, cov.n_test, cols_per):
        check_deadline()
        b = min(cov.n_test, a + cols_per)
        rho = np.abs(cov.cross(order, slice(a, b))) / sd[:, None]
        out[a:b] = np.argpartition(-rho, m - 1, axis=0)[:m].T
    return out


@dataclass(frozen=True)
class Conditionals:
    """v_i | v_c(i) ~ N(coef_i · v_idx_i, var_i) for each variable (module doc): idx (N, m)
    positions, coef (N, m) (0 beyond count_i), var (N,), count (N,)."""

    idx: np.ndarray
    coef: np.ndarray
    var: np.ndarray
    count: np.ndarray
    floored: int = 0     # variances raised to the floor (rounding: near-singular R[c, c])

    @property
    def nbytes(self) -> int:
        return self.idx.nbytes + self.coef.nbytes + self.var.nbytes + self.count.nbytes

    def read(self) -> np.ndarray:
        """(N, m) mask of the entries of idx that are neighbours (k < count_i)."""
        return np.arange(self.idx.shape[1]) < self.count[:, None]


def conditionals(blocks, diag: np.ndarray, nbrs: np.ndarray, count: np.ndarray) -> Conditionals:
    """Solve R[c, c] b = R[c, i] for every variable, in batches of equal neighbour counts.

    blocks(i, c) -> (R[c, c], R[c, i]) for variable i and neighbour positions c (the caller
    maps positions to the covariance's indices, training or test); diag = R_ii.
    """
    n, m = nbrs.shape
    coef = np.zeros((n, m))
    var = diag.astype(float).copy()
    floored = 0
    for k in np.unique(count[count > 0]).tolist():
        members = np.flatnonzero(count == k)
        for a in range(0, len(members), _BATCH):
            check_deadline()
            rows = members[a:a + _BATCH]
            A = np.empty((len(rows), k, k))
            r = np.empty((len(rows), k))
            for j, i in enumerate(rows.tolist()):
                A[j], r[j] = blocks(i, nbrs[i, :k])
            b = np.linalg.solve(A, r[:, :, None])[:, :, 0]
            coef[rows, :k] = b
            d = diag[rows] - np.einsum("ij,ij->i", b, r)
            low = d < _VAR_FLOOR * diag[rows]
            floored += int(low.sum())
            var[rows] = np.where(low, _VAR_FLOOR * diag[rows], d)
    return Conditionals(nbrs, coef, var, count.astype(np.intp), floored)


@njit(cache=True)
def _forward(idx, coef, count, w):
    """v = U^{-1} w: v_i = w_i + Σ_k coef_ik v_idx_ik (variables in order)."""
    v = np.empty_like(w)
    for i in range(len(w)):
        s = w[i]
        for k in range(count[i]):
            s += coef[i, k] * v[idx[i, k]]
        v[i] = s
    return v


@njit(cache=True)
def _backward(idx, coef, count, u):
    """x = U^{-T} u: x_i final once every later variable has scattered coef x into it."""
    x = u.copy()
    for i in range(len(u) - 1, -1, -1):
        xi = x[i]
        for k in range(count[i]):
            x[idx[i, k]] += coef[i, k] * xi
    return x


class VecchiaFactor:
    """L = U^{-1} D^{1/2} of the Vecchia approximation, with the protocol of
    harness.core.saddle_point.TriangularFactor (n, diag, lower, upper) and its mean path."""

    def __init__(self, cond: Conditionals):
        self.cond = cond
        self.n = len(cond.var)
        self.diag = np.sqrt(cond.var)

    def lower(self, v: np.ndarray) -> np.ndarray:
        """L v = U^{-1} (D^{1/2} v)."""
        c = self.cond
        return _forward(c.idx, c.coef, c.count, self.diag * v)

    def upper(self, u: np.ndarray) -> np.ndarray:
        """Lᵀ u = D^{1/2} U^{-T} u."""
        c = self.cond
        return self.diag * _backward(c.idx, c.coef, c.count, np.asarray(u, dtype=float))

    def mean_path(self, value) -> np.ndarray:
        """x_j = value(t_j), t_j = b_j v_c(j) / sqrt(d_j), v_j = b_j v_c(j) + sqrt(d_j) x_j
        (the saddle point's starting path, harness.core.saddle_point.mean_path): the walk of
        one particle; x_N = 0."""
        x = np.zeros(self.n)

        def step(j, t):
            z = value(t)
            x[j] = z[0]
            return z, None

        with phase("mean path"):
            VecchiaWalk(self.cond).run(1, step)
        x[-1] = 0.0
        return x


@njit(cache=True)
def _block_conditionals(V, slot, idx, coef, count, sd, i0, i1, M, D):
    """For the variables i0..i1-1 (block B): M[o] = their conditional means given the
    variables before i0, U_BB^{-1} r with r_i = Σ_{c < i0} b_ic v_c (v_c in row slot[c] of V),
    and D = L_BB = U_BB^{-1} diag(sd_B), by forward substitution over the in-block neighbours."""
    n = M.shape[1]
    for o in range(i1 - i0):
        i = i0 + o
        M[o, :] = 0.0
        D[o, :] = 0.0
        D[o, o] = sd[i]
        for k in range(count[i]):
            r, b = idx[i, k], coef[i, k]
            if r < i0:
                row = slot[r]
                for s in range(n):
                    M[o, s] += b * V[row, s]
            else:
                q = r - i0
                for s in range(n):
                    M[o, s] += b * M[q, s]
                for c in range(q + 1):
                    D[o, c] += b * D[q, c]


@njit(cache=True)
def _permute_columns(V, rows, anc, buf):
    """V[r, :] = V[r, anc] for every r in rows (buf: one row of scratch)."""
    for r in rows:
        for s in range(anc.shape[0]):
            buf[s] = V[r, anc[s]]
        V[r, :] = buf


def last_reads(cond: Conditionals, keep: np.ndarray | None = None) -> np.ndarray:
    """For each variable the last variable whose conditional reads it (-1: none); the rows
    in `keep` (read after the walk, e.g. by the test variables) are read at N."""
    n = len(cond.idx)
    read = cond.read()
    last = np.full(n, -1, dtype=np.intp)
    np.maximum.at(last, cond.idx[read], np.nonzero(read)[0])
    if keep is not None:
        last[np.asarray(keep, dtype=np.intp)] = n
    return last


@njit(cache=True)
def _history_slots(last, k):
    """Rows of the walk's history for blocks of k variables: a variable is stored only if a
    variable after its own block (or the caller, last = N) reads it, and its row is free again
    once the block that reads it last has started (its reads happen at the block's start).
    Returns (slot of each variable or -1, number of rows, and per block b the variables whose
    rows it frees: freed[ptr[b]:ptr[b + 1]])."""
    n = last.shape[0]
    nb = (n + k - 1) // k
    frees_at = np.full(n, -1, np.intp)   # the block that frees variable j's row (-1: none)
    counts = np.zeros(nb + 1, np.intp)
    for j in range(n):
        if last[j] < n and last[j] >= min((j // k + 1) * k, n):
            frees_at[j] = last[j] // k
            counts[frees_at[j] + 1] += 1
    ptr = np.cumsum(counts)
    freed = np.empty(ptr[nb], np.intp)
    fill = ptr[:nb].copy()
    for j in range(n):
        b = frees_at[j]
        if b >= 0:
            freed[fill[b]] = j
            fill[b] += 1
    slot = np.full(n, -1, np.intp)
    free = np.empty(n, np.intp)
    nfree, size = 0, 0
    for b in range(nb):
        for q in range(ptr[b], ptr[b + 1]):
            free[nfree] = slot[freed[q]]
            nfree += 1
        i1 = min((b + 1) * k, n)
        for j in range(b * k, i1):
            if last[j] >= i1:
                if nfree:
                    nfree -= 1
                    slot[j] = free[nfree]
                else:
                    slot[j] = size
                    size += 1
    return slot, size, ptr, freed


class VecchiaWalk(CholeskyWalk):
    """The Cholesky walk (harness.core.sequential) over the Vecchia conditionals, in blocks
    of `block_size` variables: v_i = b_i v_c(i) + sqrt(d_i) z_i. Before a block B the walk gets
    the means of its variables given the earlier ones, U_BB^{-1} r (r_i the part of b_i v_c(i)
    from earlier blocks), and its diagonal block L_BB = U_BB^{-1} D_B^{1/2}, both by forward
    substitution over the in-block neighbours (O(k m) per variable and particle): the in-block
    loop is then the shared one. With blocks of one variable this is the plain walk,
    t_i = b_i v_c(i) / sqrt(d_i).

    The history holds only the v's that a later block (or the caller: `keep`, e.g. the test
    variables' neighbours) still reads, in `history_rows` rows reused as variables stop being
    read (`_history_slots`; on a 1-D sorted order about m rows plus `keep`, not N). The result's
    Z is (n, history_rows), v's not standardised draws, with `columns` the row of each `keep`
    variable (-1 for the others, whose rows were reused). When a step resamples, the held rows
    are permuted with the particles."""

    draws_in_history = False   # the history holds v's, not the draws z

    def __init__(self, cond: Conditionals, block_size: int = 1, keep: np.ndarray | None = None):
        self.L = None
        self.cond = cond
        self.n_vars = len(cond.var)
        self.block_size = block_size
        self.pivots = np.sqrt(cond.var)
        last = last_reads(cond, keep)
        self.slot, self.history_rows, self._ptr, self._freed = _history_slots(last, block_size)
        self.columns = np.where(last == self.n_vars, self.slot, -1)   # held to the end

    def _new_history(self, n: int) -> np.ndarray:
        k = self.block_size
        self._M, self._D = np.empty((k, n)), np.empty((k, k))
        self._held = np.zeros(self.history_rows, dtype=bool)
        self._none = np.empty((0, n))   # the history before the first block
        return np.zeros((self.history_rows, n))

    def _conditionals(self, V, i0, i1):
        """(M, D) of the block (_block_conditionals), read from the held rows; the rows this
        block read for the last time are free from here on (not carried by a gather)."""
        M, D = self._M[: i1 - i0], self._D[: i1 - i0, : i1 - i0]
        c = self.cond
        _block_conditionals(V, self.slot, c.idx, c.coef, c.count, self.pivots, i0, i1, M, D)
        b = i0 // self.block_size
        self._held[self.slot[self._freed[self._ptr[b]:self._ptr[b + 1]]]] = False
        return M, D

    def _block_means(self, V, i0, i1, out):
        out[:] = self._conditionals(V, i0, i1)[0].T

    def _diagonal_block(self, i0, i1):
        if i0 == 0:     # no earlier blocks: _block_means was not called
            self._conditionals(self._none, 0, i1)
        return self._D[: i1 - i0, : i1 - i0]

    def _gather_history(self, V, anc, i0):
        """Permute the held rows (those a later block or the caller still reads)."""
        _permute_columns(V, np.flatnonzero(self._held), anc, np.empty(V.shape[1]))
        return V

    def _store_block(self, V, W, i0, i1, anc):
        rows = self.slot[i0:i1]
        kept = np.flatnonzero(rows >= 0)
        if len(kept) == 0:
            return
        M = self._M[: i1 - i0]
        B = self._D[: i1 - i0, : i1 - i0] @ W.T
        B += M[:, anc] if anc is not None else M
        V[rows[kept]] = B[kept]
        self._held[rows[kept]] = True

    def _result(self, V, lineage):
        return WalkResult(V.T, lineage, self.columns)
