"""One estimate split into independent parts: the mixin of the methods that can.

A method whose estimate is made of independent pieces (whole randomisations of a QMC estimator,
docs/math.md §6; whole particle-filter runs, docs/math.md §5) can run those pieces as separate
parts, on other processes or machines, and combine their sufficient statistics into exactly the
estimate it would have made from all of their samples. Such a method lists `SplitsEstimates`
before `Method` among its bases and implements `split_budget`, `_estimate_part` and
`_combine_parts` (abstract here, so a class that lacks one cannot be built and the contract
check names it); its `_estimate` is then the combination of one part at the whole budget.

Every other method does not split; `splits(method)` is the one way to ask.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.core.errors import InputError
from harness.core.qmc import split_budget
from harness.model.result import Estimate, checked

if TYPE_CHECKING:   # the mixin is used with Method; only for the annotations
    from harness.model.problem import Problem


def splits(method: Any) -> bool:
    """Whether `method` (a method instance or class) can split an estimate into parts."""
    if isinstance(method, type):
        return issubclass(method, SplitsEstimates)
    return isinstance(method, SplitsEstimates)


class SplitsEstimates(ABC):
    """Mixin of a Method whose estimate splits into independent parts (module doc).

    Write `class Mine(SplitsEstimates, Method)` and implement the three hooks: `split_budget`
    (how a budget is cut into parts), `_estimate_part` (one part's sufficient statistics as
    plain data) and `_combine_parts` (the one Estimate of a list of parts). The public
    `estimate_part` and `combine_parts` check what the harness hands them and call the hooks;
    `_estimate` (Method's work) is the combination of a single part at the whole budget, so
    the unsplit estimate and a split one are made by the same code.
    """

    @abstractmethod
    def split_budget(self, budget: int, parts: int) -> list[int]:
        """Budgets of at most `parts` independent parts that together make one estimate at
        `budget`: positive ints summing to `budget` (fewer than `parts` entries if the budget
        cannot be split that finely; `split_evenly` cuts near-equal ones). The parts must be
        independent given their random streams, so that the combined estimate is the one the
        method makes from all of their samples."""

    def estimate_part(self, problem: Problem, budget: int, rng: np.random.Generator) -> dict:
        """Run one part and return its sufficient statistics as plain JSON-safe data (numbers,
        lists, strings, None; never NaN or inf), with "budget": budget.

        A part whose set-up cannot run (e.g. a failed factorisation) is {"budget": budget,
        "failed": reason}; combine_parts then returns a failed Estimate with that reason.
        """
        self._check_call(problem, budget, rng)
        budget = int(budget)
        if problem.is_orthant and not self.tags.handles_orthant:
            return {"budget": budget, "failed": f"{self.name} needs a GPC problem"}
        part = self._estimate_part(problem, budget, rng)
        part["budget"] = budget
        return part

    def combine_parts(self, problem: Problem, parts: list[dict]) -> Estimate:
        """The one Estimate of all `parts` (estimate_part results, in part-index order),
        exactly: the estimate the method makes from all of their samples together (e.g. Ẑ the
        particle-weighted mean of the parts' Ẑ, the ratio estimator's numerators and
        denominators summed before dividing, the standard error from the spread of all the
        independent randomisations; docs/math.md §5, §6). It depends only on the list of parts,
        never on who ran them or when; combine_parts(problem, [estimate_part(problem, b, rng)])
        is the method's estimate at budget b.
        """
        parts = list(parts)
        if not parts:
            raise ValueError("combine_parts needs at least one part")
        for i, part in enumerate(parts):
            if not isinstance(part, Mapping) or "budget" not in part:
                raise ValueError(f"part {i} is not an estimate_part result: {part!r:.200}")
        failed = next((p for p in parts if p.get("failed")), None)
        if failed is not None:
            return Estimate.failed(failed["failed"], parts=len(parts))
        return checked(self._combine_parts(problem, parts), problem.n_test,
                       type(self)._combine_parts)

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        """The estimate at `budget`: one part at the whole budget, combined alone."""
        return self.combine_parts(problem, [self.estimate_part(problem, budget, rng)])

    @abstractmethod
    def _estimate_part(self, problem: Problem, budget: int, rng: np.random.Generator) -> dict:
        """One part's sufficient statistics at `budget` from the stream `rng`, as plain data
        ({"failed": reason} if its set-up cannot run); estimate_part adds "budget"."""

    @abstractmethod
    def _combine_parts(self, problem: Problem, parts: list[dict]) -> Estimate:
        """The Estimate of `parts`, none of them failed (see combine_parts)."""


def split_evenly(budget: int, parts: int, group: int = 1) -> list[int]:
    """Part budgets for SplitsEstimates.split_budget: the budget cut into parts x group
    near-equal pieces (harness.core.qmc.split_budget, the larger ones first), summed `group`
    pieces at a time, so every part holds `group` whole pieces (e.g. randomisations) and all
    pieces have the same size up to one. Fewer parts when the budget has fewer than
    parts x group units (a part then still holds `group` pieces of at least one unit; at most
    one part)."""
    for name, value in (("budget", budget), ("parts", parts)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
            raise InputError(name, f"must be a positive integer, got {value!r}")
    parts = max(1, min(int(parts), int(budget) // max(1, group)))
    pieces = split_budget(int(budget), parts * group)
    return [int(pieces[p * group : (p + 1) * group].sum()) for p in range(parts)]
