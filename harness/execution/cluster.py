"""Dask clusters: a local one started and stopped by the command, or an existing one.

- Local (default): a LocalCluster of worker *processes*, one single-threaded worker per core
  (or `workers`), listening on 127.0.0.1 only; BLAS/OpenMP pinned to one thread per worker.
  Its worker processes ignore SIGINT (this module is their Dask preload, see `dask_setup`):
  a terminal's Ctrl-C reaches the whole process group, and only the client should react (it
  stops the sweep and closes the cluster) rather than every worker printing a traceback.
  Its scheduler restarts a worker that has not sent a heartbeat for `worker_ttl` seconds
  (Dask's distributed.scheduler.worker-ttl; here the sweep file's worker_ttl, else Dask's
  configuration if it was changed, else WORKER_TTL): the worker's nanny kills it and starts
  a new one, and its jobs go to the other workers. The scheduler checks every worker_ttl
  seconds, so a frozen worker (e.g. SIGSTOP, a hung NFS read) loses its jobs within
  2 × worker_ttl. A worker also misses heartbeats while one call holds the GIL (scipy's
  Cholesky does: about 50 s at N = 16,384 on one core): worker_ttl must stay above that.
- Existing: `scheduler` is an address (tcp://HOST:PORT, tls://HOST:PORT) or the path of a
  scheduler file written by `dask scheduler --scheduler-file`. TLS uses Dask's `Security`:
  certificate paths from the command line, else from Dask's configuration
  (distributed.comm.tls.*, e.g. DASK_DISTRIBUTED__COMM__TLS__CA_FILE). Its worker-ttl is the
  scheduler's own (set where it starts: DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL=120s; Dask's
  default is 5 minutes); the sweep prints it.

Either way, a sweep gives up when the cluster has had no worker for `no_workers_timeout`
seconds (`WorkerWatch`), and says so in one line (`ClusterLost`, exit 3). Faults that end the
sweep at once, with one line and every finished job kept (`ClusterLost`):
- the scheduler lost: the client's connection to it closed (a killed scheduler: within a
  second), a round trip refused, or no answer for `scheduler_silence()` seconds (a frozen
  scheduler or a cut link, which TCP does not report); `WorkerWatch.check` looks at each of
  them every second while the sweep waits, and every call the sweep makes on the client
  treats a refused one the same way (`lost_or`);
- the local cluster cannot start: a worker process that dies while the cluster starts makes
  Dask's LocalCluster fail ("Nanny failed to start"); it is started again, START_ATTEMPTS
  times in all;
- the local cluster's workers keep dying: a nanny whose worker died while starting gives up
  (it closes; the cluster drops one whose worker stays away); `LocalRestarts.revive` starts
  a new one in its slot, in at most LOCAL_RESTARTS rounds per sweep with a doubling backoff
  (1 + 2 + ... + 32 s), then ends the sweep with the reason instead of idling until
  no_workers_timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.core.errors import InputError

WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "VECLIB_MAXIMUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}


NO_WORKERS_TIMEOUT = 300.0   # seconds a sweep waits while the cluster has no worker
WORKER_TTL = 120.0           # the local cluster's distributed.scheduler.worker-ttl, seconds
TTL_KEY = "distributed.scheduler.worker-ttl"
ANSWER_TIMEOUT = 10.0        # seconds one round trip to the scheduler may take
START_ATTEMPTS = 3           # local cluster starts before giving up
LOCAL_RESTARTS = 6           # rounds of replacing nannies that gave up, per sweep
RESTART_BACKOFF = 1.0        # seconds between the first two rounds (then doubling)
T = TypeVar("T")


class ClusterLost(Exception):
    """The cluster cannot finish the sweep (no worker for too long, the scheduler gone, the
    local cluster cannot start or keep workers); the message says which and what to do."""


def scheduler_silence() -> float:
    """Seconds without an answer after which the scheduler counts as lost: Dask's own timeout
    for an unresponsive connection, distributed.comm.timeouts.tcp (30 s by default)."""
    import dask
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.tcp", "30s")))


def lost_message(address: str, why: str = "stopped, or unreachable from here") -> str:
    return (f"lost the scheduler {address} ({why}); when it runs again, run the same "
            f"command")


def scheduler_gone(client) -> bool:
    """The client has lost its connection to the scheduler (Dask then cancels every future
    and tries to reconnect: nothing submitted before can finish)."""
    return client.status != "running"


def ask(client, call: Callable[[], Awaitable[T]], timeout: float = ANSWER_TIMEOUT,
        waiting: Callable[[], None] | None = None, every: float = 0.5) -> T:
    """`await call()` on the client's event loop, from this thread: its result. ClusterLost
    as soon as the client has lost the scheduler (Dask's own calls would retry connecting to
    it for distributed.comm.timeouts.connect, 30 s, each), TimeoutError after `timeout`
    seconds (the call is cancelled); a call that fails because the scheduler's connection
    closed is ClusterLost too (`lost_or`). `waiting()`, if given, is called about every `every`
    seconds while the answer is not there, and may raise to give up (the call is cancelled):
    a long wait (a result whose worker died is computed again, and waits for a worker) still
    watches the cluster."""
    async def run():
        return await call()

    future = asyncio.run_coroutine_threadsafe(run(), client.loop.asyncio_loop)
    deadline = time.monotonic() + timeout
    next_look = time.monotonic() + every
    while not future.done():
        if scheduler_gone(client) or time.monotonic() > deadline:
            future.cancel()
            if scheduler_gone(client):
                raise ClusterLost(lost_message(_address(client)))
            raise TimeoutError(f"no answer from the scheduler in {timeout:g} s")
        if waiting is not None and time.monotonic() >= next_look:
            try:
                waiting()
            except BaseException:
                future.cancel()
                raise
            next_look = time.monotonic() + every
        concurrent.futures.wait([future], timeout=0.05)
    try:
        return future.result()
    except OSError as exc:   # CommClosedError: the scheduler died under the call, before the
        lost = lost_or(client, exc)   # client's status says so (seen on a loaded machine)
        if lost is exc:
            raise
        raise lost from None


RESULT_TIMEOUT = 600.0       # seconds fetching a batch of finished results may take
NOT_RECEIVED = object()      # a finished future's result that could not reach the client


def fetch_results(client, futures: list, waiting: Callable[[], None] | None = None) -> list:
    """The results of finished futures, fetched together (one `ask`, `waiting` called while
    it lasts): each its value, or NOT_RECEIVED if the connection to the scheduler failed on
    its way (the job runs again next time), or the exception that kept it from being
    received (e.g. a result that does not unpickle here)."""
    from distributed.client import FutureCancelledError

    async def one(future):
        try:
            return await client.gather(future, asynchronous=True)
        except (OSError, FutureCancelledError, asyncio.CancelledError):
            return NOT_RECEIVED
        except Exception as exc:  # noqa: BLE001 - the caller records it
            return exc

    async def every():
        return await asyncio.gather(*(one(f) for f in futures))

    return ask(client, every, timeout=RESULT_TIMEOUT, waiting=waiting) if futures else []


def scheduler_identity(client, n_workers: int = 0) -> dict[str, Any]:
    """The scheduler's identity (workers: the first n_workers, -1 all), asked now (`ask`)."""
    return ask(client, lambda: client.scheduler.identity(n_workers=n_workers))


