"""The mixin of a method plugin whose estimator is an orthant sampler (harness.engine.sampler).

A method writes `class Mine(OrthantMethod, Method)`, declares its settings (constructor
arguments and `constraints`, as every Method) and implements `sampler(n_train)`, the
OrthantSampler its settings choose for a problem of that size: a factor, a step and a walk.
Everything else a Method does — the memory estimate, set-up, estimate, split estimates — is
the sampler's.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from harness.engine.sampler import OrthantSampler
from harness.model.footprint import MemoryEstimate
from harness.model.problem import Problem
from harness.model.result import Estimate
from harness.model.splitting import SplitsEstimates, split_evenly
from harness.model.tags import CheckSettings


class OrthantMethod(SplitsEstimates):
    """Mixin of a Method estimated by an OrthantSampler (module doc)."""

    checks = CheckSettings(test_budget=8000)

    @abstractmethod
    def sampler(self, n_train: int) -> OrthantSampler:
        """The sampler these settings choose for a problem of n_train training points."""

    def needs_dense(self, n_train: int) -> bool:
        return self.sampler(n_train).needs_dense(n_train)

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        return self.sampler(n_train).memory_estimate(n_train, n_test, budget)

    def prepare(self, problem: Problem) -> None:
        self.sampler(problem.n_train).prepare(problem)

    def split_budget(self, budget: int, parts: int) -> list[int]:
        """Parts of whole randomisations: the part budgets are cut so that all randomisations
        have the same size up to one point, as one estimate with all of them would
        (harness.model.splitting.split_evenly), K being that of the walk on small problems.
        The combined estimate pools the randomisations of every part (docs/math.md §6). QMC's
        advantage within a randomisation shrinks with its size, so a long split estimate
        should run with a small `randomisations` (docs/studies.md, "Split estimates")."""
        walk = self.sampler(1).walk
        return split_evenly(budget, parts, walk.randomisations_for(budget // max(1, parts)))

    def _estimate_part(self, problem: Problem, budget: int, rng: np.random.Generator) -> dict:
        return self.sampler(problem.n_train).part(problem, budget, rng)

    def _combine_parts(self, problem: Problem, parts: list[dict]) -> Estimate:
        return self.sampler(problem.n_train).combine(problem, parts)
