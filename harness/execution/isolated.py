"""One job under hard limits, the runner's side (harness.model.limits has the design and the rules).

`run_limited` runs harness.execution.timed.run_method under the limits: with a CPU-time limit in a
child forked by harness.model.limits.call_in_child (`run_isolated`), with a memory limit alone in
this process under RLIMIT_DATA. A set-up this worker has cached is charged against the limits (its
recorded CPU and memory), and a job whose cached set-up alone passes a limit fails without
running. The child's warnings are re-issued here, a set-up the child built is built again here
afterwards (`adopt_setup`) so that the jobs that follow inherit it, and a child that sent no
result (stopped by the kernel at its CPU cap, by the wall-clock cap, killed by the system's
out-of-memory killer, or crashed) gets its record from what is known: its set-up's cost if it
finished, and its rusage.
"""

from __future__ import annotations

import signal
from typing import Any

import numpy as np

from harness.core.deadline import cpu_time_limit
from harness.core.threads import threads
from harness.execution.timed import (
    SetupCost,
    prepare_untimed,
    record_setup,
    run_method,
    setup_cost,
)
from harness.model import limits as hard
from harness.model.footprint import format_bytes
from harness.model.limits import Limits
from harness.model.method import Method
from harness.model.problem import Problem


def _result(status: str, reason: str, *, cpu: float | None = None, proc: float | None = None,
            wall: float | None = None, setup: dict[str, Any] | None = None,
            diagnostics: dict[str, Any] | None = None) -> dict[str, Any]:
    """run_method's fields for a job that produced no estimate of its own (harness.model.limits)."""
    return {"status": status, "reason": reason, "log_marginal_likelihood": None,
            "log_marginal_likelihood_se": None, "test_probabilities": None,
            "test_probabilities_se": None, "cpu_seconds": cpu, "process_cpu_seconds": proc,
            "wall_seconds": wall, "threads": threads(), "setup_cpu_seconds": None,
            "setup_wall_seconds": None, "setup_cached": None, **(setup or {}),
            "peak_memory_mb": None,
            "memory_source": "none", "diagnostics": diagnostics or {}}


def _cached_fields(cost: SetupCost) -> dict[str, Any]:
    return {"setup_cpu_seconds": cost.cpu, "setup_wall_seconds": cost.wall,
            "setup_cached": True}


def adopt_setup(problem: Problem, method: Method, cost: SetupCost, time_limit: float | None
                ) -> None:
    """Build in this process a set-up a child process built and measured (then lost), so that
    later jobs inherit it; later jobs report the child's `cost`. The build runs under the
    cooperative limit (with the grace of harness.model.limits); if it fails, nothing is recorded."""
    if setup_cost(problem, method) is not None:
        return
    limit = None if time_limit is None else time_limit + Limits(time_limit).grace
    try:
        with cpu_time_limit(limit):
            prepare_untimed(problem, method)
    except Exception:   # noqa: BLE001 - the job's record is made; the next job will retry
        return
    record_setup(problem, method, cost)


def run_limited(problem: Problem, method: Method, budget: int, rng: np.random.Generator,
                limits: Limits) -> dict[str, Any]:
    """run_method under hard limits (harness.model.limits: the design and the rules): with a
    CPU-time limit in a forked child (run_isolated); with a memory limit alone in this process,
    under RLIMIT_DATA. A cached set-up is charged: its recorded CPU and memory count against the
    limits, and a job whose cached set-up alone passes one fails without running."""
    cost = setup_cost(problem, method)
    spent = cost.cpu if cost is not None else 0.0
    held = (cost.held or 0) if cost is not None else 0
    if limits.time is not None and spent > limits.time:
        return _result("timeout", f"CPU-time limit of {limits.time:g} s exceeded by the set-up "
                       f"alone ({spent:.3g} s, built by an earlier job)", cpu=0.0, proc=0.0,
                       wall=0.0, setup=_cached_fields(cost))
    if limits.memory is not None and held >= limits.memory:
        return _result("failed", f"memory: the set-up alone holds {format_bytes(held)} (built "
                       f"by an earlier job); the job may use {format_bytes(limits.memory)}",
                       cpu=0.0, proc=0.0, wall=0.0, setup=_cached_fields(cost))
    if limits.needs_child:
        return run_isolated(problem, method, budget, rng, limits, cost)
    with cpu_time_limit(limits.time), \
            hard.data_ceiling(None if limits.memory is None else limits.memory - held):
        return run_method(problem, method, budget, rng)


