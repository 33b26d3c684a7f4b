"""Fault matrix: small sweeps run under one fault each, every store compared with a clean run.

Real processes throughout (tests/sweep/sweep_helpers.py): a `dask scheduler`, `dask
worker`s (with nannies where the fault needs one) or the sweep's own local cluster, and the
sweep client as `python -m harness sweep`. The sweep is 40 jobs of rejection-bootstrap on
onefactor:n=100 (~0.1 s each). For each fault the table gives:

- outcome: the exit status of the faulted command (and of its resume), "traceback" when Python
  or Dask printed one, and the command's error line, shortened;
- jobs kept: the jobs stored ok after the fault (before any resume) / the sweep's jobs;
- duplicates: job results stored more than once (the store's job_log), over the whole scenario;
- identical on resume: after the resume, every job's result equals the clean run's bit for bit
  (status, log Z, SE, test probabilities, diagnostics); for time and memory limits: a second
  run on a fresh store gives the same statuses.

Faults: worker killed (SIGKILL), nanny killed (its `dask worker` process), client killed and
resumed, scheduler killed (then a new cluster and a resume), scheduler killed at four points
(as the client connects; after 1, 10, 25 stored jobs), scheduler frozen (SIGSTOP, the client
with distributed.comm.timeouts.tcp = 12 s), frozen worker (SIGSTOP; the local cluster with
worker_ttl = 5), a worker killed while the local cluster starts (a Dask preload that kills
the first worker process), the local cluster's workers killed every 1-2.5 s for 20 s (a
sweep of 20 one-second jobs, compared with its own clean run), two clients on one store at
once, full disk (the store on a small tmpfs, needs root; resumed after the tmpfs grows), full
disk as the sweep starts (0, 40, 120 KiB free), an immutable write-ahead log mid-sweep
(chattr +i once 3 jobs are stored; resumed after chattr -i), corrupted store (truncated, 4 KiB
of garbage in the middle, a text file: `report` and `sweep` on it, the file's hash before and
after), time limit (scipy-genz ~3 CPU s with time_limit = 1), memory limit (a method file
that touches 1 GB with memory_limit = "300MB") and memory in a thread (the same, the memory
touched by a thread the method starts and joins).

    python benchmarks/fault_matrix.py                 # every fault (about 10 minutes, 2 cores)
    python benchmarks/fault_matrix.py --only worker scheduler   # faults whose name has a word
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "sweep"))
from sweep_helpers import (  # noqa: E402
    KILLER,
    DaskProcesses,
    local_workers,
    slow_sweep,
    spawn,
    stop,
    stored_jobs,
)

SWEEP = """\
name = "faults"
seed = 11
replicates = 10
budgets = [8000, 10000]
problems = ["onefactor:n=100"]
{extra}
[methods.rejection-bootstrap]
count = ["soft", "hard"]
"""
N_JOBS = 40
TIME_LIMIT_SWEEP = """\
name = "time-limit"
seed = 3
replicates = 2
time_limit = 1
problems = ["onefactor:n=100"]
[methods.scipy-genz]
budgets = [100000]
"""
HOG = '''\
import threading

import numpy as np

from harness.model.result import Estimate
from harness.model.method import Method


class Hog(Method):
    """Touches `budget` MB, then answers (a job that breaks a memory limit)."""

    name = "hog"
    summary = "touches budget MB of memory, then answers (fault matrix)"
    budget_unit = "MB touched"

    def __init__(self, in_thread: bool = False):
        self.in_thread = in_thread

    def _estimate(self, problem, budget, rng):
        touch = lambda: np.ones(budget * 2**20 // 8).sum()      # allocated and touched
        if self.in_thread:
            thread = threading.Thread(target=touch)
            thread.start()
            thread.join()
        else:
            touch()
        return Estimate(-1.0 - float(rng.random()), np.full(problem.n_test, 0.5))
'''
MEMORY_SWEEP = """\
name = "memory-limit"
seed = 3
replicates = 2
memory_limit = "300MB"
problems = ["onefactor:n=5"]
[methods."hog.py:Hog"]
budgets = [20, 1000]
{settings}
"""
FIELDS = ("status", "log_marginal_likelihood", "log_marginal_likelihood_se",
          "test_probabilities", "diagnostics")
WAIT = 300.0          # seconds any one command may take
DISK_KIB = 384        # the full disk's tmpfs: fills part-way (the store's write-ahead log grows)


@dataclass
class Row:
    fault: str
    outcome: str
    kept: str = "-"
    duplicates: str = "-"
    identical: str = "-"


class Matrix:
    """Shared state: the folder, the shared cluster and the clean run's results."""

    def __init__(self, root: Path):
        self.root = root
        self.sweep_file = self.write("faults.toml", SWEEP.format(extra=""))
        self.cluster: DaskProcesses | None = None
        self.clean: dict[str, tuple] = {}
        self.n = 0

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text)
        return path

    def folder(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def shared(self) -> DaskProcesses:
        if self.cluster is None:
            self.cluster = DaskProcesses(self.folder("shared-dask"), n_workers=2).start()
        return self.cluster

    # ---- commands ---------------------------------------------------------------------
    def start(self, log: Path, sweep_file: Path, store: Path, *args: str) -> subprocess.Popen:
        return spawn([sys.executable, "-m", "harness", "sweep", str(sweep_file), "--store",
                      str(store), "--no-report", "--no-workers-timeout", "60", *args],
                     log, self.root)

    def sweep(self, log: Path, sweep_file: Path, store: Path, *args: str) -> int | None:
        proc = self.start(log, sweep_file, store, *args)
        return finish(proc)

    def command(self, log: Path, *args: str) -> int | None:
        return finish(spawn([sys.executable, "-m", "harness", *args], log, self.root))


def finish(proc: subprocess.Popen, timeout: float = WAIT) -> int | None:
    """The exit status of a command, or None (stopped: it hung for `timeout` seconds)."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        return None


def wait_until(condition: Callable[[], object], timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


# ---- reading stores -----------------------------------------------------------------------
def read_results(store: Path) -> dict[str, tuple]:
    """{job_id: (FIELDS...)} of a store, read-only; {} if it cannot be read."""
    try:
        with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)) as db:
            rows = db.execute("SELECT job_id, record FROM jobs").fetchall()
    except sqlite3.Error:
        return {}
    return {job_id: tuple(json.dumps(json.loads(r).get(f), sort_keys=True) for f in FIELDS)
            for job_id, r in rows}


def stored_counts(store: Path) -> Counter:
    """How many times each job was stored (the job_log)."""
    try:
        with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)) as db:
            return Counter(r[0] for r in db.execute("SELECT job_id FROM job_log"))
    except sqlite3.Error:
        return Counter()


def kept(store: Path, total: int = N_JOBS) -> str:
    ok = sum(json.loads(v[0]) == "ok" for v in read_results(store).values())
    return f"{ok}/{total}"


def duplicates(*stores: Path) -> str:
    counts: Counter = Counter()
    for s in stores:
        counts.update(stored_counts(s))
    return str(sum(c - 1 for c in counts.values() if c > 1))


def identical(store: Path, clean: dict[str, tuple]) -> str:
    got = read_results(store)
    if set(got) != set(clean):
        return f"no ({len(set(clean) - set(got))} missing)"
    differ = sum(got[k] != v for k, v in clean.items())
    return "yes" if differ == 0 else f"no ({differ} differ)"


def outcome(rc: int | None, log: Path, label: str = "") -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    status = (f"hung ({WAIT:.0f} s)" if rc is None else
              f"killed ({signal.Signals(-rc).name})" if rc < 0 else f"exit {rc}")
    notes = [f"{label}{status}"]
    if "Traceback" in text:
        notes.append("traceback")
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    if errors:   # the last error line, addresses and this run's folder shortened
        line = re.sub(r"(tcp|tls)://[0-9.:]+", "ADDR", errors[-1][len("error: "):])
        notes.append(re.sub(r"/\S*/fault-matrix-[^/\s]+/", "", line)[:120])
    return ", ".join(notes)


# ---- the faults -----------------------------------------------------------------------------
def clean_run(m: Matrix) -> Row:
    store, log = m.root / "clean.sqlite", m.root / "clean.log"
    rc = m.sweep(log, m.sweep_file, store, "--scheduler", m.shared().address)
    m.clean = read_results(store)
    return Row("none (clean run)", outcome(rc, log), kept(store), duplicates(store),
               "reference")


def interrupted(m: Matrix, name: str, fault: Callable[[subprocess.Popen, DaskProcesses], None],
                cluster: DaskProcesses, resume_cluster: Callable[[], DaskProcesses] | None = None
                ) -> Row:
    """Start the sweep, apply `fault` once 3 jobs are stored, wait, then resume it."""
    folder = m.folder(name.replace(" ", "-"))
    store = folder / "s.sqlite"
    proc = m.start(folder / "run.log", m.sweep_file, store, "--scheduler", cluster.address)
    wait_until(lambda: stored_jobs(store) >= 3 or proc.poll() is not None)
    fault(proc, cluster)
    rc = finish(proc)
    after = kept(store)
    again = (resume_cluster or (lambda: cluster))()
    rc2 = m.sweep(folder / "resume.log", m.sweep_file, store, "--scheduler", again.address)
    return Row(name, outcome(rc, folder / "run.log") + "; "
               + outcome(rc2, folder / "resume.log", "resume "), after, duplicates(store),
               identical(store, m.clean))


def worker_killed(m: Matrix) -> Row:
    cluster = DaskProcesses(m.folder("worker-dask"), n_workers=2).start()
    try:
        return interrupted(m, "worker killed", lambda p, c: os.kill(c.workers[0].pid,
                                                                  signal.SIGKILL), cluster)
    finally:
        cluster.close()


def nanny_killed(m: Matrix) -> Row:
    cluster = DaskProcesses(m.folder("nanny-dask"), n_workers=2, nanny=True).start()
    try:
        return interrupted(m, "nanny killed", lambda p, c: os.kill(c.workers[0].pid,
                                                                 signal.SIGKILL), cluster)
    finally:
        cluster.close()


def client_killed(m: Matrix) -> Row:
    return interrupted(m, "client killed, resumed",
                       lambda p, c: os.killpg(p.pid, signal.SIGKILL), m.shared())


def scheduler_killed(m: Matrix) -> Row:
    first = DaskProcesses(m.folder("scheduler-dask"), n_workers=2).start()
    second: list[DaskProcesses] = []

    def new_cluster() -> DaskProcesses:
        first.close()
        second.append(DaskProcesses(m.folder("scheduler-dask-2"), n_workers=2).start())
        return second[0]

    try:
        return interrupted(m, "scheduler killed", lambda p, c: os.killpg(c.scheduler.pid,
                                                                       signal.SIGKILL),
                           first, new_cluster)
    finally:
        first.close()
        for c in second:
            c.close()


def frozen_worker(m: Matrix) -> Row:
    folder = m.folder("frozen")
    sweep_file = m.write("frozen.toml", SWEEP.format(extra="worker_ttl = 5"))
    store = folder / "s.sqlite"
    proc = m.start(folder / "run.log", sweep_file, store, "--workers", "2")
    wait_until(lambda: stored_jobs(store) >= 3 or proc.poll() is not None)
    workers = [w.pid for w in local_workers(proc.pid)]
    if not workers:
        stop(proc)
        return Row("frozen worker", "could not find the local cluster's worker processes")
    os.kill(workers[0], signal.SIGSTOP)
    frozen = time.monotonic()
    rc = finish(proc)
    took = time.monotonic() - frozen
    for pid in workers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return Row("frozen worker (worker_ttl 5 s)",
               outcome(rc, folder / "run.log") + f", done {took:.0f} s after the freeze",
               kept(store), duplicates(store), identical(store, m.clean))


def two_clients(m: Matrix) -> Row:
    folder = m.folder("two-clients")
    store = folder / "s.sqlite"
    address = m.shared().address
    procs = [m.start(folder / f"client{i}.log", m.sweep_file, store, "--scheduler", address)
             for i in (1, 2)]
    rcs = [finish(p) for p in procs]
    return Row("two clients, one store",
               "; ".join(outcome(rc, folder / f"client{i}.log", f"client {i} ")
                         for i, rc in zip((1, 2), rcs, strict=True)),
               kept(store), duplicates(store), identical(store, m.clean))


def full_disk(m: Matrix) -> Row:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return Row("full disk", "skipped: a small tmpfs needs root")
    folder = m.folder("full-disk")
    disk = m.folder("full-disk/tmpfs")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_KIB}k", "tmpfs",
                              str(disk)],
                             capture_output=True)
    if mounted.returncode != 0:
        return Row("full disk", f"skipped: mount failed ({mounted.stderr.decode().strip()})")
    try:
        store = disk / "s.sqlite"
        address = m.shared().address
        rc = m.sweep(folder / "run.log", m.sweep_file, store, "--scheduler", address)
        after = kept(store)
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        rc2 = m.sweep(folder / "resume.log", m.sweep_file, store, "--scheduler", address)
        return Row(f"full disk ({DISK_KIB} KiB tmpfs)", outcome(rc, folder / "run.log") + "; "
                   + outcome(rc2, folder / "resume.log", "after freeing: "), after,
                   duplicates(store), identical(store, m.clean))
    finally:
        unmounted = subprocess.run(["umount", str(disk)], capture_output=True)
        if unmounted.returncode != 0:
            print(f"warning: could not unmount {disk}: {unmounted.stderr.decode().strip()}")


def corrupt(kind: str, path: Path) -> None:
    if kind == "text file":
        path.write_text("these are not the results you are looking for\n" * 20)
        return
    data = bytearray(path.read_bytes())
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:   # 4 KiB of garbage in the middle
        middle = len(data) // 2
        data[middle:middle + 4096] = os.urandom(min(4096, len(data) - middle))
        path.write_bytes(data)


def corrupted_store(m: Matrix, kind: str) -> Row:
    folder = m.folder(f"corrupt-{kind.replace(' ', '-')}")
    store = folder / "s.sqlite"
    shutil.copy(m.root / "clean.sqlite", store)
    corrupt(kind, store)
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    rc1 = m.command(folder / "report.log", "report", "--store", str(store), "--out",
                    str(folder / "report"))
    rc2 = m.sweep(folder / "sweep.log", m.sweep_file, store, "--scheduler", m.shared().address)
    changed = hashlib.sha256(store.read_bytes()).hexdigest() != before if store.exists() \
        else True
    plan = [line for line in (folder / "sweep.log").read_text(errors="replace").splitlines()
            if line.endswith("to run")]
    return Row(f"corrupted store: {kind}",
               outcome(rc1, folder / "report.log", "report ") + "; "
               + outcome(rc2, folder / "sweep.log", "sweep ")
               + (f" ({plan[0]})" if plan else "")
               + ("; file modified" if changed else "; file untouched"),
               "-", duplicates(store), "-")


def limit_run(m: Matrix, name: str, sweep_file: Path, args: list[str],
              broken: Callable[[dict], bool], what: str) -> Row:
    """Run a sweep twice on fresh stores: the statuses, the jobs that break the limit but are
    stored ok, and whether the statuses repeat."""
    folder = m.folder(name.replace(" ", "-"))
    runs = []
    for i in (1, 2):
        store = folder / f"s{i}.sqlite"
        rc = m.sweep(folder / f"run{i}.log", sweep_file, store, *args)
        with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as db:
            records = [json.loads(r[0]) for r in db.execute("SELECT record FROM jobs")]
        runs.append((rc, store, records))
    rc, store, records = runs[0]
    statuses = Counter(r["status"] for r in records)
    bad = [r for r in records if r["status"] == "ok" and broken(r)]
    same = sorted((r["job_id"], r["status"]) for r in records) == \
        sorted((r["job_id"], r["status"]) for r in runs[1][2])
    return Row(name, outcome(rc, folder / "run1.log") + "; "
               + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
               + (f"; {len(bad)} {what} stored ok" if bad else ""),
               f"{statuses.get('ok', 0)}/{len(records)}", duplicates(store),
               "yes (statuses)" if same else "no (statuses differ)")


def time_limit(m: Matrix) -> Row:
    sweep_file = m.write("time-limit.toml", TIME_LIMIT_SWEEP)
    return limit_run(m, "time limit (1 CPU s)", sweep_file, ["--scheduler", m.shared().address],
                     lambda r: (r.get("cpu_seconds") or 0) > 2.0, "over 2x the limit")


def memory_limit(m: Matrix) -> Row:
    (m.root / "hog.py").write_text(HOG)
    sweep_file = m.write("memory-limit.toml", MEMORY_SWEEP.format(settings=""))
    return limit_run(m, "memory limit (300 MB)", sweep_file, ["--workers", "1"],
                     lambda r: (r.get("peak_memory_mb") or 0) > 300, "over the limit")


def thread_memory(m: Matrix) -> Row:
    (m.root / "hog.py").write_text(HOG)
    sweep_file = m.write("thread-memory.toml", MEMORY_SWEEP.format(settings="in_thread = true"))
    return limit_run(m, "memory in a thread (300 MB)", sweep_file, ["--workers", "1"],
                     lambda r: r["budget"] >= 300, "over the limit")


def scheduler_points(m: Matrix) -> Row:
    """The scheduler SIGKILLed at four points of four sweeps (a cluster each): how each
    ended, and how long after the kill."""
    notes, ends, stores = [], [], []
    for point in ("connect", 1, 10, 25):
        folder = m.folder(f"scheduler-at-{point}")
        cluster = DaskProcesses(folder / "dask", n_workers=2).start()
        try:
            store, log = folder / "s.sqlite", folder / "run.log"
            proc = m.start(log, m.sweep_file, store, "--scheduler", cluster.address)
            def reached(proc=proc, log=log, store=store, point=point) -> bool:
                return proc.poll() is not None or (
                    "cluster:" in log.read_text() if point == "connect"
                    else stored_jobs(store) >= point)
            wait_until(reached)
            os.killpg(cluster.scheduler.pid, signal.SIGKILL)
            killed = time.monotonic()
            rc = finish(proc)
            ends.append(time.monotonic() - killed)
            notes.append(outcome(rc, log, f"at {point}: ").split(", lost")[0])
            stores.append(store)
        finally:
            cluster.close()
    return Row("scheduler killed at 4 points (connect; 1, 10, 25 stored)",
               "; ".join(notes) + f"; ended {min(ends):.1f}-{max(ends):.1f} s after the kill",
               "-", str(sum(int(duplicates(s)) for s in stores)), "-")


def scheduler_frozen(m: Matrix) -> Row:
    first = DaskProcesses(m.folder("frozen-scheduler-dask"), n_workers=2).start()
    second: list[DaskProcesses] = []

    def freeze(proc, cluster):
        os.kill(cluster.scheduler.pid, signal.SIGSTOP)

    def new_cluster() -> DaskProcesses:
        os.kill(first.scheduler.pid, signal.SIGKILL)
        first.close()
        second.append(DaskProcesses(m.folder("frozen-scheduler-dask-2"), n_workers=2).start())
        return second[0]

    os.environ["DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP"] = "12s"   # the client's (Dask's floor)
    try:
        return interrupted(m, "scheduler frozen (SIGSTOP; comm timeout 12 s)", freeze, first,
                           new_cluster)
    finally:
        del os.environ["DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP"]
        first.close()
        for c in second:
            c.close()


def local_start_killed(m: Matrix) -> Row:
    folder = m.folder("local-start-killed")
    (folder / "killer.py").write_text(KILLER)
    store, log = folder / "s.sqlite", folder / "run.log"
    env = {"GPC_TEST_KILL_STARTS": "first", "GPC_TEST_KILL_MARK": str(folder / "mark"),
           "DASK_DISTRIBUTED__WORKER__PRELOAD": json.dumps([str(folder / "killer.py")])}
    os.environ.update(env)
    try:
        rc = m.sweep(log, m.sweep_file, store, "--workers", "2")
    finally:
        for key in env:
            del os.environ[key]
    notes = sum(line.startswith("note: the local cluster did not start")
                for line in log.read_text().splitlines())
    return Row("a worker killed while the local cluster starts",
               outcome(rc, log) + f", {notes} restart(s) of the cluster", kept(store),
               duplicates(store), identical(store, m.clean))


def workers_keep_dying(m: Matrix) -> Row:
    """A local cluster of 2 whose worker processes are killed (one at random) every 1-2.5 s
    for 20 s from the first stored result, on 20 jobs of 1 s; compared with a clean run of
    the same sweep on the shared cluster."""
    import random

    folder = m.folder("keep-dying")
    sweep_file = slow_sweep(folder, "[10]", 20, extra="no_workers_timeout = 300")
    clean = folder / "clean.sqlite"
    m.sweep(folder / "clean.log", sweep_file, clean, "--scheduler", m.shared().address)
    store, log = folder / "s.sqlite", folder / "run.log"
    proc = m.start(log, sweep_file, store, "--workers", "2")
    wait_until(lambda: stored_jobs(store) >= 1 or proc.poll() is not None)
    rng, kills, start = random.Random(1), 0, time.monotonic()
    while time.monotonic() - start < 20 and proc.poll() is None:
        time.sleep(rng.uniform(1.0, 2.5))
        workers = local_workers(proc.pid)
        if workers:
            try:
                rng.choice(workers).kill()
                kills += 1
            except psutil.Error:
                pass
    stopped = time.monotonic()
    rc = finish(proc)
    after = time.monotonic() - stopped
    restarts = sum(line.startswith("note: restarted") for line in log.read_text().splitlines())
    ok, dups = kept(store, 20), duplicates(store)   # (before the failed ones are rerun)
    rc2 = m.sweep(folder / "resume.log", sweep_file, store, "--scheduler", m.shared().address,
                  "--rerun-failed")   # jobs killed with their worker 4 times are stored failed
    return Row("local workers killed every 1-2.5 s for 20 s (20 jobs of 1 s)",
               outcome(rc, log) + f", {kills} kills, {restarts} rounds of new nannies, done "
               f"{after:.0f} s after the kills; --rerun-failed exit {rc2}", ok, dups,
               identical(store, read_results(clean)))


def wal_immutable(m: Matrix) -> Row:
    if shutil.which("chattr") is None:
        return Row("immutable write-ahead log", "skipped: chattr is not installed")
    folder = m.folder("wal-immutable")
    store = folder / "s.sqlite"
    wal = Path(f"{store}-wal")
    address = m.shared().address
    proc = m.start(folder / "run.log", m.sweep_file, store, "--scheduler", address)
    wait_until(lambda: stored_jobs(store) >= 3 or proc.poll() is not None)
    frozen = subprocess.run(["chattr", "+i", str(wal)], capture_output=True, text=True)
    if frozen.returncode != 0:
        stop(proc)
        return Row("immutable write-ahead log", f"skipped: chattr failed ({frozen.stderr})")
    try:
        rc = finish(proc)
        after = kept(store)
    finally:
        subprocess.run(["chattr", "-i", str(wal)], capture_output=True)
    rc2 = m.sweep(folder / "resume.log", m.sweep_file, store, "--scheduler", address)
    return Row("immutable write-ahead log (chattr +i after 3 jobs)",
               outcome(rc, folder / "run.log") + "; "
               + outcome(rc2, folder / "resume.log", "after chattr -i: "), after,
               duplicates(store), identical(store, m.clean))


def full_disk_at_start(m: Matrix) -> Row:
    """The store on a 2 MiB tmpfs filled but 0, 40 or 120 KiB (the writer's lock, the
    store's creation, its opening), then resumed with the filler removed."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return Row("full disk at the start", "skipped: a small tmpfs needs root")
    notes, stores, same = [], [], []
    address = m.shared().address
    for free in (0, 40, 120):
        folder = m.folder(f"full-at-start-{free}")
        disk = m.folder(f"full-at-start-{free}/tmpfs")
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                                 capture_output=True)
        if mounted.returncode != 0:
            return Row("full disk at the start",
                       f"skipped: mount failed ({mounted.stderr.decode().strip()})")
        try:
            with open(disk / "filler", "wb") as f:
                f.write(b"\0" * max(0, shutil.disk_usage(disk).free - free * 1024))
            store = disk / "s.sqlite"
            rc = m.sweep(folder / "run.log", m.sweep_file, store, "--scheduler", address)
            orphans = [p.name for p in disk.iterdir() if ".new-" in p.name]
            (disk / "filler").unlink()
            rc2 = m.sweep(folder / "resume.log", m.sweep_file, store, "--scheduler", address)
            notes.append(outcome(rc, folder / "run.log", f"{free} KiB: ").split(" (")[0]
                         + (f" {len(orphans)} orphans" if orphans else "")
                         + f", then exit {rc2}")
            stores.append(store)
            same.append(identical(store, m.clean))
            copy = folder / "s.sqlite"
            shutil.copy(store, copy)
            stores[-1] = copy
        finally:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    return Row("full disk at the start (0, 40, 120 KiB free; then freed)", "; ".join(notes),
               "-", str(sum(int(duplicates(s)) for s in stores)), ", ".join(same))


FAULTS: list[tuple[str, Callable[[Matrix], Row]]] = [
    ("worker", worker_killed), ("nanny", nanny_killed), ("client", client_killed),
    ("scheduler", scheduler_killed), ("scheduler-points", scheduler_points),
    ("scheduler-frozen", scheduler_frozen), ("frozen", frozen_worker),
    ("local-start", local_start_killed), ("keep-dying", workers_keep_dying),
    ("two-clients", two_clients),
    ("full-disk", full_disk), ("full-at-start", full_disk_at_start),
    ("wal-immutable", wal_immutable),
    *((f"corrupt-{k.split()[0]}", lambda m, k=k: corrupted_store(m, k))
      for k in ("truncated", "garbage in the middle", "text file")),
    ("time-limit", time_limit), ("memory-limit", memory_limit),
    ("thread-memory", thread_memory),
]


def print_table(rows: list[Row]) -> None:
    head = ("fault", "outcome", "jobs kept", "duplicates", "identical on resume")
    cells = [head, *((r.fault, r.outcome, r.kept, r.duplicates, r.identical) for r in rows)]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for row in cells[1:]:
        print("| " + " | ".join(c.replace("|", "/") for c in row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="WORD",
                        help="run only the faults whose name contains one of these words")
    parser.add_argument("--keep", action="store_true", help="keep the folder of stores and logs")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fault-matrix-"))
    m = Matrix(root)
    rows: list[Row] = []
    try:
        rows.append(clean_run(m))
        for name, fault in FAULTS:
            if args.only and not any(w in name for w in args.only):
                continue
            started = time.monotonic()
            try:
                row = fault(m)
            except Exception as exc:  # noqa: BLE001 - a broken scenario is a row, not the end
                row = Row(name, f"scenario failed: {type(exc).__name__}: {exc}")
            rows.append(row)
            print(f"{row.fault}: {row.outcome} [{time.monotonic() - started:.0f} s]", flush=True)
    finally:
        if m.cluster is not None:
            m.cluster.close()
        print()
        print_table(rows)
        if args.keep:
            print(f"\nstores and logs: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
