"""Sequential importance resampling on the Vecchia approximation, "vecchia-sir" (docs/math.md
§5, §6).

`sir`'s walk (SOV's proposal, resampling a population when its weights' ESS drops) on the
Vecchia factor (harness.engine.vecchia_factor) in blocks of ~sqrt(2N) variables: the walk
keeps only the v's a later block or a test variable still reads and is fed random points a
block at a time, so a particle costs O(N m) time and O(rows still read) memory. It estimates
P(v >= 0) under the approximated covariance R̃, not the exact Z (`Tags(exact=False)`): exact
when every variable keeps all earlier ones (m >= N - 1, `ordering=given`), where it is `sir`
on the dense factor.
Its approximation error is stated apart, from companion walks at m/2 and 2m on the same
random numbers (`approximation_error`, harness.engine.vecchia_error).
"""

from __future__ import annotations

from harness.core.sequential import default_block_size
from harness.engine.orthant_method import OrthantMethod
from harness.engine.resampled_walk import CONSTRAINTS as RESAMPLING
from harness.engine.resampled_walk import Resampled
from harness.engine.sampler import OrthantSampler
from harness.engine.settings import CHUNK_MB, NEIGHBOURS, RANDOMISATIONS
from harness.engine.sov_step import SovProposal
from harness.engine.vecchia_error import APPROXIMATION_ERRORS, states_approximation_error
from harness.engine.vecchia_factor import DEFAULT_M, ORDERINGS, Vecchia
from harness.model.constraints import OneOf
from harness.model.method import Method
from harness.model.tags import Tags


@states_approximation_error
class VecchiaSir(OrthantMethod, Method):
    """SOV's proposal with resampling on the Vecchia approximation of R (module doc)."""

    name = "vecchia-sir"
    summary = ("sequential importance resampling on the Vecchia approximation: SOV's proposal, "
               "m nearest earlier neighbours, O(N m) per particle; estimates P(v >= 0) under "
               "the approximated covariance, not the exact Z")
    budget_unit = "particles"
    tags = Tags(exact=False, closer_with=("m", "ordering"))   # Z of the approximated R̃
    constraints = {"m": NEIGHBOURS, "ordering": OneOf(*ORDERINGS),
                   "approximation_error": OneOf(*APPROXIMATION_ERRORS), **RESAMPLING,
                   "randomisations": RANDOMISATIONS, "chunk_mb": CHUNK_MB}

    def __init__(self, m: int = DEFAULT_M, ordering: str = "auto", ess_threshold: float = 0.5,
                 resampling: str = "systematic", randomisations: int = 0,
                 chunk_mb: float = 512.0,
                 approximation_error: str = "auto"):
        self.m = m
        self.ordering = ordering
        self.approximation_error = approximation_error
        self.ess_threshold = ess_threshold
        self.resampling = resampling
        self.randomisations = randomisations
        self.chunk_mb = chunk_mb

    def sampler(self, n_train: int) -> OrthantSampler:
        """The Vecchia factor in blocks, the SOV step, the resampled walk."""
        return OrthantSampler(Vecchia(self.m, self.ordering, default_block_size(n_train)),
                              SovProposal(),
                              Resampled(self.ess_threshold, self.resampling, self.randomisations),
                              self.name, self.chunk_mb)
