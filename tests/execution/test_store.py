"""The results store under faults, on real SQLite files: damaged stores refused by every command
without a byte written (and salvaged by export), a full disk (SQLite's max_page_count) ending in
StoreFull with nothing committed half, and the writer's lock against a second client in another
process (and taken over from a dead one)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from store_helpers import one_line

from harness.cli.args import LAST_STORE
from harness.cli.main import main
from harness.execution.store import ResultStore, StoreDamaged, StoreFull, damage, held_paths
from harness.execution.store_lock import StoreBusy, StoreLock, lock_path
from harness.sweep.execute import run_job
from harness.sweep.plan import plan
from harness.sweep.spec import parse_sweep

SMALL = """\
name = "small"
seed = 4
replicates = 2
budgets = [100]
problems = ["onefactor:n=5"]
[methods.rejection-bootstrap]
"""
N_JOBS = 60          # enough pages (one or two records a page) to damage the middle of


@pytest.fixture(scope="module")
def clean_store(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A store holding SMALL's 2 jobs and 58 more records like them (job ids of their own)."""
    sweep = parse_sweep(SMALL, "small.toml")
    first = [run_job(job.spec()) for job in plan(sweep)]
    records = first + [{**first[i % 2], "job_id": f"{i:012x}", "replicate": i}
                       for i in range(2, N_JOBS)]
    path = tmp_path_factory.mktemp("clean") / "s.sqlite"
    with ResultStore(path) as store:
        store.add_problem({"name": first[0]["problem"], "n_train": 5})
        store.set_metadata("sweep", {"name": "small"})
        for record in records:
            store.add_record(record)
    return path, records


