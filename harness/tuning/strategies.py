"""Maximising log Ẑ over a grid (docs/math.md §12): the plain grid and explore-then-exploit.

The papers tune (α, β) by maximising an estimate of log Z; explore-then-exploit (the paper's
scheme) evaluates the whole grid at a small budget, then only the `top_k` best candidates at
the large budget, and chooses the best of those, so that the final choice is not decided by
the noise of the cheap estimates.
"""

from __future__ import annotations

from typing import Any

from harness.tuning.evaluate import Evaluator, best
from harness.tuning.space import TuneSpace


def grid_search(evaluate: Evaluator, space: TuneSpace, budget: int) -> dict[str, Any] | None:
    """Every grid point at `budget`; the best successful evaluation (None if none)."""
    return best([evaluate(p, budget, "grid") for p in space.points()])


def explore_exploit(evaluate: Evaluator, space: TuneSpace, explore_budget: int, budget: int,
                    top_k: int) -> dict[str, Any] | None:
    """Every grid point at `explore_budget`, the `top_k` best again at `budget`; the best."""
    explored = [evaluate(p, explore_budget, "explore") for p in space.points()]
    ranked = sorted((e for e in explored if e["status"] == "ok"), key=lambda e: -e["log_z"])
    return best([evaluate(e["params"], budget, "exploit") for e in ranked[:top_k]])
