"""Dask clusters: a local one started and stopped by the command, or an existing one.

- Local (default): a LocalCluster of worker *processes*, one single-threaded worker per core
  (or `workers`), listening on 127.0.0.1 only; BLAS/OpenMP pinned to one thread per worker.
  Its worker processes ignore SIGINT (this module is their Dask preload, see `dask_setup`):
  a terminal's Ctrl-C reaches the whole process group, and only the client should react (it
  stops the sweep and closes the cluster) rather than every worker printing a traceback.
- Existing: `scheduler` is an address (tcp://HOST:PORT, tls://HOST:PORT) or the path of a
  scheduler file written by `dask scheduler --scheduler-file`. TLS uses Dask's `Security`:
  certificate paths from the command line, else from Dask's configuration
  (distributed.comm.tls.*, e.g. DASK_DISTRIBUTED__COMM__TLS__CA_FILE).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError

WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "VECLIB_MAXIMUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}


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
            timeout: float = 30.0, client=None) -> Iterator[Connection]:
    """A connected distributed.Client; a local cluster is closed on exit.

    `client`: an already connected distributed.Client (e.g. of a dask-cloudprovider
    cluster made in Python); it is used as it is and left open.
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
                                       __name__]}
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
