"""The tile-low-rank path shared by the SOV-family methods (`sov-tlr`, `minimax-tilting`, `sir`).

Setting `factorisation`: 'tlr' builds the Cholesky factor with the tile-low-rank Cholesky of
harness.core.tlr straight from the problem's covariance representation (problem.cov), never an
N x N array: O(N^{5/2} k) flops, O(N b) work space plus the factor, O(k N^{3/2}); the block
reordering happens inside it. 'dense' is the method's dense path (sov-tlr: the dense factor,
LAPACK or the reordering's blocked Cholesky, compressed tile by tile; the others: their dense
walk). 'auto' (default) is 'dense' below TLR_CROSSOVER variables and 'tlr' from there on, so
results at small N are those of the dense path, and from N ~ 2000 the tlr set-up is already
cheaper (one-factor N = 4096: see benchmarks/bench_tlr.py). Tiles are b ~ sqrt(N) variables
(`tile_size`), off-diagonal tiles compressed to tolerance * sqrt(max R_ii) (`tolerance`).

On the tlr path the walk is harness.core.tlr_ops.TileLowRankWalk (resampling included), and the
orderings are those that cost no O(N^3): 'none', 'kdtree' (training inputs in k-d tree order,
classification problems only), 'block' (Cao et al.'s block reordering inside the factorisation).
"""

from __future__ import annotations

import warnings

import numpy as np

from harness.core.errors import InputError
from harness.core.reorder import kdtree_order
from harness.core.sequential import WalkResult
from harness.core.tlr import (
    NotLowRankWarning,
    TileLowRankFactor,
    build_tile_low_rank,
    default_tile,
    tlr_cholesky,
)
from harness.core.tlr_ops import TileLowRankWalk
from harness.methods.sov import Factor
from harness.model.constraints import Integer, Number, OneOf
from harness.model.footprint import MemoryEstimate, dense
from harness.model.ordered import cached, check_inputs, ordered_problem
from harness.model.problem import Problem

# Off-diagonal tile rank assumed by the memory estimate (harness.model.footprint) before the factor
# exists: one-factor covariances have rank 1; 2-D RBF problems at tolerance 1e-8 measured mean
# ranks 13-15 in k-d tree order and 50-62 as given (N = 4000, b = 63). Capped at the tile size,
# and the full tile size when tolerance = 0.
ASSUMED_RANK = 32
FACTORISATIONS = ("auto", "dense", "tlr")
TLR_CROSSOVER = 2048   # "auto": the tile-low-rank Cholesky from this many variables on
TLR_DEFAULT_ORDER = "kdtree"   # TiledOrdering's 'auto' on the tlr path (problems with inputs)
TILED_ORDERINGS = ("auto", "univariate", "none", "block", "kdtree")
TLR_CONSTRAINTS = {
    "tile_size": Integer(minimum=0, says="must be an integer >= 0 (0: ~sqrt(N))"),
    "tolerance": Number(low=0, high=1, high_open=True, says="must be in [0, 1)"),
    "factorisation": OneOf(*FACTORISATIONS),
}


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


