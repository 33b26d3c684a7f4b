"""A sweep across separate hosts: the scheduler, two workers and the client (`python -m harness
sweep`) each in its own Linux network namespace on a private LAN (netns_helpers), speaking TLS
only, with certificates made here. Each worker reads the problem files from its own disk: a
copy mounted, for that worker alone, at the path the sweep file names.

A clean run, then a run with faults: a worker's link cut mid-sweep and restored, the other
worker's host killed, the scheduler killed (the sweep stops, exit 3) and restarted, and the
same command run again to finish. Both stores must hold the same results bit for bit.
The client finds its TLS settings in Dask's own configuration (DASK_DISTRIBUTED__COMM__TLS__*)
in the faulty run and in the command's options in the clean one.

Skipped, with the reason, where the machine does not allow network namespaces (not root, no
`ip`, or a container that refuses them). The jobs pause 0.3 s each (a method from a file), so
that the faults land mid-sweep whatever the machine's load.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from netns_helpers import Lan, namespaces_unavailable
from sweep_helpers import STARTUP_TIMEOUT, make_certificates, stop, stored_results, wait_for

from harness.execution.store import ResultStore

PACED = '''\
import time

from harness.methods.rejection_bootstrap import RejectionBootstrap


class Paced(RejectionBootstrap):
    """rejection-bootstrap after a pause of 0.3 s (paces the multi-host test's jobs)."""

    name = "paced"
    summary = "rejection-bootstrap after a 0.3 s pause (multi-host test)"

    def _estimate_part(self, problem, budget, rng):
        time.sleep(0.3)
        return super()._estimate_part(problem, budget, rng)
'''

SWEEP = """\
name = "multihost"
seed = 7
replicates = 5
budgets = [200, 400]
problems = ["data/points.csv:kernel=rbf,alpha=1,beta=2", "data/orthant.npz"]
[methods."paced.py:Paced"]
"""
JOBS = 20

HOSTS = ["scheduler", "w0", "w1", "client"]
PORT = 8786


def write_problems(folder: Path) -> None:
    """A GPC problem (.csv, 10 training and 3 test points) and an orthant one (.npz, N = 6)."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    x = rng.normal(size=(13, 2))
    y = np.where(x[:, 0] + 0.5 * rng.normal(size=13) > 0, 1, -1)
    rows = [f"{a:.6f},{b:.6f},{c},{'train' if i < 10 else 'test'}"
            for i, ((a, b), c) in enumerate(zip(x, y, strict=True))]
    (folder / "points.csv").write_text("x1,x2,y,split\n" + "\n".join(rows) + "\n")
    d = rng.uniform(0.3, 0.8, size=6)
    np.savez(folder / "orthant.npz", cov=np.outer(d, d) + np.diag(1 - d**2))


class Hosts:
    """The Dask processes on the LAN: the scheduler at tls://<its address>:8786, workers w0 and
    w1 each with its own disk (`disk[host]`, mounted at `data` for it alone), the client's
    sweeps. Every process's output goes to <host>-<n>.log (n: its start on that host)."""

    def __init__(self, lan: Lan, root: Path, tls: dict[str, str]):
        self.lan, self.root, self.tls = lan, root, tls
        self.data = root / "data"
        self.address = f"tls://{lan.address('scheduler')}:{PORT}"
        self.disk = {h: root / f"{h}-disk" for h in ("w0", "w1")}
        for host, disk in self.disk.items():      # the same files, each host its own copy
            shutil.copytree(self.data, disk)
            (disk / "disk.txt").write_text(host)
        (self.data / "disk.txt").write_text("client")
        self.procs: list[subprocess.Popen] = []
        self.starts = Counter()

    def tls_options(self) -> list[str]:
        return ["--tls-ca-file", self.tls["ca"], "--tls-cert", self.tls["cert"],
                "--tls-key", self.tls["key"]]

    def tls_environment(self) -> dict[str, str]:
        """The same settings as Dask's own configuration, which the client reads natively."""
        return {"DASK_DISTRIBUTED__COMM__TLS__CA_FILE": self.tls["ca"],
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": self.tls["cert"],
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": self.tls["key"],
                "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "true"}

    def run(self, host: str, args: list[str], env: dict[str, str] | None = None
            ) -> subprocess.Popen:
        self.starts[host] += 1
        disk = (self.disk[host], self.data) if host in self.disk else None
        self.procs.append(self.lan.run(host, [sys.executable, *args], self.log_file(host),
                                       self.root, disk=disk, env=env))
        return self.procs[-1]

    def start_scheduler(self) -> None:
        ready = self.root / "scheduler.json"
        ready.unlink(missing_ok=True)
        proc = self.run("scheduler", [
            "-m", "distributed.cli.dask_scheduler", "--protocol", "tls", "--host",
            self.lan.address("scheduler"), "--port", str(PORT), "--no-dashboard",
            "--idle-timeout", "300s", "--scheduler-file", str(ready), *self.tls_options()])
        wait_for(lambda: ready.exists() or proc.poll() is not None, STARTUP_TIMEOUT,
                 "the scheduler")
        assert proc.poll() is None, self.log("scheduler")

    def start_worker(self, host: str) -> None:
        """A one-thread `dask worker` (no nanny: a worker exits with its scheduler either way,
        and is started again, as a machine's service manager would)."""
        self.run(host, ["-m", "distributed.cli.dask_worker", self.address, "--nthreads", "1",
                        "--no-nanny", "--host", self.lan.address(host), "--no-dashboard",
                        "--name", host, "--death-timeout", "60",
                        "--local-directory", str(self.root / f"{host}-scratch"),
                        *self.tls_options()])

    def sweep(self, store: Path, tls_from_env: bool = False) -> subprocess.Popen:
        """`python -m harness sweep` on the client host; TLS from the command's options or
        from Dask's configuration."""
        return self.run("client", [
            "-m", "harness", "sweep", str(self.root / "multihost.toml"), "--scheduler",
            self.address, "--store", str(store), "--no-report", "--no-workers-timeout", "20",
            *([] if tls_from_env else self.tls_options())],
            env=self.tls_environment() if tls_from_env else None)

    def log_file(self, host: str) -> Path:
        return self.root / f"{host}-{self.starts[host]}.log"

    def log(self, host: str) -> str:
        return self.log_file(host).read_text()

    def sees(self, host: str) -> str:
        """Which disk the host's processes find at the data path (through /proc/PID/root:
        in their own mount namespace)."""
        found = {Path(f"/proc/{pid}/root{self.data}/disk.txt").read_text()
                 for pid in self.lan.pids(host)}
        assert len(found) == 1, found
        return found.pop()

    def reap(self) -> None:
        for proc in self.procs:
            stop(proc)


@pytest.fixture
def hosts(tmp_path):
    reason = namespaces_unavailable()
    if reason is not None:
        pytest.skip(f"no separate hosts here: {reason}")
    lan = Lan(HOSTS, reach={"client": ["scheduler"]})    # README: the scheduler is enough
    started = None
    try:
        lan.up()
        tls = make_certificates(tmp_path / "certs", tuple(lan.address(h) for h in HOSTS))
        write_problems(tmp_path / "data")
        (tmp_path / "paced.py").write_text(PACED)
        (tmp_path / "multihost.toml").write_text(SWEEP)
        started = Hosts(lan, tmp_path, tls)
        started.start_scheduler()
        for host in ("w0", "w1"):
            started.start_worker(host)
        yield started
    finally:
        lan.close()                   # kills every process on the hosts
        if started is not None:
            started.reap()


def finished(store: Path, lan: Lan) -> list[tuple[str, datetime]]:
    """(worker host, finished at) of each stored job, read beside the writer (empty before
    the store exists)."""
    if not store.exists():
        return []
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            rows = db.execute("SELECT json_extract(record, '$.worker'), "
                              "json_extract(record, '$.finished_at') FROM jobs").fetchall()
    except sqlite3.OperationalError:
        return []
    names = {f"tls://{lan.address(h)}:": h for h in lan.hosts}
    return [(next((h for prefix, h in names.items() if (w or "").startswith(prefix)), w),
             datetime.fromisoformat(t)) for w, t in rows]


def test_a_sweep_across_hosts_survives_a_cut_link_a_dead_host_and_a_new_scheduler(hosts):
    lan, root = hosts.lan, hosts.root
    assert lan.routes("client", "scheduler") and not lan.routes("client", "w0")
    assert lan.routes("w0", "w1") and lan.routes("w1", "client")

    # ---- a clean run: TLS from the command line -----------------------------------------------
    assert hosts.sweep(root / "clean.sqlite").wait(120) == 0, hosts.log("client")
    assert f"scheduler {hosts.address}" in hosts.log("client")
    expected = stored_results(root / "clean.sqlite")
    assert len(expected) == JOBS and all(r["status"] == "ok" for r in expected.values())
    # both workers ran jobs, from their own addresses over TLS, each reading its own disk
    assert {h for h, _ in finished(root / "clean.sqlite", lan)} == {"w0", "w1"}
    assert [hosts.sees(h) for h in ("w0", "w1")] == ["w0", "w1"]

    # ---- the same sweep with faults: TLS from Dask's configuration ----------------------------
    store = root / "faults.sqlite"
    run = hosts.sweep(store, tls_from_env=True)

    def stored(host: str | None = None, after: datetime | None = None) -> int:
        return sum(1 for h, t in finished(store, lan)
                   if host in (None, h) and (after is None or t > after))

    def meanwhile(condition, what: str) -> None:
        """Wait for the condition while the sweep runs (it must not end first)."""
        wait_for(lambda: condition() or run.poll() is not None, 60, what)
        assert run.poll() is None, f"the sweep ended before {what}: {hosts.log('client')}"

    meanwhile(lambda: stored("w0") and stored("w1"), "a job from each worker")
    lan.cut("w0")                                       # w0 partitioned: w1 goes on alone
    cut_at, w1 = datetime.now(UTC), stored("w1")
    meanwhile(lambda: stored("w1") >= w1 + 4, "w1 to store 4 jobs during the cut")
    assert stored("w0", after=cut_at) == 0              # nothing crossed the cut link
    restored_at = datetime.now(UTC)
    lan.restore("w0")
    lan.kill("w1")                                      # w1's host dies
    meanwhile(lambda: stored("w0", after=restored_at) >= 2,
              "w0 to store 2 jobs finished after its link came back")
    lan.kill("scheduler")                               # the sweep stops: exit 3
    assert run.wait(60) == 3, hosts.log("client")
    assert hosts.log("client").rstrip().splitlines()[-1].startswith("error: "), \
        hosts.log("client")
    kept = stored()
    assert 8 <= kept < JOBS, kept

    # the scheduler back at its address, the workers started again (a worker exits when its
    # scheduler goes): the same command finishes the sweep
    hosts.start_scheduler()
    for host in ("w0", "w1"):
        hosts.start_worker(host)
    assert hosts.sweep(store, tls_from_env=True).wait(120) == 0, hosts.log("client")
    assert f"{kept} done, {JOBS - kept} to run" in hosts.log("client")
    assert stored_results(store) == expected                    # bit for bit
    with ResultStore(store) as db, ResultStore(root / "clean.sqlite") as clean:
        assert db.problems() == clean.problems()
        counts = Counter(e["job_id"] for e in db.job_log())
    assert len(counts) == JOBS and set(counts.values()) == {1}  # each job stored once
