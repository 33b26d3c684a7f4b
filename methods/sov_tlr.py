"""Tile-low-rank separation of variables (Cao, Genton, Keyes & Turkiyyah 2021; docs/math.md §6).

The same estimator as `sov` (harness.methods.sov: log-space weights, randomised QMC, ratio
estimator), walking a tile-low-rank representation of the Cholesky factor instead of the dense
one. The variables are cut into tiles of b ~ sqrt(N) consecutive variables; the diagonal tiles
L_ii stay dense and every off-diagonal tile is compressed by a truncated QR with column
pivoting, L_ij ~ U_ij V_ij^T with the smallest rank k_ij whose Frobenius error is at most
tolerance * sqrt(max R_ii).
The test variables are appended as further tile rows: their Cholesky rows (L^{-1} B)^T are
compressed the same way, so a prediction also costs O(k) per tile instead of O(N).

The walk (harness.core.tlr_ops.TileLowRankWalk: the shared CholeskyWalk with its hooks
overridden) costs ~ 2 k N^2 / b + N b flops per sample with ranks k: O(N^{3/2}) for b ~ sqrt(N)
and k = O(1), against N^2 for the dense walk.

Ordering (harness.core.reorder): as given ('none'); 'kdtree', the training inputs in k-d tree order
so that every tile is spatially compact (the geometric ordering tile-low-rank methods need: on 2-D
RBF problems it cuts the mean tile rank at N = 4000, b = 63, tolerance 1e-8 from ~50-62 to
~13-15; classification problems only); or 'block', the block reordering of Cao et al. 2021
(tiles placed by smallest crude probability, univariate order inside each tile).

Factorisation (setting `factorisation`, shared with minimax-tilting and sir:
harness.methods.tlr_path): 'tlr' builds the factor with the tile-low-rank Cholesky of
harness.core.tlr straight from problem.cov, never an N x N array; 'dense' computes the dense
factor (LAPACK, or the reordering's blocked Cholesky, N^3/3 flops, 8 N^2 bytes) and compresses it
tile by tile; 'auto' (default) is 'dense' below TLR_CROSSOVER variables and 'tlr' from there on.
The tolerance has the same meaning in
both (per tile, tolerance * sqrt(max R_ii) from cov.diag()); the tlr factor's tiles are within
that of the exact factor of a perturbed covariance (harness.core.tlr), not of the exact factor.
"""

from __future__ import annotations

from harness.core.tlr import TLR_REORDERINGS
from harness.core.tlr_ops import TileLowRankWalk
from harness.methods.sov import Sov
from harness.methods.tlr_path import (
    ASSUMED_RANK,
    TLR_CONSTRAINTS,
    TLR_CROSSOVER,
    TileLowRankPath,
    tlr_memory,
)
from harness.model.constraints import OneOf
from harness.model.tags import Tags

__all__ = ["ASSUMED_RANK", "TLR_CROSSOVER", "SovTlr", "TileLowRankWalk", "tlr_memory"]


class SovTlr(TileLowRankPath, Sov):
    """Tile-low-rank SOV (Cao et al. 2021): `sov` with an O(N^{3/2})-per-sample walk."""

    name = "sov-tlr"
    summary = ("tile-low-rank separation of variables (Cao et al. 2021): tiles ~ sqrt(N), "
               "QR-compressed off-diagonal tiles, optional block reordering; ratio estimator")
    tags = Tags()   # Ẑ is unbiased for the compressed factor's Z, not for Z itself
    constraints = {
        "points": Sov.constraints["points"],
        "randomisations": Sov.constraints["randomisations"],
        "reorder": OneOf(*TLR_REORDERINGS),
        "tile_size": TLR_CONSTRAINTS["tile_size"],
        "tolerance": TLR_CONSTRAINTS["tolerance"],
        "factorisation": TLR_CONSTRAINTS["factorisation"],
        "chunk_mb": Sov.constraints["chunk_mb"],
    }
    compress_dense = True
    dense_alternative = "the dense method sov"

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
