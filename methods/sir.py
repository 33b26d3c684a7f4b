"""Sequential importance resampling, "GHK with resampling", "sir" (docs/math.md §5, §6, §7b).

The SOV proposal walked particle by particle with resampling of a population when its weights'
effective sample size falls below `ess_threshold` times its size (harness.engine
.resampled_walk): Ẑ = exp(log normaliser) · mean W, unbiased for Z. Uniforms are
pseudo-random; the budget is split into independent populations (`randomisations`, by default
about 200 particles each, 10 to 40), whose spread gives the standard errors, multiplied by the
factor that gives ±2.5 SE the normal coverage under the populations' t (1.246 for 10 of them,
1.049 for 40; harness.core.qmc.t_coverage_factor). The test probabilities are the ratio
estimator over the final population.

`proposal` 'tilted' draws z_j from minimax tilting's shifted proposal instead and weights it
by the twisted increments, whose partial products are fair weights of each prefix, with the
Gaussian look-ahead over each block (harness.engine.tilted_step): resampling then keeps
tilting's proposal and stops its weights' variance from growing with N.

The factor is dense below 2,048 variables and tile-low-rank from there on (`factorisation`,
`reorder` 'auto': the given order on the dense path, the k-d tree order of the inputs, or the
block reordering without inputs, on the tile-low-rank path; harness.engine.tlr_factor).

A run is `unreliable` when its weights collapse, its populations descend from too few
first-variable ancestors (path degeneracy), or their log Ẑ_k spread by more than a nat
(harness.model.reliability; docs/studies.md, "Resampled walks").
"""

from __future__ import annotations

from harness.engine.orthant_method import OrthantMethod
from harness.engine.resampled_walk import CONSTRAINTS as RESAMPLING
from harness.engine.resampled_walk import Resampled
from harness.engine.sampler import OrthantSampler
from harness.engine.settings import BLOCK_SIZE, CHUNK_MB, RANDOMISATIONS
from harness.engine.sov_step import SovProposal
from harness.engine.tilted_step import Tilted
from harness.engine.tlr_factor import TILED_ORDERINGS, TLR_CONSTRAINTS, choose_factor
from harness.model.constraints import OneOf
from harness.model.method import Method
from harness.model.tags import Tags

PROPOSALS = ("sov", "tilted")


class Sir(OrthantMethod, Method):
    """SOV's (or tilting's) proposal with resampling when the weights' ESS drops (module doc)."""

    name = "sir"
    summary = ("sequential importance resampling: SOV's truncated-normal proposal (or minimax "
               "tilting's, with twisted weights) with systematic/multinomial resampling when "
               "the weights' ESS drops; unbiased Ẑ")
    budget_unit = "particles"
    tags = Tags(unbiased_z=True)
    constraints = {**RESAMPLING, "proposal": OneOf(*PROPOSALS), "randomisations": RANDOMISATIONS,
                   "reorder": OneOf(*TILED_ORDERINGS), "block_size": BLOCK_SIZE,
                   **TLR_CONSTRAINTS, "chunk_mb": CHUNK_MB}
    setting_help = {"proposal": "sov: SOV's truncated normals; tilted: minimax tilting's "
                                "shifted ones, on twisted weights"}

    def __init__(self, ess_threshold: float = 0.5, resampling: str = "systematic",
                 proposal: str = "sov", randomisations: int = 0, reorder: str = "auto",
                 block_size: int = 0, tile_size: int = 0, tolerance: float = 1e-8,
                 factorisation: str = "auto", chunk_mb: float = 512.0):
        self.ess_threshold = ess_threshold
        self.resampling = resampling
        self.proposal = proposal
        self.randomisations = randomisations
        self.reorder = reorder
        self.block_size = block_size
        self.tile_size = tile_size
        self.tolerance = tolerance
        self.factorisation = factorisation
        self.chunk_mb = chunk_mb

    def sampler(self, n_train: int) -> OrthantSampler:
        """The dense or tile-low-rank factor, the SOV or twisted tilted step, the resampled
        walk."""
        factor = choose_factor(n_train, reorder=self.reorder, dense_reorder="none",
                               tile_size=self.tile_size, tolerance=self.tolerance,
                               factorisation=self.factorisation, block_size=self.block_size,
                               name=self.name, label=self.label())
        step = Tilted(twisted=True) if self.proposal == "tilted" else SovProposal()
        walk = Resampled(self.ess_threshold, self.resampling, self.randomisations)
        return OrthantSampler(factor, step, walk, self.name, self.chunk_mb)