def lost_or(client, exc: BaseException) -> BaseException:
    """ClusterLost if the client's scheduler is gone (or refused the call that raised `exc`),
    else `exc`: what a failed call on the client means."""
    from distributed.comm.core import CommClosedError

    if scheduler_gone(client) or isinstance(exc, CommClosedError):
        return ClusterLost(lost_message(_address(client)))
    return exc


def _address(client) -> str:
    return client.scheduler.address if client.scheduler is not None else "(closed)"


def default_workers() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def local_worker_memory(workers: int | None = None) -> int:
    """The memory_limit each worker of the local cluster gets: Dask's LocalCluster default,
    the machine's (or cgroup's) memory divided by the number of workers."""
    from distributed.system import MEMORY_LIMIT

    return int(MEMORY_LIMIT / (workers or default_workers()))


def workers_memory_limit(client) -> int | None:
    """The smallest memory_limit of the connected workers (None: none set, or no workers)."""
    limits = [w.get("memory_limit") for w in
              scheduler_identity(client, -1).get("workers", {}).values()]
    limits = [int(v) for v in limits if v]
    return min(limits) if limits else None


def dask_setup(worker=None) -> None:
    """Dask preload hook of the local cluster's worker processes: ignore SIGINT there."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_worker_ttl(ttl: float | None = None) -> float:
    """The local cluster's worker-ttl in seconds: `ttl` (the sweep file's), else Dask's
    configuration when it differs from Dask's own default, else WORKER_TTL."""
    import dask
    from dask.utils import parse_timedelta

    if ttl is not None:
        return float(ttl)
    configured = dask.config.get(TTL_KEY, None)
    dask_default = next((dask.config.get(TTL_KEY, None, config=d) for d in dask.config.defaults
                         if dask.config.get(TTL_KEY, None, config=d) is not None), None)
    if configured is None or configured == dask_default:
        return WORKER_TTL
    return float(parse_timedelta(configured))


