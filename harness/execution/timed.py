"""One method call, timed in this process (the timing rules of docs/design.md).

The estimate runs on the threads in force (harness.core.threads: one in a sweep; BLAS always
one), and the method call is timed by the CPU time of those threads, wall time and the peak
extra memory it touched (harness.core.memory: the kernel's resident high-water
mark, at no cost to the call; tracemalloc where that is unavailable).

Set-up (`Method.prepare`: per-problem factorisations, reorderings, saddle points, compression,
and the problem's lazily built dense quantities they trigger) runs before, outside the timed
region, and is timed apart: setup_cpu_seconds, setup_wall_seconds. It is cached per process,
so only the first job of a problem x method in a worker pays it; this module keeps the cost it
measured then (`_SETUP`, keyed by the problem object and the method's label) and every later
job of the pair reports the same seconds with setup_cached = true.

Limits. Inside harness.core.deadline.cpu_time_limit, a cached set-up's recorded CPU counts
against the limit like a set-up built by the job itself (deadline.charged), so the status never
depends on which job of a worker built it. An allocation that fails is "failed" with "memory:"
and the numbers (harness.model.limits.memory_reason).

Threads. An exception raised in a thread the method started (during its set-up or estimate)
is not lost when the method returns regardless: `thread_errors` keeps it (threading.excepthook
for the call, threads alive before the call left to the hook there was), the threads the call
started are given THREAD_GRACE seconds to end, and the first such exception decides the job
like one of the method's own: a MemoryError "failed" ("memory: ... in thread 'name'"), anything
else "error".
"""


from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar
from weakref import WeakKeyDictionary

import numpy as np

from harness.core import special
from harness.core.deadline import TimeLimitExceeded, charged, check_deadline
from harness.core.errors import InputError
from harness.core.memory import peak_memory
from harness.core.progress import phase
from harness.core.threads import compute_threads, cpu_clock, in_force, threads
from harness.model import limits as hard
from harness.model.debugging import exception_reason
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.result import Estimate

THREAD_GRACE = 0.5             # seconds the threads a method started get to end after it returns


def plain(value):
    """A JSON-safe scalar: numpy scalars as Python numbers, inf and NaN as None."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def listed(values) -> list[float] | None:
    """An array as a plain list of floats (None stays None)."""
    return None if values is None else np.asarray(values, float).tolist()


class SetupCost(NamedTuple):
    """What a set-up cost when this process built it: CPU and wall seconds, and the memory it
    added to the process (VmData growth, bytes; None where it cannot be read)."""

    cpu: float
    wall: float
    held: int | None


T = TypeVar("T")

_SETUP: WeakKeyDictionary[Problem, dict[str, SetupCost]] = WeakKeyDictionary()


def prepare_untimed(problem: Problem, method: Method) -> None:
    """method.prepare(problem) with the dense quantities it reads (no timing, no record), on
    one thread: a factorisation's last bits depend on how LAPACK splits it between threads,
    and every estimate of the problem inherits them (docs/design.md, "Threads")."""
    special.warm()            # the compiled kernels, loaded once per process, not in a timing
    with compute_threads(1):
        if method.needs_dense(problem.n_train):
            problem.warm()   # the dense K, R and factor it reads, built outside the estimate
        method.prepare(problem)


def timed_prepare(problem: Problem, method: Method) -> dict[str, Any]:
    """Run method.prepare(problem) (on one thread: prepare_untimed) and report its set-up cost.

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
    clock = cpu_clock()
    cpu0, wall0 = clock(), time.perf_counter()
    prepare_untimed(problem, method)
    cpu, wall = clock() - cpu0, time.perf_counter() - wall0
    if not cached:
        data1 = None if data0 is None else hard.data_size()
        seen[label] = SetupCost(cpu, wall, None if data1 is None else max(data1 - data0, 0))
    cpu, wall, _ = seen[label]
    return {"setup_cpu_seconds": cpu, "setup_wall_seconds": wall, "setup_cached": cached}


def setup_cost(problem: Problem, method: Method) -> SetupCost | None:
    """The recorded cost of this problem x method's set-up, if this process has built it."""
    return _SETUP.get(problem, {}).get(method.label())