def run_isolated(problem: Problem, method: Method, budget: int, rng: np.random.Generator,
                 limits: Limits, cost: SetupCost | None) -> dict[str, Any]:
    """run_method in a forked child (harness.model.limits.call_in_child) stopped at the limits, the
    set-up's recorded `cost` charged (run_limited). A set-up the child built is built again
    here afterwards (adopt_setup) for the jobs that follow."""
    spent = cost.cpu if cost is not None else 0.0
    held = (cost.held or 0) if cost is not None else 0
    base = hard.data_size()
    ceiling = (None if limits.memory is None or base is None
               else base + limits.memory - held)

    def child(send):
        def setup_done(fields):
            send("setup", {**fields, "cost": setup_cost(problem, method)})
        with cpu_time_limit(limits.time, replace=True), hard.forwarded_warnings(send):
            return run_method(problem, method, budget, rng, on_setup=setup_done)

    outcome = hard.call_in_child(child, cpu_seconds=limits.cpu_cap(spent), data_bytes=ceiling,
                                 wall_seconds=limits.wall_cap(spent))
    hard.rewarn(outcome.last("warnings") or [])
    setup = outcome.last("setup")
    if setup is not None and not setup["setup_cached"] and setup["cost"] is not None:
        adopt_setup(problem, method, setup["cost"], limits.time)
    result = outcome.last("result")
    if result is not None:
        return result
    return _killed(outcome, limits, setup, cost)


def _killed(outcome: hard.ChildOutcome, limits: Limits, setup: dict[str, Any] | None,
            cost: SetupCost | None) -> dict[str, Any]:
    """The record fields of a child that sent no result: stopped at a limit, or died."""
    if setup is not None:   # the set-up was done: the rest of the child's CPU was the estimate
        fields = {k: setup[k] for k in ("setup_cpu_seconds", "setup_wall_seconds")}
        fields["setup_cached"] = setup["setup_cached"]
        own = 0.0 if setup["setup_cached"] else setup["setup_cpu_seconds"]
        cpu, stage = max(outcome.cpu - own, 0.0), "estimate"
    elif cost is not None:
        fields, cpu, stage = _cached_fields(cost), outcome.cpu, "estimate"
    else:   # stopped in the set-up
        fields = {"setup_cpu_seconds": outcome.cpu, "setup_wall_seconds": outcome.wall,
                  "setup_cached": False}
        cpu, stage = 0.0, "set-up"
    used = cpu + fields["setup_cpu_seconds"]
    diagnostics = {"child_cpu_seconds": outcome.cpu,
                   "child_max_rss_mb": outcome.max_rss / 2**20, "stopped_in": stage}
    kwargs = {"cpu": cpu, "proc": cpu, "wall": outcome.wall, "setup": fields,
              "diagnostics": diagnostics}
    name = hard.signal_name(outcome.signal) if outcome.signal is not None else None
    if outcome.wall_killed:
        return _result("timeout", f"stopped after {outcome.wall:.3g} s of wall time in the "
                       f"{stage} (CPU used {used:.3g} s of the {limits.time:g} s limit: the "
                       "process was blocked or starved)", **kwargs)
    cap = limits.cpu_cap(0.0 if cost is None else cost.cpu)
    if cap is not None and outcome.signal in (signal.SIGKILL, signal.SIGXCPU) \
            and outcome.cpu >= cap - 0.5:
        return _result("timeout", f"CPU-time limit of {limits.time:g} s exceeded: stopped in "
                       f"the {stage} after {used:.3g} s (hard limit, {limits.grace:g} s grace)",
                       **kwargs)
    if outcome.signal == signal.SIGKILL:
        limit = ("" if limits.memory is None
                 else f"; the job may use {format_bytes(limits.memory)}")
        return _result("failed", f"memory: the job's process was killed (SIGKILL, by the "
                       f"system's out-of-memory killer?) in the {stage} at a peak of "
                       f"{format_bytes(outcome.max_rss)} resident{limit}", **kwargs)
    crash = outcome.last("crash")
    how = f"died of {name}" if name else f"exited with code {outcome.exit_code}"
    return _result("error", f"the job's process {how} in the {stage} without a result"
                   + (f": {crash.strip().splitlines()[-1]}" if crash else ""), **kwargs)
