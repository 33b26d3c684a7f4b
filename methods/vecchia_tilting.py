"""Minimax tilting on the Vecchia approximation, "vecchia-tilting" (Cao & Katzfuss 2024;
docs/math.md §5, §7, §7a-§7b).

`minimax-tilting`'s tilted step on the Vecchia factor (harness.engine.vecchia_factor): the
shifts μ from Botev's saddle point of ψ on the sparse factor L = U⁻¹ D^{1/2}, products by
sparse triangular solves, O(N m) each; O(N m) a particle. The walk (`walk`, as
minimax-tilting's) is Botev's importance sampler, or from 2,048 variables on ('auto') the
resampled walk on twisted weights with the Gaussian look-ahead over each block of the Vecchia
walk, which keeps only the v's a later block or a test variable still reads and is fed random
points a block at a time: a particle costs O(rows still read), not O(N). It estimates
P(v >= 0) under the approximated covariance R̃, not the exact Z (`Tags(exact=False)`).
Its approximation error is stated apart, from companion walks at m/2 and 2m on the same
random numbers (`approximation_error`, harness.engine.vecchia_error).
"""

from __future__ import annotations

from harness.core.sequential import default_block_size
from harness.engine.importance_walk import Importance
from harness.engine.orthant_method import OrthantMethod
from harness.engine.resampled_walk import WALKS, Resampled, resamples
from harness.engine.sampler import OrthantSampler
from harness.engine.settings import CHUNK_MB, NEIGHBOURS, POINTS, RANDOMISATIONS
from harness.engine.tilted_step import Tilted
from harness.engine.vecchia_error import APPROXIMATION_ERRORS, states_approximation_error
from harness.engine.vecchia_factor import DEFAULT_M, ORDERINGS, Vecchia
from harness.model.constraints import OneOf
from harness.model.method import Method
from harness.model.tags import Tags


@states_approximation_error
class VecchiaTilting(OrthantMethod, Method):
    """Botev's minimax tilting on the Vecchia approximation (module doc)."""

    name = "vecchia-tilting"
    summary = ("minimax exponential tilting on the Vecchia approximation (Cao & Katzfuss 2024): "
               "saddle point on the sparse factor, O(N m) per sample, from N = 2,048 resampled "
               "on twisted weights; estimates P(v >= 0) under the approximated covariance, not "
               "the exact Z")
    budget_unit = "qmc points"
    tags = Tags(exact=False, closer_with=("m", "ordering"))   # Z of the approximated R̃
    constraints = {"m": NEIGHBOURS, "ordering": OneOf(*ORDERINGS),
                   "approximation_error": OneOf(*APPROXIMATION_ERRORS), "points": POINTS,
                   "randomisations": RANDOMISATIONS, "chunk_mb": CHUNK_MB,
                   "walk": OneOf(*WALKS)}

    def __init__(self, m: int = DEFAULT_M, ordering: str = "auto", points: str = "sobol",
                 randomisations: int = 0, walk: str = "auto", chunk_mb: float = 512.0,
                 approximation_error: str = "auto"):
        self.m = m
        self.ordering = ordering
        self.approximation_error = approximation_error
        self.points = points
        self.randomisations = randomisations
        self.walk = walk
        self.chunk_mb = chunk_mb

    def sampler(self, n_train: int) -> OrthantSampler:
        """The Vecchia factor (in blocks when resampling), the tilted step, the importance or
        the resampled walk."""
        if resamples(self.walk, n_train):
            factor = Vecchia(self.m, self.ordering, default_block_size(n_train))
            return OrthantSampler(factor, Tilted(twisted=True),
                                  Resampled(randomisations=self.randomisations), self.name,
                                  self.chunk_mb, {"walk": "sequential"})
        return OrthantSampler(Vecchia(self.m, self.ordering), Tilted(),
                              Importance(self.points, self.randomisations), self.name,
                              self.chunk_mb, {"walk": "importance"})
