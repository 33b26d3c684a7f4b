"""Tests never write into the checkout or the user's home (tests/helpers/checkout_guard.py,
applied by tests/conftest.py): each runs in a folder of its own with a temporary HOME, the
guard refuses a write into either, and the session's end compares the checkout's result paths
(results/, reports/, results/.last-store, stores, new entries at its top) with its start."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from checkout_guard import GUARD, REAL_HOME, ROOT, Guard, changes, traced_to, watched

from harness.cli.main import main

LAST_STORE = ROOT / "results" / ".last-store"
SMALL = """\
name = "small"
budgets = [100]
problems = ["linear1d:n_train=8,n_test=3"]
[methods.ep]
"""


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def test_a_test_runs_in_a_folder_of_its_own_with_a_temporary_home(tmp_path):
    assert Path.cwd() == tmp_path.with_name(f"{tmp_path.name}-cwd")
    assert not any(Path.cwd().iterdir()) and not any(tmp_path.iterdir())
    assert not _inside(Path.cwd(), ROOT)
    home = Path.home()
    assert home != REAL_HOME and not _inside(home, ROOT) and not _inside(home, REAL_HOME)
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        assert _inside(Path(os.environ[name]), home), name
    out = subprocess.run([sys.executable, "-c", "import os, pathlib; print(os.getcwd()); "
                          "print(pathlib.Path.home())"], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:2] == [str(Path.cwd()), str(home)]   # subprocesses too


def test_a_refused_sweep_on_a_fifo_leaves_the_checkouts_last_store_alone(tmp_path, capsys,
                                                                          no_cluster):
    """The reported case: after the suite, results/.last-store in the checkout named a FIFO
    that a test of a refused store had made (`sweep` notes its store where it runs)."""
    before = LAST_STORE.read_bytes() if LAST_STORE.exists() else None
    fifo = tmp_path / "s.sqlite"
    os.mkfifo(fifo)
    sweep_file = tmp_path / "small.toml"
    sweep_file.write_text(SMALL)
    assert main(["sweep", str(sweep_file), "--store", str(fifo), "--no-report"]) == 2
    assert "a FIFO" in capsys.readouterr().err
    here = Path("results/.last-store")
    assert not here.exists() or _inside(here, tmp_path.parent)   # if noted at all: here
    after = LAST_STORE.read_bytes() if LAST_STORE.exists() else None
    assert str(fifo).encode() not in (after or b"")
    if after != before:   # another process working in the checkout may note its own store
        assert str(tmp_path.parent).encode() not in after
    assert GUARD.refused == []


@pytest.mark.parametrize("where", ["checkout", "home"])
def test_the_guard_refuses_a_write_into_the_checkout_or_the_home(where):
    folder = ROOT / "results" if where == "checkout" else REAL_HOME
    probe = folder / f".guard-probe-{os.getpid()}"
    attempts = {"open": lambda: open(probe, "w").close(),
                "write_text": lambda: probe.write_text("x"),
                "mkdir": lambda: probe.mkdir(),
                "sqlite": lambda: sqlite3.connect(probe).close()}
    try:
        for name, attempt in attempts.items():
            with pytest.raises(PermissionError, match=f"may not write into the {where}"):
                attempt()
            assert not probe.exists(), name
    finally:
        refused = GUARD.take()      # taken: this test's refusals are the point, not a failure
        if probe.is_dir():
            probe.rmdir()
        elif probe.exists():
            probe.unlink()
    assert len(refused) == len(attempts) and all(str(probe) in r for r in refused), refused


def test_what_the_guard_counts_as_a_write(tmp_path):
    guard = Guard(tmp_path / "repo", tmp_path / "home")
    guard.arm(allowed=[tmp_path / "repo" / "basetemp"])
    repo = tmp_path / "repo"
    (repo / "results").mkdir(parents=True)
    assert guard.refusal(repo / "results" / "x.sqlite") == "the checkout"
    assert guard.refusal(tmp_path / "home" / ".config" / "x") == "the home"
    for allowed in (repo / "harness" / "__pycache__" / "m.pyc", repo / ".hypothesis" / "x",
                    tmp_path / "home" / ".cache" / "pip" / "x", repo / "basetemp" / "t" / "x",
                    tmp_path / "elsewhere"):
        assert guard.refusal(allowed) is None, allowed
    assert guard.written("open", (str(repo / "a"), "r", 0)) == []
    assert guard.written("open", (str(repo / "a"), "a", 0)) == [str(repo / "a")]
    assert guard.written("open", (str(repo / "a"), None, os.O_CREAT | os.O_WRONLY)) != []
    assert guard.written("open", (str(repo), "w+", 0)) != []       # an anonymous temporary file
    assert guard.written("os.mkdir", (str(repo / "results"), 0o777, -1)) == []   # already there
    assert guard.written("os.rmdir", (str(repo / "gone"), -1)) == []              # nothing there
    assert guard.written("os.rename", ("a", "b", -1, -1)) == ["a", "b"]
    assert guard.written("sqlite3.connect", (":memory:",)) == []
    assert guard.written("sqlite3.connect", (f"file:{repo}/s.sqlite?mode=ro",)) == []
    assert guard.written("sqlite3.connect", (str(repo / "s.sqlite"),)) == [str(repo / "s.sqlite")]
    assert Guard(tmp_path / "repo", Path("/")).protected == [(str(repo), "the checkout")]


def test_the_session_check_sees_the_result_paths_and_traces_its_own(tmp_path):
    root, session = tmp_path / "repo", tmp_path / "pytest-7"
    (root / "results").mkdir(parents=True)
    (root / "reports").mkdir()
    (root / "README.md").write_text("read me")
    (root / "harness").mkdir()
    (root / "results" / ".last-store").write_text("/somewhere/quick.sqlite\n")
    before = watched(root)
    (root / "README.md").write_text("edited by someone at the same time")   # not a result
    (root / "harness" / "__pycache__").mkdir()
    (root / "__pycache__").mkdir()
    (root / "results" / ".last-store").write_text(f"{session}/popen-gw0/t0/fifo.sqlite\n")
    (root / "reports" / "quick").mkdir()
    (root / "reports" / "quick" / "report.html").write_text("<html>")
    (root / "stray.sqlite").write_bytes(b"SQLite format 3\0")
    (root / "dask-worker-space").mkdir()
    found = changes(before, watched(root))
    assert found == ["new dask-worker-space", "new reports/quick", "new reports/quick/report.html",
                     f"changed results/.last-store (now {session}/popen-gw0/t0/fifo.sqlite)",
                     "new stray.sqlite"]
    traced = [c for c in found if traced_to(c, session, root)]
    assert traced == [found[3]]   # names the session's folder; the rest may be anyone's
    assert changes(before, before) == []
