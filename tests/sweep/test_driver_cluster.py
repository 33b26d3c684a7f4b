"""Sweeps against real Dask processes: an existing cluster, a killed worker, a killed client,
resume, and a local cluster with a job that keeps killing its worker."""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from pathlib import Path

import cloudpickle
import pytest
from sweep_helpers import stored_jobs, wait_for
from sweep_helpers import stored_results as results

from harness.cli.main import main
from harness.execution.store import ResultStore
from harness.sweep.execute import failure_record
from harness.sweep.plan import plan
from harness.sweep.spec import load_sweep

SMALL = """\
name = "small"
seed = 3
replicates = 3
budgets = [100, 300]
time_limit = 30
problems = ["onefactor:n=5", "linear1d:n_train=8,n_test=3"]
[methods.rejection-bootstrap]
count = ["soft", "hard"]
populations = 1     # one particle filter: 10 populations of 10 particles are often unreliable
"""

# 32 jobs of about 0.1 s each: long enough to interrupt in the middle, short enough to rerun.
MEDIUM = """\
name = "medium"
seed = 11
replicates = 8
budgets = [8000, 10000]
problems = ["onefactor:n=100"]
[methods.rejection-bootstrap]
count = ["soft", "hard"]
"""

# functions of this module run on workers that cannot import it: send them by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def log_counts(store: Path) -> Counter:
    with ResultStore(store) as db:
        return Counter(e["job_id"] for e in db.job_log())


def _problem_cache_info() -> dict:
    from harness.plugins.specs import make_problem
    return make_problem.cache_info()._asdict()