def record_setup(problem: Problem, method: Method, cost: SetupCost) -> None:
    """Record a set-up's cost as measured elsewhere (harness.execution.isolated.adopt_setup)."""
    _SETUP.setdefault(problem, {})[method.label()] = cost


_collecting: list[tuple[set[threading.Thread], list[threading.ExceptHookArgs]]] = []
_collecting_lock = threading.Lock()
_chained: list = []   # the threading.excepthook there was while `_hook` is installed


def _hook(args: threading.ExceptHookArgs) -> None:
    """threading.excepthook while a `thread_errors` block is active: an exception of a thread
    started during an active block goes to that block; any other to the hook there was."""
    with _collecting_lock:
        takers = [caught for before, caught in _collecting if args.thread not in before]
        chained = _chained[0] if _chained else threading.__excepthook__
    for caught in takers:
        caught.append(args)
    if not takers:
        chained(args)


@contextmanager
def thread_errors(grace: float = THREAD_GRACE) -> Iterator[list[threading.ExceptHookArgs]]:
    """Exceptions raised in threads started during the block, collected in the yielded list
    instead of printed (threads alive before go to the hook there was, put back when the
    last active block ends). On exit the threads started during the block get `grace`
    seconds in all to end. Blocks may overlap (threads of one process): a thread new to
    several is given to each."""
    entry: tuple[set[threading.Thread], list] = (set(threading.enumerate()), [])
    with _collecting_lock:
        if not _collecting and threading.excepthook is not _hook:
            _chained[:] = [threading.excepthook]
            threading.excepthook = _hook
        _collecting.append(entry)
    try:
        yield entry[1]
        deadline = time.monotonic() + grace
        for thread in set(threading.enumerate()) - entry[0]:
            if thread is not threading.current_thread() and thread.is_alive():
                try:   # is_alive: a thread still starting (in limbo) cannot be joined yet
                    thread.join(max(0.0, deadline - time.monotonic()))
                except RuntimeError:
                    pass
    finally:
        with _collecting_lock:
            _collecting.remove(entry)
            if not _collecting and threading.excepthook is _hook:
                threading.excepthook = _chained.pop()


def thread_failure(args: threading.ExceptHookArgs, method: Method) -> Estimate:
    """The estimate of a job one of whose threads raised (thread_errors): "failed" for a
    MemoryError, "error" for anything else, the reason naming the thread."""
    exc = args.exc_value
    where = f" (in thread {args.thread.name!r})" if args.thread is not None else " (in a thread)"
    if isinstance(exc, MemoryError):
        return Estimate.failed(hard.memory_reason(exc) + where)
    return Estimate(None, None, status="error",
                    reason=exception_reason(exc, type(method)) + where)


def _within_limit(work: Callable[..., T]) -> Callable[..., T]:
    """work, with the CPU-time deadline checked before (a cached set-up may have used the
    limit up) and after it (a method that never checks is still a timeout once past it)."""
    def checked(*args):
        check_deadline()
        result = work(*args)
        check_deadline()
        return result
    return checked


