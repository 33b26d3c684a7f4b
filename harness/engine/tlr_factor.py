"""The tile-low-rank Cholesky factor (Cao, Genton, Keyes & Turkiyyah 2021; docs/math.md §6).

The variables are cut into tiles of b ~ sqrt(N); diagonal tiles stay dense and every
off-diagonal tile is compressed, L_ij ~ U_ij V_ijᵀ, to `tolerance` * sqrt(max R_ii)
(harness.core.tlr). The factor is built either by the tile-low-rank Cholesky straight from the
problem's covariance representation, never an N x N array (`tlr`), or by compressing the
dense factor tile by tile. The walk over it (harness.core.tlr_ops.TileLowRankWalk) costs
~ 2 k N² / b + N b flops a particle with ranks k: O(N^{3/2}) for b ~ sqrt(N).

Orderings that cost no O(N³): 'none', 'kdtree' (training inputs in k-d tree order, so that
tiles are spatially compact; classification problems only) and 'block' (Cao et al.'s block
reordering inside the factorisation). A method's `factorisation` setting 'auto' takes the
tile-low-rank Cholesky from TLR_CROSSOVER variables on (`uses_tlr`); docs/studies.md,
"Tile-low-rank orderings and ranks", has the measurements behind the defaults.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

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
from harness.core.tlr_ops import TileLowRankOperator, TileLowRankWalk
from harness.engine.dense_factor import DenseCholesky
from harness.engine.factor import Factor, FactorMemory
from harness.model.constraints import Integer, Number, OneOf
from harness.model.footprint import dense
from harness.model.ordered import cached, check_inputs, ordered_problem
from harness.model.problem import Problem

ASSUMED_RANK = 32   # off-diagonal tile rank the memory estimate assumes before the factor exists
FACTORISATIONS = ("auto", "dense", "tlr")
TLR_CROSSOVER = 2048   # "auto": the tile-low-rank Cholesky from this many variables on
TLR_DEFAULT_ORDER = "kdtree"   # 'auto' on the tlr path for problems with training inputs
TILED_ORDERINGS = ("auto", "univariate", "none", "block", "kdtree")
TLR_CONSTRAINTS = {
    "tile_size": Integer(minimum=0, says="must be an integer >= 0 (0: ~sqrt(N))"),
    "tolerance": Number(low=0, high=1, high_open=True, says="must be in [0, 1)"),
    "factorisation": OneOf(*FACTORISATIONS),
}


def uses_tlr(factorisation: str, n_train: int) -> bool:
    """Whether the factor is built by the tile-low-rank Cholesky ('auto': from TLR_CROSSOVER
    variables on)."""
    if factorisation == "auto":
        return n_train >= TLR_CROSSOVER
    return factorisation == "tlr"


def tile_for(tile_size: int, n_train: int) -> int:
    """The tile: `tile_size`, or ~sqrt(N) for 0 (harness.core.tlr.default_tile), at most N."""
    return min(tile_size or default_tile(n_train), n_train)


def choose_factor(n_train: int, *, reorder: str, dense_reorder: str, tile_size: int,
                  tolerance: float, factorisation: str, block_size: int, name: str,
                  label: str) -> DenseCholesky | TileLowRank:
    """The factor of a method with the settings `reorder` (one of TILED_ORDERINGS),
    `tile_size`, `tolerance`, `factorisation` and `block_size`: the tile-low-rank Cholesky
    where `uses_tlr`, else the dense factor in `reorder`, 'auto' being `dense_reorder` there
    (tiles of the block and k-d tree orderings as on the tile-low-rank path)."""
    tile = tile_for(tile_size, n_train)
    if uses_tlr(factorisation, n_train):
        return TileLowRank(reorder, tile, tolerance, True, name, label)
    kind = dense_reorder if reorder == "auto" else reorder
    return DenseCholesky(kind, tile if kind in ("block", "kdtree") else None, block_size)


def tlr_memory(n_vars: int, n_test: int, tile: int, rank: int) -> tuple[dict[str, int], int]:
    """({part: bytes} of a tile-low-rank factor, columns of the walk's projection buffer H).

    Diagonal tiles b x b (N b numbers); each of the ~(N/b)² / 2 off-diagonal tiles and the
    (n_test / b)(N / b) test tiles stores U and V, 2 b k numbers.
    """
    nb, tb = -(-n_vars // tile), -(-n_test // tile)
    off, test = nb * (nb - 1) // 2, tb * nb
    return ({"diagonal tiles": 8 * n_vars * tile,
             f"off-diagonal tiles (assumed rank {rank})": 8 * off * 2 * tile * rank,
             f"test tiles (assumed rank {rank})": 8 * test * 2 * tile * rank},
            (off + test) * rank)


@dataclass(frozen=True)
class TileLowRank:
    """The tile-low-rank factor as a part of an orthant sampler (module doc).

    Parameters
    ----------
    reorder : str
        'none', 'block', 'kdtree', or 'auto' (the k-d tree order where the problem has
        training inputs, else block); 'univariate' is refused (it is O(N³)).
    tile : int
        Variables per tile (tile_for).
    tolerance : float
        Per-tile compression tolerance relative to sqrt(max R_ii).
    tlr : bool
        Build by the tile-low-rank Cholesky (True) or compress the dense factor (False).
    name, label : str
        The method's name (in errors) and its instance's label (in the warning of a factor
        that is not low-rank).
    dense_alternative : str
        What that warning advises besides another ordering.
    """

    reorder: str
    tile: int
    tolerance: float
    tlr: bool
    name: str
    label: str
    dense_alternative: str = "factorisation=dense"
    streams_points = False

    def needs_dense(self, n_train: int) -> bool:
        """The tile-low-rank Cholesky reads only tiles of `problem.cov`; compressing reads R."""
        return not self.tlr

    def block(self, n_train: int) -> int:
        return self.tile

    def ordering(self, problem: Problem) -> str:
        """The ordering for this problem (one of harness.core.tlr.TLR_REORDERINGS)."""
        if self.reorder == "univariate":
            raise InputError(f"{self.name} setting 'reorder'",
                             "the univariate reordering needs the dense factor (O(N^3))",
                             "use reorder=auto, block, kdtree or none, or factorisation=dense")
        if self.reorder != "auto":
            return self.reorder
        return "block" if problem.is_orthant else TLR_DEFAULT_ORDER

    def tiles(self, problem: Problem) -> TileLowRankFactor:
        """The (cached) tile-low-rank factor of the problem."""
        tile, reorder = self.tile, self.ordering(problem)

        def build():
            if self.tlr:
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

        return cached(problem, ("tlr", reorder, tile, self.tolerance, self.tlr), build)

    def build(self, problem: Problem) -> Factor:
        """The tile-low-rank walk; a factor that is not low-rank is a NotLowRankWarning."""
        f = self.tiles(problem)
        why = f.not_low_rank()
        if why:   # said as soon as the factor exists (set-up), and kept in a sweep's record
            mine = self.ordering(problem)
            others = " or ".join(f"reorder={o}" for o in ("kdtree", "block") if o != mine)
            warnings.warn(f"{self.label}: {why}: try another ordering ({others}) or "
                          f"{self.dense_alternative}", NotLowRankWarning, stacklevel=1)
        walk = TileLowRankWalk(f)

        def test_means(result: WalkResult, cols: slice) -> np.ndarray:
            return walk.test_means(cols)

        nz = f.ranks[f.ranks > 0]
        return Factor(
            walk=walk, test_sd=f.test_sd, test_means=test_means, projections=f.h_cols,
            test_tile=f.tile,
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

    def memory(self, n_train: int, n_test: int) -> FactorMemory:
        """The compressed factor at an assumed rank
        (ASSUMED_RANK; the tile when tolerance = 0); building by the tile-low-rank Cholesky
        its panels of N x b, else the dense factor compressed (its R, L and reordering)."""
        rank = self.tile if self.tolerance == 0 else min(self.tile, ASSUMED_RANK)
        factor, h_cols = tlr_memory(n_train, n_test, self.tile, rank)
        held = dict(factor)
        setup = {"compression copies": sum(factor.values())}
        if self.tlr:
            setup = {"factorisation panels": 4 * dense(n_train + n_test, self.tile)}
        else:
            full = DenseCholesky(self.reorder).memory(n_train, n_test)
            held.update(full.held)
            setup.update(full.setup)
        return FactorMemory(held, setup, h_cols)

    def saddle_operator(self, problem: Problem) -> tuple[tuple, Callable[[], object]]:
        """(cache key, maker) of the factor the saddle point is solved with: products by the
        tiles (harness.core.tlr_ops.TileLowRankOperator), no dense L."""
        f = self.tiles(problem)
        return (("minimax-tilting", "tlr", f.order_kind, f.tile, self.tolerance),
                lambda: TileLowRankOperator(f))
