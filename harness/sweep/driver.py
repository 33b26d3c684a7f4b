"""The client side of a sweep: plan, skip what is stored, submit, store each result at once.

The client is the store's only writer: each finished job is one transaction, so a killed
client or a Ctrl-C leaves every finished job committed and the store readable; the next run
of the same sweep skips them (by job id) and runs the rest. The store and report paths are
checked for writing before anything runs (`check_writable`), and `sweep --check` prints the
same plan as a run (`plan_lines`, `stored_job_ids`) without opening the store for writing.

Store faults (harness.execution.store): the store is opened (its writer lock taken, its integrity
checked, results a failed write held back imported) before any cluster is reached, so a
second client or a damaged file is refused at once (exit 2); a write that fails at any moment
(a full disk, an unwritable write-ahead log: StoreWriteFailed) ends the run with one line and
exit 2, the finished results that could not be stored held in a side file for the next run.

A cluster that cannot go on ends the run with one line and every finished job kept
(`ClusterLost`, harness.execution.cluster): no worker for `no_workers_timeout` seconds (the
progress line says it is waiting meanwhile), the scheduler lost (found within a second of its
connection closing, at any point of the run; Dask's own logs are silenced for that case), a
local cluster that does not start, or whose workers keep dying (replaced a bounded number of
times meanwhile, each replacement said in a note).
The exit status of `sweep` is `Outcome.exit_code` (harness.core.errors): 0 every job of the
sweep is stored, whatever its status (the summary counts those not ok, with their reasons:
`Outcome.not_ok`; `sweep --strict` exits 1 for them), 2 bad input (harness.cli) or a store that
cannot be written, 3 the cluster could not finish (no workers, the scheduler lost, the local
cluster not started or its workers dying), 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from harness.core.errors import EXIT_CLUSTER, EXIT_INTERRUPTED, EXIT_OK, InputError
from harness.execution.arrivals import arrivals
from harness.execution.cluster import ClusterLost, worker_died
from harness.execution.parts import PART_KEY_PREFIX, part_result, part_spec, run_part
from harness.execution.provenance import environment_facts
from harness.execution.store import ResultStore, StoreWriteFailed, held_records, store_file
from harness.model.status_summary import not_ok, not_ok_summary
from harness.sweep.execute import failure_record, run_job
from harness.sweep.missing_references import compute_missing, missing, plan_line
from harness.sweep.plan import (
    Job,
    former_keys_line,
    keep_stored_keys,
    moved_files_lines,
    plan,
    skipped_pairs,
)
from harness.sweep.progress_line import Progress, duration
from harness.sweep.spec import Sweep, load_sweep
from harness.sweep.tune_exact import record_references

KEY_PREFIX = "gpc-job-"
LOST_REASONS = ("scheduler-connection-lost", "scheduler-restart")   # of a cancelled future

# Writes the report of a finished sweep: (store path, report folder, out) -> its files by kind.
# The interface layer hands one down (harness.report.write_sweep_report): the report is a
# higher layer than the sweep, which never imports it.
ReportWriter = Callable[[Path, Path, TextIO], dict[str, str] | None]


@dataclass
class Outcome:
    """What one run of a sweep did."""

    total: int = 0                 # jobs in the sweep
    skipped: int = 0               # already stored before this run
    submitted: int = 0
    statuses: Counter = field(default_factory=Counter)   # of the jobs stored in this run
    cancelled: int = 0             # submitted but neither finished nor stored
    parts: int = 0                 # parts of split jobs stored in this run
    parts_skipped: int = 0         # parts of split jobs already stored before this run
    elapsed: float = 0.0           # seconds from the first submission to the last result
    interrupted: bool = False
    lost: str = ""                 # why the cluster could not finish (ClusterLost), if it did not
    in_store: Counter = field(default_factory=Counter)   # statuses of the sweep's stored jobs
    not_ok: list[tuple[str, str]] = field(default_factory=list)   # (status, reason) of those
    #                                                                   of them not ok
    # (status, reason) of the references this run computed (harness.sweep.missing_references)
    references: list[tuple[str, str]] = field(default_factory=list)
    store: str = ""
    report: dict[str, str] | None = None

    @property
    def stored(self) -> int:
        return sum(self.statuses.values())

    @property
    def complete(self) -> bool:
        return not self.interrupted and not self.lost and self.cancelled == 0 \
            and self.skipped + self.stored == self.total

    @property
    def exit_code(self) -> int:
        """The exit status of `sweep` (see the module's docstring): 0 once every job of the
        sweep is stored, whatever the statuses (`sweep --strict`: 1 when `in_store` holds a
        status other than ok)."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        if not self.complete:
            return EXIT_CLUSTER
        return EXIT_OK


def pending(jobs: Sequence[Job], store: ResultStore, rerun_failed: bool) -> list[Job]:
    """The jobs still to run: not stored yet (or stored without status ok, if rerun_failed)."""
    done = store.job_ids(["ok"]) if rerun_failed else store.job_ids()
    return [j for j in jobs if j.job_id not in done]


def stored_job_ids(store_path: Path, rerun_failed: bool = False) -> set[str] | None:
    """The job ids a store holds (status ok only, if rerun_failed), with those a failed write
    held back for the next run to import, read-only; None if there is no store there yet.
    Nothing is created or modified; a damaged store is refused."""
    path = store_file(store_path)    # a dangling symlink, a FIFO, a folder: StoreDamaged
    if path is None:
        return None
    with ResultStore(path, read_only=True) as db:
        ids = db.job_ids(["ok"] if rerun_failed else None)
    return ids | {r["job_id"] for _, records in held_records(path) for r in records
                  if not rerun_failed or r["status"] == "ok"}


def check_writable(path: Path, field: str, directory: bool = False) -> None:
    """An InputError naming `path` unless a file (or, with `directory`, a folder of files)
    can be written there: an existing path of the right kind, or one whose nearest existing
    ancestor is a folder that takes a new file (probed with an anonymous temporary file, so
    nothing is left behind; a permission check alone misses /proc and read-only mounts)."""
    path = Path(path)
    kind = "folder" if directory else "file"
    fix = f"give a writable path (--store, --out or the sweep file's [output] {field})"
    if path.exists():
        if path.is_dir() != directory:
            raise InputError(field, f"{path} is not a {kind}", fix)
        if not directory and not os.access(path, os.W_OK):
            raise InputError(field, f"{path} is not writable", fix)
        folder = path if directory else path.parent
    else:
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            raise InputError(field, f"cannot create {path}: {folder} is not a folder", fix)
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise InputError(field, f"cannot write {path} ({exc.strerror or exc})", fix) from None


def plan_lines(sweep: Sweep, jobs: Sequence[Job], limit: int | None, store_path: Path
               ) -> list[str]:
    """The plan as a run and `sweep --check` print it: jobs, and what is not planned."""
    n_budgets = len({b for m in sweep.methods for b in m.budgets})
    once = sweep.deterministic
    return [f"sweep {sweep.name}: {len(jobs)} jobs ({len(sweep.problems)} problems, "
            f"{len(sweep.methods)} methods, {n_budgets} budgets, {sweep.replicates} replicates"
            + (f"; deterministic, 1 replicate: {', '.join(once)}" if once else "")
            + (f"; tuning: {', '.join(sweep.tune.strategies)}" if sweep.tune else "")
            + f"); store {store_path}",
            *(f"not planned: {reason}" for reason in skipped_pairs(sweep, limit)),
            *split_lines(sweep, jobs)]


def split_lines(sweep: Sweep, jobs: Sequence[Job]) -> list[str]:
    """What `parts` does to the plan (nothing when the sweep does not split)."""
    if sweep.parts == 1:
        return []
    split = [j for j in jobs if j.part_budgets]
    whole = sorted({j.label for j in jobs if not j.part_budgets})
    return [f"parts = {sweep.parts!r}".replace("'", '"') + f": {len(split)} jobs split into "
            f"{sum(len(j.part_budgets) for j in split)} parts"
            + (f"; not split: {', '.join(whole)} (cannot split, or a budget too small to)"
               if whole else "")]


def record_metadata(store: ResultStore, sweep: Sweep, client_facts: dict[str, Any],
                    jobs: Sequence[Job]) -> None:
    """Sweep file, sweep summary, environment facts and problem summaries, before any job.

    `sweeps` keeps, per sweep name, the file's text and the ids of its planned jobs
    (`job_ids`; a store may hold several sweeps that share jobs, stored once:
    harness.analysis.compare selects a sweep's jobs by them): a run of the same text adds its
    ids to those recorded (a filtered run plans part of the grid, harness.sweep.filters), a new
    text replaces them; `jobs` is how many this run planned."""
    now = datetime.now(UTC).isoformat()
    for p in sweep.problems:
        store.add_problem(p.summary)
    store.set_metadata("sweep", sweep.describe())
    store.set_metadata("sweep_file", sweep.text)
    store.set_metadata("sweep_path", sweep.path)
    sweeps = store.metadata().get("sweeps") or {}
    before = sweeps.get(sweep.name) or {}
    ids = [j.job_id for j in jobs]
    if before.get("text") == sweep.text:
        ids = sorted(set(before.get("job_ids") or []) | set(ids))
    sweeps[sweep.name] = {"path": sweep.path, "text": sweep.text, "started_at": now,
                          "jobs": len(jobs), "job_ids": ids}
    store.set_metadata("sweeps", sweeps)
    store.set_metadata("environment", client_facts)
    store.set_metadata("started_at", now)


def worker_facts(client) -> dict[str, Any]:
    """Environment facts of every current worker; fails clearly if workers lack the harness
    (ClusterLost if the scheduler went away meanwhile)."""
    from harness.execution.cluster import ask, lost_or, scheduler_identity

    if not scheduler_identity(client, -1).get("workers"):
        return {}
    try:
        return ask(client, lambda: client.run(environment_facts, asynchronous=True),
                   timeout=120)
    except ClusterLost:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the workers raised, say what to do
        lost = lost_or(client, exc)
        if isinstance(lost, ClusterLost):
            raise lost from None
        raise InputError("workers", f"cannot run the harness ({type(exc).__name__}: {exc})",
                         "install the same gpc-harness on every worker "
                         "(pip install gpc-harness, or an image that has it)") from None


def combined_record(job: Job, parts: dict[int, dict]) -> dict[str, Any]:
    """A split job's record from all its part records (harness.execution.parts.combine_record), on
    the client; a combination that raises (a method's bug) is an error record."""
    from harness.execution.parts import combine_record
    from harness.execution.worker import job_identity, job_method
    from harness.model.debugging import exception_reason
    from harness.plugins.specs import make_problem

    spec = job.spec()
    try:
        record = combine_record(make_problem(job.problem), job_method(spec), job.budget,
                                list(parts.values()), **job_identity(spec))
    except Exception as exc:  # noqa: BLE001 - recorded, never lost
        return failure_record(job, "error", "combining the parts failed: "
                              + exception_reason(exc))
    record.update(worker=None, finished_at=datetime.now(UTC).isoformat())
    return record


def stored_parts(store: ResultStore, job: Job, rerun_failed: bool) -> dict[int, dict]:
    """The parts of a split job already in the store (status ok only, if rerun_failed) that
    belong to its plan."""
    return {r["part"]: r for r in store.parts_of(job.job_id)
            if r["part"] < len(job.part_budgets) and r["budget"] == job.part_budgets[r["part"]]
            and (r["status"] == "ok" or not rerun_failed)}


def no_workers_message(address: str, local: bool, waited: float) -> str:
    if local:
        return (f"no workers: every worker of the local cluster died and none came back for "
                f"{duration(waited)} (killed? out of memory?); run the same command")
    return (f"no workers: scheduler {address} has had none for {duration(waited)} "
            f"(no_workers_timeout); start workers for it (dask worker {address} --nthreads 1), "
            f"then run the same command")


def execute(client, jobs: Sequence[Job], store: ResultStore, outcome: Outcome, *,
            fn: Callable[[dict], dict] = run_job, progress: Progress | None = None,
            part_fn: Callable[[dict], dict] = run_part, rerun_failed: bool = False,
            no_workers_timeout: float | None = None, local: bool = False,
            restarts=None) -> None:
    """Submit the jobs (in order, as priorities), store each result as it arrives; on a full
    disk or any failed write (StoreWriteFailed), hold the finished results not stored and
    stop (`held_back`).

    A split job (Job.part_budgets) is submitted as one task per part not yet in the store, all
    with the job's priority; each finished part is committed at once (store.add_part), and
    when the job has all its parts, their combination is its record (store.add_record).
    Raises ClusterLost when the cluster has had no worker for `no_workers_timeout` seconds
    (default NO_WORKERS_TIMEOUT) or the scheduler is lost (WorkerWatch.check, while waiting),
    or `restarts` (the local cluster's LocalRestarts: dead slots refilled while waiting)
    gives up; every result that arrived is stored.
    """
    from distributed import as_completed

    from harness.execution.cluster import (
        NO_WORKERS_TIMEOUT,
        NOT_RECEIVED,
        WorkerWatch,
        quiet_dask_logs,
        scheduler_gone,
    )

    progress = progress or Progress(len(jobs))
    tasks: dict[str, tuple[Job, dict | None]] = {}   # key -> (job, part spec or None)
    have: dict[str, dict[int, dict]] = {}             # split job id -> its part records
    by_key: dict[str, Job] = {}                       # key -> job, of the unsplit jobs
    timeout = NO_WORKERS_TIMEOUT if no_workers_timeout is None else no_workers_timeout
    watch = WorkerWatch(client)
    address = client.scheduler.address
    lost = False

    def idle() -> None:
        revived = restarts.revive() if restarts is not None else 0
        if revived:
            progress.note(f"note: restarted {revived} of the local cluster's workers whose "
                          f"nanny gave up (a new worker process died while starting, or did "
                          f"not come back): round {restarts.rounds} of at most "
                          f"{restarts.limit}")
        waited = watch.check()
        progress.tick(None if waited is None else
                      f"waiting for workers: none for {duration(waited)} "
                      f"(gives up after {duration(timeout)})")
        if waited is not None and waited >= timeout:
            raise ClusterLost(no_workers_message(address, local, waited))

    handled: set[str] = set()
    futures = []
    start = time.monotonic()

    def store_record(job: Job, record: dict[str, Any]) -> None:
        store.add_record(record)
        outcome.statuses[record["status"]] += 1
        progress.update(record["status"])
        if record["status"] != "ok" and outcome.statuses[record["status"]] <= 3:
            progress.note(f"  {record['status']}: {job.problem_name} / {job.label} / "
                          f"budget {job.budget} / replicate {job.replicate}: "
                          f"{record.get('reason', '')}")

    try:
        for i, job in enumerate(jobs):
            if not job.part_budgets:
                tasks[KEY_PREFIX + job.job_id] = (job, None)
                by_key[KEY_PREFIX + job.job_id] = job
                futures.append(client.submit(fn, job.spec(), key=KEY_PREFIX + job.job_id,
                                             pure=False, priority=len(jobs) - i))
                continue
            have[job.job_id] = stored_parts(store, job, rerun_failed)
            outcome.parts_skipped += len(have[job.job_id])
            for k, budget in enumerate(job.part_budgets):
                if k not in have[job.job_id]:
                    key = f"{PART_KEY_PREFIX}{job.job_id}-{k}"
                    tasks[key] = (job, part_spec(job.spec(), k, budget))
                    futures.append(client.submit(part_fn, tasks[key][1], key=key, pure=False,
                                                 priority=len(jobs) - i))
        outcome.submitted = len(jobs)
        progress.update(force=True)
        for job in jobs:   # every part already stored: combine now
            if job.part_budgets and len(have[job.job_id]) == len(job.part_budgets):
                store_record(job, combined_record(job, have[job.job_id]))
        cancelled: set[str] = set()
        unsplit = [f for f in futures if f.key in by_key]
        # results are fetched in batches of those finished (one round trip per batch)
        done = as_completed(futures, loop=client.loop)
        for future, result in arrivals(client, done, idle):
            job, spec = tasks[future.key]
            record = (None if result is NOT_RECEIVED else
                      job_record(job, future, result) if spec is None
                      else part_result(spec, future, result))
            if record is None:   # cancelled or lost on its way (with the scheduler, or
                #                  released): runs next time
                if not lost and (getattr(result, "reason", None) in LOST_REASONS
                                 or scheduler_gone(client)):
                    lost = True
                    quiet_dask_logs()   # closing the client would log tracebacks
                cancelled.add(job.job_id)
                outcome.cancelled = len(cancelled)
                future.release()
                continue
            if spec is not None:   # a part: committed at once; the job once all are here
                try:
                    store.add_part(job.job_id, spec["part"], record)
                except StoreWriteFailed as full:   # this part runs again next time
                    raise held_back(store, full, finished_records(unsplit, by_key, handled),
                                    outcome, len(jobs)) from None
                future.release()
                outcome.parts += 1
                parts = have[job.job_id]
                parts[spec["part"]] = record
                if len(parts) < len(job.part_budgets):
                    continue
                record = combined_record(job, parts)
            try:
                store_record(job, record)
            except StoreWriteFailed as full:
                handled.add(future.key)
                raise held_back(store, full, [record, *finished_records(unsplit, by_key,
                                                                         handled)],
                                outcome, len(jobs)) from None
            handled.add(future.key)
            future.release()
        if lost:
            raise watch.lost()
    except KeyboardInterrupt:
        outcome.interrupted = True
        raise
    except (ClusterLost, InputError):
        if scheduler_gone(client):
            quiet_dask_logs()   # its reconnection would log tracebacks
        raise
    except Exception:
        if scheduler_gone(client):   # a call on the client failed: its scheduler went away
            quiet_dask_logs()
            raise watch.lost() from None
        raise
    finally:
        outcome.elapsed = time.monotonic() - start
        progress.close()
        remaining = [f for f in futures if f.status == "pending"]
        if remaining:
            try:
                client.cancel(remaining)
            except Exception:  # noqa: BLE001 - best effort while shutting down
                pass


def job_record(job: Job, future, result) -> dict | None:
    """The record of a job whose future is done (None: cancelled, it runs next time)."""
    from distributed.scheduler import KilledWorker

    if future.status == "finished":
        record = result
        if isinstance(record, BaseException):
            return failure_record(job, "error", f"its result could not be received here "
                                  f"({type(record).__name__}: {record})")
        if not isinstance(record, dict) or record.get("job_id") != job.job_id:
            return failure_record(job, "error", "the worker returned a wrong record")
        if "problem" not in record:   # a job that could not start on the worker
            return {**failure_record(job, record["status"], record["reason"]), **record}
        return record
    if future.status == "error":
        exc = result if isinstance(result, BaseException) else future.exception()
        if isinstance(exc, KilledWorker):
            return failure_record(job, "failed", worker_died(exc))
        return failure_record(job, "error", f"{type(exc).__name__}: {exc}")
    return None


def finished_records(futures, by_key: dict[str, Job], handled: set[str]) -> list[dict]:
    """The records of the jobs that finished on the workers but were not handled yet."""
    records = []
    for future in futures:
        if future.key in handled or future.status not in ("finished", "error"):
            continue
        try:
            result = future.result(timeout=30) if future.status == "finished" \
                else future.exception(timeout=30)
        except Exception:  # noqa: BLE001 - lost on the way: it runs again next time
            continue
        record = job_record(by_key[future.key], future, result)
        if record is not None:
            records.append(record)
            handled.add(future.key)
    return records


def held_back(store: ResultStore, full: StoreWriteFailed, records: list[dict],
              outcome: Outcome, n_jobs: int) -> StoreWriteFailed:
    """The one-line error of a failed write (a full disk, a disk that refuses writes), once
    the finished records that could not be stored are held in a side file
    (`ResultStore.hold`) for the next run to import."""
    held = store.hold(records)
    kept = (f"the {len(records)} finished but not stored are held in {held}" if held else
            f"the {len(records)} finished but not stored could not be held anywhere (no "
            f"space for a side file either) and will run again")
    left = n_jobs - outcome.stored - (len(records) if held else 0)
    return StoreWriteFailed(store.path, f"{full.problem}; {outcome.stored} results "
                            f"stored in this run, {kept}",
                            f"{full.remedy} and run the same command again: it imports the "
                            f"held results first and runs the {left} jobs left",
                            remedy=full.remedy)


@contextmanager
def interrupt_note(outcome: Outcome, err: TextIO) -> Iterator[None]:
    """On KeyboardInterrupt, say how far the sweep got (one line) and re-raise."""
    try:
        yield
    except KeyboardInterrupt:
        outcome.interrupted = True
        done = outcome.skipped + outcome.stored
        print(f"interrupted: {done} done, {outcome.total - done} to run; rerun to resume"
              if outcome.total else "interrupted before any job ran; rerun to start",
              file=err, flush=True)
        raise


def opening_notes(db: ResultStore, out: TextIO) -> None:
    """Import what a failed write held back last time; say so, and whose writer lock was taken
    over (a client that died)."""
    note = db.lock.took_over() if db.lock else None
    if note:
        print(note, file=out)
    imported, files = db.import_held()
    if files:
        print(f"imported {imported} results held back by a failed write from "
              f"{', '.join(map(str, files))}", file=out)


def worker_memory(sweep: Sweep, scheduler: str | None, workers: int | None, client,
                  connected: Callable[[], Any]) -> int | None:
    """A worker's memory for planning: the sweep file's memory_limit, else the local cluster's
    per-worker limit, else the smallest memory_limit of the connected workers (`connected()`
    returns the Connection, connecting if needed)."""
    from harness.execution.cluster import local_worker_memory, workers_memory_limit

    if sweep.memory_limit is not None:
        return sweep.memory_limit
    if scheduler is None and client is None:
        return local_worker_memory(workers)
    return workers_memory_limit(connected().client)


def run_sweep(
    sweep: Sweep | str | Path, *, store: str | Path | None = None, workers: int | None = None,
    scheduler: str | None = None, tls=None, rerun_failed: bool = False, report: bool = True,
    out: TextIO | None = None, err: TextIO | None = None,
    fn: Callable[[dict], dict] = run_job, allowed_failures: int | None = None, client=None,
    no_workers_timeout: float | None = None, write_report: ReportWriter | None = None,
    opened: Callable[[Path], Any] | None = None, references: bool = True,
) -> Outcome:
    """Run (or resume) a sweep; returns what was done. Bad input raises InputError.

    The cluster: `client` (a connected distributed.Client, left open), else `scheduler`
    (an address or scheduler file, with `tls`), else a local cluster of `workers` processes.
    `allowed_failures` (local cluster only): worker deaths a job may cause before it is
    stored as failed (Dask's distributed.scheduler.allowed-failures, default 3).
    `no_workers_timeout` (seconds) overrides the sweep file's. A cluster that cannot finish
    sets `Outcome.lost` (one line on `err`, after the summary); see `Outcome.exit_code`.
    With `report`, `write_report` writes the report at the end (harness.api.run_sweep and the
    `sweep` command pass harness.report's); without a writer no report is written, and a line
    on `out` says so. `opened(store path)` is called once the store is open for writing (sound,
    its writer lock taken): never for a store that is refused (the `sweep` command notes the
    store for `report` there, so a refused sweep leaves results/.last-store as it was).
    With `references`, the problems without truth get their reference computed after the jobs,
    on the same cluster, and stored (harness.sweep.missing_references).
    """
    from harness.execution.cluster import check_options, connect, dask_log_levels

    out = out or sys.stdout
    err = err or sys.stderr
    check_options(scheduler, workers, tls)
    if not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep)
    store_path = Path(store) if store is not None else sweep.store
    check_writable(store_path, "store")
    if report and write_report is not None:
        check_writable(sweep.report, "report", directory=True)
    outcome = Outcome(store=str(store_path))
    # on Ctrl-C: one line (before the cluster closes), then KeyboardInterrupt
    with ExitStack() as stack, interrupt_note(outcome, err):
        stack.enter_context(dask_log_levels())   # restored after the client closes
        conn = None

        def connected():
            nonlocal conn
            if conn is None:
                conn = stack.enter_context(connect(
                    scheduler, workers, tls, allowed_failures, client=client,
                    worker_ttl=sweep.worker_ttl, note=lambda line: print(line, file=err,
                                                                          flush=True)))
            return conn

        db = stack.enter_context(ResultStore(store_path))   # one writer; sound; refused early
        if opened is not None:
            opened(store_path)
        opening_notes(db, out)
        limit = worker_memory(sweep, scheduler, workers, client, connected)
        stored_ids = db.job_ids()
        jobs, kept = keep_stored_keys(plan(sweep, limit), stored_ids)
        todo = pending(jobs, db, rerun_failed)
        outcome.total, outcome.skipped = len(jobs), len(jobs) - len(todo)
        print("\n".join(plan_lines(sweep, jobs, limit, store_path)), file=out)
        print(f"{outcome.skipped} done, {len(todo)} to run", file=out, flush=True)
        if kept:
            print(former_keys_line(kept), file=out)
        for line in moved_files_lines(sweep, jobs, stored_ids, db.problems):
            print(line, file=out)
        split = [j for j in todo if j.part_budgets]
        if split:
            n_parts = sum(len(j.part_budgets) for j in split)
            n_stored = sum(len(stored_parts(db, j, rerun_failed)) for j in split)
            print(f"{len(split)} of them in {n_parts} parts: {n_stored} parts stored, "
                  f"{n_parts - n_stored} to run", file=out, flush=True)
        record_metadata(db, sweep, environment_facts(), jobs)
        record_references(db, sweep, out)
        if todo:
            try:
                run_on_cluster(connected(), todo, db, outcome, out, err, fn=fn,
                               no_workers_timeout=(sweep.no_workers_timeout
                                                   if no_workers_timeout is None
                                                   else no_workers_timeout),
                               rerun_failed=rerun_failed)
            except ClusterLost as exc:
                outcome.lost = str(exc)
        need = (missing(sweep.problems, db.references(), sweep.seed)
                if references and sweep.kind == "estimate" and not outcome.lost else [])
        if need:
            print(plan_line(need), file=out, flush=True)
            try:
                outcome.references = compute_missing(
                    db, need, sweep.seed, connected().client,
                    out=lambda line: print(f"reference: {line}", file=out, flush=True),
                    rounds=lambda line: print(line, file=err, flush=True))
            except ClusterLost as exc:
                outcome.lost = str(exc)
        db.set_metadata("finished_at", datetime.now(UTC).isoformat())
        stored = db.statuses(j.job_id for j in jobs).values()
        in_store = outcome.in_store = Counter(status for status, _ in stored)
        outcome.not_ok = not_ok(stored)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(outcome.statuses.items()))
    if todo:
        print(f"ran {outcome.stored} jobs in {duration(outcome.elapsed)}"
              + (f" ({counts})" if counts else "")
              + (f"; {outcome.parts} parts" if outcome.parts else ""), file=out)
    print(f"store {store_path}: {sum(in_store.values())} of the sweep's {len(jobs)} jobs"
          + (" (" + ", ".join(f"{n} {s}" for s, n in sorted(in_store.items())) + ")"
             if in_store else ""), file=out)
    if outcome.not_ok:
        print(f"not ok: {not_ok_summary(outcome.not_ok)}; stored like the others "
              f"(--rerun-failed reruns them, --strict exits 1 for them)", file=out)
    bad = [r for r in outcome.references if r[0] != "ok"]
    if bad:
        print(f"references not ok: {not_ok_summary(bad)}; stored all the same (the report "
              f"says so; --strict exits 1 for them)", file=out)
    if outcome.cancelled and not outcome.lost:
        print(f"{outcome.cancelled} jobs were cancelled (scheduler lost?): run the same "
              f"command again to finish them", file=err)
    if report and write_report is not None:
        outcome.report = write_report(store_path, sweep.report, out)
    elif report:
        print(f"report: none written (no report writer given: harness.api.run_sweep writes "
              f"one; or `python -m harness report --store {store_path}`)", file=out)
    if outcome.lost:
        done = sum(in_store.values())
        print(f"error: {outcome.lost} to finish the other {len(jobs) - done} jobs ("
              + (f"the {done} done are stored)" if done else "none was done)"), file=err,
              flush=True)
    return outcome


