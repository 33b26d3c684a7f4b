"""The local cluster under faults, on real worker processes: a worker killed while the
cluster starts (Dask: "Nanny failed to start"), and workers that keep dying (their nannies
give up). The sweep runs in this process; its workers are this process's children."""

from __future__ import annotations

import io
import threading
import time
from collections import Counter

import dask
import distributed  # noqa: F401 - its config defaults must exist before config.set
import psutil
import pytest
from sweep_helpers import (
    KILLER,
    error_lines,
    job_log,
    local_workers,
    slow_sweep,
    stored_jobs,
    wait_for,
)

from harness.cli.main import main
from harness.sweep.driver import run_sweep


@pytest.mark.slow   # three starts of a local cluster (~10 s on an idle 2-core machine)
@pytest.mark.parametrize("which", ["first", "all"])
def test_a_worker_killed_while_the_local_cluster_starts(tmp_path, monkeypatch, capfd, which):
    """One worker process killed as it starts: the cluster is started again and the sweep
    finishes (a note says so). Every worker killed as it starts: after START_ATTEMPTS starts,
    one line and exit 3, nothing run. Before: a RuntimeError traceback, exit 1."""
    from harness.execution import cluster

    attempts = getattr(cluster, "START_ATTEMPTS", 3)   # (getattr: the test runs before it too)
    (tmp_path / "killer.py").write_text(KILLER)
    monkeypatch.setenv("GPC_TEST_KILL_STARTS", which)
    monkeypatch.setenv("GPC_TEST_KILL_MARK", str(tmp_path / "killed-once"))
    sweep_file = slow_sweep(tmp_path, "[1]", 4)
    store = tmp_path / "s.sqlite"
    with dask.config.set({"distributed.worker.preload": [str(tmp_path / "killer.py")]}):
        rc = main(["sweep", str(sweep_file), "--workers", "2", "--store", str(store),
                   "--no-report"])
    err = capfd.readouterr().err
    assert "Traceback" not in err, err
    notes = [line for line in err.splitlines() if line.startswith("note: the local cluster")]
    assert notes, err
    assert notes[0].startswith("note: the local cluster did not start (RuntimeError: "
                                         "Nanny failed to start")
    assert notes[0].endswith(f"starting it again (2 of {attempts})")
    if which == "first":
        assert rc == 0, err
        assert len(notes) == 1 and error_lines(err) == []
        assert set(job_log(store).values()) == {1} and len(job_log(store)) == 4
    else:
        assert rc == 3, err
        assert len(notes) == attempts - 1
        assert error_lines(err) == [err.rstrip().splitlines()[-1]] == [
            f"error: the local cluster did not start in {attempts} attempts "
            f"(RuntimeError: Nanny failed to start worker process: its worker processes die "
            f"while starting: killed? out of memory?); run the same command to finish the "
            f"other 4 jobs (none was done)"]
        assert stored_jobs(store) == 0


def kill_every_new_worker(stop: threading.Event, killed: list[int]) -> None:
    """Kill each worker process of the local cluster as soon as it is seen (about every
    0.05 s), so that a nanny's new worker dies while starting and the nanny gives up."""
    while not stop.is_set():
        for process in local_workers():
            try:
                process.kill()
                killed.append(process.pid)
            except psutil.Error:
                pass
        stop.wait(0.05)


@pytest.mark.slow   # a local cluster's start, a few restarts (~15 s on an idle 2-core machine)
@pytest.mark.parametrize("window", [4.0, None], ids=["for-4-s", "for-good"])
def test_workers_that_keep_dying_are_restarted_or_the_sweep_ends_with_the_reason(
        tmp_path, monkeypatch, window):
    """Every worker process killed as soon as it appears, from the first stored result on:
    the local cluster drops the nannies whose worker does not come back within Dask's
    distributed.deploy.lost-worker-timeout (15 s; here 1 s), and the sweep starts new ones.
    Killed for 4 s: the sweep then finishes, every job stored once (before: no worker came
    back, the sweep waited no_workers_timeout, here 60 s). For good: it ends after
    LOCAL_RESTARTS (here 2) rounds of restarts with the reason, exit 3, long before
    no_workers_timeout."""
    from harness.execution import cluster

    monkeypatch.setattr(cluster, "LOCAL_RESTARTS", 2 if window is None else 6, raising=False)
    sweep_file = slow_sweep(tmp_path, "[5]", 8, extra="no_workers_timeout = 60")
    store = tmp_path / "s.sqlite"
    stop, killed = threading.Event(), []

    def chaos():
        wait_for(lambda: stored_jobs(store) >= 1 or stop.is_set(), 120, "a first result")
        started = time.monotonic()
        killer = threading.Thread(target=kill_every_new_worker, args=(stop, killed))
        killer.start()
        stop.wait(window)
        stop.set()
        killer.join()
        kills.append(time.monotonic() - started)

    kills: list[float] = []
    thread = threading.Thread(target=chaos)
    thread.start()
    out, err = io.StringIO(), io.StringIO()
    try:
        with dask.config.set({"distributed.deploy.lost-worker-timeout": "1s"}):
            outcome = run_sweep(sweep_file, store=store, workers=2, report=False, out=out,
                                err=err, allowed_failures=20)
    finally:
        stop.set()
        thread.join()
    text = err.getvalue()
    assert killed, "nothing was killed"
    restarts = [line for line in text.splitlines() if line.startswith("note: restarted")]
    assert restarts, text                  # the nannies gave up, and were replaced
    assert "Traceback" not in text
    if window is not None:
        assert outcome.exit_code == 0, text
        assert outcome.statuses == Counter({"ok": outcome.stored})
        assert len(job_log(store)) == 8 and set(job_log(store).values()) == {1}
    else:
        assert outcome.exit_code == 3 and outcome.elapsed < 60, text
        assert outcome.lost.startswith("the local cluster's workers keep dying: their nannies "
                                       "gave up"), outcome.lost
        assert "in 2 rounds" in outcome.lost
        assert set(job_log(store).values()) <= {1}
