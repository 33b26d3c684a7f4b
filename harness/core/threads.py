"""How many threads one estimate may use (docs/design.md, "Threads").

`compute_threads(n)` is the one switch: within it, the compiled kernels of
harness.core.special (numba's parallel loops) and the walks' matrix products (`matmul_rows`)
use n threads; `threads()` says how many are in force. The default is one, as in every job of
a sweep (one thread per worker process); `python -m harness run --threads` gives one estimate
the machine's cores.

The numbers do not depend on the thread count. The kernels split a block of particles into
fixed chunks of elements, each computed by the same arithmetic whichever thread runs it. BLAS
itself stays on one thread (a multithreaded BLAS may split a sum between threads, and then the
last bits depend on their number); `matmul_rows` instead splits a product's rows into blocks of
ROW_BLOCK and hands each block, a one-thread BLAS call, to a thread of a pool: a row of the
product is the same sum in the same order however the rows are grouped.

`cpu_clock()` is the clock a job's CPU time is read from: the calling thread's CPU time with
one thread, the process's with more (it then counts every thread the estimate used).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache

import numpy as np

_THREADS: ContextVar[int] = ContextVar("harness_compute_threads", default=1)
ROW_BLOCK = 1024            # rows of a product a thread takes at a time


@cache
def blas_controller():
    """One threadpoolctl controller per process: building one rescans the loaded libraries
    (~6 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def threads() -> int:
    """The threads an estimate may use here (1 unless inside compute_threads)."""
    return _THREADS.get()


def cpu_clock() -> Callable[[], float]:
    """time.thread_time with one thread, time.process_time with more."""
    return time.thread_time if threads() == 1 else time.process_time


def in_force():
    """compute_threads with the count already in force (BLAS limited to it again)."""
    return compute_threads(threads())


@contextmanager
def compute_threads(n: int | None) -> Iterator[None]:
    """Within the block, the compiled kernels and matmul_rows use n threads (n >= 1; None:
    available_cores()), and BLAS one."""
    n = available_cores() if n is None else int(n)
    if n < 1:
        raise ValueError(f"threads must be at least 1, not {n}")
    token = _THREADS.set(n)
    previous = None
    if n > 1:
        import numba

        n = min(n, numba.config.NUMBA_NUM_THREADS)
        previous = numba.get_num_threads()
        numba.set_num_threads(n)
    try:
        with blas_controller().limit(limits=1, user_api="blas"):
            yield
    finally:
        if previous is not None:
            import numba

            numba.set_num_threads(previous)
        _THREADS.reset(token)


@cache
def _pool(n: int):
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=n, thread_name_prefix="harness-rows")


def over_blocks(work: Callable[[int, int], object], n: int, block: int = ROW_BLOCK) -> None:
    """work(lo, hi) over [0, n): whole with one thread in force, else in blocks of `block` on
    a thread pool (`work` must release the GIL: a BLAS call, a nogil kernel). Each block is
    the same work whichever thread runs it, so the numbers do not depend on the count."""
    k = threads()
    if k == 1 or n < 2 * block:
        work(0, n)
        return
    list(_pool(k).map(lambda lo: work(lo, min(lo + block, n)), range(0, n, block)))


def matmul_rows(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """out = a @ b (a new array without `out`), rows in blocks over the threads in force
    (`over_blocks`: each block a one-thread BLAS call), the same numbers as one call."""
    if out is None:
        out = np.empty((a.shape[0], b.shape[1]))
    over_blocks(lambda lo, hi: np.matmul(a[lo:hi], b, out=out[lo:hi]), a.shape[0])
    return out