class TileLowRankPath:
    """Mixin for a Sov subclass: the `factorisation` setting and the tile-low-rank factor, walk,
    memory and diagnostics (module doc). The class provides `reorder`, `tile_size`,
    `tolerance`, `factorisation`; `tlr_ordering` maps its `reorder` onto the tlr path's."""

    compress_dense = False   # sov-tlr: the dense path compresses the dense factor into tiles
    dense_alternative = "factorisation=dense"   # said when the factor is not low-rank
    h_bytes = 8   # bytes per particle and column of H (16 when resampling keeps a spare)

    def uses_tlr(self, n_train: int) -> bool:
        """Whether the factor is built by the tile-low-rank Cholesky (module doc)."""
        if self.factorisation == "auto":
            return n_train >= TLR_CROSSOVER
        return self.factorisation == "tlr"

    def needs_dense(self, n_train: int) -> bool:
        """The tile-low-rank Cholesky reads only tiles of `problem.cov`; the dense path reads R."""
        return not self.uses_tlr(n_train)

    def tile(self, n_train: int) -> int:
        return min(self.tile_size or default_tile(n_train), n_train)

    def tlr_ordering(self, problem: Problem) -> str:
        """The ordering of the tile-low-rank factor (one of harness.core.tlr.TLR_REORDERINGS)."""
        return self.reorder

    # ---- the factor ------------------------------------------------------------------------
    def tlr_factor(self, problem: Problem) -> TileLowRankFactor:
        """The (cached) tile-low-rank factor of the problem for these settings."""
        tile, tlr = self.tile(problem.n_train), self.uses_tlr(problem.n_train)
        reorder = self.tlr_ordering(problem)

        def build():
            if tlr:
                order = None
                if reorder == "kdtree":
                    check_inputs(problem)
                    order = kdtree_order(problem.X_train, tile)
                return tlr_cholesky(problem.cov, tile, self.tolerance,
                                    "block" if reorder == "block" else "none", order,
                                    f"kdtree{tile}" if order is not None else None)
            op = ordered_problem(problem, reorder, tile)
            scale = float(np.sqrt(np.max(problem.cov.diag())))
            return build_tile_low_rank(op.chol, op.test_rows, op.test_sd, tile, self.tolerance,
                                       scale, op.kind, op.seconds, op.order)

        return cached(problem, ("tlr", reorder, tile, self.tolerance, tlr), build)

    def factor(self, problem: Problem) -> Factor:
        """The tile-low-rank walk on the tlr path (or when compressing the dense factor);
        otherwise the method's dense factor."""
        if not (self.compress_dense or self.uses_tlr(problem.n_train)):
            return super().factor(problem)
        f = self.tlr_factor(problem)
        why = f.not_low_rank()
        if why:   # said as soon as the factor exists (set-up), and kept in a sweep's record
            mine = self.tlr_ordering(problem)
            others = " or ".join(f"reorder={o}" for o in ("kdtree", "block") if o != mine)
            warnings.warn(f"{self.label()}: {why}: try another ordering ({others}) or "
                          f"{self.dense_alternative}", NotLowRankWarning, stacklevel=1)
        walk = TileLowRankWalk(f)

        def test_means(result: WalkResult, cols: slice) -> np.ndarray:
            return walk.test_means(cols)

        nz = f.ranks[f.ranks > 0]
        return Factor(
            walk=walk, test_sd=f.test_sd, test_means=test_means,
            extra_bytes_per_particle=self.h_bytes * f.h_cols, test_tile=f.tile,
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

    # ---- memory (harness.model.footprint) --------------------------------------------------
    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """The compressed factor at an assumed rank (ASSUMED_RANK) and the chunked particles
        with the walk's projection buffer H (h_bytes per particle and column); on the tlr path
        the tile-low-rank Cholesky's work space (panels of N x b, harness.core.tlr) and no
        dense R or L; on sov-tlr's dense path dense R and L (factorised densely, then
        compressed). The method's dense path: its own estimate."""
        if not (self.compress_dense or self.uses_tlr(n_train)):
            return super().memory_estimate(n_train, n_test, budget)
        tile = self.tile(n_train)
        rank = tile if self.tolerance == 0 else min(tile, ASSUMED_RANK)
        factor, h_cols = tlr_memory(n_train, n_test, tile, rank)
        held = dict(factor)
        setup = {"compression copies": sum(factor.values())}
        if self.uses_tlr(n_train):
            setup = {"factorisation panels": 4 * dense(n_train + n_test, tile)}
        else:
            dense_held, dense_setup = self.dense_memory(n_train, n_test)
            held.update(dense_held)
            setup.update(dense_setup)
        particles = self.particle_memory(n_train, n_test, budget, tile,
                                         extra=self.h_bytes * h_cols)
        return MemoryEstimate(held, particles, setup)



class TiledOrdering(TileLowRankPath):
    """The tile-low-rank path for a method with a dense default ordering (`dense_reorder`):
    `reorder` 'auto' is that default on the dense path and TLR_DEFAULT_ORDER on the tlr path
    (kdtree where the problem has training inputs, else block; harness.methods.minimax_tilting
    has the measurements); 'univariate' (O(N^3)) exists only on the dense path."""

    dense_reorder = "none"

    def dense_reorder_kind(self) -> str:
        return self.dense_reorder if self.reorder == "auto" else self.reorder

    def ordering(self, problem: Problem) -> tuple[str, int | None]:
        kind = self.dense_reorder_kind()
        return kind, self.tile(problem.n_train) if kind in ("block", "kdtree") else None

    def tlr_ordering(self, problem: Problem) -> str:
        if self.reorder == "univariate":
            raise InputError(f"{self.name} setting 'reorder'",
                             "the univariate reordering needs the dense factor (O(N^3))",
                             "use reorder=auto, block, kdtree or none, or factorisation=dense")
        if self.reorder != "auto":
            return self.reorder
        return "block" if problem.is_orthant else TLR_DEFAULT_ORDER
