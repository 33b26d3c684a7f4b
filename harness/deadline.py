"""A cooperative per-job CPU-time limit.

`cpu_time_limit(seconds)` sets a deadline on the calling thread's CPU time (time.thread_time)
in a context variable; long loops call `check_deadline()` now and then (the sequential
Cholesky walk does, once per block), which raises `TimeLimitExceeded` once the deadline has
passed. The runner turns that into a record with status "timeout". Without a deadline,
`check_deadline()` costs one context-variable lookup.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# (deadline in thread CPU seconds, the limit in seconds, thread CPU time at the start)
_DEADLINE: ContextVar[tuple[float, float, float] | None] = ContextVar(
    "harness_cpu_deadline", default=None)


class TimeLimitExceeded(Exception):
    """The job used more thread CPU time than its limit."""

    def __init__(self, limit: float, used: float):
        super().__init__(f"CPU-time limit of {limit:g} s exceeded (used {used:.3g} s)")
        self.limit = limit
        self.used = used


@contextmanager
def cpu_time_limit(seconds: float | None) -> Iterator[None]:
    """Within the block, check_deadline() raises once this thread has used `seconds` of CPU.

    None or a value <= 0 means no limit. Nested limits keep the earlier deadline.
    """
    if seconds is None or not seconds > 0:
        yield
        return
    now = time.thread_time()
    deadline = (now + float(seconds), float(seconds), now)
    outer = _DEADLINE.get()
    if outer is not None and outer[0] <= deadline[0]:
        deadline = outer
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline() -> None:
    """Raise TimeLimitExceeded if the current CPU-time deadline has passed (cheap otherwise)."""
    deadline = _DEADLINE.get()
    if deadline is not None:
        now = time.thread_time()
        if now > deadline[0]:
            raise TimeLimitExceeded(deadline[1], now - deadline[2])
