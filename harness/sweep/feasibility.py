"""The plan's checks of problem x method pairs, before any job runs: a method that cannot run
on a problem at all, settings that cannot run a budget, jobs too large for a worker's memory."""

from __future__ import annotations

from typing import Any

from harness.core.errors import InputError
from harness.model.settings import Where
from harness.sweep.grid import MethodInstance, ProblemEntry


def incompatible(problem: ProblemEntry, method: MethodInstance) -> str | None:
    """Why this method cannot run on this problem at all (then no job is planned), or None."""
    from harness.plugins.registry import get_method

    is_orthant = problem.summary.get("kernel") is None and "kernel" in problem.summary
    if is_orthant and not get_method(method.name).tags.handles_orthant:
        return f"{method.label} needs data and a kernel; {problem.name} is a pure orthant problem"
    return None


def too_large_budgets(problem: ProblemEntry, method: MethodInstance, limit: int | None
                      ) -> dict[int, Any]:
    """{budget: MemoryEstimate} of this pair's jobs that cannot fit `limit` bytes (a worker's
    memory); from the problem's summary (n_train, n_test) only, nothing is built."""
    from harness.model.footprint import too_large
    from harness.plugins.registry import get_method

    if limit is None or "n_train" not in problem.summary:
        return {}
    instance = get_method(method.name)(**method.settings)
    over = {b: too_large(problem.summary, instance, b, limit) for b in method.budgets}
    return {b: est for b, est in over.items() if est is not None}


def memory_refusal(problem: ProblemEntry, method: MethodInstance, limit: int | None) -> str | None:
    """Why some of this pair's jobs are not planned for lack of memory (one line), or None."""
    from harness.model.footprint import TooLarge

    over = too_large_budgets(problem, method, limit)
    if not over:
        return None
    budgets = sorted(over)
    at = (f"budget {budgets[0]}" if len(budgets) == 1 else
          f"budgets {', '.join(map(str, budgets))}")
    if len(budgets) == len(method.budgets) and len(budgets) > 1:
        at = f"every budget ({budgets[0]} ...)"
    what = f"{method.label} on {problem.name} (N = {problem.n_train:,}) at {at}"
    return str(TooLarge(what, over[budgets[0]], limit, "the workers have {}"))


def check_jobs(w: Where, problems, methods) -> None:
    """Refuse settings that cannot run some budget on some problem (Method.check_job), now."""
    from harness.plugins.registry import get_method

    for m in methods:
        method = get_method(m.name)(**m.settings)
        for p in problems:
            if incompatible(p, m):
                continue  # not planned
            for budget in m.budgets:
                try:
                    method.check_job(budget, p.n_train)
                except InputError as exc:
                    raise w.rewrap(f"methods.{m.name} (budget {budget}, problem {p.name})",
                                   exc) from None
