"""Sweeps plan only the jobs whose memory estimate fits a worker (harness.model.footprint): the
sweep file's memory_limit, else the workers' own memory_limit; --check says the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_helpers import DaskProcesses

from harness.cli.main import main
from harness.execution.store import ResultStore
from harness.sweep.plan import plan, skipped_pairs
from harness.sweep.spec import load_sweep, parse_sweep

# sov on N = 1000 needs about 27 MB (three dense 8 N^2 matrices and its points), N = 50 < 1 MB
TEXT = """\
name = "mem"
replicates = 1
budgets = [100]
{limit}
problems = ["onefactor:n=1000", "onefactor:n=50"]
[methods.sov]
"""
LINE = ("not planned: sov on onefactor:n=1000 (N = 1,000) at budget 100 needs 27.5 MB "
        "(dense R 8 MB, dense factor L 8 MB, dense factor L in C order (the walk's) 8 MB, ...); "
        "the workers have ")


def write(tmp_path: Path, limit: str) -> Path:
    path = tmp_path / "mem.toml"
    path.write_text(TEXT.format(limit=limit))
    return path


def test_file_memory_limit_leaves_out_what_cannot_fit(tmp_path, capsys):
    sweep = load_sweep(write(tmp_path, 'memory_limit = "15MB"'))
    assert sweep.memory_limit == 15 * 10**6
    assert [j.problem for j in plan(sweep)] == ["onefactor:n=50"]
    assert [f"not planned: {r}" for r in skipped_pairs(sweep)] == [LINE + "15 MB"]
    # without a limit everything is planned; the file's limit overrides the cluster's
    assert len(plan(sweep, None)) == 1 and len(plan(sweep, 10**12)) == 1
    unlimited = load_sweep(write(tmp_path, ""))
    assert len(plan(unlimited)) == 2 and skipped_pairs(unlimited) == []
    assert [j.problem for j in plan(unlimited, 15 * 10**6)] == ["onefactor:n=50"]
    # --check prints the same line
    assert main(["sweep", str(write(tmp_path, 'memory_limit = "15MB"')), "--check"]) == 0
    assert LINE + "15 MB" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("bad", ['"lots"', "-5", "true"])
def test_bad_memory_limit_is_refused(bad):
    from harness.core.errors import InputError
    with pytest.raises(InputError, match="mem.toml: memory_limit"):
        parse_sweep(TEXT.format(limit=f"memory_limit = {bad}"), "mem.toml")


def test_workers_memory_limit_decides_on_a_real_cluster(tmp_path, capsys, monkeypatch):
    # a 15 MB worker is over its limit from the start: keep Dask from pausing or killing it
    for action in ("TARGET", "SPILL", "PAUSE", "TERMINATE"):
        monkeypatch.setenv(f"DASK_DISTRIBUTED__WORKER__MEMORY__{action}", "False")
    cluster = DaskProcesses(tmp_path / "dask", n_workers=1, memory_limit="15MB")
    try:
        cluster.start()
        sweep_file = write(tmp_path, "")
        store = tmp_path / "mem.sqlite"
        args = ["sweep", str(sweep_file), "--scheduler", str(cluster.scheduler_file),
                "--store", str(store), "--no-report"]
        assert main([*args, "--check"]) == 0
        assert LINE + "15 MB" in capsys.readouterr().out.splitlines()
        assert main(args) == 0
        out = capsys.readouterr().out
        assert LINE + "15 MB" in out.splitlines() and "0 done, 1 to run" in out
        with ResultStore(store) as db:
            records = db.records()
        assert [r["problem"] for r in records] == ["onefactor:n=50"]
        assert records[0]["status"] == "ok" and records[0]["setup_cached"] is False
        assert records[0]["setup_cpu_seconds"] >= 0
    finally:
        cluster.close()