def scheduler_worker_ttl(client) -> float | None:
    """The connected scheduler's worker-ttl in seconds (None: disabled or not known)."""
    import dask
    from dask.utils import parse_timedelta

    try:
        value = ask(client, lambda: client.run_on_scheduler(dask.config.get, TTL_KEY, None,
                                                            asynchronous=True))
        return float(parse_timedelta(value)) if value else None
    except ClusterLost:
        raise
    except Exception:  # noqa: BLE001 - informative only (e.g. a scheduler refusing pickles)
        return None


class WorkerWatch:
    """How long the cluster has had no worker, and whether its scheduler is still there.

    `check()` raises ClusterLost once the scheduler is lost (the client's connection closed,
    a refused round trip, or no answer for `silence` seconds); else it asks the scheduler
    (one round trip of at most ANSWER_TIMEOUT seconds, and no longer than the silence left,
    at most every `every` seconds) and returns the seconds since it was last seen with a
    worker, or None while it has one.
    """

    def __init__(self, client, every: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 silence: float | None = None):
        self.client, self.every, self.clock = client, every, clock
        self.silence = scheduler_silence() if silence is None else silence
        self.address = client.scheduler.address
        self.since: float | None = None     # when the cluster was first seen without workers
        self.answered = clock()             # when the scheduler last answered
        self._asked = -float("inf")

    def lost(self, why: str = "stopped, or unreachable from here") -> ClusterLost:
        return ClusterLost(lost_message(self.address, why))

    def workers(self) -> int | None:
        """The workers connected now (None: no answer in time); ClusterLost if the scheduler
        is gone."""
        left = self.silence - (self.clock() - self.answered)
        try:
            info = ask(self.client, lambda: self.client.scheduler.identity(n_workers=0),
                       timeout=min(ANSWER_TIMEOUT, max(left, 0.5)))
        except ClusterLost:
            raise self.lost() from None
        except TimeoutError:                   # no answer in time (before OSError: a subclass)
            return None
        except OSError:                        # refused, or the connection closed meanwhile
            raise self.lost() from None
        except Exception:  # noqa: BLE001 - anything else: not an answer, not a loss
            return None
        self.answered = self.clock()
        return int(info.get("n_workers", 0))

    def check(self) -> float | None:
        now = self.clock()
        if scheduler_gone(self.client):
            raise self.lost()
        if now - self._asked >= self.every:
            self._asked = now
            n = self.workers()
            if n is not None:
                self.since = (self.since if self.since is not None else now) if n == 0 else None
            elif self.clock() - self.answered >= self.silence:
                raise self.lost(f"no answer for {self.silence:g} s, "
                                f"distributed.comm.timeouts.tcp: frozen, or unreachable from "
                                f"here")
        return None if self.since is None else now - self.since


