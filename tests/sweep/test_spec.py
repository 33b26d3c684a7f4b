"""Sweep files: parsing, complete validation before any job runs, expansion, job ids."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from sweep_helpers import refused

from harness.cli.main import main
from harness.core.errors import InputError
from harness.plugins.registry import PEERS, get_method, methods
from harness.sweep.plan import incompatible, plan
from harness.sweep.spec import load_sweep, parse_sweep

ROOT = Path(__file__).resolve().parents[2]

BASE = """\
name = "t"
seed = 1
replicates = 2
budgets = [100, 300]
problems = ["onefactor:n=5"]

[methods.rejection-bootstrap]
count = ["soft", "hard"]
"""


def sweep_of(text: str):
    return parse_sweep(textwrap.dedent(text), "t.toml")


def test_quick_sweep_exercises_every_method_on_exact_problems():
    sweep = load_sweep(ROOT / "sweeps" / "quick.toml")
    labels = {m.label for m in sweep.methods}
    assert {"rejection-bootstrap", "rejection-bootstrap[count=hard]"} <= labels
    assert set(methods()) - set(PEERS) <= {m.name for m in sweep.methods}   # peers: optional
    families = {p.summary["family"] for p in sweep.problems}
    assert {"onefactor", "linear1d"} <= families
    assert all(p.summary["truth_kind"] == "exact" for p in sweep.problems)
    # its [output] paths are relative to the file: the repository's results/ and reports/
    assert sweep.time_limit and sweep.store == ROOT / "results" / "quick.sqlite"
    assert sweep.report == ROOT / "reports" / "quick"
    jobs = plan(sweep)
    assert {j.method for j in jobs} == {m.name for m in sweep.methods}  # each runs somewhere
    not_planned = sum(len(m.budgets) * sweep.replicates_of(m) for p in sweep.problems
                      for m in sweep.methods if incompatible(p, m))
    assert len(jobs) + not_planned == sweep.n_jobs
    assert all(j.problem != "onefactor:n=100" or get_method(j.method).tags.handles_orthant
               for j in jobs)


def test_grids_budgets_and_problem_tables_expand():
    sweep = sweep_of("""
        replicates = 3
        budgets = { start = 1e2, stop = 1e4, num = 3 }
        problems = [
            "onefactor:n=5",
            { family = "onefactor", n = [6, 7], dmax = 0.5 },
            { preset = "linear1d-p1", n_train = 10, n_test = 4 },
        ]
        [methods.rejection-bootstrap]
        count = ["soft", "hard"]
        block_size = [0, 4]
    """)
    assert [m.label for m in sweep.methods] == [
        "rejection-bootstrap", "rejection-bootstrap[block_size=4]",
        "rejection-bootstrap[count=hard]", "rejection-bootstrap[block_size=4,count=hard]"]
    assert all(m.budgets == (100, 1000, 10000) for m in sweep.methods)
    assert [p.spec for p in sweep.problems] == [
        "onefactor:n=5", "onefactor:dmax=0.5,n=6", "onefactor:dmax=0.5,n=7",
        "linear1d-p1:n_test=4,n_train=10"]
    assert sweep.problems[3].n_train == 10 and sweep.problems[3].n_test == 4
    assert sweep.n_jobs == 4 * 4 * 3 * 3 == len(plan(sweep))


def test_per_method_budgets_and_arrays_of_tables():
    sweep = sweep_of("""
        budgets = [100]
        problems = ["onefactor:n=5"]
        [[methods.rejection-bootstrap]]
        count = "hard"
        budgets = [50, 60]
        [[methods.rejection-bootstrap]]
        count = "soft"
    """)
    assert [(m.label, m.budgets) for m in sweep.methods] == [
        ("rejection-bootstrap[count=hard]", (50, 60)), ("rejection-bootstrap", (100,))]
    assert len(plan(sweep)) == 3


def test_problem_files_in_a_sweep(tmp_path):
    import numpy as np

    from harness.sweep.execute import run_job

    path = tmp_path / "orthant.npz"
    np.savez(path, cov=np.array([[1.0, 0.5], [0.5, 1.0]]))
    sweep = sweep_of(BASE.replace('"onefactor:n=5"', f'"{path}"'))
    assert sweep.problems[0].spec == str(path) and sweep.problems[0].n_train == 2
    record = run_job(plan(sweep)[0].spec())
    assert record["status"] == "ok" and record["problem"] == str(path)
    with pytest.raises(InputError, match="listed twice"):
        sweep_of(BASE.replace('"onefactor:n=5"', f'"{path}", {{ file = "{path}" }}'))


def test_spec_strings_are_canonical():
    a = sweep_of(BASE.replace('"onefactor:n=5"', '"onefactor: seed=0 , n=5.0"'))
    b = sweep_of(BASE.replace('"onefactor:n=5"', '{ family = "onefactor", n = 5, seed = 0 }'))
    assert a.problems[0].spec == b.problems[0].spec == "onefactor:n=5,seed=0"


def test_job_ids_are_stable_and_only_new_jobs_are_new():
    jobs = plan(sweep_of(BASE))
    again = plan(sweep_of(BASE.replace('name = "t"', 'name = "other"')))
    assert [j.job_id for j in jobs] == [j.job_id for j in again]   # the name is not in the key
    assert len({j.job_id for j in jobs}) == len(jobs) == 8
    changed = plan(sweep_of(BASE.replace("[100, 300]", "[100, 400]")))
    common = {j.job_id for j in jobs} & {j.job_id for j in changed}
    assert len(common) == 4 and all(j.budget == 100 for j in jobs if j.job_id in common)
    reseeded = plan(sweep_of(BASE.replace("seed = 1", "seed = 2")))
    assert not {j.job_id for j in jobs} & {j.job_id for j in reseeded}
    key = jobs[0].key
    assert set(key) == {"problem", "method", "settings", "budget", "replicate", "seed"}
    assert key["settings"] == {"count": "soft", "populations": 10, "block_size": 0,
                               "chunk_mb": 512.0}


@pytest.mark.parametrize("edit, key, words", [
    (("replicates = 2", "replicate = 2"), "replicate", "did you mean 'replicates'"),
    (("[methods.rejection-bootstrap]", "[methods.rejection-bootstrapp]"),
     "methods.rejection-bootstrapp", "unknown method"),
    (('count = ["soft", "hard"]', 'cuont = "soft"'), "methods.rejection-bootstrap.cuont",
     "did you mean 'count'"),
    (('count = ["soft", "hard"]', 'count = ["soft", "medium"]'), "methods.rejection-bootstrap",
     "must be one of"),
    (('count = ["soft", "hard"]', "block_size = 1.5"), "methods.rejection-bootstrap.block_size",
     "must be an integer"),
    (("budgets = [100, 300]", "budgets = [100, -3]"), "budgets[1]", "must be >= 1"),
    (("budgets = [100, 300]", "budgets = { start = 10, stop = 1000 }"), "budgets",
     "needs num"),
    (("budgets = [100, 300]", "budgets = []"), "budgets", "is empty"),
    (('"onefactor:n=5"', '"onefactr:n=5"'), "problems[0]", "did you mean 'onefactor'"),
    (('"onefactor:n=5"', '"onefactor:m=5"'), "problems[0].m", "is not a parameter"),
    (('"onefactor:n=5"', '"onefactor:n=0"'), "problems[0]", "must be >= 1"),
    (('"onefactor:n=5"', '"onefactor:n=5", "onefactor:n=5.0"'), "problems[1]", "listed twice"),
    (('"onefactor:n=5"', '{ family = "onefactor", n = "many" }'), "problems[0].n",
     "must be a number"),
    (('"onefactor:n=5"', '"missing/problem.npz"'), "problems[0]", "does not exist"),
    (("seed = 1", "seed = -1"), "seed", "must be >= 0"),
    (("seed = 1", "seed = 1\ntime_limit = -5"), "time_limit", "positive number"),
    (("seed = 1", "seed = 1\n[output]\nstor = 'x'"), "output.stor", "did you mean 'store'"),
    (("seed = 1", "seed = = 1"), "", "is not valid TOML"),
])
def test_malformed_sweep_names_file_and_key(edit, key, words):
    refused(BASE, edit, key, words)


def test_cli_rejects_a_malformed_file_before_any_job(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(BASE.replace("[methods.rejection-bootstrap]", "[methods.no-such-method]"))
    store = tmp_path / "store.sqlite"
    code = main(["sweep", str(bad), "--store", str(store), "--no-report"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "bad.toml: methods.no-such-method: unknown method" in err
    assert "rejection-bootstrap" in err          # the fix lists the known methods
    assert not store.exists()                    # nothing ran, nothing was written


def test_check_prints_the_plan(tmp_path, capsys):
    f = tmp_path / "ok.toml"
    f.write_text(BASE)
    assert main(["sweep", str(f), "--check"]) == 0
    out = capsys.readouterr().out
    assert "sweep t: 8 jobs (1 problems" in out and "rejection-bootstrap[count=hard]" in out
    assert "0 done, 8 to run (no store there yet)" in out


def test_missing_file_and_bad_cli_options(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "nope.toml")]) == 2
    assert "sweep file not found" in capsys.readouterr().err
    f = tmp_path / "ok.toml"
    f.write_text(BASE)
    assert main(["sweep", str(f), "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err
    assert main(["sweep", str(f), "--workers", "2", "--scheduler", "tcp://127.0.0.1:1",
                 "--store", str(tmp_path / "s.sqlite"), "--no-report"]) == 2
    assert "--workers: applies only to the local cluster" in capsys.readouterr().err


def test_settings_that_cannot_run_a_budget_are_refused_before_any_job(tmp_path):
    """Method.check_job runs at load time for every budget and problem (here: emcee walkers)."""
    with pytest.raises(InputError, match=r"methods\.emcee.*walkers"):
        sweep_of("""
            problems = ["linear1d:n_train=40,n_test=5"]
            [methods.emcee]
            walkers = 10
            budgets = [10]
        """)


def test_every_method_leaves_the_peers_out_and_a_missing_peer_names_its_extra(monkeypatch):
    """every_method runs the harness's own methods; a peer (PyMC, GPyTorch: an optional extra)
    runs only when named, and naming one whose packages are missing says how to add them."""
    import sys

    from harness.plugins import registry

    sweep = parse_sweep('problems = ["linear1d-p1"]\nbudgets = [100]\nevery_method = true\n')
    assert not {m.name for m in sweep.methods} & set(PEERS)
    for module in [m for m in sys.modules if m.split(".")[0] in ("pymc", "gpytorch")
                   or m in ("harness.methods.pymc_gp", "harness.methods.gpytorch_vgp")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "pymc", None)
    registry.clear_cache()
    try:
        with pytest.raises(InputError) as info:
            parse_sweep('problems = ["linear1d-p1"]\nbudgets = [100]\n[methods.pymc-nuts]\n',
                        "p.toml")
        assert str(info.value).startswith("p.toml: methods.pymc-nuts")
        assert 'pip install -e ".[peers]"' in str(info.value)
    finally:
        monkeypatch.undo()
        registry.clear_cache()
