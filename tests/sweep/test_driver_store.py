"""A sweep on a store that fills up: exit 2 with one line, the finished results held in a side
file, and a rerun after freeing space that imports them and runs only the rest; and two real
sweep clients on one store."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from sweep_helpers import wait_for

from harness.cli.main import main
from harness.execution.store import ResultStore, held_paths
from harness.execution.store_lock import lock_path
from harness.sweep.plan import plan
from harness.sweep.spec import load_sweep

SWEEP = """\
name = "full"
seed = 5
replicates = 3
budgets = [100, 200]
problems = ["onefactor:n=5", "linear1d:n_train=8,n_test=3"]
[methods.rejection-bootstrap]
count = ["soft", "hard"]
populations = 1     # one particle filter: 10 populations of 10 particles are often unreliable
"""


@pytest.fixture
def threads_cluster(monkeypatch):
    """The sweep's cluster is an in-process one (threads): fast to start."""
    from distributed import Client

    from harness.execution import cluster

    client = Client(processes=False, n_workers=1, threads_per_worker=2,
                    dashboard_address=":0", set_as_default=False)

    @contextmanager
    def connect(*args, **kwargs):
        yield cluster.Connection(client, "in-process test cluster", None, local=False)

    monkeypatch.setattr(cluster, "connect", connect)
    try:
        yield client
    finally:
        client.close()


def _fill_after(monkeypatch, n: int) -> None:
    """From the n-th stored result on, the store's file cannot grow (SQLite max_page_count):
    as a full disk, SQLite fails the write with SQLITE_FULL."""
    real = ResultStore.add_record
    calls = []

    def add_record(self, record):
        calls.append(record["job_id"])
        if len(calls) == n:
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            self._db.execute(f"PRAGMA max_page_count = {pages}")
        return real(self, record)

    monkeypatch.setattr(ResultStore, "add_record", add_record)


def test_a_full_disk_ends_the_sweep_and_a_rerun_completes_without_recomputing(
        tmp_path, monkeypatch, capsys, threads_cluster):
    sweep_file = tmp_path / "full.toml"
    sweep_file.write_text(SWEEP)
    total = len(plan(load_sweep(sweep_file)))
    store = tmp_path / "full.sqlite"
    run = ["sweep", str(sweep_file), "--store", str(store), "--no-report"]
    with monkeypatch.context() as patch:
        _fill_after(patch, 4)
        assert main(run) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    held = held_paths(store)[0]
    assert err.startswith(f"error: store: cannot write {store}: the disk is full"), err
    assert f"held in {held}" in err and "run the same command again" in err, err
    assert "Traceback" not in err
    held_records = [json.loads(line) for line in held.read_text().splitlines()]
    with ResultStore(store, read_only=True) as db:
        stored = {r["job_id"]: r for r in db.records()}
    assert len(held_records) >= 1 and len(stored) >= 3
    assert not {r["job_id"] for r in held_records} & set(stored)
    assert not lock_path(store).exists()

    # --check counts the held results as done, as the run will
    done = len(stored) + len(held_records)
    assert main([*run, "--check"]) == 0
    assert f"{done} done, {total - done} to run" in capsys.readouterr().out
    # space again: the held results are imported first, only the rest runs
    assert main(run) == 0
    out = capsys.readouterr().out
    assert f"imported {len(held_records)} results held back by a failed write" in out, out
    assert f"{done} done, {total - done} to run" in out, out
    assert not held.exists()
    with ResultStore(store, read_only=True) as db:
        final = {r["job_id"]: r for r in db.records()}
        log = [e["job_id"] for e in db.job_log()]
    assert len(final) == total and all(r["status"] == "ok" for r in final.values())
    assert len(log) == total                                     # each job stored once
    for r in [*held_records, *stored.values()]:                  # not recomputed
        assert final[r["job_id"]] == r


@pytest.mark.slow
def test_two_sweep_clients_on_one_store(tmp_path, sweep_process, capsys):
    """Two real `python -m harness sweep` processes on one store: the second is refused
    while the first runs (it runs every job once); readers read beside it."""
    sweep_file = tmp_path / "two.toml"
    sweep_file.write_text(SWEEP.replace("budgets = [100, 200]", "budgets = [30000, 40000]"))
    total = len(plan(load_sweep(sweep_file)))
    store = tmp_path / "two.sqlite"
    first = sweep_process(str(sweep_file), "--store", str(store), "--workers", "1",
                          "--no-report")
    wait_for(lambda: lock_path(store).exists() and lock_path(store).read_text()
             or first.poll() is not None, 120, "the first client's lock")
    assert first.poll() is None, (tmp_path / "sweep.log").read_text()
    assert main(["sweep", str(sweep_file), "--store", str(store), "--no-report"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"is being written by another sweep (pid {first.pid} on " in err, err
    assert main(["sweep", str(sweep_file), "--store", str(store), "--check"]) == 0
    assert first.wait(240) == 0, (tmp_path / "sweep.log").read_text()
    with ResultStore(store, read_only=True) as db:
        log = [e["job_id"] for e in db.job_log()]
    assert len(log) == len(set(log)) == total                  # nothing computed twice
    assert not Path(lock_path(store)).exists()
