"""What every task does on a Dask worker: BLAS pinned to one thread, the problem built (cached
per worker process), the method made from the job spec, warnings kept in the record, an
exception recorded (never lost), the job's hard limits (harness.model.limits): its time_limit
and its memory_limit or else the Dask worker's own share of the machine.

Sweep jobs (harness.sweep.execute.run_job), parts of a split estimate (harness.execution.parts)
and tuning jobs (harness.tuning.job) all run through `on_worker`.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

MAX_WARNINGS = 10
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def pin_thread_env() -> None:
    """One thread for every BLAS/OpenMP pool started from now on (worker processes)."""
    for name in THREAD_ENV:
        os.environ.setdefault(name, "1")


def _worker_address() -> str | None:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return None


def _worker_memory_limit() -> int | None:
    """The memory_limit of the Dask worker running this (None: no worker, or no limit)."""
    try:
        from distributed import get_worker
        limit = get_worker().memory_manager.memory_limit
    except (ImportError, ValueError, AttributeError):
        return None
    return int(limit) if limit else None


def job_limits(job: dict[str, Any]):
    """The job's hard limits: its time_limit, and its memory_limit or else the worker's."""
    from harness.model.limits import Limits

    memory = job.get("memory_limit")
    return Limits(job.get("time_limit"),
                  int(memory) if memory is not None else _worker_memory_limit())


def job_identity(job: dict[str, Any]) -> dict[str, Any]:
    """The identity fields a job spec gives its record."""
    return {"job_id": job["job_id"], "sweep": job["sweep"], "replicate": job["replicate"],
            "seed": job["seed"], "problem_spec": job["problem"], "job_key": job["key"],
            "time_limit": job.get("time_limit")}


def job_method(job: dict[str, Any]):
    """The Method instance a job spec names (a method file's class loaded from the spec)."""
    from harness.plugins.method_files import load_job_method
    from harness.plugins.registry import get_method

    load_job_method(job)
    return get_method(job["method"]).from_settings(job["settings"])


def on_worker(job: dict[str, Any], work: Callable[[Any, Any], dict[str, Any]],
              failed: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """work(problem, method) for a job spec, as every task runs on a worker.

    BLAS pinned to one thread; the problem from harness.plugins.specs.make_problem (cached per
    worker process), the method from the spec (job_method); warnings kept in the record (not on the
    worker's stderr). An exception (e.g. a problem file missing on this worker, a method
    plugin that does not import here) gives failed(reason): recorded, never lost (the client
    completes the record with what it knows: harness.sweep.driver). Adds worker,
    job_wall_seconds and finished_at.
    """
    pin_thread_env()
    from harness.model.debugging import exception_reason
    from harness.plugins.specs import make_problem

    wall0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            problem = make_problem(job["problem"])
            method = job_method(job)
            record = work(problem, method)
        if caught:
            record["warnings"] = sorted({f"{w.category.__name__}: {w.message}"
                                         for w in caught})[:MAX_WARNINGS]
    except Exception as exc:  # noqa: BLE001 - recorded, never lost
        record = failed(exception_reason(exc))
    record["worker"] = _worker_address()
    record["job_wall_seconds"] = time.perf_counter() - wall0
    record["finished_at"] = datetime.now(UTC).isoformat()
    return record
