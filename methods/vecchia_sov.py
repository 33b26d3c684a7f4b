"""Separation of variables on the Vecchia approximation, "vecchia-sov" (Cao & Katzfuss 2024;
docs/math.md §5, §7).

`sov`'s estimator (the SOV step, the importance walk over randomised QMC, the ratio estimator)
on the Vecchia factor (harness.engine.vecchia_factor): each variable, in a maximin or sorted
order, conditioned on its m nearest earlier neighbours only; O(N m) a particle. It estimates
P(v >= 0) under the approximated covariance R̃, not the exact Z (`Tags(exact=False)`): the
approximation's error is stated apart from the standard error, from companion walks at m/2 and
2m (`approximation_error`, harness.engine.vecchia_error), and on a global (one-factor)
covariance the approximation is poor at any practical m. Settings: `m`, `ordering`,
`approximation_error`, and `sov`'s `points`, `randomisations`, `chunk_mb`.
"""

from __future__ import annotations

from harness.engine.importance_walk import Importance
from harness.engine.orthant_method import OrthantMethod
from harness.engine.sampler import OrthantSampler
from harness.engine.settings import CHUNK_MB, NEIGHBOURS, POINTS, RANDOMISATIONS
from harness.engine.sov_step import SovProposal
from harness.engine.vecchia_error import APPROXIMATION_ERRORS, states_approximation_error
from harness.engine.vecchia_factor import DEFAULT_M, ORDERINGS, Vecchia
from harness.model.constraints import OneOf
from harness.model.method import Method
from harness.model.tags import Tags


@states_approximation_error
class VecchiaSov(OrthantMethod, Method):
    """Genz's SOV on the Vecchia approximation of R (module doc)."""

    name = "vecchia-sov"
    summary = ("separation of variables on the Vecchia approximation (Cao & Katzfuss 2024): m "
               "nearest earlier neighbours, O(N m) per sample; estimates P(v >= 0) under the "
               "approximated covariance, not the exact Z")
    budget_unit = "qmc points"
    tags = Tags(exact=False, closer_with=("m", "ordering"))   # Z of the approximated R̃
    constraints = {"m": NEIGHBOURS, "ordering": OneOf(*ORDERINGS),
                   "approximation_error": OneOf(*APPROXIMATION_ERRORS), "points": POINTS,
                   "randomisations": RANDOMISATIONS, "chunk_mb": CHUNK_MB}

    def __init__(self, m: int = DEFAULT_M, ordering: str = "auto", points: str = "sobol",
                 randomisations: int = 10, chunk_mb: float = 512.0,
                 approximation_error: str = "auto"):
        self.m = m
        self.ordering = ordering
        self.approximation_error = approximation_error
        self.points = points
        self.randomisations = randomisations
        self.chunk_mb = chunk_mb

    def sampler(self, n_train: int) -> OrthantSampler:
        """The Vecchia factor walked one variable at a time, the SOV step, the importance
        walk."""
        return OrthantSampler(Vecchia(self.m, self.ordering), SovProposal(),
                              Importance(self.points, self.randomisations), self.name,
                              self.chunk_mb)
