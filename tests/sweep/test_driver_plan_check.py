"""The frictions of a first sweep: unwritable outputs refused before any job, paths in a sweep
file relative to the file, `--check` showing the run's own plan and what the store holds,
and deterministic methods planned once per budget."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.core.seeding import key_digest
from harness.execution.store import ResultStore
from harness.plugins.registry import get_method
from harness.sweep.driver import run_sweep
from harness.sweep.execute import failure_record
from harness.sweep.plan import job_key, plan
from harness.sweep.spec import load_sweep, parse_sweep

SMALL = """\
name = "small"
seed = 4
replicates = 2
budgets = [100]
problems = ["onefactor:n=5"]
[methods.rejection-bootstrap]
"""


def write(folder: Path, text: str, name: str = "s.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


# ---- 1. outputs that cannot be written: exit 2, one line, before any job ----------------------
@pytest.mark.parametrize("where", ["proc", "under-a-file"])
def test_an_unwritable_store_is_refused_before_any_job(tmp_path, capsys, no_cluster, where):
    sweep_file = write(tmp_path, SMALL)
    (tmp_path / "blocker").write_text("a regular file, not a folder")
    store = "/proc/gpc-harness-store.sqlite" if where == "proc" else \
        str(tmp_path / "blocker" / "s.sqlite")
    for check in ([], ["--check"]):
        assert main(["sweep", str(sweep_file), "--store", store, "--no-report", *check]) == 2
        err = one_line_error(capsys)
        assert err.startswith("error: store: ") and store in err, err


def test_an_unwritable_report_folder_is_refused_before_any_job(tmp_path, capsys, no_cluster):
    sweep_file = write(tmp_path, SMALL + '\n[output]\nreport = "blocker/report"\n')
    (tmp_path / "blocker").write_text("a regular file, not a folder")
    store = tmp_path / "s.sqlite"
    assert main(["sweep", str(sweep_file), "--store", str(store)]) == 2
    err = one_line_error(capsys)
    assert err.startswith("error: report: ") and str(tmp_path / "blocker" / "report") in err
    assert not store.exists()                    # refused before the store was opened
    # --no-report does not need the report folder
    assert main(["sweep", str(sweep_file), "--store", str(store), "--no-report",
                 "--check"]) == 0


# ---- 2. paths in a sweep file are relative to the file -------------------------------------
def test_paths_in_a_sweep_file_are_relative_to_it(tmp_path, monkeypatch, capsys):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    for name in ("orthant", "other"):
        np.savez(project / "data" / f"{name}.npz", cov=np.array([[1.0, 0.4], [0.4, 1.0]]))
    write(project, """\
        name = "rel"
        budgets = [100]
        problems = ["data/orthant.npz", { file = "data/other.npz", seed = 1 }]
        [methods.rejection-bootstrap]
        [output]
        store = "out/rel.sqlite"
        report = "../reports/rel"
    """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    sweep = load_sweep(project / "s.toml")
    assert sweep.store == project / "out" / "rel.sqlite"
    assert sweep.report == tmp_path / "reports" / "rel"
    data = project / "data"
    assert [p.spec for p in sweep.problems] == [f"{data}/orthant.npz", f"{data}/other.npz:seed=1"]
    # the same jobs and the same store from the sweep file's own folder
    monkeypatch.chdir(project)
    here = load_sweep("s.toml")
    assert here.store.resolve() == sweep.store and here.report.resolve() == sweep.report
    assert [j.job_id for j in plan(here)] == [j.job_id for j in plan(sweep)]
    # the command line's --store stays relative to the working directory
    assert main(["sweep", "s.toml", "--store", "mine.sqlite", "--check"]) == 0
    assert "; store mine.sqlite\n" in capsys.readouterr().out
    # a sweep given as text (no file) keeps paths relative to the working directory
    assert parse_sweep(SMALL + '[output]\nstore = "x/s.sqlite"\n').store == Path("x/s.sqlite")


# ---- 3. --check prints the run's plan and what the store already holds ----------------------
PLANNED = """\
name = "plan"
seed = 2
replicates = 2
budgets = [100]
memory_limit = "10MB"
problems = ["onefactor:n=1000", "linear1d:n_train=8,n_test=3"]
[methods.sov]
[methods.ep]
[methods.rejection-bootstrap]
"""


def fill(store: Path, jobs) -> None:
    with ResultStore(store) as db:
        for job in jobs:
            db.add_record(failure_record(job, "ok", ""))


def folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def test_check_reports_the_plan_of_the_run_and_the_jobs_done(tmp_path, capsys, no_cluster):
    sweep_file = write(tmp_path, PLANNED)
    sweep = load_sweep(sweep_file)
    jobs = plan(sweep)
    # on N = 1000 sov and rejection-bootstrap need more than 10 MB and ep cannot run (a pure
    # orthant problem): 3 of the file's pairs are not planned
    n = len(jobs)
    assert 0 < n < sweep.n_jobs
    store = tmp_path / "out" / "plan.sqlite"
    args = ["sweep", str(sweep_file), "--store", str(store), "--no-report"]

    assert main([*args, "--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"0 done, {n} to run (no store there yet)" in out
    assert not store.parent.exists()            # --check creates nothing
    fill(store, jobs[:3])
    before = folder_state(store.parent)
    assert main([*args, "--check"]) == 0
    check = capsys.readouterr().out.splitlines()
    assert f"3 done, {n - 3} to run" in check
    assert folder_state(store.parent) == before   # read, never written
    # the run prints the same plan (with every job stored, it runs none)
    fill(store, jobs[3:])
    assert main([*args, "--check"]) == 0
    check = capsys.readouterr().out.splitlines()
    assert main(args) == 0
    run = capsys.readouterr().out.splitlines()
    from harness.sweep.driver import plan_lines
    head = plan_lines(sweep, jobs, sweep.memory_limit, store)
    assert head[0] == (f"sweep plan: {n} jobs (2 problems, 3 methods, 1 budgets, 2 replicates; "
                       f"deterministic, 1 replicate: ep); store {store}")
    assert [h.split(" (")[0] for h in head[1:]] == [
        "not planned: sov on onefactor:n=1000",
        "not planned: ep needs data and a kernel; onefactor:n=1000 is a pure orthant problem",
        "not planned: rejection-bootstrap on onefactor:n=1000"]
    assert run[:5] == [*head, f"{n} done, 0 to run"]
    assert check[1:6] == run[:5]


# ---- 4. deterministic methods run once per budget ----------------------------------------
def test_deterministic_methods_run_once_per_budget(monkeypatch):
    text = """\
        seed = 5
        replicates = 3
        budgets = [100, 300]
        problems = ["linear1d:n_train=8,n_test=3"]
        [methods.ep]
        [methods.laplace]
        [methods.rejection-bootstrap]
    """
    sweep = parse_sweep(textwrap.dedent(text), "det.toml")
    jobs = plan(sweep)
    per_method = {m: sorted((j.budget, j.replicate) for j in jobs if j.method == m)
                  for m in ("ep", "laplace", "rejection-bootstrap")}
    assert per_method["ep"] == per_method["laplace"] == [(100, 0), (300, 0)]
    assert len(per_method["rejection-bootstrap"]) == 6
    assert sweep.n_jobs == len(jobs) == 10
    # replicate 0 keeps its job id: stores made with every replicate still match
    ep = next(j for j in jobs if j.method == "ep")
    assert ep.job_id == key_digest(job_key(ep.problem, "ep", ep.settings, ep.budget, 0, 5))
    for name in ("ep", "laplace"):
        cls = get_method(name)
        monkeypatch.setattr(cls, "tags", dataclasses.replace(cls.tags, stochastic=True))
    every = parse_sweep(textwrap.dedent(text), "det.toml")
    assert every.n_jobs == len(plan(every)) == 18
    assert {j.job_id for j in jobs} < {j.job_id for j in plan(every)}
    # the plan says so
    from harness.sweep.driver import plan_lines
    assert "3 replicates; deterministic, 1 replicate: ep, laplace)" in \
        plan_lines(sweep, jobs, None, sweep.store)[0]


def test_run_sweep_api_refuses_an_unwritable_store(tmp_path, no_cluster):
    from harness.core.errors import InputError

    sweep_file = write(tmp_path, SMALL)
    with pytest.raises(InputError, match="/proc/x/s.sqlite"):
        run_sweep(sweep_file, store="/proc/x/s.sqlite", report=False)
