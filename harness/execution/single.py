"""One estimate, outside a sweep: the pipeline that `python -m harness run` and the notebook
API (`harness.estimate`) share, so the same arguments give the same record either way.

Values are checked first (harness.model.settings), the job's estimated peak memory is compared
with the memory it may have (harness.model.footprint) before anything runs, the random stream
comes from the run's own key (harness.core.seeding), and the record gains the per-point truth
(harness.execution.runner.point_truth).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from harness.core.errors import InputError
from harness.core.seeding import MAX_SEED, rng_for
from harness.execution.runner import point_truth, run_one
from harness.execution.worker import MAX_WARNINGS
from harness.model.footprint import format_bytes, refuse_too_large
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.settings import check_budget, parse_int


def run_numbers(budget: Any, seed: Any, budget_field: str = "budget",
                seed_field: str = "seed") -> tuple[int, int]:
    """The budget (a positive integer a job can run) and the seed (0 ... MAX_SEED), from
    numbers or text such as '1e5'."""
    budget = check_budget(budget_field, parse_int(budget_field, str(budget)))
    return budget, parse_int(seed_field, str(seed), minimum=0, maximum=MAX_SEED)


def build_problem(spec: str, field: str, limit: int | None, where: str) -> Problem:
    """The problem a spec names; a dense problem too large to build is an InputError."""
    from harness.plugins.specs import make_problem

    try:
        return make_problem(spec)
    except MemoryError as exc:   # numpy's _ArrayMemoryError: a dense problem too large to build
        raise InputError(field, f"building {spec} ran out of memory ({exc})",
                         where.format(format_bytes(limit)) if limit else "") from None


def run_key(problem: Problem, method: Method, budget: int, seed: int) -> dict[str, Any]:
    """The key of a single run's random stream (`run` and `estimate` share it): the problem by
    its name, a user file's by its content and options (Problem.identity), not its path."""
    return {"problem": problem.identity or problem.name, "method": method.label(),
            "budget": budget, "seed": seed}


def run_single(problem: Problem, method: Method, budget: int, seed: int, limit: int | None,
               where: str, *, name: str | None = None, raise_errors: bool = False,
               split: Callable[[dict[str, Any]], dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    """Run `method` on `problem` at `budget` and return the record with its per-point truth.

    A job that cannot fit in `limit` bytes is refused first (InputError naming the numbers;
    `name` is the problem as the user wrote it). split(key), when given, runs the estimate in
    parts (harness.execution.parts) instead of in this process.
    """
    refuse_too_large(f"{method.label()} on {name or problem.name}", problem.summary(), method,
                     budget, limit, where)
    key = run_key(problem, method, budget, seed)
    kept: list[str] = []
    with shown_and_kept(kept):
        if split is not None:
            record = split(key)
        else:
            record = run_one(problem, method, budget, rng_for(key), seed=seed,
                             raise_errors=raise_errors)
    caught = sorted(set(kept) | set(record.get("warnings", ())))
    if caught:   # as a sweep's record keeps them (harness.execution.worker)
        record["warnings"] = caught[:MAX_WARNINGS]
    record.update(point_truth(problem, record))
    return record


@contextmanager
def shown_and_kept(kept: list[str]) -> Iterator[None]:
    """Warnings of the block are shown as usual (at once) and appended to `kept` as
    'Category: message'."""
    show = warnings.showwarning

    def keep(message, category, filename, lineno, file=None, line=None):
        kept.append(f"{category.__name__}: {message}")
        show(message, category, filename, lineno, file, line)

    warnings.showwarning = keep
    try:
        yield
    finally:
        warnings.showwarning = show
