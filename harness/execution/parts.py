"""One estimate split into independent parts across a Dask cluster, recombined exactly.

A method that can split (harness.model.splitting.SplitsEstimates: the SOV family's randomisations,
rejection-bootstrap's particle chunks) cuts a budget into parts; each part runs anywhere
(`run_part`, on a worker) and returns its sufficient statistics (SplitsEstimates.estimate_part), and
`combine_record` makes the one estimate of all parts (SplitsEstimates.combine_parts, in part-index
order) with the fields of harness.execution.runner.run_one. Part i's random stream is
rng_for(part_key(key, i)) and the number of parts depends on the method, the budget and N
only (`resolve_parts`), never on the workers: 1 worker and 10 give bit-identical numbers, and a
part rerun after its worker died gives the same statistics again.

`run_split` runs one such estimate on a distributed.Client (or in this process), calling
on_part as each part finishes and skipping parts already done (a sweep stores each part at once
and resumes from the store: harness.sweep.driver).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from harness.core.errors import InputError
from harness.model.splitting import splits

AUTO_PART_WORK = 2**32   # "auto": parts of at least about this many budget units x N²
#                          (~4 s of sov: Dask's per-task cost stays negligible)
AUTO_MAX_PARTS = 16      # "auto": at most this many parts (a SOV part holds `randomisations`
#                          whole randomisations, and fewer points per randomisation lose
#                          some of QMC's advantage: methods/sov.py, Sov.split_budget)
PART_KEY_PREFIX = "gpc-part-"
LOCAL = "this process"   # the worker of parts run without a cluster
SPLITTING = "sov, sov-tlr, sir, minimax-tilting or rejection-bootstrap"


def part_key(job_key: dict, part: int) -> dict:
    """{**job_key, "part": part}: part i's random stream is rng_for(part_key(key, i)),
    so a part's result never depends on the worker, the order or the number of workers."""
    return {**job_key, "part": int(part)}