def timed_call(problem: Problem, method: Method, work: Callable[[], T], *,
               trace_memory: bool = True, raise_errors: bool = False,
               on_setup: Callable[[dict[str, Any]], None] | None = None,
               ) -> tuple[T | None, Estimate | None, dict[str, Any]]:
    """Set up the method (timed_prepare), then run work() timed: (its result, None, timing).

    The timing holds cpu_seconds (the CPU of every thread the estimate used:
    harness.core.threads.cpu_clock), process_cpu_seconds, wall_seconds, the set-up
    fields of timed_prepare, peak_memory_mb and memory_source. Inside
    harness.core.deadline.cpu_time_limit(...), a method that passes the limit stops at its next
    check_deadline(); a cached set-up's CPU counts against the limit (module doc). A time-out,
    a failed allocation or a bug in the method becomes (None, an Estimate with status
    'timeout', 'failed' (reason "memory: ...") or 'error' and the reason, timing); an
    InputError is raised, and so is any other exception with raise_errors=True. An exception
    in a thread the method started decides the job the same way (thread_errors,
    thread_failure). on_setup(the set-up fields) is called once the set-up succeeded. Shared
    by run_method (one estimate) and harness.execution.parts.run_part (one part of a split
    estimate).
    """
    def guarded(fn):
        try:
            return fn(), None
        except InputError:
            raise
        except TimeLimitExceeded as exc:  # the cooperative CPU-time limit (harness.core.deadline)
            return None, Estimate(None, None, status="timeout", reason=str(exc))
        except MemoryError as exc:        # past the memory limit (harness.model.limits) or the RAM
            if raise_errors:
                raise
            return None, Estimate.failed(hard.memory_reason(exc))
        except Exception as exc:  # noqa: BLE001 - recorded, never lost
            if raise_errors:
                raise
            return None, Estimate(None, None, status="error",
                                  reason=exception_reason(exc, type(method)))

    setup: dict[str, Any] = {}
    value = None
    with thread_errors() as in_threads:
        clock = cpu_clock()
        cpu0, wall0 = clock(), time.perf_counter()
        with phase("set-up"):   # harness.core.progress: the method's own phases nest inside
            _, failed = guarded(lambda: setup.update(timed_prepare(problem, method)))
        if failed:   # what the set-up used until it stopped
            setup = {"setup_cpu_seconds": clock() - cpu0,
                     "setup_wall_seconds": time.perf_counter() - wall0, "setup_cached": False}
        elif on_setup is not None and not in_threads:
            on_setup(setup)
        with peak_memory(trace_memory) as memory, in_force(), \
                charged(setup["setup_cpu_seconds"] if setup.get("setup_cached") else 0.0):
            cpu0, proc0, wall0 = clock(), time.process_time(), time.perf_counter()
            if failed is None and not in_threads:
                with phase("estimate"):
                    value, failed = guarded(_within_limit(work))
            cpu, proc, wall = (clock() - cpu0, time.process_time() - proc0,
                               time.perf_counter() - wall0)
    if failed is None and in_threads:
        if raise_errors:
            raise in_threads[0].exc_value
        value, failed = None, thread_failure(in_threads[0], method)
    return value, failed, {"cpu_seconds": cpu, "process_cpu_seconds": proc,
                           "wall_seconds": wall, "threads": threads(), **setup,
                           "peak_memory_mb": memory.mb, "memory_source": memory.source}


def estimate_fields(estimate: Estimate) -> dict[str, Any]:
    """The record fields of an Estimate, as plain JSON-safe data."""
    return {
        "status": estimate.status,
        "reason": estimate.reason,
        "log_marginal_likelihood": plain(estimate.log_marginal_likelihood),
        "log_marginal_likelihood_se": plain(estimate.log_marginal_likelihood_se),
        "test_probabilities": listed(estimate.test_probabilities),
        "test_probabilities_se": listed(estimate.test_probabilities_se),
        **({"approximation_error": plain(estimate.approximation_error)}
           if estimate.approximation_error is not None else {}),
        **({"test_approximation_error": listed(estimate.test_approximation_error)}
           if estimate.test_approximation_error is not None else {}),
    }


def run_method(
    problem: Problem, method: Method, budget: int, rng: np.random.Generator,
    *, trace_memory: bool = True, raise_errors: bool = False,
    on_setup: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Estimate with timing (timed_call); a bug in a method becomes status 'error' with the
    reason (naming the method's file and line, harness.model.debugging), a time-out 'timeout', a
    failed allocation 'failed' with a reason starting "memory:". trace_memory=False skips the
    peak-memory measurement (peak_memory_mb None); raise_errors=True re-raises a method's
    exception with its traceback (`run --raise`).
    """
    estimate, failed, timing = timed_call(
        problem, method, lambda: method.estimate(problem, budget, rng),
        trace_memory=trace_memory, raise_errors=raise_errors,
        on_setup=on_setup)
    estimate = failed or estimate
    return {**estimate_fields(estimate), **timing,
            "diagnostics": {k: plain(v) for k, v in estimate.diagnostics.items()}}