def _dask_loggers() -> list[logging.Logger]:
    names = ["distributed", *(n for n in list(logging.root.manager.loggerDict)
                              if n.startswith("distributed."))]
    return [logging.getLogger(n) for n in names]


@contextmanager
def dask_log_levels() -> Iterator[None]:
    """Put the distributed loggers' levels back on exit (after `quiet_dask_logs`)."""
    saved = {lg.name: lg.level for lg in _dask_loggers()}
    try:
        yield
    finally:
        for lg in _dask_loggers():
            lg.setLevel(saved.get(lg.name, logging.NOTSET))


def quiet_dask_logs() -> None:
    """Silence the distributed loggers (e.g. once the scheduler is lost: closing the client
    would log the cancelled reconnection with a traceback; the sweep says it in one line)."""
    for lg in _dask_loggers():
        lg.setLevel(logging.CRITICAL + 1)


@dataclass(frozen=True)
class TLSOptions:
    ca_file: str | None = None
    cert: str | None = None
    key: str | None = None

    @property
    def given(self) -> bool:
        return any((self.ca_file, self.cert, self.key))


def make_security(tls: TLSOptions | None):
    """A distributed.Security from explicit paths; None lets Dask read its configuration."""
    if tls is None or not tls.given:
        return None
    from distributed.security import Security

    for flag, value in (("--tls-ca-file", tls.ca_file), ("--tls-cert", tls.cert),
                        ("--tls-key", tls.key)):
        if value is None:
            raise InputError(flag, "missing", "TLS needs --tls-ca-file, --tls-cert and --tls-key")
        if not Path(value).is_file():
            raise InputError(flag, f"file {value!r} does not exist")
    return Security(tls_ca_file=tls.ca_file, tls_client_cert=tls.cert,
                    tls_client_key=tls.key, require_encryption=True)


def check_options(scheduler: str | None, workers: int | None, tls: TLSOptions | None) -> None:
    """Reject inconsistent connection options before anything runs."""
    if scheduler is not None and workers is not None:
        raise InputError("--workers", "applies only to the local cluster",
                         "drop --workers when using --scheduler")
    if workers is not None and workers < 1:
        raise InputError("--workers", f"must be >= 1, got {workers}")
    if tls is not None and tls.given:
        if scheduler is None:
            raise InputError("--tls-ca-file/--tls-cert/--tls-key",
                             "apply only to an existing cluster (the local one is on 127.0.0.1)",
                             "add --scheduler tls://HOST:PORT")
        make_security(tls)


@dataclass
class Connection:
    client: object              # distributed.Client
    description: str
    dashboard: str | None
    local: bool
    restarts: LocalRestarts | None = None   # the local cluster's (None for an existing one)


def _dashboard(client) -> str | None:
    try:
        if "dashboard" not in scheduler_identity(client).get("services", {}):
            return None
        return client.dashboard_link
    except ClusterLost:
        raise
    except Exception:  # noqa: BLE001 - the dashboard is a convenience
        return None


def close_client(client) -> None:
    """Close a client; one whose scheduler is gone quietly (Dask would log its cancelled
    reconnection with a traceback) and without raising."""
    if not scheduler_gone(client):
        client.close()
        return
    quiet_dask_logs()
    try:
        client.close(timeout=ANSWER_TIMEOUT)
    except Exception:  # noqa: BLE001 - nothing is left to close it for
        pass


