"""Sweeps whose jobs are split into parts (the sweep key `parts`, harness.execution.parts): the key,
its validation, unchanged job ids without it, and against real Dask processes a client killed
midway that resumes by running only the missing parts."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from sweep_helpers import refused, wait_for
from test_driver_store import threads_cluster  # noqa: F401 - a fixture

from harness.cli.main import main
from harness.execution.store import ResultStore
from harness.sweep.plan import plan
from harness.sweep.spec import load_sweep, parse_sweep

TOY_FILE = Path(__file__).parents[1] / "helpers" / "toy_split_method.py"

SPLIT = """\
name = "splitting"
seed = 2
replicates = 2
budgets = [24000]
parts = 6
problems = ["linear1d:n_train=4,n_test=3"]
[methods."toy.py:ToyOrthantMC"]
delay = DELAY
[methods.ep]
"""

BASE = """\
name = "plain"
budgets = [1000, 30000]
problems = ["linear1d:n_train=4,n_test=3", "onefactor:n=5"]
[methods."toy.py:ToyOrthantMC"]
[methods.sov]
[methods.ep]
"""
FIELDS = ("status", "log_marginal_likelihood", "log_marginal_likelihood_se",
          "test_probabilities", "abs_log_error", "diagnostics", "problem", "method", "budget",
          "replicate", "parts", "cpu_seconds")


def sweep_file(tmp_path: Path, text: str, name: str = "s") -> Path:
    shutil.copy(TOY_FILE, tmp_path / "toy.py")
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_parts_key_is_validated():
    base = 'budgets = [100]\nproblems = ["onefactor:n=5"]\n[methods.sov]\n'
    for value, words in (("0", "must be >= 1"), ('"many"', '"auto" or an integer'),
                         ("2.5", "must be an integer"), ("true", "must be an integer")):
        refused(base, ("budgets", f"parts = {value}\nbudgets"), "parts", words)
    assert parse_sweep(f'parts = "auto"\n{base}').parts == "auto"
    assert parse_sweep(base).parts == 1


def test_job_ids_do_not_change_without_parts_and_split_jobs_have_their_own(tmp_path):
    ids = {text: {f"{j.label} {j.problem_name} {j.budget}": j
                  for j in plan(load_sweep(sweep_file(tmp_path, text)))}
           for text in (BASE, "parts = 1\n" + BASE, "parts = 4\n" + BASE,
                        'parts = "auto"\n' + BASE)}
    plain, one, four, auto = ids.values()
    assert {k: j.job_id for k, j in plain.items()} == {k: j.job_id for k, j in one.items()}
    assert not any(j.part_budgets or "parts" in j.key for j in plain.values())
    toy = [k for k in plain if k.startswith(("toy", "sov"))]
    assert len(toy) == 8
    for k in toy:    # methods that split: their own ids and part budgets
        assert four[k].key["parts"] == 4 and four[k].job_id != plain[k].job_id
        assert sum(four[k].part_budgets) == four[k].budget and len(four[k].part_budgets) == 4
    for k in set(plain) - set(toy):   # a method that cannot split: unchanged
        assert four[k].job_id == plain[k].job_id and not four[k].part_budgets
    # auto: from the method, budget and N only; these small jobs are one part (unchanged id)
    assert {k: j.job_id for k, j in auto.items()} == {k: j.job_id for k, j in plain.items()}


def stored_parts(store: Path) -> dict[tuple[str, int], str]:
    """(job id, part) -> stored_at, read beside a writer (empty before the store exists)."""
    if not store.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return {(j, p): t for j, p, t in
                    db.execute("SELECT job_id, part, stored_at FROM parts")}
    except sqlite3.OperationalError:
        return {}


def results(store: Path) -> dict[str, dict]:
    with ResultStore(store, read_only=True) as db:
        return {r["job_id"]: {k: r.get(k) for k in FIELDS if k != "cpu_seconds"}
                for r in db.records()}


def test_killed_client_resumes_with_the_missing_parts(dask_cluster, tmp_path, sweep_process,
                                                      capsys):
    path = sweep_file(tmp_path, SPLIT.replace("DELAY", "0.3"))
    jobs = plan(load_sweep(path))
    split = [j for j in jobs if j.part_budgets]
    assert len(jobs) == 3 and len(split) == 2 and all(len(j.part_budgets) == 6 for j in split)
    store = tmp_path / "split.sqlite"
    common = ["--scheduler", str(dask_cluster.scheduler_file), "--no-report"]
    client = sweep_process(str(path), "--store", str(store), *common)
    wait_for(lambda: len(stored_parts(store)) >= 3 or client.poll() is not None, 120,
             "the first parts")
    os.killpg(client.pid, signal.SIGKILL)
    client.wait(30)
    before = stored_parts(store)
    assert 3 <= len(before) < 12, "the sweep ended before it could be interrupted"

    assert main(["sweep", str(path), "--store", str(store), *common]) == 0
    out = capsys.readouterr().out
    assert f"2 of them in 12 parts: {len(before)} parts stored, {12 - len(before)} to run" \
        in out, out
    after = stored_parts(store)
    assert set(after) == {(j.job_id, k) for j in split for k in range(6)}
    assert all(after[key] == stamp for key, stamp in before.items())   # not rerun
    with ResultStore(store, read_only=True) as db:
        assert Counter(e["job_id"] for e in db.job_log()) == Counter(
            {j.job_id: 1 for j in jobs})                                   # each job once
        records = {r["job_id"]: r for r in db.records()}
        parts_of = {j.job_id: db.parts_of(j.job_id) for j in split}
    for j in split:
        r = records[j.job_id]
        assert r["status"] == "ok" and r["parts"] == 6 and r["diagnostics"]["parts"] == 6
        assert r["cpu_seconds"] == pytest.approx(sum(p["cpu_seconds"] for p in
                                                     parts_of[j.job_id]))
    # the same numbers as a sweep that was never interrupted
    reference = tmp_path / "uninterrupted.sqlite"
    assert main(["sweep", str(path), "--store", str(reference), *common]) == 0
    assert "ran 3 jobs" in capsys.readouterr().out
    assert without_workers(results(reference)) == without_workers(results(store))


def without_workers(records: dict[str, dict]) -> dict[str, dict]:
    """Records without the number of workers that ran their parts (it may differ)."""
    return {k: {**r, "diagnostics": {d: v for d, v in r["diagnostics"].items()
                                     if d != "workers"}} for k, r in records.items()}


def test_rerun_failed_reruns_only_the_failed_parts(dask_cluster, tmp_path, capsys):
    text = SPLIT.replace("DELAY", "0.0\nfail_part_budget = 4001").replace(
        "replicates = 2", "replicates = 1").replace("[24000]", "[24001]")
    path = sweep_file(tmp_path, text)
    store = tmp_path / "failing.sqlite"
    args = ["sweep", str(path), "--store", str(store), "--scheduler",
            str(dask_cluster.scheduler_file), "--no-report"]
    assert main([*args, "--strict"]) == 1        # a job not ok (main's exit codes)
    with ResultStore(store, read_only=True) as db:
        bad = [r for r in db.records() if r["status"] != "ok"]
    assert len(bad) == 1 and bad[0]["reason"].startswith("part 0 of 6: ")
    assert "planted failure" in bad[0]["reason"]
    first = stored_parts(store)
    assert len(first) == 6
    capsys.readouterr()
    assert main([*args, "--rerun-failed"]) == 0  # the planted failure fails again: stored
    assert "1 of them in 6 parts: 5 parts stored, 1 to run" in capsys.readouterr().out
    again = stored_parts(store)
    assert {k for k in first if again[k] != first[k]} == {(bad[0]["job_id"], 0)}


REAL = """\
name = "real"
seed = 4
budgets = [8000]
parts = 4
problems = ["linear1d:n_train=100,n_test=20"]
[methods.sov]
[methods.rejection-bootstrap]
count = "hard"
populations = 2     # 4 parts x 2 populations of 1000 particles
"""


def test_real_methods_in_a_split_sweep(dask_cluster, tmp_path):
    """sov and rejection-bootstrap split by a sweep: each part stored, each record the
    estimate run_split makes from the job's key (in this process), against the truth."""
    from harness.execution.parts import run_split

    path = sweep_file(tmp_path, REAL)
    jobs = plan(load_sweep(path))
    store = tmp_path / "real.sqlite"
    assert main(["sweep", str(path), "--store", str(store), "--scheduler",
                 str(dask_cluster.scheduler_file), "--no-report"]) == 0
    assert len(jobs) == 2 and all(len(j.part_budgets) == 4 for j in jobs)
    with ResultStore(store, read_only=True) as db:
        for job in jobs:
            record = next(r for r in db.records() if r["job_id"] == job.job_id)
            assert [p["part"] for p in db.parts_of(job.job_id)] == [0, 1, 2, 3]
            here = run_split(job.problem, job.method, job.settings, job.budget, job.key, 4)
            for field in ("status", "log_marginal_likelihood", "log_marginal_likelihood_se",
                          "test_probabilities", "test_probabilities_se", "abs_log_error"):
                assert record[field] == here[field], (job.label, field)
            assert record["status"] == "ok" and record["diagnostics"]["parts"] == 4


