"""A cooperative per-job CPU-time limit.

`cpu_time_limit(seconds)` sets a deadline on the job's CPU time (the calling thread's, or the
process's when the estimate runs on several threads: harness.core.threads.cpu_clock) in a
context variable; long loops call `check_deadline()` now and then (the sequential
Cholesky walk does, once per block), which raises `TimeLimitExceeded` once the deadline has
passed. The runner turns that into a record with status "timeout". Without a deadline,
`check_deadline()` costs one context-variable lookup.

`charged(seconds)` counts CPU seconds spent elsewhere against the current limit: a set-up an
earlier job built and cached counts for every job that reuses it (harness.execution.runner), so a
job's status does not depend on which job of a worker built the set-up. The limit is made hard (a
job stopped whatever it does) by harness.model.limits, which runs limited jobs in a child process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from harness.core.threads import cpu_clock

# (deadline in CPU seconds of the clock, the limit in seconds, the clock at the start, the clock)
_DEADLINE: ContextVar[tuple[float, float, float, Callable[[], float]] | None] = ContextVar(
    "harness_cpu_deadline", default=None)


class TimeLimitExceeded(Exception):
    """The job used more CPU time than its limit."""

    def __init__(self, limit: float, used: float):
        super().__init__(f"CPU-time limit of {limit:g} s exceeded (used {used:.3g} s)")
        self.limit = limit
        self.used = used


@contextmanager
def cpu_time_limit(seconds: float | None, *, replace: bool = False) -> Iterator[None]:
    """Within the block, check_deadline() raises once the job has used `seconds` of CPU.

    None or a value <= 0 means no limit. Nested limits keep the earlier deadline, unless
    replace=True (a forked child: the parent's deadline is on another thread's clock).
    """
    if seconds is None or not seconds > 0:
        if not replace:
            yield
            return
        token = _DEADLINE.set(None)
    else:
        clock = cpu_clock()
        now = clock()
        token = _set_earlier((now + float(seconds), float(seconds), now, clock), replace)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _set_earlier(deadline: tuple, replace: bool = False):
    outer = _DEADLINE.get()
    if not replace and outer is not None and outer[0] <= deadline[0]:
        deadline = outer
    return _DEADLINE.set(deadline)


@contextmanager
def charged(seconds: float) -> Iterator[None]:
    """Within the block, the current limit counts `seconds` of CPU as already used (a cached
    set-up's cost); check_deadline() then raises at once if they alone pass the limit."""
    outer = _DEADLINE.get()
    if outer is None or not seconds > 0:
        yield
        return
    start = outer[3]() - float(seconds)
    token = _set_earlier((start + outer[1], outer[1], start, outer[3]))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline() -> None:
    """Raise TimeLimitExceeded if the current CPU-time deadline has passed (cheap otherwise)."""
    deadline = _DEADLINE.get()
    if deadline is not None:
        now = deadline[3]()
        if now > deadline[0]:
            raise TimeLimitExceeded(deadline[1], now - deadline[2])
