"""One tuning evaluation: a method's log Ẑ at one parameter point, recorded (docs/math.md §12).

What an evaluation costs (its `cpu_seconds`) is what a user pays per point: the method's
per-problem `prepare` (reordering, the minimax saddle point, ...) plus its estimate, both in
thread CPU time. Not counted: building the problem (kernel matrix, its Cholesky factor and,
for exact families, the oracle's truth — the oracle is not a user cost, and the O(N^3)
factorisation is shared by every method) and process-level one-time work, which the job does
once before the first evaluation (JIT compilation in `prepare` on the untuned problem).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.core.deadline import TimeLimitExceeded, check_deadline
from harness.execution.timed import run_method
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.result import ANSWERED
from harness.plugins.specs import make_problem
from harness.tuning.space import with_params

build_problem = make_problem.__wrapped__  # uncached: a tuning job visits many problems once


class TuningTimeout(Exception):
    """An evaluation ran out of the job's CPU-time limit: the tuning stops there."""


def _finite(value) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


class Evaluator:
    """Runs one method at parameter points of one problem spec and keeps every evaluation.

    Each call draws a child random stream of the job's stream (reproducible); a failed or
    erroring evaluation is recorded with its reason and returned, never raised. A timeout is
    recorded, then raised as TuningTimeout.
    """

    def __init__(self, spec: str, method: Method, rng: np.random.Generator):
        self.spec, self.method, self.rng = spec, method, rng
        self.evaluations: list[dict[str, Any]] = []

    def __call__(self, params: Mapping[str, float], budget: int, stage: str) -> dict[str, Any]:
        check_deadline()
        rng = self.rng.spawn(1)[0]
        entry: dict[str, Any] = {
            "params": {k: float(v) for k, v in params.items()}, "budget": int(budget),
            "stage": stage, "log_z": None, "log_z_se": None, "cpu_seconds": 0.0,
            "prepare_cpu_seconds": 0.0, "status": "error", "reason": None, "true_log_z": None,
        }
        try:
            problem = build_problem(with_params(self.spec, params))
        except Exception as exc:  # noqa: BLE001 - e.g. a kernel matrix that is not positive
            entry["reason"] = f"building the problem failed: {type(exc).__name__}: {exc}"
            self.evaluations.append(entry)
            return entry
        if problem.truth is not None and problem.truth.kind == "exact":
            entry["true_log_z"] = float(problem.truth.log_marginal_likelihood)
        entry.update(self._run(problem, budget, rng))
        self.evaluations.append(entry)
        if entry["status"] == "timeout":
            raise TuningTimeout(entry["reason"])
        return entry

    def _run(self, problem: Problem, budget: int, rng: np.random.Generator) -> dict[str, Any]:
        t0 = time.thread_time()
        try:
            self.method.prepare(problem)   # run_method's own prepare is then a cache hit
        except TimeLimitExceeded as exc:
            return {"status": "timeout", "reason": str(exc),
                    "cpu_seconds": time.thread_time() - t0}
        except Exception as exc:  # noqa: BLE001 - recorded, never lost
            return {"status": "error", "reason": f"prepare: {type(exc).__name__}: {exc}",
                    "cpu_seconds": time.thread_time() - t0}
        prep = time.thread_time() - t0
        out = run_method(problem, self.method, budget, rng, trace_memory=False)
        status, reason = out["status"], out["reason"]
        log_z = _finite(out["log_marginal_likelihood"])
        if status in ANSWERED and log_z is None:
            status, reason = "failed", "log Ẑ is not finite"
        kept = status in ANSWERED   # an unreliable estimate keeps its numbers (Ẑ still unbiased)
        return {"status": status, "reason": reason or None, "log_z": log_z if kept else None,
                "log_z_se": _finite(out["log_marginal_likelihood_se"]) if kept else None,
                "cpu_seconds": prep + out["cpu_seconds"], "prepare_cpu_seconds": prep}


def best(evaluations: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The successful evaluation with the largest log Ẑ (None when none succeeded)."""
    ok = [e for e in evaluations if e["status"] == "ok"]
    return max(ok, key=lambda e: e["log_z"]) if ok else None