@pytest.mark.usefixtures("threads_cluster")
def test_a_full_disk_while_storing_parts(tmp_path, monkeypatch, capsys):
    """The disk fills while parts are stored: the sweep stops (exit 2) with every stored part
    kept; the rerun runs only the parts not stored and combines each job once."""
    path = sweep_file(tmp_path, SPLIT.replace("DELAY", "0.0"))
    jobs = plan(load_sweep(path))
    store = tmp_path / "full.sqlite"
    run = ["sweep", str(path), "--store", str(store), "--no-report"]
    real, calls = ResultStore.add_part, []

    def add_part(self, job_id, part, record):
        calls.append((job_id, part))
        if len(calls) == 5:   # from the 5th part on, the file cannot grow (SQLITE_FULL)
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            self._db.execute(f"PRAGMA max_page_count = {pages}")
        return real(self, record=record, job_id=job_id, part=part)

    with monkeypatch.context() as patch:
        patch.setattr(ResultStore, "add_part", add_part)
        assert main(run) == 2
    assert "the disk is full" in capsys.readouterr().err
    before = stored_parts(store)
    assert 1 <= len(before) < 12
    assert main(run) == 0
    after = stored_parts(store)
    assert set(after) == {(j.job_id, k) for j in jobs if j.part_budgets for k in range(6)}
    assert all(after[key] == stamp for key, stamp in before.items())   # not rerun
    with ResultStore(store, read_only=True) as db:
        assert Counter(e["job_id"] for e in db.job_log()) == Counter(
            {j.job_id: 1 for j in jobs})
        assert all(r["status"] == "ok" for r in db.records())
