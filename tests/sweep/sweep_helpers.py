"""Helpers of the sweep tests: real `dask scheduler` and `dask worker` processes.

Everything listens on 127.0.0.1; every process is started in its own session and killed with
its group at teardown. Waits poll for a condition with generous timeouts (the CI machine may
be small and loaded); nothing sleeps a fixed time. Safety nets against leaks if the test
process itself dies: workers exit after --death-timeout without a scheduler and the scheduler
after --idle-timeout without work. `slow_sweep` writes a sweep of jobs that sleep (no CPU: their
length does not depend on the machine's load), for the fault tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

STARTUP_TIMEOUT = 90.0


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "PYTHONUNBUFFERED": "1"})
    return env


def refused(base: str, edit: tuple[str, str], key: str, words: str) -> str:
    """The InputError message of parse_sweep on `base` with one edit; it must name the file
    (bad.toml) and the key, and contain `words`."""
    from harness.core.errors import InputError
    from harness.sweep.spec import parse_sweep

    text = base.replace(*edit)
    assert text != base
    with pytest.raises(InputError) as info:
        parse_sweep(text, "bad.toml")
    message = str(info.value)
    assert message.startswith(f"bad.toml: {key}" if key else "bad.toml"), message
    assert words in message, message
    return message


def wait_for(condition: Callable[[], object], timeout: float, what: str, poll: float = 0.1):
    """Poll until condition() is truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


def spawn(args: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None
          ) -> subprocess.Popen:
    """Start `args` in its own session, output to `log`; `env` adds to child_env()."""
    with open(log, "wb") as f:
        return subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, cwd=cwd,
                                env={**child_env(), **(env or {})}, start_new_session=True)


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group, SIGKILL it if it does not go."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:   # whatever is left of the group (also after a clean exit of the leader)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        pass


RESULT_FIELDS = ("status", "log_marginal_likelihood", "log_marginal_likelihood_se",
                 "test_probabilities", "abs_log_error", "diagnostics", "problem", "method",
                 "budget", "replicate")


def stored_results(store: Path) -> dict[str, dict]:
    """Job id -> the RESULT_FIELDS of its record: what two runs of a sweep must agree on."""
    from harness.execution.store import ResultStore

    with ResultStore(store) as db:
        return {r["job_id"]: {k: r.get(k) for k in RESULT_FIELDS} for r in db.records()}


def stored_jobs(store: Path) -> int:
    """Jobs in a store that another process is writing (0 before it exists)."""
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


class DaskProcesses:
    """One `dask scheduler` and n `dask worker` processes (one thread, 127.0.0.1; no nanny
    unless `nanny`: then each `dask worker` process is the nanny of its worker process)."""

    def __init__(self, root: Path, n_workers: int, tls: dict[str, str] | None = None,
                 memory_limit: str | None = None, nanny: bool = False):
        self.root = root
        self.nanny = nanny
        self.memory_limit = memory_limit   # each worker's --memory-limit (Dask's default: auto)
        self.tls = tls          # {"ca": path, "cert": path, "key": path}: TLS everywhere
        self.scheduler_file = root / "scheduler.json"
        self.scheduler: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.n_workers = n_workers

    @property
    def address(self) -> str:
        return json.loads(self.scheduler_file.read_text())["address"]

    def _written(self) -> bool:
        """The scheduler file exists and holds its JSON (it is created before it is written)."""
        try:
            return "address" in json.loads(self.scheduler_file.read_text())
        except (OSError, ValueError):
            return False

    def start(self) -> DaskProcesses:
        self.root.mkdir(parents=True, exist_ok=True)
        self.scheduler = spawn(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--no-dashboard", "--idle-timeout", "300s",
             "--scheduler-file", str(self.scheduler_file), *self._tls_args(scheduler=True)],
            self.root / "scheduler.log", self.root)
        wait_for(lambda: self._written() or self.scheduler.poll() is not None,
                 STARTUP_TIMEOUT, "the scheduler file")
        assert self.scheduler.poll() is None, (self.root / "scheduler.log").read_text()
        for i in range(self.n_workers):
            self.add_worker(i)
        self.wait_for_workers(self.n_workers)
        return self

    def add_worker(self, i: int) -> subprocess.Popen:
        proc = spawn(
            [sys.executable, "-m", "distributed.cli.dask_worker",
             "--scheduler-file", str(self.scheduler_file), "--nthreads", "1",
             *([] if self.nanny else ["--no-nanny"]),
             "--host", "127.0.0.1", "--no-dashboard", "--name", f"w{i}",
             "--death-timeout", "60", "--local-directory", str(self.root / f"w{i}"),
             *(["--memory-limit", self.memory_limit] if self.memory_limit else []),
             *self._tls_args()],
            self.root / f"worker{i}.log", self.root)
        self.workers.append(proc)
        return proc

    def _tls_args(self, scheduler: bool = False) -> list[str]:
        if not self.tls:
            return []
        return [*(["--protocol", "tls"] if scheduler else []),
                "--tls-ca-file", self.tls["ca"], "--tls-cert", self.tls["cert"],
                "--tls-key", self.tls["key"]]

    def client(self):
        from distributed import Client
        kwargs = {}
        if self.tls:
            from distributed.security import Security
            kwargs["security"] = Security(tls_ca_file=self.tls["ca"],
                                          tls_client_cert=self.tls["cert"],
                                          tls_client_key=self.tls["key"], require_encryption=True)
        return Client(scheduler_file=str(self.scheduler_file), timeout=30,
                      set_as_default=False, **kwargs)

    def n_connected(self) -> int:
        with self.client() as client:
            return len(client.scheduler_info(n_workers=-1)["workers"])

    def wait_for_workers(self, n: int) -> None:
        if n < 1:
            return
        with self.client() as client:
            client.wait_for_workers(n, timeout=STARTUP_TIMEOUT)

    def close(self) -> None:
        for proc in self.workers:
            stop(proc)
        if self.scheduler is not None:
            stop(self.scheduler)


