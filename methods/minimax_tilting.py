"""Minimax exponential tilting, "minimax-tilting" (Botev 2017; docs/math.md §7, §7b).

Importance sampling for Z = P(v >= 0) with the SOV walk's proposal shifted: at variable j,
z_j ~ N(μ_j, 1) truncated to z_j >= -t_j, log weight += log Φ(t_j + μ_j) + μ_j²/2 − μ_j z_j.
The shifts μ solve Botev's saddle-point system ∇ψ(x, μ) = 0 (harness.core.saddle_point, by
Newton steps with conjugate gradients and products by the factor only), once per problem: the
estimator then has bounded, often vanishing, relative error as the probability gets small.
The points, randomisations, standard errors and the ratio estimator of the test
probabilities are `sov`'s (harness.engine.importance_walk). If the saddle point does not
converge, μ is still a valid proposal: the run's diagnostics say so, and far from converged
it is `unreliable`.

The parts (harness.engine): the factor is dense in the univariate order (Botev's) below 2,048
variables and tile-low-rank from there on, the saddle point's products then going tile by tile
(`factorisation`; `reorder` 'auto' is the k-d tree order of the inputs, or the block
reordering without inputs, on the tile-low-rank path). The walk (`walk`) is Botev's
importance sampler, or 'sequential': the same proposal walked particle by particle with
resampling on the twisted weights and the Gaussian look-ahead over each block, the walk of
`sir` with `proposal=tilted`; 'auto' resamples from 2,048 variables on, where the plain
weights' log-variance grows with N on short-range covariances (docs/studies.md, "Tilting at
large N").
"""

from __future__ import annotations

from harness.engine.importance_walk import Importance
from harness.engine.orthant_method import OrthantMethod
from harness.engine.resampled_walk import WALKS, Resampled, resamples
from harness.engine.sampler import OrthantSampler
from harness.engine.settings import BLOCK_SIZE, CHUNK_MB, POINTS, RANDOMISATIONS
from harness.engine.sov_block import block_size
from harness.engine.tilted_step import Tilted
from harness.engine.tlr_factor import TILED_ORDERINGS, TLR_CONSTRAINTS, choose_factor
from harness.model.constraints import OneOf
from harness.model.method import Method
from harness.model.tags import Tags


class MinimaxTilting(OrthantMethod, Method):
    """Botev's minimax exponential tilting, resampled on twisted weights at large N (module
    doc)."""

    name = "minimax-tilting"
    summary = ("minimax exponential tilting (Botev 2017): saddle-point shifted truncated-normal "
               "proposals, randomised QMC, shared-sample ratio estimator for predictions; from "
               "N = 2,048 resampled on twisted weights (the sequential walk)")
    budget_unit = "qmc points"
    tags = Tags(unbiased_z=True)
    constraints = {"points": POINTS, "randomisations": RANDOMISATIONS,
                   "reorder": OneOf(*TILED_ORDERINGS), "block_size": BLOCK_SIZE,
                   "chunk_mb": CHUNK_MB, **TLR_CONSTRAINTS, "walk": OneOf(*WALKS)}

    def __init__(self, points: str = "sobol", randomisations: int = 0, reorder: str = "auto",
                 block_size: int = 0, tile_size: int = 0, tolerance: float = 1e-8,
                 factorisation: str = "auto", walk: str = "auto", chunk_mb: float = 512.0):
        self.points = points
        self.randomisations = randomisations
        self.reorder = reorder
        self.block_size = block_size
        self.tile_size = tile_size
        self.tolerance = tolerance
        self.factorisation = factorisation
        self.walk = walk
        self.chunk_mb = chunk_mb

    def sampler(self, n_train: int) -> OrthantSampler:
        """The dense (univariate order) or tile-low-rank factor, the tilted step, the
        importance or the resampled walk."""
        sequential = resamples(self.walk, n_train)
        # the importance walk's step does a block in one compiled call: its block then
        block = self.block_size or (0 if sequential else block_size(n_train))
        factor = choose_factor(n_train, reorder=self.reorder, dense_reorder="univariate",
                               tile_size=self.tile_size, tolerance=self.tolerance,
                               factorisation=self.factorisation, block_size=block,
                               name=self.name, label=self.label())
        walk = Resampled(randomisations=self.randomisations) if sequential \
            else Importance(self.points, self.randomisations)
        return OrthantSampler(factor, Tilted(twisted=sequential), walk, self.name,
                              self.chunk_mb,
                              {"walk": "sequential" if sequential else "importance"})
