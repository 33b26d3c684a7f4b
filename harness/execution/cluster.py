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
seconds (`WorkerWatch`), and says so in one line (harness.sweep.driver.ClusterLost).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import InputError

WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "VECLIB_MAXIMUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}


NO_WORKERS_TIMEOUT = 300.0   # seconds a sweep waits while the cluster has no worker
WORKER_TTL = 120.0           # the local cluster's distributed.scheduler.worker-ttl, seconds
TTL_KEY = "distributed.scheduler.worker-ttl"


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
              client.scheduler_info(n_workers=-1).get("workers", {}).values()]
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
        value = client.run_on_scheduler(dask.config.get, TTL_KEY, None)
        return float(parse_timedelta(value)) if value else None
    except Exception:  # noqa: BLE001 - informative only (e.g. a scheduler refusing pickles)
        return None


class WorkerWatch:
    """How long the cluster has had no worker: `check()` asks the scheduler (one round trip,
    at most every `every` seconds) and returns the seconds since it was last seen with a
    worker, or None while it has one. An unanswered question changes nothing."""

    def __init__(self, client, every: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.client, self.every, self.clock = client, every, clock
        self.since: float | None = None     # when the cluster was first seen without workers
        self._asked = -float("inf")

    def workers(self) -> int | None:
        try:
            return int(self.client.scheduler_info(n_workers=0).get("n_workers", 0))
        except Exception:  # noqa: BLE001 - a lost scheduler is noticed by the futures
            return None

    def check(self) -> float | None:
        now = self.clock()
        if now - self._asked >= self.every:
            self._asked = now
            n = self.workers()
            if n is not None:
                self.since = (self.since if self.since is not None else now) if n == 0 else None
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


def _dashboard(client) -> str | None:
    try:
        if "dashboard" not in client.scheduler_info().get("services", {}):
            return None
        return client.dashboard_link
    except Exception:  # noqa: BLE001 - the dashboard is a convenience
        return None


@contextmanager
def connect(scheduler: str | None = None, workers: int | None = None,
            tls: TLSOptions | None = None, allowed_failures: int | None = None,
            timeout: float = 30.0, client=None, worker_ttl: float | None = None
            ) -> Iterator[Connection]:
    """A connected distributed.Client; a local cluster is closed on exit.

    `client`: an already connected distributed.Client (e.g. of a dask-cloudprovider
    cluster made in Python); it is used as it is and left open. `worker_ttl`: the local
    cluster's (see local_worker_ttl).
    """
    import dask
    from distributed import Client, LocalCluster

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
            client.close()
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
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               memory_limit=local_worker_memory(n), host="127.0.0.1",
                               dashboard_address="127.0.0.1:0",
                               silence_logs=logging.ERROR)
        try:
            client = Client(cluster, set_as_default=False)
            try:
                yield Connection(client, f"local cluster, {n} worker process"
                                 + ("es" if n > 1 else "") + " × 1 thread on 127.0.0.1",
                                 _dashboard(client), local=True)
            finally:
                client.close()
        finally:
            cluster.close()
