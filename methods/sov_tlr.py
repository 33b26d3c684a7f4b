"""Tile-low-rank separation of variables (Cao, Genton, Keyes & Turkiyyah 2021; docs/math.md §6).

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

Ordering (harness.core.reorder): as given ('none'); 'kdtree', the training inputs in k-d tree order
so that every tile is spatially compact (the geometric ordering tile-low-rank methods need: on 2-D
RBF problems it cuts the mean tile rank at N = 4000, b = 63, tolerance 1e-8 from ~50-62 to
~13-15; classification problems only); or 'block', the block reordering of Cao et al. 2021
(tiles placed by smallest crude probability, univariate order inside each tile).

Factorisation (setting `factorisation`): 'tlr' builds the factor with the tile-low-rank
Cholesky of harness.core.tlr straight from the problem's covariance representation (problem.cov),
never an N x N array: O(N^{5/2} k) flops, O(N b) work space plus the factor, O(k N^{3/2});
the block reordering happens inside it. 'dense' computes the dense factor (LAPACK, or the
reordering's blocked Cholesky, N^3/3 flops, 8 N^2 bytes) and compresses it tile by tile.
'auto' (default) is 'dense' below TLR_CROSSOVER variables and 'tlr' from there on: so results
at small N are those of the dense path, and from N ~ 2000 the tlr set-up is already cheaper
(one-factor N = 4096: see benchmarks/bench_tlr.py). The tolerance has the same meaning in
both (per tile, tolerance * sqrt(max R_ii) from cov.diag()); the tlr factor's tiles are within
that of the exact factor of a perturbed covariance (harness.core.tlr), not of the exact factor.
"""

from __future__ import annotations

import warnings

import numpy as np

from harness.core.reorder import kdtree_order
from harness.core.sequential import CholeskyWalk, WalkResult
from harness.core.tlr import (
    TLR_REORDERINGS,
    NotLowRankWarning,
    TileLowRankFactor,
    build_tile_low_rank,
    default_tile,
    tlr_cholesky,
)
from harness.methods.sov import Factor, Sov
from harness.model.constraints import Integer, Number, OneOf
from harness.model.footprint import MemoryEstimate, dense
from harness.model.ordered import cached, check_inputs, ordered_problem
from harness.model.problem import Problem
from harness.model.tags import Tags

# Off-diagonal tile rank assumed by the memory estimate (harness.model.footprint) before the factor
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


FACTORISATIONS = ("auto", "dense", "tlr")
TLR_CROSSOVER = 2048   # "auto": the tile-low-rank Cholesky from this many variables on


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
    tags = Tags()   # Ẑ is unbiased for the compressed factor's Z, not for Z itself
    constraints = {
        "points": Sov.constraints["points"],
        "randomisations": Sov.constraints["randomisations"],
        "reorder": OneOf(*TLR_REORDERINGS),
        "tile_size": Integer(minimum=0, says="must be an integer >= 0 (0: ~sqrt(N))"),
        "tolerance": Number(low=0, high=1, high_open=True, says="must be in [0, 1)"),
        "factorisation": OneOf(*FACTORISATIONS),
        "chunk_mb": Sov.constraints["chunk_mb"],
    }

    def __init__(self, points: str = "sobol", randomisations: int = 10, reorder: str = "none",
                 tile_size: int = 0, tolerance: float = 1e-8, factorisation: str = "auto",
                 chunk_mb: float = 512.0):
        self.points = points
        self.randomisations = randomisations
        self.reorder = reorder
        self.tile_size = tile_size
        self.tolerance = tolerance
        self.factorisation = factorisation
        self.chunk_mb = chunk_mb
        self.block_size = 0   # the tile size is the block size; not a setting here

    def uses_tlr(self, n_train: int) -> bool:
        """Whether the factor is built by the tile-low-rank Cholesky (module doc)."""
        if self.factorisation == "auto":
            return n_train >= TLR_CROSSOVER
        return self.factorisation == "tlr"

    def needs_dense(self, n_train: int) -> bool:
        """The tile-low-rank Cholesky reads only tiles of `problem.cov`; the dense path reads R."""
        return not self.uses_tlr(n_train)

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """The compressed factor at an assumed rank (ASSUMED_RANK) and SOV's chunked particles
        with the projection buffer H (8 bytes per particle and column); on the dense path also
        dense R and L (factorised densely, then compressed); on the tile-low-rank path the
        factorisation's work space instead (panels of N x b, harness.core.tlr)."""
        tile = min(self.tile_size or default_tile(n_train), n_train)
        rank = tile if self.tolerance == 0 else min(tile, ASSUMED_RANK)
        factor, h_cols = tlr_memory(n_train, n_test, tile, rank)
        held = dict(factor)
        setup = {"compression copies": sum(factor.values())}
        if self.uses_tlr(n_train):
            setup = {"factorisation panels": 4 * dense(n_train + n_test, tile)}
        else:
            held.update({"dense R": dense(n_train), "dense factor L": dense(n_train),
                         "test rows": 2 * dense(n_train, n_test)})
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
        tlr = self.uses_tlr(problem.n_train)

        def build():
            if tlr:
                order = None
                if self.reorder == "kdtree":
                    check_inputs(problem)
                    order = kdtree_order(problem.X_train, tile)
                return tlr_cholesky(problem.cov, tile, self.tolerance,
                                    "block" if self.reorder == "block" else "none", order,
                                    f"kdtree{tile}" if order is not None else None)
            op = ordered_problem(problem, self.reorder, tile)
            scale = float(np.sqrt(np.max(problem.cov.diag())))
            return build_tile_low_rank(op.chol, op.test_rows, op.test_sd, tile, self.tolerance,
                                       scale, op.kind, op.seconds, op.order)

        return cached(problem, ("tlr", self.reorder, tile, self.tolerance, tlr), build)

    def factor(self, problem: Problem) -> Factor:
        f = self.tlr_factor(problem)
        why = f.not_low_rank()
        if why:   # said as soon as the factor exists (set-up), and kept in a sweep's record
            others = " or ".join(f"reorder={o}" for o in ("kdtree", "block") if o != self.reorder)
            warnings.warn(f"{self.label()}: {why}: try another ordering ({others}) or the dense "
                          "method sov", NotLowRankWarning, stacklevel=1)
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
                "factorisation": f.factorisation,
                "setup_seconds": f.seconds + f.order_seconds,
                "compress_seconds": f.seconds,
                "workspace_bytes": f.workspace_bytes,
                "rank_mean": float(nz.mean()) if len(nz) else 0.0,
                "rank_max": int(f.ranks.max()) if len(f.ranks) else 0,
                "zero_tiles": int(np.count_nonzero(f.ranks == 0)),
                "stored_fraction": f.stored_fraction(),
            },
        )
