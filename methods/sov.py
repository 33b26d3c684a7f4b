"""Genz separation of variables with randomised QMC and the ratio estimator, "sov"
(docs/math.md §4, §6).

The dense Cholesky factor of R, the SOV step and the importance walk over independent
randomisations of a scrambled Sobol' set (harness.engine): for a point w of [0, 1)^N each
variable in turn weights the particle by Φ(t_j) and draws z_j >= -t_j by inversion of w_j, in
log space; Ẑ is the mean of the weights, unbiased for Z. The test probabilities are the ratio
estimator with the same samples in numerator and denominator. The standard errors come from
the spread of the K randomisations, floored at 1 / points when they agree to rounding and at
eps · cond(R), the accuracy of R itself.

Settings: `points` (sobol, lattice, random), `randomisations` (K; 0 chooses by the budget),
`reorder` ('none', or 'univariate': the Gibson–Glasbey–Elston rule while factorising, O(N³)
once per problem; off by default, since on GP orthants it raised the variance, docs/studies.md
"Orderings of the dense factor"), `block_size` (variables per block product of the walk) and
`chunk_mb` (memory of one chunk of particles).

On GP covariances the weights can be heavy-tailed: a few points then carry Ẑ, log Ẑ is biased
low and the spread understates the error. The effective sample size, the largest weight's
share and the Pareto k̂ of the weights are reported; collapsed or heavy-tailed weights make
the run `unreliable` (harness.model.reliability; docs/studies.md, "Degenerate SOV weights").
"""

from __future__ import annotations

from harness.core.reorder import REORDERINGS
from harness.engine.dense_factor import DenseCholesky
from harness.engine.importance_walk import Importance
from harness.engine.orthant_method import OrthantMethod
from harness.engine.sampler import OrthantSampler
from harness.engine.settings import BLOCK_SIZE, CHUNK_MB, POINTS, RANDOMISATIONS
from harness.engine.sov_block import block_size
from harness.engine.sov_step import SovProposal
from harness.model.constraints import OneOf
from harness.model.method import Method
from harness.model.tags import Tags


class Sov(OrthantMethod, Method):
    """Genz separation of variables with randomised QMC (module doc)."""

    name = "sov"
    summary = ("Genz separation of variables, randomised QMC (Sobol'/lattice), univariate "
               "reordering, shared-sample ratio estimator for predictions")
    budget_unit = "qmc points"
    tags = Tags(unbiased_z=True)   # Ẑ is the mean of the weights
    constraints = {"points": POINTS, "randomisations": RANDOMISATIONS,
                   "reorder": OneOf(*REORDERINGS), "block_size": BLOCK_SIZE, "chunk_mb": CHUNK_MB}

    def __init__(self, points: str = "sobol", randomisations: int = 10,
                 reorder: str = "none", block_size: int = 0, chunk_mb: float = 512.0):
        self.points = points
        self.randomisations = randomisations
        self.reorder = reorder
        self.block_size = block_size
        self.chunk_mb = chunk_mb

    def sampler(self, n_train: int) -> OrthantSampler:
        """The dense factor, the SOV step, the importance walk."""
        block = self.block_size or block_size(n_train)   # the compiled step's block
        return OrthantSampler(DenseCholesky(self.reorder, None, block), SovProposal(),
                              Importance(self.points, self.randomisations), self.name,
                              self.chunk_mb)
