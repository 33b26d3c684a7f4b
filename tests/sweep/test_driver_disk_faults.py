"""The store's disk under a sweep, for real: a full disk at any moment (the store on a small
tmpfs, filled to a few sizes: the writer's lock, the store's creation, its opening, mid-sweep)
and a write-ahead log made immutable mid-sweep (chattr +i). Each ends in one line and exit 2,
with every finished job kept (in the store, or held beside it for the next run), and the next
run, once the disk takes writes again, finishes the sweep with every job stored once."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading

import pytest
from sweep_helpers import error_lines, job_log, slow_sweep, stored_jobs, wait_for

from harness.cli.main import main

N_JOBS = 8


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (root only), unmounted afterwards; skipped where it cannot be mounted."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = _run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        _run(["umount", "-l", str(disk)])


def fill(disk, leave_kib: int) -> None:
    """Fill the disk but `leave_kib` KiB."""
    free = shutil.disk_usage(disk).free
    with open(disk / "filler", "wb") as f:
        f.write(b"\0" * max(0, free - leave_kib * 1024))


def one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert len(lines) == 1 and err.rstrip().splitlines()[-1] == lines[0], err
    return lines[0]


@pytest.mark.parametrize("free_kib", [0, 40, 120, 250],
                         ids=["lock", "creation", "opening", "mid-sweep"])
def test_a_full_disk_at_any_moment(dask_cluster, small_disk, tmp_path, capfd, free_kib):
    """Before: a traceback from the lock file (0 KiB free), a disk I/O error while opening
    (the shared-memory file cannot grow), orphans of the new store left beside it."""
    sweep_file = slow_sweep(tmp_path, "[1]", N_JOBS)
    store = small_disk / "s.sqlite"
    args = ["sweep", str(sweep_file), "--scheduler", dask_cluster.address, "--store",
            str(store), "--no-report"]
    fill(small_disk, free_kib)
    assert main(args) == 2
    line = one_error_line(capfd.readouterr().err)
    assert line.startswith(f"error: store: cannot write {store}: the disk is full ("), line
    assert line.endswith("run the same command again)") or "imports the held results" in line
    assert not [p.name for p in small_disk.iterdir() if ".new-" in p.name]   # no orphans
    (small_disk / "filler").unlink()
    assert main(args) == 0, capfd.readouterr().err
    counts = job_log(store)
    assert len(counts) == N_JOBS and set(counts.values()) == {1}
    assert sorted(p.name for p in small_disk.iterdir()) <= ["s.sqlite", "s.sqlite-shm",
                                                           "s.sqlite-wal"]


def test_an_immutable_write_ahead_log_mid_sweep(dask_cluster, tmp_path, capfd):
    """chattr +i on the store's -wal once 2 jobs are stored: SQLite's writes fail with a disk
    I/O error. Before: a traceback, exit 1."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    sweep_file = slow_sweep(tmp_path, "[5]", N_JOBS)
    store = tmp_path / "s.sqlite"
    wal = tmp_path / "s.sqlite-wal"
    args = ["sweep", str(sweep_file), "--scheduler", dask_cluster.address, "--store",
            str(store), "--no-report"]
    frozen: list[subprocess.CompletedProcess] = []

    def freeze():
        wait_for(lambda: stored_jobs(store) >= 2, 120, "2 stored jobs")
        frozen.append(_run(["chattr", "+i", str(wal)]))

    thread = threading.Thread(target=freeze)
    thread.start()
    try:
        rc = main(args)
        thread.join()
        if frozen[0].returncode != 0:
            pytest.skip(f"chattr +i does not work here: {frozen[0].stderr.strip()}")
        err = capfd.readouterr().err
        assert rc == 2, err
        line = one_error_line(err)
        assert line.startswith(f"error: store: cannot write {store}: the disk refused a write "
                               f"(disk I/O error): an immutable or read-only s.sqlite or "
                               f"s.sqlite-wal, a read-only or failing disk?; "), line
        assert re.search(r" \(make s\.sqlite and s\.sqlite-wal writable again \(lsattr, "
                         r"chattr -i; mount\) and run the same command again: it imports the "
                         r"held results first and runs the \d+ jobs left\)$", line), line
    finally:
        thread.join()
        _run(["chattr", "-i", str(wal)])
    assert main(args) == 0, capfd.readouterr().err
    counts = job_log(store)
    assert len(counts) == N_JOBS and set(counts.values()) == {1}
