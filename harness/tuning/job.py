"""The worker entry point of a tuning job: one job spec in, one plain tune record out.

Like a sweep job (harness.execution.worker.on_worker) it never raises: bad input is a record with
status "error", a tuning in which no evaluation succeeded is "failed", and one that runs out of the
job's CPU-time limit (harness.core.deadline, over the whole tuning) is "timeout" with every
evaluation made so far. The random stream of the job comes from its key
(harness.core.seeding.rng_for); every evaluation draws a child stream from it, so the same key
gives the same record. `cpu_seconds` is the cost of tuning: the sum of the evaluations' CPU
(what is counted: harness.tuning.evaluate).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from harness.core.deadline import TimeLimitExceeded, cpu_time_limit
from harness.core.errors import InputError
from harness.model.method import Method
from harness.model.result import ANSWERED
from harness.tuning.evaluate import Evaluator, TuningTimeout, best
from harness.tuning.space import TuneSpace, check_space

STRATEGIES = ("grid", "explore-exploit", "pseudo-marginal")
MAX_WARNINGS = 10


def _count(tune: dict[str, Any], key: str, default: int | None, minimum: int) -> int | None:
    value = tune.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"tune.{key}", f"must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class TuneJob:
    """The validated "tune" part of a job spec (the shared contract's fields)."""

    space: TuneSpace
    strategy: str
    explore_budget: int | None
    top_k: int
    walkers: int
    steps: int
    burn: int

    @classmethod
    def from_spec(cls, tune: dict[str, Any]) -> TuneJob:
        if not isinstance(tune, dict):
            raise InputError("tune", f"must be a mapping, got {tune!r}")
        space = TuneSpace.from_dict(tune.get("space"))
        strategy = tune.get("strategy")
        if strategy not in STRATEGIES:
            raise InputError("tune.strategy", f"unknown strategy {strategy!r}",
                             f"use one of {', '.join(STRATEGIES)}")
        explore = _count(tune, "explore_budget", None, 1)
        if strategy == "explore-exploit" and explore is None:
            raise InputError("tune.explore_budget", "explore-exploit needs it",
                             "the budget of the coarse pass over the grid, e.g. budget // 10")
        steps = _count(tune, "steps", 200, 2)
        job = cls(space, strategy, explore, _count(tune, "top_k", 3, 1),
                  _count(tune, "walkers", 8, 2 * len(space.axes)), steps,
                  _count(tune, "burn", steps // 2, 0))
        if job.burn >= job.steps:
            raise InputError("tune.burn", f"must be less than steps ({steps}), got {job.burn}")
        return job

    def budgets(self, budget: int) -> list[int]:
        """Every budget this job evaluates at (for the method's check_job)."""
        explores = self.strategy != "grid" and self.explore_budget
        return [budget] + ([self.explore_budget] if explores else [])


def check_tune(job: dict[str, Any]) -> tuple[TuneJob, Method]:
    """Every check a tune job can fail before any work (for planning, and the worker)."""
    from harness.plugins.registry import get_method
    from harness.plugins.specs import make_problem
    from harness.tuning.pseudo_marginal import check_unbiased

    tune = TuneJob.from_spec(job.get("tune"))
    budget = job.get("budget")
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 1:
        raise InputError("budget", f"must be a positive integer, got {budget!r}")
    check_space(job["problem"], tune.space)
    method = get_method(job["method"]).from_settings(job["settings"])
    n_train = make_problem(job["problem"]).n_train
    for b in tune.budgets(budget):
        method.check_job(b, n_train)
    if tune.strategy == "pseudo-marginal":
        check_unbiased(method)
    return tune, method


def _tune(tune: TuneJob, evaluate: Evaluator, budget: int) -> dict[str, Any]:
    """Run the strategy: {"best": the chosen evaluation or None} (grid, explore-exploit) or
    {"point": the chain's posterior point or None, "chain": its record} (pseudo-marginal)."""
    from harness.tuning import pseudo_marginal as pm
    from harness.tuning.strategies import explore_exploit, grid_search

    if tune.strategy == "grid":
        return {"best": grid_search(evaluate, tune.space, budget)}
    if tune.strategy == "explore-exploit":
        return {"best": explore_exploit(evaluate, tune.space, tune.explore_budget, budget,
                                        tune.top_k)}
    rng = evaluate.rng.spawn(1)[0]
    centre = (best([evaluate(p, tune.explore_budget, "explore") for p in tune.space.points()])
              if tune.explore_budget else None)
    start = (pm.jittered_start(tune.space, centre["params"], tune.walkers, rng) if centre
             else pm.uniform_start(tune.space, tune.walkers, rng))
    chain = pm.run_chain(evaluate, tune.space, budget, start, tune.steps, tune.burn,
                         int(rng.integers(2**32)))
    ok = any(e["status"] in ANSWERED for e in evaluate.evaluations if e["stage"] == "chain")
    return {"point": pm.posterior_point(tune.space, chain) if ok else None, "chain": chain}


def _outcome(result: dict[str, Any], evaluations: list[dict[str, Any]]) -> dict[str, Any]:
    chosen = result.get("best")
    if result.get("point") is not None:
        out = {"status": "ok", "reason": None, "chosen": result["point"], "chosen_log_z": None}
    elif chosen is not None:
        out = {"status": "ok", "reason": None, "chosen": chosen["params"],
               "chosen_log_z": chosen["log_z"]}
    else:
        reasons = sorted({e["reason"] or e["status"] for e in evaluations})
        out = {"status": "failed", "chosen": None, "chosen_log_z": None,
               "reason": f"no successful evaluation to choose from: {'; '.join(reasons[:3])}"}
    return {**out, "log_marginal_likelihood": out["chosen_log_z"], "chain": result.get("chain")}


def run_tune_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one tuning job spec (fields: harness.tuning package doc) and return its record."""
    from harness.core.seeding import rng_for
    from harness.execution.worker import _worker_address, pin_thread_env
    from harness.plugins.specs import make_problem

    pin_thread_env()
    wall0 = time.perf_counter()
    tune_spec = job.get("tune") or {}
    record: dict[str, Any] = {
        "job_id": job.get("job_id"), "sweep": job.get("sweep"), "replicate": job.get("replicate"),
        "seed": job.get("seed"), "problem_spec": job.get("problem"), "job_key": job.get("key"),
        "time_limit": job.get("time_limit"), "kind": "tune", "problem": job.get("problem"),
        "method": job.get("method"), "method_name": job.get("method"),
        "settings": job.get("settings"), "budget": job.get("budget"), "budget_unit": None,
        "n_train": None, "n_test": None, "strategy": tune_spec.get("strategy"),
        "space": tune_spec.get("space"), "status": "error", "reason": None, "evaluations": [],
        "chosen": None, "chosen_log_z": None, "log_marginal_likelihood": None,
        "cpu_seconds": 0.0, "wall_seconds": None, "n_evaluations": 0, "chain": None,
        "diagnostics": {},
    }
    evaluate = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            tune, method = check_tune(job)
            problem = make_problem(job["problem"])
            record.update(problem=problem.name, method=method.label(), settings=
                          method.get_settings(), budget_unit=method.budget_unit,
                          n_train=problem.n_train, n_test=problem.n_test,
                          space=tune.space.to_dict())
            method.prepare(problem)   # process-level one-time work (JIT), not a tuning cost
            evaluate = Evaluator(job["problem"], method, rng_for(job["key"]))
            t0 = time.perf_counter()
            try:
                with cpu_time_limit(job.get("time_limit")):
                    record.update(_outcome(_tune(tune, evaluate, int(job["budget"])),
                                           evaluate.evaluations))
            except (TuningTimeout, TimeLimitExceeded) as exc:
                record.update(status="timeout", reason=str(exc))
            record["wall_seconds"] = time.perf_counter() - t0
            if record["chain"] is not None:
                record["diagnostics"]["acceptance_fraction"] = \
                    record["chain"]["acceptance_fraction"]
        if caught:
            record["warnings"] = sorted({f"{w.category.__name__}: {w.message}"
                                         for w in caught})[:MAX_WARNINGS]
    except Exception as exc:  # noqa: BLE001 - bad input or a plugin that fails: recorded
        record.update(status="error", reason=f"{type(exc).__name__}: {exc}"
                      if not isinstance(exc, InputError) else str(exc))
    if evaluate is not None:
        record["evaluations"] = evaluate.evaluations
        record["n_evaluations"] = len(evaluate.evaluations)
        record["cpu_seconds"] = float(sum(e["cpu_seconds"] for e in evaluate.evaluations))
    record["worker"] = _worker_address()
    record["job_wall_seconds"] = time.perf_counter() - wall0
    record["finished_at"] = datetime.now(UTC).isoformat()
    return record
