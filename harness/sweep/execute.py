"""What runs on a worker: one job spec in, one plain record out.

`run_job` is a plain module-level function (Dask pickles it by reference, so every worker
needs the harness installed). It builds the problem through harness.spec.make_problem, which
is cached per worker process, so the Cholesky factor of a problem is computed once per worker
and reused for all its budgets, methods and replicates; it derives the random stream from the
job key; it pins BLAS to one thread (harness.runner does) and applies the job's hard limits
(harness.limits): the sweep's time_limit (CPU seconds) and a memory limit, the sweep file's
memory_limit or else the Dask worker's own (its share of the machine), so a job with a limit runs
in a child process stopped at it. It never raises for a failing job: the record says what
happened.
A tuning job (kind "tune") goes to harness.tuning.job.run_tune_job, which keeps the same rules.
"""

from __future__ import annotations

import os
import platform
import sys
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
    from harness.limits import Limits

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
    from harness.plugin_file import load_job_method
    from harness.registry import get_method

    load_job_method(job)
    return get_method(job["method"]).from_settings(job["settings"])


def on_worker(job: dict[str, Any], work: Callable[[Any, Any], dict[str, Any]],
              failed: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """work(problem, method) for a job spec, as every task runs on a worker.

    BLAS pinned to one thread; the problem from harness.spec.make_problem (cached per worker
    process), the method from the spec (job_method); warnings kept in the record (not on the
    worker's stderr). An exception (e.g. a problem file missing on this worker, a method
    plugin that does not import here) gives failed(reason): recorded, never lost (the client
    completes the record with what it knows: harness.sweep.driver). Adds worker,
    job_wall_seconds and finished_at.
    """
    pin_thread_env()
    from harness.debugging import exception_reason
    from harness.spec import make_problem

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


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job spec (harness.sweep.plan.Job.spec()) and return its full record."""
    pin_thread_env()
    from harness.plugin_file import load_job_method
    load_job_method(job)   # a method file's source travels in the spec: nothing to install
    if job.get("kind") == "tune":
        from harness.tuning.job import run_tune_job
        return run_tune_job(job)
    from harness.runner import run_one
    from harness.seeding import rng_for

    identity = job_identity(job)
    limits = job_limits(job)
    if limits.memory is not None:
        identity["memory_limit"] = limits.memory
    return on_worker(
        job, lambda problem, method: run_one(problem, method, int(job["budget"]),
                                             rng_for(job["key"]), limits=limits, **identity),
        lambda reason: {**identity, "method_name": job["method"], "settings": job["settings"],
                        "budget": int(job["budget"]), "status": "error", "reason": reason})


def failure_record(job, status: str, reason: str) -> dict[str, Any]:
    """The record of a job that produced no record of its own (e.g. its worker died)."""
    return {
        "job_id": job.job_id, "sweep": job.sweep, "replicate": job.replicate, "seed": job.seed,
        "problem_spec": job.problem, "job_key": job.key, "time_limit": job.time_limit,
        "problem": job.problem_name, "method": job.label, "method_name": job.method,
        "settings": job.settings, "budget": job.budget, "budget_unit": job.budget_unit,
        "n_train": job.n_train, "n_test": job.n_test,
        "status": status, "reason": reason,
        "log_marginal_likelihood": None, "log_marginal_likelihood_se": None,
        "test_probabilities": None, "cpu_seconds": None, "process_cpu_seconds": None,
        "wall_seconds": None, "setup_cpu_seconds": None, "setup_wall_seconds": None,
        "setup_cached": None, "peak_memory_mb": None, "diagnostics": {},
        "worker": None, "finished_at": datetime.now(UTC).isoformat(),
        **(tune_failure_fields(job.tune) if job.kind == "tune" else {}),
    }


def tune_failure_fields(tune: dict[str, Any]) -> dict[str, Any]:
    """The fields a tune record has beyond an estimate record, for a tune job without one."""
    return {"kind": "tune", "strategy": tune["strategy"], "space": tune["space"],
            "evaluations": [], "chosen": None, "chosen_log_z": None, "n_evaluations": 0,
            "chain": None}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment_facts() -> dict[str, Any]:
    """Versions, CPU, BLAS and thread limits of this process (client or worker)."""
    import numpy
    import scipy
    from threadpoolctl import threadpool_info

    import harness

    facts: dict[str, Any] = {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "harness": harness.__version__,
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "thread_env": {k: os.environ.get(k) for k in THREAD_ENV},
        "blas": [{k: v for k, v in info.items() if k in (
            "user_api", "internal_api", "version", "num_threads", "threading_layer",
            "architecture", "filepath")} for info in threadpool_info()],
    }
    try:
        import dask
        import distributed
        facts["dask"] = dask.__version__
        facts["distributed"] = distributed.__version__
    except ImportError:
        pass
    return facts
