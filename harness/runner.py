"""Run one method on one problem at one budget and return a plain record.

The record holds only plain data (numbers, strings, lists), so it can be printed as JSON,
sent back from a Dask worker, and stored without pickles. Timing follows DESIGN.md: BLAS is
limited to one thread, and the method call is timed by thread CPU time, wall time and the
peak extra memory it touched (harness.memory: the kernel's resident high-water mark, at no
cost to the call; tracemalloc where that is unavailable).

Set-up (`Method.prepare`: per-problem factorisations, reorderings, saddle points, compression,
and the problem's lazily built dense quantities they trigger) runs before, outside the timed
region, and is timed apart: setup_cpu_seconds, setup_wall_seconds. It is cached per process,
so only the first job of a problem x method in a worker pays it; the runner keeps the cost it
measured then (`_SETUP`, keyed by the problem object and the method's label) and every later
job of the pair reports the same seconds with setup_cached = true.

Limits. Inside harness.deadline.cpu_time_limit, a cached set-up's recorded CPU counts against
the limit like a set-up built by the job itself (deadline.charged), so the status never
depends on which job of a worker built it. run_one(..., limits=Limits(time, memory)) makes the
limits hard: the job runs in a forked child (harness.limits, which states the rules and the
design), and a child killed at its limit is stored as "timeout" (or "failed" with a reason
starting "memory:") with the CPU it really used. An allocation that fails is "failed" with
"memory:" and the numbers (harness.limits.memory_reason) on either path.
"""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

import numpy as np
from threadpoolctl import ThreadpoolController

from harness import limits as hard
from harness import metrics
from harness.deadline import TimeLimitExceeded, charged, check_deadline, cpu_time_limit
from harness.debugging import exception_reason
from harness.errors import InputError
from harness.estimate import Estimate
from harness.footprint import format_bytes
from harness.limits import Limits
from harness.memory import peak_memory
from harness.method import Method
from harness.problem import Problem


@cache
def _blas() -> ThreadpoolController:
    """One controller per process: building one rescans the loaded libraries (~6 ms)."""
    return ThreadpoolController()


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _listed(values) -> list[float] | None:
    return None if values is None else np.asarray(values, float).tolist()


class SetupCost(NamedTuple):
    """What a set-up cost when this process built it: CPU and wall seconds, and the memory it
    added to the process (VmData growth, bytes; None where it cannot be read)."""

    cpu: float
    wall: float
    held: int | None


_SETUP: WeakKeyDictionary[Problem, dict[str, SetupCost]] = WeakKeyDictionary()


def _prepare(problem: Problem, method: Method, blas_threads: int) -> None:
    with _blas().limit(limits=blas_threads, user_api="blas"):
        if method.needs_dense(problem.n_train):
            problem.warm()   # the dense K, R and factor it reads, built outside the estimate
        method.prepare(problem)


def timed_prepare(problem: Problem, method: Method, blas_threads: int = 1) -> dict[str, Any]:
    """Run method.prepare(problem) (with BLAS on `blas_threads`) and report its set-up cost.

    The set-up includes the problem's dense K, R and Cholesky factor when the method reads
    them (Method.needs_dense): structured problems build them only then (Problem.warm).
    The cost is the one measured when this process first prepared this problem for a method
    with this label; later calls still call prepare (a cache hit) and report that cost with
    setup_cached = True. (Caches shared between methods, e.g. the problem's Cholesky factor,
    are paid by whichever method needs them first.)
    """
    seen = _SETUP.setdefault(problem, {})
    label = method.label()
    cached = label in seen
    data0 = None if cached else hard.data_size()
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    _prepare(problem, method, blas_threads)
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    if not cached:
        data1 = None if data0 is None else hard.data_size()
        seen[label] = SetupCost(cpu, wall, None if data1 is None else max(data1 - data0, 0))
    cpu, wall, _ = seen[label]
    return {"setup_cpu_seconds": cpu, "setup_wall_seconds": wall, "setup_cached": cached}


def setup_cost(problem: Problem, method: Method) -> SetupCost | None:
    """The recorded cost of this problem x method's set-up, if this process has built it."""
    return _SETUP.get(problem, {}).get(method.label())