def _garbage(path: Path) -> None:
    """Overwrite three whole pages in the middle of the file with random bytes."""
    pages = path.stat().st_size // 4096
    with open(path, "r+b") as f:
        f.seek(pages // 2 * 4096)
        f.write(random.Random(17).randbytes(3 * 4096))


DAMAGE = {
    "truncated": lambda p: os.truncate(p, p.stat().st_size // 2),
    "garbage": _garbage,
    "text": lambda p: p.write_text("job_id,status\nabc,ok\n"),
    "empty": lambda p: os.truncate(p, 0),
}


@pytest.fixture(params=list(DAMAGE))
def damaged(request, clean_store, tmp_path) -> Path:
    path = tmp_path / "damaged.sqlite"
    path.write_bytes(clean_store[0].read_bytes())
    DAMAGE[request.param](path)
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- 1. integrity: a damaged store is refused, untouched; export salvages it -----------------
@pytest.mark.parametrize("command", ["sweep", "check", "report", "load_results"])
def test_a_damaged_store_is_refused_and_not_written(damaged, command, tmp_path, capsys,
                                                    no_cluster):
    sweep_file = tmp_path / "small.toml"
    sweep_file.write_text(SMALL)
    before = _digest(damaged)
    args = {"sweep": ["sweep", str(sweep_file), "--store", str(damaged), "--no-report"],
            "check": ["sweep", str(sweep_file), "--store", str(damaged), "--no-report",
                      "--check"],
            "report": ["report", "--store", str(damaged), "--out", str(tmp_path / "r"),
                       "--no-pdf"], "load_results": []}[command]
    if command == "load_results":
        import harness
        with pytest.raises(StoreDamaged) as info:
            harness.load_results(damaged)
        err = f"error: {info.value}"
    else:
        assert main(args) == 2
        err = one_line(capsys)
    assert err.startswith(f"error: store: {damaged} is damaged"), err
    for way_out in ("restore it", "--store", f"python -m harness export --store {damaged}"):
        assert way_out in err, err
    assert _digest(damaged) == before                        # not a byte written
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("damaged")) == \
        ["damaged.sqlite"]                                    # no -wal, -shm or -lock left


def test_export_salvages_the_readable_jobs_of_a_damaged_store(damaged, clean_store, tmp_path,
                                                              capsys):
    before = _digest(damaged)
    out = tmp_path / "rows.csv"
    code = main(["export", "--store", str(damaged), "--out", str(out)])
    if damaged.stat().st_size == 0 or not damaged.read_bytes().startswith(b"SQLite"):
        assert code == 2 and not out.exists()                 # nothing can be read
        assert f"{damaged}" in one_line(capsys)
    else:
        assert code == 1
        err = one_line(capsys)
        assert "those still readable from the damaged store" in err, err
        import csv
        with open(out, newline="") as f:
            rows = {r["job_id"]: r for r in csv.DictReader(f)}
        originals = {r["job_id"]: r for r in clean_store[1]}
        assert 10 <= len(rows) < N_JOBS                       # kept both sides of the damage
        for job_id, row in rows.items():                      # exactly what was stored
            assert float(row["log_marginal_likelihood"]) == \
                originals[job_id]["log_marginal_likelihood"]
    assert _digest(damaged) == before


def test_damage_inside_a_record_is_one_line_not_a_traceback(clean_store, tmp_path, capsys):
    """Bytes changed inside a record's text pass integrity_check (no checksums in SQLite) but
    not the store's own check at open: refused like any damage, and export keeps the other
    rows."""
    path = tmp_path / "s.sqlite"
    data = bytearray(clean_store[0].read_bytes())
    at = data.index(b'"job_id": "00000000001e"')
    data[at + 2:at + 8] = b"\xff\xfe\x00\x80\xff\xfe"
    path.write_bytes(bytes(data))
    assert "decode" in damage(path)
    assert main(["report", "--store", str(path), "--out", str(tmp_path / "r"), "--no-pdf"]) == 2
    assert f"{path} is damaged" in one_line(capsys)
    assert main(["export", "--store", str(path), "--out", str(tmp_path / "rows.csv")]) == 1
    assert "still readable" in one_line(capsys)
    assert len((tmp_path / "rows.csv").read_text().strip().splitlines()) == N_JOBS  # 59 + header


def test_a_sound_store_and_a_new_one_pass(clean_store, tmp_path):
    assert damage(clean_store[0]) is None
    with ResultStore(clean_store[0], read_only=True) as store:
        assert len(store.records()) == N_JOBS
    new = tmp_path / "sub" / "new.sqlite"
    with ResultStore(new) as store:       # built aside and renamed into place
        assert store.records() == []
    assert damage(new) is None
    assert sorted(p.name for p in new.parent.iterdir()) == ["new.sqlite"]


# ---- 2. full disk --------------------------------------------------------------------------
def test_a_full_disk_raises_store_full_and_keeps_what_was_stored(clean_store, tmp_path):
    path = tmp_path / "s.sqlite"
    first, records = clean_store[1][:10], clean_store[1][10:]
    with ResultStore(path) as store:
        for r in first:
            store.add_record(r)
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")     # the disk is now full
        with pytest.raises(StoreFull) as info:
            for r in records:
                store.add_record(r)
        assert str(info.value).startswith(f"store: cannot write {path}: the disk is full")
        held = store.hold(records)
        assert held == held_paths(path)[0]
    with ResultStore(path) as store:      # space again: the held records are imported once
        n_before = len(store.job_ids())
        assert 10 <= n_before < N_JOBS
        assert store.import_held() == (N_JOBS - n_before, [held])
        assert store.import_held() == (0, [])
        assert len(store.records()) == N_JOBS
        assert not held.exists()


def test_held_records_go_to_the_temporary_folder_when_the_disk_is_full_too(
        clean_store, tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    beside, elsewhere = held_paths(path)
    real_fsync = os.fsync
    calls = []

    def fsync(fd):                         # the first side file cannot be written either
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        return real_fsync(fd)

    try:
        with ResultStore(path) as store:
            monkeypatch.setattr(os, "fsync", fsync)
            assert store.hold(clean_store[1][:3]) == elsewhere
            monkeypatch.undo()
            assert not beside.exists()         # no empty or partial file left beside
        with ResultStore(path) as store:
            assert store.import_held() == (3, [elsewhere])
            assert len(store.job_ids()) == 3
    finally:
        elsewhere.unlink(missing_ok=True)


def test_a_held_line_cut_short_is_skipped(clean_store, tmp_path):
    path = tmp_path / "s.sqlite"
    held = held_paths(path)[0]
    held.parent.mkdir(parents=True, exist_ok=True)
    whole = json.dumps(clean_store[1][0])
    held.write_text(whole + "\n" + whole[:100])           # the disk filled mid-line
    with ResultStore(path) as store:
        assert store.import_held() == (1, [held])
        assert store.job_ids() == {clean_store[1][0]["job_id"]}


# ---- 3. one writer: a second client is refused; a dead one's lock is taken over ------------
HOLDER = textwrap.dedent("""\
    import sys
    from harness.execution.store import ResultStore
    store = ResultStore(sys.argv[1])
    print("holding", flush=True)
    sys.stdin.read()
""")


def _hold(store: Path) -> subprocess.Popen:
    """Another process with the store open for writing, as a sweep client has it."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_a_second_client_is_refused_readers_are_not_a_dead_ones_lock_is_taken_over(
        clean_store, tmp_path, capsys, no_cluster):
    sweep_file = tmp_path / "small.toml"
    sweep_file.write_text(SMALL)
    store = tmp_path / "s.sqlite"
    with ResultStore(store) as db:            # every job of SMALL stored: a run needs no cluster
        for r in clean_store[1][:2]:
            db.add_record(r)
    holder = _hold(store)
    try:
        run = ["sweep", str(sweep_file), "--store", str(store), "--no-report"]
        before = _digest(store)
        assert main(run) == 2
        err = one_line(capsys)
        assert err.startswith(f"error: store: {store} is being written by another sweep "
                              f"(pid {holder.pid} on {socket.gethostname()} since "), err
        assert not LAST_STORE.exists()        # a refused sweep is not remembered for report
        assert "wait for it to finish, or give another --store" in err
        with pytest.raises(StoreBusy):
            ResultStore(store)
        assert _digest(store) == before
        # readers are not blocked
        assert main([*run, "--check"]) == 0
        assert "2 done, 0 to run" in capsys.readouterr().out
        assert main(["export", "--store", str(store), "--out", str(tmp_path / "rows.csv")]) == 0
        import harness
        assert len(harness.load_results(store)) == 2
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(30)
    assert lock_path(store).exists()          # the dead client's lock file, with its name
    capsys.readouterr()
    assert main(run) == 0
    out = capsys.readouterr().out
    assert f"took over the store's writer lock from pid {holder.pid}" in out, out
    assert not lock_path(store).exists()      # a clean end leaves no lock file
    assert LAST_STORE.read_text() == f"{store}\n"     # the sweep that ran is remembered


def test_the_lock_is_shared_within_a_process(tmp_path):
    store = tmp_path / "s.sqlite"
    first = StoreLock(store)
    second = StoreLock(store)                 # POSIX locks belong to the process
    first.release()
    assert lock_path(store).exists()          # still held by `second`
    second.release()
    assert not lock_path(store).exists()
    again = StoreLock(store)
    assert again.took_over() is None          # released cleanly: nothing to take over
    again.release()