def _cause(exc: BaseException) -> str:
    """The innermost message of an exception chain ("Nanny failed to start worker process")."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return f"{type(exc).__name__}: {exc}"


def start_local(n: int, note: Callable[[str], None] | None = None):
    """A LocalCluster of `n` single-threaded worker processes on 127.0.0.1. One whose start
    fails (a worker process that died while starting: "Nanny failed to start"; Dask closes
    what it had started) is started again, START_ATTEMPTS times in all, each retry said by
    `note`; then ClusterLost."""
    from distributed import LocalCluster

    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            # silence_logs: Dask's own errors (e.g. a worker still closing after its
            # scheduler has gone logs its failed heartbeat with a traceback) are not the
            # user's; the sweep says what happened, in one line, and stores every job.
            return LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                memory_limit=local_worker_memory(n), host="127.0.0.1",
                                dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
        except Exception as exc:  # noqa: BLE001 - said in one line, never a traceback
            why = _cause(exc)
            if note is not None and attempt < START_ATTEMPTS:
                note(f"note: the local cluster did not start ({why}: a worker process died "
                     f"while starting?); starting it again ({attempt + 1} of {START_ATTEMPTS})")
    raise ClusterLost(f"the local cluster did not start in {START_ATTEMPTS} attempts ({why}: "
                      f"its worker processes die while starting: killed? out of memory?); "
                      f"run the same command")


class LocalRestarts:
    """Keeps the local cluster's worker slots filled. Dask's nanny starts a new worker process
    when its worker dies, but gives up (closes) when the new one dies while starting, and the
    local cluster drops a nanny whose worker has not come back for Dask's
    distributed.deploy.lost-worker-timeout (15 s): no worker comes back in that slot.
    `revive()` puts a new nanny (which starts a new worker) in each such slot: `limit` rounds
    at most per sweep, the k-th round no sooner than RESTART_BACKOFF * 2^(k-2) seconds after
    the one before (1, 2, 4, ... s: a burst of kills does not use them all up); past that it
    raises ClusterLost with the reason, at once, rather than let the sweep wait
    no_workers_timeout for nothing."""

    def __init__(self, cluster, limit: int | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.cluster, self.clock = cluster, clock
        self.limit = LOCAL_RESTARTS if limit is None else limit
        self.rounds = self.replaced = 0
        self.started = clock()
        self._next = -float("inf")

    def gone(self) -> list:
        """The slots without a nanny, or whose nanny has given up."""
        from distributed.core import Status

        nannies = dict(self.cluster.workers)
        return [name for name in list(self.cluster.worker_spec)
                if name not in nannies
                or nannies[name].status in (Status.closing, Status.closed, Status.failed)]

    async def _replace(self, names: list) -> None:
        for name in names:
            self.cluster.workers.pop(name, None)
        await self.cluster._correct_state()     # starts a nanny in every empty slot

    def revive(self) -> int:
        """Replace the nannies that gave up, if the backoff allows; returns how many (0:
        none had, or not yet)."""
        gone = self.gone()
        if not gone or self.clock() < self._next:
            return 0
        if self.rounds >= self.limit:
            raise ClusterLost(f"the local cluster's workers keep dying: their nannies gave up "
                              f"(a new worker process died while starting, or did not come "
                              f"back) and were replaced {self.replaced} times in "
                              f"{self.clock() - self.started:.0f} s, in {self.rounds} rounds, "
                              f"the most a sweep does (killed? out of memory?); run the same "
                              f"command")
        self.rounds += 1
        self.replaced += len(gone)
        try:
            self.cluster.sync(self._replace, gone, callback_timeout=120)
        except Exception:  # noqa: BLE001 - one died again while starting: a later round
            pass
        self._next = self.clock() + RESTART_BACKOFF * 2 ** (self.rounds - 1)
        return len(gone)


@contextmanager
def connect(scheduler: str | None = None, workers: int | None = None,
            tls: TLSOptions | None = None, allowed_failures: int | None = None,
            timeout: float = 30.0, client=None, worker_ttl: float | None = None,
            note: Callable[[str], None] | None = None) -> Iterator[Connection]:
    """A connected distributed.Client; a local cluster is closed on exit.

    `client`: an already connected distributed.Client (e.g. of a dask-cloudprovider
    cluster made in Python); it is used as it is and left open. `worker_ttl`: the local
    cluster's (see local_worker_ttl). `note`: says a retried local start (start_local).
    """
    import dask
    from distributed import Client

    if client is not None:
        yield Connection(client, f"scheduler {client.scheduler.address}", _dashboard(client),
                         local=False)
        return
    if scheduler is not None:
        if workers is not None:
            raise InputError("--workers", "applies only to the local cluster",
                             "drop --workers when using --scheduler")
        security = make_security(tls)
        kwargs = {"timeout": timeout, "set_as_default": False}
        if security is not None:
            kwargs["security"] = security
        is_file = not scheduler.startswith(("tcp://", "tls://", "inproc://", "ucx://", "ws://",
                                            "wss://")) and (
            Path(scheduler).suffix == ".json" or Path(scheduler).is_file())
        try:
            if is_file:
                if not Path(scheduler).is_file():
                    raise InputError("--scheduler", f"scheduler file {scheduler!r} does not exist",
                                     "give tcp://HOST:PORT or the file of dask scheduler "
                                     "--scheduler-file")
                client = Client(scheduler_file=scheduler, **kwargs)
            else:
                if "://" not in scheduler and ":" not in scheduler:
                    raise InputError("--scheduler", f"{scheduler!r} is not an address",
                                     "give tcp://HOST:PORT or a scheduler file")
                client = Client(scheduler, **kwargs)
        except InputError:
            raise
        except (OSError, TimeoutError) as exc:
            raise InputError("--scheduler", f"cannot connect to {scheduler} ({exc})",
                             "check the address, that the scheduler runs, and TLS settings") \
                from None
        try:
            yield Connection(client, f"scheduler {client.scheduler.address}", _dashboard(client),
                             local=False)
        finally:
            close_client(client)
        return

    n = default_workers() if workers is None else workers
    if n < 1:
        raise InputError("--workers", f"must be >= 1, got {n}")
    os.environ.update({k: os.environ.get(k, v) for k, v in WORKER_ENV.items()})
    config = {"distributed.nanny.pre-spawn-environ": {
        **dask.config.get("distributed.nanny.pre-spawn-environ", {}), **WORKER_ENV},
        "distributed.worker.preload": [*dask.config.get("distributed.worker.preload", []),
                                       __name__],
        TTL_KEY: f"{local_worker_ttl(worker_ttl):g}s"}
    if allowed_failures is not None:
        config["distributed.scheduler.allowed-failures"] = allowed_failures
    with dask.config.set(config):
        cluster = start_local(n, note)
        try:
            client = Client(cluster, set_as_default=False)
            try:
                yield Connection(client, f"local cluster, {n} worker process"
                                 + ("es" if n > 1 else "") + " × 1 thread on 127.0.0.1",
                                 _dashboard(client), local=True,
                                 restarts=LocalRestarts(cluster))
            finally:
                close_client(client)
        finally:
            cluster.close()


def worker_died(exc: BaseException, what: str = "job") -> str:
    """The stored reason of a job (or part) whose worker process died each time it ran it
    (Dask's KilledWorker). Killed from outside, a crash or out of memory: the client cannot tell
    which, and the job may be an innocent neighbour of whatever took the worker down, so the
    reason says so and how to run it again."""
    return (f"worker died: the {what}'s worker process died each time it ran the {what} "
            f"(killed from outside, a crash or out of memory: which one is not known here, nor "
            f"whether this {what} caused it); `sweep --rerun-failed` runs it again "
            f"(KilledWorker: {exc})")
