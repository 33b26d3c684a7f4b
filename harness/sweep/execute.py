"""What runs on a worker: one job spec in, one plain record out.

`run_job` is a plain module-level function (Dask pickles it by reference, so every worker
needs the harness installed). It builds the problem through harness.plugins.specs.make_problem,
which is cached per worker process, so the Cholesky factor of a problem is computed once per worker
and reused for all its budgets, methods and replicates; it derives the random stream from the
job key; it pins BLAS to one thread (harness.execution.runner does) and applies the job's hard
limits (harness.model.limits): the sweep's time_limit (CPU seconds) and a memory limit, the sweep
file's memory_limit or else the Dask worker's own (its share of the machine), so a job with a limit
runs in a child process stopped at it. It never raises for a failing job: the record says what
happened.
A tuning job (kind "tune") goes to harness.tuning.job.run_tune_job, which keeps the same rules.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from harness.execution.worker import job_identity, job_limits, on_worker, pin_thread_env


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job spec (harness.sweep.plan.Job.spec()) and return its full record."""
    pin_thread_env()
    from harness.plugins.method_files import load_job_method
    load_job_method(job)   # a method file's source travels in the spec: nothing to install
    if job.get("kind") == "tune":
        from harness.tuning.job import run_tune_job
        return run_tune_job(job)
    from harness.core.seeding import rng_for
    from harness.execution.runner import run_one

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
        "wall_seconds": None, "threads": 1, "setup_cpu_seconds": None,
        "setup_wall_seconds": None, "setup_cached": None, "peak_memory_mb": None,
        "diagnostics": {},
        "worker": None, "finished_at": datetime.now(UTC).isoformat(),
        **(tune_failure_fields(job.tune) if job.kind == "tune" else {}),
    }


def tune_failure_fields(tune: dict[str, Any]) -> dict[str, Any]:
    """The fields a tune record has beyond an estimate record, for a tune job without one."""
    return {"kind": "tune", "strategy": tune["strategy"], "space": tune["space"],
            "evaluations": [], "chosen": None, "chosen_log_z": None, "n_evaluations": 0,
            "chain": None}