def adopt_setup(problem: Problem, method: Method, cost: SetupCost, time_limit: float | None,
                blas_threads: int = 1) -> None:
    """Build in this process a set-up a child process built and measured (then lost), so that
    later jobs inherit it; later jobs report the child's `cost`. The build runs under the
    cooperative limit (with the grace of harness.limits); if it fails, nothing is recorded."""
    if setup_cost(problem, method) is not None:
        return
    limit = None if time_limit is None else time_limit + Limits(time_limit).grace
    try:
        with cpu_time_limit(limit):
            _prepare(problem, method, blas_threads)
    except Exception:   # noqa: BLE001 - the job's record is made; the next job will retry
        return
    _SETUP.setdefault(problem, {})[method.label()] = cost


def _within_limit(work: Callable[..., Estimate]) -> Callable[..., Estimate]:
    """work, with the CPU-time deadline checked before (a cached set-up may have used the
    limit up) and after it (a method that never checks is still a timeout once past it)."""
    def checked(*args):
        check_deadline()
        result = work(*args)
        check_deadline()
        return result
    return checked


def run_method(
    problem: Problem, method: Method, budget: int, rng: np.random.Generator,
    *, blas_threads: int = 1, trace_memory: bool = True, raise_errors: bool = False,
    on_setup: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Estimate with timing; a bug in a method becomes status 'error' with the reason.

    Inside harness.deadline.cpu_time_limit(...), a method that passes the limit stops at its
    next check_deadline() and the run gets status 'timeout' with the reason; a cached
    set-up's CPU counts against the limit (module doc). One-time work (method.prepare: JIT
    compilation, per-problem factorisations) is kept out of the timing and reported apart
    (timed_prepare: setup_cpu_seconds, setup_wall_seconds, setup_cached); on_setup(those
    fields) is called once the set-up succeeded. A failed allocation is status 'failed'
    with a reason starting "memory:". trace_memory=False skips the peak-memory measurement
    (peak_memory_mb None). An error's reason names the method's file and line
    (harness.debugging); raise_errors=True re-raises it instead, with its traceback
    (`run --raise`).
    """
    def guarded(work):
        """work() -> Estimate; a time-out or a method's bug becomes a recorded status."""
        try:
            return work()
        except InputError:
            raise
        except TimeLimitExceeded as exc:  # the cooperative CPU-time limit (harness.deadline)
            return Estimate(None, None, status="timeout", reason=str(exc))
        except MemoryError as exc:        # past the memory limit (harness.limits) or the RAM
            if raise_errors:
                raise
            return Estimate.failed(hard.memory_reason(exc))
        except Exception as exc:  # noqa: BLE001 - recorded, never lost
            if raise_errors:
                raise
            return Estimate(None, None, status="error",
                            reason=exception_reason(exc, type(method)))

    setup: dict[str, Any] = {}
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    failed = guarded(lambda: setup.update(timed_prepare(problem, method, blas_threads)))
    if failed:   # what the set-up used until it stopped
        setup = {"setup_cpu_seconds": time.thread_time() - cpu0,
                 "setup_wall_seconds": time.perf_counter() - wall0, "setup_cached": False}
    elif on_setup is not None:
        on_setup(setup)
    with peak_memory(trace_memory) as memory, _blas().limit(limits=blas_threads,
                                                             user_api="blas"), \
            charged(setup["setup_cpu_seconds"] if setup.get("setup_cached") else 0.0):
        cpu0, proc0, wall0 = time.thread_time(), time.process_time(), time.perf_counter()
        estimate = failed or guarded(lambda: _within_limit(method.estimate)(problem, budget,
                                                                             rng))
        cpu, proc, wall = (time.thread_time() - cpu0, time.process_time() - proc0,
                           time.perf_counter() - wall0)
    return {
        "status": estimate.status,
        "reason": estimate.reason,
        "log_marginal_likelihood": _plain(estimate.log_marginal_likelihood),
        "log_marginal_likelihood_se": _plain(estimate.log_marginal_likelihood_se),
        "test_probabilities": _listed(estimate.test_probabilities),
        "test_probabilities_se": _listed(estimate.test_probabilities_se),
        "cpu_seconds": cpu,
        "process_cpu_seconds": proc,
        "wall_seconds": wall,
        **setup,
        "peak_memory_mb": memory.mb,
        "memory_source": memory.source,
        "diagnostics": {k: _plain(v) for k, v in estimate.diagnostics.items()},
    }