def run_on_cluster(conn, todo: Sequence[Job], db: ResultStore, outcome: Outcome, out: TextIO,
                   err: TextIO, **options: Any) -> None:
    """Say which cluster runs the jobs, store its workers' environment, then `execute`
    (options: its keyword arguments). ClusterLost if the cluster is lost at any point."""
    print(f"cluster: {conn.description}; {cluster_health(conn.client)}", file=out)
    if conn.dashboard:
        print(f"dashboard: {conn.dashboard}", file=out)
    out.flush()
    db.set_metadata("cluster", conn.description)
    workers_seen = db.metadata().get("workers") or {}
    workers_seen.update(worker_facts(conn.client))
    db.set_metadata("workers", workers_seen)
    execute(conn.client, todo, db, outcome, progress=Progress(len(todo), err), local=conn.local,
            restarts=conn.restarts, **options)


def cluster_health(client) -> str:
    """Workers connected now and the scheduler's worker-ttl (for the `cluster:` line)."""
    from harness.execution.cluster import WorkerWatch, scheduler_worker_ttl

    n = WorkerWatch(client).workers()
    ttl = scheduler_worker_ttl(client)
    return (f"{'?' if n is None else n} worker{'' if n == 1 else 's'} connected, worker-ttl "
            + ("none" if ttl is None else duration(ttl)))