def make_certificates(root: Path, ips: tuple[str, ...] = ("127.0.0.1",)) -> dict[str, str]:
    """A throw-away CA and one certificate signed by it for the addresses `ips` (openssl),
    for TLS tests."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    root.mkdir(parents=True, exist_ok=True)
    ca, ca_key, cert, key, csr = (str(root / n) for n in
                                  ("ca.pem", "ca.key", "node.pem", "node.key", "node.csr"))
    ext = root / "ext.cnf"
    ext.write_text("subjectAltName=" + ",".join(f"IP:{ip}" for ip in ips) + "\n")
    for args in (
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
         "-days", "2", "-subj", "/CN=gpc-harness test CA"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
         "-subj", f"/CN={ips[0]}"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-out", cert, "-days", "2", "-extfile", str(ext)],
    ):
        subprocess.run([openssl, *args], check=True, capture_output=True, timeout=60)
    return {"ca": ca, "cert": cert, "key": key}


# ---- a sweep of jobs that sleep (fault tests) ------------------------------------------------
SLOW = '''\
import os
import time
from pathlib import Path

import numpy as np

from harness.model.result import Estimate
from harness.model.method import Method


class Slow(Method):
    """Sleeps budget / 10 s, then answers a log Z from its stream (fault tests)."""

    name = "slow"
    summary = "sleeps budget / 10 s, then answers (fault tests)"
    budget_unit = "tenths of a second"

    def __init__(self, fail_budget: int = 0):
        self.fail_budget = fail_budget

    def _estimate(self, problem, budget, rng):
        marks = os.environ.get("GPC_TEST_MARKS")
        if marks:
            Path(marks, f"{os.getpid()}-{rng.integers(1 << 40)}").touch()
        time.sleep(budget / 10)
        if budget == self.fail_budget:
            raise ValueError("a planted failure")
        return Estimate(-1.0 - float(rng.random()), np.full(problem.n_test, 0.5))
'''


def slow_sweep(tmp_path: Path, budgets: str, replicates: int, extra: str = "",
               settings: str = "") -> Path:
    """A sweep file of Slow jobs on onefactor:n=5 (budgets: a TOML list; extra: top-level
    keys; settings: the method's)."""
    (tmp_path / "slow.py").write_text(SLOW)
    path = tmp_path / "faults.toml"
    path.write_text(f'name = "faults"\nseed = 1\nreplicates = {replicates}\n{extra}\n'
                    f'problems = ["onefactor:n=5"]\n'
                    f'[methods."slow.py:Slow"]\nbudgets = {budgets}\n{settings}\n')
    return path


def job_log(store: Path) -> Counter:
    """How many times each job was stored (the store's job_log)."""
    from harness.execution.store import ResultStore

    with ResultStore(store) as db:
        return Counter(e["job_id"] for e in db.job_log())


def statuses(store: Path) -> Counter:
    from harness.execution.store import ResultStore

    with ResultStore(store) as db:
        return Counter(r["status"] for r in db.records())


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


# ---- the local cluster's worker processes (fault tests) -------------------------------------
# A Dask worker preload: the worker process that runs it while starting kills itself (SIGKILL)
# when GPC_TEST_KILL_STARTS is "all", or only the first one ("first": the mark file
# GPC_TEST_KILL_MARK decides).
KILLER = '''\
import os
import signal


def dask_setup(worker):
    if os.environ.get("GPC_TEST_KILL_STARTS") == "first":
        try:
            os.close(os.open(os.environ["GPC_TEST_KILL_MARK"], os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL)
'''


def local_workers(pid: int | None = None) -> list:
    """The worker processes of a local cluster started by process `pid` (default: this one),
    as psutil.Process objects: its multiprocessing children."""
    import psutil

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    found = []
    for child in children:
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "spawn_main" in line or "forkserver" in line:
            found.append(child)
    return found
