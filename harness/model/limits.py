"""Hard per-job limits: CPU time and memory, enforced whatever the method does.

The cooperative limit (harness.core.deadline) stops a method only at its next check_deadline(); one
long C call (a LAPACK factorisation, scipy's Genz integrator) or a set-up without checks runs
on. So a job with a limit runs in a child process forked from the worker (`call_in_child`):

- the child inherits the worker's built problems and cached set-ups copy-on-write (nothing is
  sent to it), runs the job under the cooperative deadline, and writes plain messages back
  through a pipe (pickled, length-prefixed): the set-up's cost when it is done, then the record;
- the kernel enforces the limits in the child: RLIMIT_CPU = the CPU seconds left plus a grace
  period (`Limits.grace`: max(1 s, 10 %), so the cooperative check fires first and a clean
  "timeout" record comes back with the estimate's own timings), after which the kernel sends
  SIGKILL; RLIMIT_DATA caps the child's private writable memory, so an allocation past the
  limit fails at once with a MemoryError (numpy's names the size asked for), recorded as
  status "failed" with a reason starting "memory:" (`memory_reason`);
- the parent waits (select on the pipe, then os.wait4), reads the child's real CPU time (user
  + system, all threads) and peak resident size from the rusage, and builds the record of a
  killed child itself (harness.execution.isolated.run_isolated). A wall-clock cap
  (`Limits.wall_cap`, WALL_FACTOR x the CPU cap + WALL_MIN: generous, since the limit is CPU time
  and the machine may be loaded) stops a child that blocks without using CPU. The child dies with
  its parent (PR_SET_PDEATHSIG), so a killed worker leaves no orphan burning CPU.

Only a CPU-time limit needs the child, at ~20 ms of CPU time per job (docs/studies.md, "Hard
limits: the cost of a child"). A memory limit alone (every sweep job has the worker's share) is
enforced in the worker itself, RLIMIT_DATA set around the job (`data_ceiling`); RLIMIT_DATA is
per process, so while a job is at its limit another thread of the worker could fail to
allocate too. The set-up a child builds is lost with it: the worker builds it once more itself
afterwards (harness.execution.isolated.adopt_setup), so each set-up is paid twice per worker.

Forking a threaded process (a Dask worker's event loop, profiler and comm threads) is safe
here: the child only runs the job's numerics and writes to its pipe, never touches the event
loop, logging or the network, and ends with os._exit. glibc's malloc and OpenBLAS reset their
locks and thread pools at fork, CPython the GIL and import lock; the wall cap catches the rest.

The rules (order independence): a job's CPU time is its set-up's (timed when this worker
built it, or recorded then) plus its estimate's, and a job's memory is what its set-up added to
the worker plus what the estimate allocates; past a limit the job is a "timeout" or fails. So a
job whose set-up alone passes a limit fails every time, whether it built the set-up or found
it cached by an earlier job.
"""

from __future__ import annotations

import builtins
import math
import os
import pickle
import resource
import select
import signal
import struct
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from harness.core import special
from harness.core.memory import status_bytes
from harness.core.threads import blas_controller
from harness.model.footprint import format_bytes

GRACE_MIN = 1.0         # CPU seconds after the limit before the kernel kills the child
GRACE_FRACTION = 0.1
WALL_FACTOR = 10.0      # the wall-clock cap: this many times the CPU cap, plus WALL_MIN
WALL_MIN = 60.0
CRASH_EXIT = 70         # the child's exit code after an exception outside the job's guard
_HEADER = struct.Struct("<Q")


@dataclass(frozen=True)
class Limits:
    """A job's hard limits: CPU seconds (`time`) and bytes (`memory`); None: no limit."""

    time: float | None = None
    memory: int | None = None

    @property
    def active(self) -> bool:
        return self.time is not None or self.memory is not None

    @property
    def needs_child(self) -> bool:
        """Only a CPU-time limit needs a child process (and a platform that can fork); a
        memory limit alone is enforced in this process (data_ceiling), at no cost."""
        return self.time is not None and hasattr(os, "fork")

    @property
    def grace(self) -> float:
        return 0.0 if self.time is None else max(GRACE_MIN, GRACE_FRACTION * self.time)

    def cpu_cap(self, charged: float = 0.0) -> int | None:
        """RLIMIT_CPU of the child: the seconds left after `charged` ones, plus the grace."""
        if self.time is None:
            return None
        return max(1, math.ceil(self.time - charged + self.grace))

    def wall_cap(self, charged: float = 0.0) -> float | None:
        cap = self.cpu_cap(charged)
        return None if cap is None else WALL_FACTOR * cap + WALL_MIN


