"""Tile-low-rank separation of variables, "sov-tlr" (Cao, Genton, Keyes & Turkiyyah 2021;
docs/math.md §6).

`sov`'s estimator (the SOV step, the importance walk over randomised QMC, the ratio estimator)
on the tile-low-rank factor (harness.engine.tlr_factor): tiles of b ~ sqrt(N) variables, dense
diagonal tiles, off-diagonal tiles compressed to `tolerance`; the test variables appended as
further tile rows. O(N^{3/2}) a particle for small ranks, against N² for the dense walk.

Settings: `reorder` ('none', 'kdtree': training inputs in k-d tree order, the geometric order
tile-low-rank methods need; 'block': Cao et al.'s block reordering), `tile_size` (0: ~sqrt(N)),
`tolerance`, `factorisation` ('tlr': the tile-low-rank Cholesky straight from the covariance,
never an N x N array; 'dense': the dense factor compressed tile by tile; 'auto': 'dense' below
2,048 variables), and `sov`'s `points`, `randomisations`, `chunk_mb`. Ẑ is unbiased for the
compressed factor's Z, not for Z itself.
"""

from __future__ import annotations

from harness.core.tlr import TLR_REORDERINGS
from harness.engine.importance_walk import Importance
from harness.engine.orthant_method import OrthantMethod
from harness.engine.sampler import OrthantSampler
from harness.engine.settings import CHUNK_MB, POINTS, RANDOMISATIONS
from harness.engine.sov_step import SovProposal
from harness.engine.tlr_factor import TLR_CONSTRAINTS, TileLowRank, tile_for, uses_tlr
from harness.model.constraints import OneOf
from harness.model.method import Method
from harness.model.tags import Tags


class SovTlr(OrthantMethod, Method):
    """Tile-low-rank SOV (Cao et al. 2021): `sov` with an O(N^{3/2})-per-sample walk."""

    name = "sov-tlr"
    summary = ("tile-low-rank separation of variables (Cao et al. 2021): tiles ~ sqrt(N), "
               "QR-compressed off-diagonal tiles, optional block reordering; ratio estimator")
    budget_unit = "qmc points"
    tags = Tags()   # Ẑ is unbiased for the compressed factor's Z, not for Z itself
    constraints = {"points": POINTS, "randomisations": RANDOMISATIONS,
                   "reorder": OneOf(*TLR_REORDERINGS), **TLR_CONSTRAINTS, "chunk_mb": CHUNK_MB}

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

    def sampler(self, n_train: int) -> OrthantSampler:
        """The tile-low-rank factor (built by its Cholesky or compressed), the SOV step, the
        importance walk."""
        factor = TileLowRank(self.reorder, tile_for(self.tile_size, n_train), self.tolerance,
                             uses_tlr(self.factorisation, n_train), self.name, self.label(),
                             "the dense method sov")
        return OrthantSampler(factor, SovProposal(), Importance(self.points, self.randomisations),
                              self.name, self.chunk_mb)