# ---- planning (client side) -------------------------------------------------------------------
def resolve_parts(method, budget: int, n_train: int, parts: int | str,
                  field: str = "parts") -> int:
    """The number of parts to ask split_budget for: `parts`, or for "auto" the smallest power
    of two that gives parts of at most AUTO_PART_WORK units of budget x N² (a sequential
    estimator's sample costs O(N²)), at most AUTO_MAX_PARTS. From the method, budget and N
    only, never from the workers; a power of two keeps 2, 4, 8 or 16 workers evenly loaded."""
    if parts == "auto":
        work = int(budget) * max(int(n_train), 1) ** 2
        wanted = max(1, -(-work // AUTO_PART_WORK))
        return int(min(AUTO_MAX_PARTS, 1 << (wanted - 1).bit_length()))
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise InputError(field, f"must be \"auto\" or an integer >= 1, got {parts!r}")
    return int(parts)


def part_budgets(method, budget: int, parts: int, field: str = "parts") -> list[int]:
    """The budgets of the parts (SplitsEstimates.split_budget); InputError if the method
    cannot split."""
    if not splits(method):
        raise InputError(field, f"method {method.label()} cannot split an estimate into parts",
                         f"use a method that can: {SPLITTING}; or run it without "
                         "--parts, --workers and --scheduler (in a sweep: parts = 1)")
    budgets = [int(b) for b in method.split_budget(int(budget), int(parts))]
    if not budgets or sum(budgets) != int(budget) or min(budgets) < 1:
        raise ValueError(f"{method.label()}.split_budget({budget}, {parts}) returned {budgets}: "
                         f"positive budgets summing to {budget} expected")
    return budgets


def part_spec(job: dict[str, Any], part: int, budget: int) -> dict[str, Any]:
    """The spec run_part gets: the job's spec (problem, method, settings, key, time_limit,
    method_file) with the part index and the part's budget."""
    return {**job, "part": int(part), "budget": int(budget)}


# ---- the worker side --------------------------------------------------------------------------
def run_part(spec: dict) -> dict:
    """Worker side (module-level, Dask pickles it by reference): spec = {"problem": canonical
    problem spec, "method": registry name, "settings": {...}, "key": job key, "part": i,
    "budget": part budget, "time_limit": ..., optional "method_file"} -> {"part": i,
    "budget": ..., "stats": method.estimate_part(...), "cpu_seconds", "wall_seconds",
    "setup_cpu_seconds", "peak_memory_mb", "worker", "status": "ok" | "error" | "timeout",
    "reason"}.

    As a sweep job runs (harness.execution.worker.on_worker: the problem cached per worker, BLAS
    on one thread); the spec's time_limit applies to each part as the cooperative CPU-time
    limit (harness.core.deadline; not yet the hard limits of harness.model.limits); set-up outside
    the timed region (harness.execution.timed.timed_call). A failing part is a record with its
    status, never an exception.
    """
    from harness.core.deadline import cpu_time_limit
    from harness.core.seeding import rng_for
    from harness.execution.timed import timed_call
    from harness.execution.worker import on_worker

    head = {"part": int(spec["part"]), "budget": int(spec["budget"])}

    def work(problem, method) -> dict[str, Any]:
        rng = rng_for(part_key(spec["key"], spec["part"]))
        with cpu_time_limit(spec.get("time_limit")):
            stats, failed, timing = timed_call(
                problem, method, lambda: method.estimate_part(problem, head["budget"], rng))
        return {**head, "stats": stats, "status": failed.status if failed else "ok",
                "reason": failed.reason if failed else "", **timing}

    return on_worker(spec, work, lambda reason: {**head, "stats": None, "status": "error",
                                                 "reason": reason})


def lost_part(part: int, budget: int, status: str, reason: str) -> dict[str, Any]:
    """The record of a part that produced none (its worker died, the task failed)."""
    return {"part": int(part), "budget": int(budget), "stats": None, "status": status,
            "reason": reason, "worker": None}


# ---- combining (client side) ------------------------------------------------------------------
def _sum(records: list[dict], field: str) -> float | None:
    values = [r.get(field) for r in records]
    return None if any(v is None for v in values) else float(sum(values))


def combine_record(problem, method, budget: int, part_records: list[dict],
                   **identity: Any) -> dict:
    """A record with the same fields as harness.execution.runner.run_one, from the part records.

    The estimate is method.combine_parts over the parts' statistics in part-index order. Time:
    cpu_seconds (and process_cpu_seconds, wall_seconds) are the sums over the parts: the
    cost of the estimate, comparable with an unsplit run; set-up is the sum of the set-ups the
    parts paid (each worker pays a problem's once); peak memory the largest part's.
    diagnostics: the method's, "parts" (the number combined) and "workers" (distinct workers
    that ran them). A failed part makes the record failed with that part's status and reason.
    """
    from harness.execution.runner import identity_fields, truth_metrics
    from harness.execution.timed import estimate_fields, plain
    from harness.model.result import Estimate

    parts = sorted(part_records, key=lambda r: r["part"])
    if [r["part"] for r in parts] != list(range(len(parts))):
        raise ValueError(f"parts {[r['part'] for r in parts]} are not 0 .. {len(parts) - 1}")
    if sum(int(r["budget"]) for r in parts) != int(budget):
        raise ValueError(f"the parts' budgets sum to {sum(int(r['budget']) for r in parts)}, "
                         f"not {budget}")
    bad = next((r for r in parts if r["status"] != "ok"), None)
    if bad is not None:
        estimate = Estimate(None, None, status=bad["status"],
                            reason=f"part {bad['part']} of {len(parts)}: {bad['reason']}")
    else:
        estimate = method.combine_parts(problem, [r["stats"] for r in parts])
    workers = sorted({r["worker"] for r in parts if r.get("worker")})
    paid = [r for r in parts if r.get("setup_cached") is False]
    record = {**identity, **identity_fields(problem, method, budget), **estimate_fields(estimate)}
    record.update({
        "cpu_seconds": _sum(parts, "cpu_seconds"),
        "process_cpu_seconds": _sum(parts, "process_cpu_seconds"),
        "wall_seconds": _sum(parts, "wall_seconds"),
        "threads": max((r.get("threads") or 1 for r in parts), default=1),
        "setup_cpu_seconds": _sum(paid, "setup_cpu_seconds") if paid else
        max((r.get("setup_cpu_seconds") or 0.0 for r in parts), default=None),
        "setup_wall_seconds": _sum(paid, "setup_wall_seconds") if paid else
        max((r.get("setup_wall_seconds") or 0.0 for r in parts), default=None),
        "setup_cached": not paid,
        "peak_memory_mb": max((r["peak_memory_mb"] for r in parts
                               if r.get("peak_memory_mb") is not None), default=None),
        "memory_source": next((r["memory_source"] for r in parts if r.get("memory_source")),
                              None),
        "diagnostics": {**{k: plain(v) for k, v in estimate.diagnostics.items()},
                        "parts": len(parts), "workers": len(workers)},
        "parts": len(parts),
        "workers": len(workers),
        "part_workers": [r.get("worker") for r in parts],
    })
    caught = sorted({w for r in parts for w in r.get("warnings", ())})
    if caught:
        record["warnings"] = caught[:10]
    record.update(truth_metrics(problem, record))
    return record


# ---- one split estimate -----------------------------------------------------------------------
def _done(done_parts: Iterable[dict] | None, budgets: list[int]) -> dict[int, dict]:
    """The done part records by index, checked against the plan."""
    done: dict[int, dict] = {}
    for r in done_parts or ():
        i = int(r["part"])
        if not 0 <= i < len(budgets) or int(r["budget"]) != budgets[i]:
            raise ValueError(f"done part {i} (budget {r['budget']}) is not a part of this "
                             f"estimate's plan ({len(budgets)} parts, budgets {budgets})")
        done[i] = r
    return done


def gather_parts(client, specs: list[dict], on_part: Callable[[dict], None] | None = None,
                 fn: Callable[[dict], dict] = run_part) -> list[dict]:
    """Run part specs on `client`'s workers (None: here, in order); on_part(record) as each
    finishes. A part whose worker kept dying (KilledWorker) or whose task raised becomes a
    record with status failed / error; Dask reruns a part whose worker died before."""
    records = []
    if client is None:
        for spec in specs:
            records.append(fn(spec))
            records[-1]["worker"] = records[-1].get("worker") or LOCAL
            if on_part is not None:
                on_part(records[-1])
        return records
    from distributed import as_completed

    from harness.core.seeding import key_digest
    from harness.execution.arrivals import arrivals
    from harness.execution.cluster import NOT_RECEIVED, WorkerWatch

    by_key = {}
    futures = []
    for spec in specs:
        key = f"{PART_KEY_PREFIX}{key_digest(spec['key'])}-{spec['part']}"
        by_key[key] = spec
        futures.append(client.submit(fn, spec, key=key, pure=False))
    watch = WorkerWatch(client)
    try:
        for future, result in arrivals(client, as_completed(futures, loop=client.loop),
                                         watch.check):
            record = (None if result is NOT_RECEIVED
                      else part_result(by_key[future.key], future, result))
            future.release()
            if record is None:
                raise RuntimeError(f"part {by_key[future.key]['part']} was cancelled "
                                   "(the scheduler was lost?)")
            records.append(record)
            if on_part is not None:
                on_part(record)
    finally:
        pending = [f for f in futures if f.status == "pending"]
        if pending:
            client.cancel(pending)
    return records


def part_result(spec: dict, future, result) -> dict | None:
    """The part record of a finished future (None: cancelled)."""
    from distributed.scheduler import KilledWorker

    if future.status == "finished":
        if isinstance(result, dict) and result.get("part") == spec["part"]:
            return result
        return lost_part(spec["part"], spec["budget"], "error",
                         "the worker returned a wrong part record")
    if future.status == "error":
        exc = result if isinstance(result, BaseException) else future.exception()
        if isinstance(exc, KilledWorker):
            from harness.execution.cluster import worker_died

            return lost_part(spec["part"], spec["budget"], "failed", worker_died(exc, "part"))
        return lost_part(spec["part"], spec["budget"], "error", f"{type(exc).__name__}: {exc}")
    return None


def run_split(problem_spec: str, method_name: str, settings: dict, budget: int, key: dict,
              parts: int | str = "auto", client=None, on_part=None, done_parts=None, *,
              time_limit: float | None = None, method_file: dict | None = None,
              **identity: Any) -> dict:
    """One estimate split into parts across `client`'s workers (a distributed.Client; None:
    in this process). on_part(part_record) is called as each part finishes (the sweep commits
    it to the store); done_parts: part records already stored (not rerun). Returns the
    combined record (combine_record, with `identity` fields), its diagnostics also holding
    "elapsed_seconds": the wall time from the first submission to the last part.

    `key` is used as given: part i's stream is rng_for(part_key(key, i)) (callers that want
    the number of parts in a job's identity put it in the key). method_file: the
    MethodFile.spec() of a method from a file (method_name is then its id); time_limit: CPU
    seconds per part.
    """
    from harness.execution.worker import job_method
    from harness.plugins.specs import make_problem

    job = {"problem": problem_spec, "method": method_name, "settings": dict(settings),
           "key": dict(key), "time_limit": time_limit,
           **({"method_file": method_file} if method_file else {})}
    problem = make_problem(problem_spec)
    method = job_method(job)
    n = resolve_parts(method, budget, problem.n_train, parts)
    budgets = part_budgets(method, budget, n)
    done = _done(done_parts, budgets)
    specs = [part_spec(job, i, b) for i, b in enumerate(budgets) if i not in done]
    start = time.perf_counter()
    new = gather_parts(client, specs, on_part)
    elapsed = time.perf_counter() - start
    record = combine_record(problem, method, budget, [*done.values(), *new], **identity)
    record["diagnostics"]["elapsed_seconds"] = elapsed
    return record