@dataclass
class ChildOutcome:
    """How a child ended: what it sent, its CPU time and peak resident size (rusage)."""

    messages: list[Any] = field(default_factory=list)
    cpu: float = 0.0              # user + system seconds of the child
    max_rss: int = 0              # bytes
    exit_code: int | None = None
    signal: int | None = None     # the signal that killed it, if one did
    wall: float = 0.0
    wall_killed: bool = False     # the parent killed it at the wall-clock cap

    def last(self, kind: str) -> Any:
        """The payload of the last message of this kind (None if it sent none)."""
        for k, payload in reversed(self.messages):
            if k == kind:
                return payload
        return None


def data_size() -> int | None:
    """This process's private writable memory (VmData) in bytes: what RLIMIT_DATA limits."""
    return status_bytes("VmData")


@contextmanager
def data_ceiling(extra: int | None) -> Iterator[None]:
    """Within the block, this process may hold at most `extra` more bytes of private writable
    memory than now (RLIMIT_DATA; an earlier, lower ceiling stays): an allocation past it is a
    MemoryError at once, instead of the kernel overcommitting and killing the process later.
    None, or a platform without /proc, sets nothing."""
    base = data_size()
    if extra is None or base is None:
        yield
        return
    _warm_blas_once()
    special.warm()   # tens of MB to load: before the ceiling, the fork
    old = resource.getrlimit(resource.RLIMIT_DATA)
    soft = base + int(extra)
    if old[0] != resource.RLIM_INFINITY:
        soft = min(soft, old[0])
    if old[1] != resource.RLIM_INFINITY:
        soft = min(soft, old[1])
    resource.setrlimit(resource.RLIMIT_DATA, (soft, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, old)


def memory_reason(exc: MemoryError) -> str:
    """'memory: asked for 7.45 GiB (...) holding 1.2 GB; limit 500 MB': the numbers an
    allocation failure has (numpy's error names the array it could not allocate)."""
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    size = getattr(exc, "_total_size", None)
    asked = (f"asked for {format_bytes(size)} (an array of shape {tuple(shape)}, {dtype})"
             if size is not None and shape is not None else f"allocation failed ({exc})")
    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    held = data_size()
    held_text = f" with {format_bytes(held)} held" if held is not None else ""
    limit = ("no limit set: the machine's memory" if soft == resource.RLIM_INFINITY
             else f"the process may hold {format_bytes(soft)} (RLIMIT_DATA)")
    return f"memory: {asked}{held_text}; {limit}"


@contextmanager
def forwarded_warnings(send: Callable[[str, Any], None]) -> Iterator[None]:
    """In a child: record the warnings of the block and send them to the parent ("warnings":
    (category name, message) pairs), who re-issues them with rewarn."""
    with warnings.catch_warnings(record=True) as caught:
        try:
            yield
        finally:
            send("warnings", [(w.category.__name__, str(w.message)) for w in caught])


def rewarn(items: list[tuple[str, str]]) -> None:
    """Issue again in this process the warnings a child sent (a category by its name)."""
    for name, message in items:
        category = getattr(builtins, name, None)
        if not (isinstance(category, type) and issubclass(category, Warning)):
            category = type(name, (UserWarning,), {})
        warnings.warn(message, category, stacklevel=2)


def _send(fd: int, kind: str, payload: Any) -> None:
    data = pickle.dumps((kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _decode(buffer: bytes) -> list[Any]:
    """The complete messages in what the child wrote (a message cut by a kill is dropped)."""
    out, pos = [], 0
    while pos + _HEADER.size <= len(buffer):
        (n,) = _HEADER.unpack_from(buffer, pos)
        if pos + _HEADER.size + n > len(buffer):
            break
        out.append(pickle.loads(buffer[pos + _HEADER.size: pos + _HEADER.size + n]))
        pos += _HEADER.size + n
    return out


def _die_with_parent(parent: int) -> None:
    """SIGKILL this child when the thread that forked it exits (Linux), e.g. a killed worker."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:   # the parent died before prctl took effect
        os._exit(CRASH_EXIT)


def _warm_blas() -> None:
    """Allocate OpenBLAS's work buffers (numpy's and scipy's copies) before RLIMIT_DATA is set:
    a process allocates them at its first BLAS call (a forked child again), and OpenBLAS
    retries forever when that allocation fails (seen: a job under a 15 MB limit spinning in
    blas_memory_alloc)."""
    import numpy as np

    a = np.eye(128)
    with blas_controller().limit(limits=1, user_api="blas"):   # as the runner calls BLAS
        a @ a
        try:
            from scipy.linalg.lapack import dpotrf

            dpotrf(a)
        except ImportError:
            pass


_warm_blas_once = cache(_warm_blas)


def _set_rlimit(which: int, soft: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard if which != resource.RLIMIT_CPU else soft))


def _child(write: int, parent: int, work: Callable[[Callable[[str, Any], None]], Any],
           cpu_seconds: int | None, data_bytes: int | None) -> None:
    """The forked child: limits, the work, its result down the pipe, os._exit. Never returns."""
    code = 0
    try:
        _die_with_parent(parent)
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        if cpu_seconds is not None:
            _set_rlimit(resource.RLIMIT_CPU, cpu_seconds)   # soft = hard: SIGKILL at the cap
        if data_bytes is not None:
            _warm_blas()
            _set_rlimit(resource.RLIMIT_DATA, data_bytes)
        _send(write, "result", work(lambda kind, payload: _send(write, kind, payload)))
    except BaseException:   # noqa: BLE001 - a bug outside the job's own guard: say it, exit
        code = CRASH_EXIT
        try:
            _send(write, "crash", traceback.format_exc(limit=8))
        except BaseException:   # noqa: BLE001, S110 - nothing more a dying child can do
            pass
    finally:
        os._exit(code)


def call_in_child(work: Callable[[Callable[[str, Any], None]], Any], *,
                  cpu_seconds: int | None = None, data_bytes: int | None = None,
                  wall_seconds: float | None = None) -> ChildOutcome:
    """Run work(send) in a forked child under hard limits (module doc).

    Parameters
    ----------
    work : callable
        Called as work(send) in the child; its return value is sent as the message
        ("result", value), and send(kind, payload) sends others on the way.
    cpu_seconds : int, optional
        RLIMIT_CPU of the child (the kernel sends SIGKILL there).
    data_bytes : int, optional
        RLIMIT_DATA of the child, absolute (see data_size).
    wall_seconds : float, optional
        The child is killed after this much wall time.

    Returns
    -------
    ChildOutcome
        What arrived and how the child ended: its CPU time and peak resident size.
    """
    if data_bytes is not None:
        special.warm()   # tens of MB to load: before the ceiling, the fork
    read, write = os.pipe()
    parent = os.getpid()
    with warnings.catch_warnings():
        # Python >= 3.12 warns on fork in a threaded process; the child is safe (module doc)
        warnings.simplefilter("ignore", DeprecationWarning)
        wall0 = time.perf_counter()
        pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(write, parent, work, cpu_seconds, data_bytes)
    os.close(write)
    outcome, chunks, reaped = ChildOutcome(), [], False
    try:
        while True:
            wait = None
            if wall_seconds is not None and not outcome.wall_killed:
                wait = wall_seconds - (time.perf_counter() - wall0)
                if wait <= 0:
                    os.kill(pid, signal.SIGKILL)   # then read on until the pipe closes
                    outcome.wall_killed, wait = True, None
            ready, _, _ = select.select([read], [], [], wait)
            if ready:
                chunk = os.read(read, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        _, status, usage = os.wait4(pid, 0)
        reaped = True
    finally:
        os.close(read)
        if not reaped:   # the parent was interrupted: leave no child behind
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    outcome.wall = time.perf_counter() - wall0
    outcome.messages = _decode(b"".join(chunks))
    outcome.cpu = usage.ru_utime + usage.ru_stime
    outcome.max_rss = usage.ru_maxrss * 1024
    if os.WIFSIGNALED(status):
        outcome.signal = os.WTERMSIG(status)
    else:
        outcome.exit_code = os.WEXITSTATUS(status)
    return outcome


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