def truth_metrics(problem: Problem, record: dict[str, Any]) -> dict[str, Any]:
    """Errors against the problem's truth (exact oracle or reference), when it has one."""
    truth = problem.truth
    out: dict[str, Any] = {}
    if truth is None:
        return out
    out["truth_kind"] = truth.kind
    out["true_log_marginal_likelihood"] = truth.log_marginal_likelihood
    lz = record.get("log_marginal_likelihood")
    if record["status"] == "ok" and lz is not None:
        out["abs_log_error"] = metrics.abs_log_error(lz, truth.log_marginal_likelihood)
        out["mape_percent"] = metrics.mape_percent(lz, truth.log_marginal_likelihood)
    probs = record.get("test_probabilities")
    if (record["status"] == "ok" and probs is not None and truth.test_probabilities is not None
            and problem.n_test):
        out["mae"] = metrics.mae(probs, truth.test_probabilities)
    return out


def point_truth(problem: Problem, record: dict[str, Any]) -> dict[str, Any]:
    """Per test point: the true probabilities (when the problem has them) and each point's
    absolute error |p_i - p*_i| (when the run predicted); the MAE is their mean. Not part of
    the stored record (the store holds the truth once, in the problem's summary)."""
    truth = problem.truth
    known = truth is not None and truth.test_probabilities is not None and problem.n_test > 0
    probs = record.get("test_probabilities")
    return {"true_test_probabilities": _listed(truth.test_probabilities) if known else None,
            "test_probabilities_abs_error": _listed(np.abs(np.asarray(probs, float)
                                                           - truth.test_probabilities))
            if known and record["status"] == "ok" and probs is not None else None}


def _result(status: str, reason: str, *, cpu: float | None = None, proc: float | None = None,
            wall: float | None = None, setup: dict[str, Any] | None = None,
            diagnostics: dict[str, Any] | None = None) -> dict[str, Any]:
    """run_method's fields for a job that produced no estimate of its own (harness.limits)."""
    return {"status": status, "reason": reason, "log_marginal_likelihood": None,
            "log_marginal_likelihood_se": None, "test_probabilities": None,
            "test_probabilities_se": None, "cpu_seconds": cpu, "process_cpu_seconds": proc,
            "wall_seconds": wall, "setup_cpu_seconds": None, "setup_wall_seconds": None,
            "setup_cached": None, **(setup or {}), "peak_memory_mb": None,
            "memory_source": "none", "diagnostics": diagnostics or {}}


def _cached_fields(cost: SetupCost) -> dict[str, Any]:
    return {"setup_cpu_seconds": cost.cpu, "setup_wall_seconds": cost.wall,
            "setup_cached": True}


def run_isolated(problem: Problem, method: Method, budget: int, rng: np.random.Generator,
                 limits: Limits) -> dict[str, Any]:
    """run_method in a forked child under hard limits (harness.limits: the design and the
    rules). A cached set-up is charged: its recorded CPU and memory count against the limits,
    and a job whose cached set-up alone passes one fails without running. A set-up the child
    built is built again here afterwards (adopt_setup) for the jobs that follow."""
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


def run_one(problem: Problem, method: Method, budget: int, rng: np.random.Generator,
            *, raise_errors: bool = False, limits: Limits | None = None,
            **identity: Any) -> dict[str, Any]:
    """The full record of one run: identity fields, results, timings and truth metrics.

    With `limits` (CPU seconds, bytes) the job runs in a child process that is stopped at
    them (run_isolated); without, in this process as before."""
    record = {
        **identity,
        "problem": problem.name,
        "method": method.label(),
        "method_name": method.name,
        "settings": method.get_settings(),
        "exact_method": method.exact,
        "budget": int(budget),
        "budget_unit": method.budget_unit,
        "n_train": problem.n_train,
        "n_test": problem.n_test,
        "kernel": problem.kernel_summary(),
    }
    if limits is not None and limits.active:
        record.update(run_isolated(problem, method, budget, rng, limits))
    else:
        record.update(run_method(problem, method, budget, rng, raise_errors=raise_errors))
    record.update(truth_metrics(problem, record))
    return record