def test_sweep_on_an_existing_cluster(dask_cluster, tmp_path, capsys):
    sweep_file = write(tmp_path, SMALL, "small")
    store = tmp_path / "small.sqlite"
    args = ["sweep", str(sweep_file), "--scheduler", str(dask_cluster.scheduler_file),
            "--store", str(store), "--no-report"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "0 done, 24 to run" in out and f"scheduler {dask_cluster.address}" in out
    jobs = plan(load_sweep(sweep_file))
    with ResultStore(store) as db:
        records = {r["job_id"]: r for r in db.records()}
        assert set(records) == {j.job_id for j in jobs}
        assert all(r["status"] == "ok" for r in records.values())
        assert all(r["log_marginal_likelihood"] < 0 for r in records.values())
        assert {r["worker"] for r in records.values()} <= set(
            db.metadata()["workers"])     # ran on the cluster's workers
        meta = db.metadata()
        assert meta["sweep_file"] == SMALL and meta["sweep"]["name"] == "small"
        assert {"numpy", "dask", "cpu_model", "blas"} <= set(meta["environment"])
        assert len(meta["workers"]) == 2
        problems = db.problems()
        assert set(problems) == {"onefactor:n=5", "linear1d:n_test=3,n_train=8"}
        assert len(problems["linear1d:n_test=3,n_train=8"]["true_test_probabilities"]) == 3
    # each worker built each problem once and reused it for the other jobs
    with dask_cluster.client() as client:
        caches = client.run(_problem_cache_info)
    assert len(caches) == 2
    assert all(c["misses"] <= 2 for c in caches.values())
    assert sum(c["hits"] for c in caches.values()) >= 24 - 4
    # the address works as well as the scheduler file; everything is already done
    args[3] = dask_cluster.address
    assert main(args) == 0
    assert "24 done, 0 to run" in capsys.readouterr().out
    assert set(log_counts(store).values()) == {1}
    # --rerun-failed reruns exactly the jobs stored without status ok
    with ResultStore(store) as db:
        db.add_record(failure_record(jobs[5], "failed", "KilledWorker: pretend"))
    assert main([*args, "--strict"]) == 1   # a job of the sweep is stored as failed: exit 1
    out = capsys.readouterr().out
    assert "24 done, 0 to run" in out and "not ok: 1 failed (KilledWorker)" in out
    assert main([*args, "--rerun-failed"]) == 0
    assert "23 done, 1 to run" in capsys.readouterr().out
    with ResultStore(store) as db:
        assert db.status_counts() == {"ok": 24}
        assert [e["job_id"] for e in db.job_log()[-2:]] == [jobs[5].job_id] * 2


def test_killed_client_then_resume(dask_cluster, tmp_path, sweep_process, capsys):
    sweep_file = write(tmp_path, MEDIUM, "medium")
    total = len(plan(load_sweep(sweep_file)))
    store = tmp_path / "interrupted.sqlite"
    common = ["--scheduler", str(dask_cluster.scheduler_file), "--no-report"]
    client = sweep_process(str(sweep_file), "--store", str(store), *common)
    wait_for(lambda: stored_jobs(store) >= 3 or client.poll() is not None, 120,
             "the first results")
    os.killpg(client.pid, signal.SIGKILL)
    client.wait(30)
    done_before = results(store)               # the store is readable after a SIGKILL
    assert 3 <= len(done_before) < total, "the sweep ended before it could be interrupted"

    assert main(["sweep", str(sweep_file), "--store", str(store), *common]) == 0
    assert f"{len(done_before)} done, {total - len(done_before)} to run" in \
        capsys.readouterr().out
    counts = log_counts(store)
    assert len(counts) == total and set(counts.values()) == {1}   # none twice, none missing
    resumed = results(store)
    assert all(resumed[k] == v for k, v in done_before.items())

    reference = tmp_path / "uninterrupted.sqlite"
    assert main(["sweep", str(sweep_file), "--store", str(reference), *common]) == 0
    assert results(reference) == resumed
    assert all(r["status"] == "ok" for r in resumed.values())


def test_killed_worker_mid_sweep(own_dask_cluster, tmp_path, sweep_process):
    sweep_file = write(tmp_path, MEDIUM, "medium")
    total = len(plan(load_sweep(sweep_file)))
    store = tmp_path / "medium.sqlite"
    client = sweep_process(str(sweep_file), "--store", str(store), "--scheduler",
                           own_dask_cluster.address, "--no-report")
    wait_for(lambda: stored_jobs(store) >= 2 or client.poll() is not None, 120,
             "the first results")
    victim = own_dask_cluster.workers[0]
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    killed_at = stored_jobs(store)
    assert killed_at < total, "the sweep ended before a worker could be killed"
    assert client.wait(240) == 0, (tmp_path / "sweep.log").read_text()
    counts = log_counts(store)
    assert len(counts) == total and set(counts.values()) == {1}   # every job stored once
    assert all(r["status"] == "ok" for r in results(store).values())
    assert own_dask_cluster.n_connected() == 1


def test_sweep_over_tls(tls_dask_cluster, tmp_path, capsys):
    sweep_file = write(tmp_path, SMALL, "small")
    store = tmp_path / "tls.sqlite"
    tls = tls_dask_cluster.tls
    address = tls_dask_cluster.address
    assert address.startswith("tls://127.0.0.1:")
    assert main(["sweep", str(sweep_file), "--scheduler", address, "--store", str(store),
                 "--tls-ca-file", tls["ca"], "--tls-cert", tls["cert"], "--tls-key", tls["key"],
                 "--no-report"]) == 0
    assert f"scheduler {address}" in capsys.readouterr().out
    with ResultStore(store) as db:
        assert db.status_counts() == {"ok": 24}
    # a certificate option alone is an input error, not a hang
    assert main(["sweep", str(sweep_file), "--scheduler", address, "--store", str(store),
                 "--tls-ca-file", tls["ca"], "--no-report"]) == 2
    assert "--tls-cert: missing" in capsys.readouterr().err


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_ctrl_c_stops_the_local_cluster_and_keeps_the_store(tmp_path, sweep_process):
    sweep_file = write(tmp_path, MEDIUM, "medium")
    store = tmp_path / "medium.sqlite"
    # a child inherits an ignored SIGINT (pytest started in the background by a non-interactive
    # shell): the sweep gets the default, as one started from a terminal has
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        client = sweep_process(str(sweep_file), "--store", str(store), "--workers", "1",
                               "--no-report")
    finally:
        signal.signal(signal.SIGINT, previous)
    wait_for(lambda: stored_jobs(store) >= 1 or client.poll() is not None, 120,
             "the first result")
    # as a terminal's Ctrl-C does: SIGINT to the whole foreground process group, the local
    # cluster's worker processes included
    os.killpg(client.pid, signal.SIGINT)
    assert client.wait(60) == 130
    log = (tmp_path / "sweep.log").read_text()
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log
    done = len(results(store))
    assert 1 <= done < 32
    assert f"interrupted: {done} done, {32 - done} to run; rerun to resume" in log, log
    # the local cluster's worker processes went with it
    wait_for(lambda: not _group_alive(client.pid), 30, "the worker processes to exit")


# ---- the local cluster, and a job that keeps killing its worker ------------------------------
def crash_on_budget_300(job: dict) -> dict:
    """A worker-side function that kills its own worker process for one job, and cannot
    start another one (as if its method plugin were missing on the worker)."""
    from harness.sweep.execute import run_job

    if job["budget"] == 300 and job["replicate"] == 0 and job["settings"]["count"] == "hard":
        if job["problem"].startswith("onefactor"):
            os._exit(3)
        return run_job({**job, "method": "not-installed-here"})
    return run_job(job)


@pytest.mark.slow
def test_local_cluster_and_a_job_that_kills_its_worker(tmp_path, capsys):
    import dask
    import distributed  # noqa: F401 - its config defaults must exist before config.set

    from harness.sweep.driver import run_sweep
    sweep_file = write(tmp_path, SMALL, "small")
    store = tmp_path / "local.sqlite"
    # one task in flight per worker thread, so the crash takes no innocent neighbour with it
    with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
        outcome = run_sweep(sweep_file, store=store, workers=1, report=False,
                            fn=crash_on_budget_300, allowed_failures=0)
    assert outcome.complete and outcome.stored == 24
    assert outcome.statuses == Counter({"ok": 22, "failed": 1, "error": 1})
    out = capsys.readouterr().out
    assert "local cluster, 1 worker process × 1 thread on 127.0.0.1" in out
    with ResultStore(store) as db:
        bad = {r["status"]: r for r in db.records() if r["status"] != "ok"}
    assert bad["failed"]["reason"].startswith("worker died: ")
    assert "killed from outside, a crash or out of memory" in bad["failed"]["reason"]
    assert "--rerun-failed" in bad["failed"]["reason"]
    assert bad["failed"]["problem"] == "onefactor:n=5"
    assert "unknown method 'not-installed-here'" in bad["error"]["reason"]
    for r in bad.values():   # completed by the client: named like every other record
        assert r["budget"] == 300 and r["method"] == "rejection-bootstrap[count=hard,populations=1]"
    assert bad["error"]["problem"] == "linear1d:n_test=3,n_train=8"
