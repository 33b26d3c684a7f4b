"""References a sweep computes for its problems without truth (harness.sweep.missing_references):
own data to a verdict that can judge every target, in one sweep, on a real Dask cluster."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.analysis.aggregate import load, precision_floor
from harness.analysis.verdict import TARGETS
from harness.cli.main import main
from harness.execution.store import ResultStore
from harness.sweep import missing_references as mr
from harness.sweep.spec import parse_sweep


def _csv(tmp_path, n=36, n_test=6):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(n, 2))
    y = np.where(np.sin(2 * x[:, 0]) + x[:, 1] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    rows = [f"{a:.4f},{b:.4f},{c},{'test' if i < n_test else 'train'}"
            for i, (a, b, c) in enumerate(zip(x[:, 0], x[:, 1], y, strict=True))]
    path = tmp_path / "own.csv"
    path.write_text("x1,x2,y,split\n" + "\n".join(rows) + "\n")
    return f"{path}:alpha=1,beta=1"


def _args(spec, store, scheduler, *more):
    return ["sweep", "--problem", spec, "--method", "sov", "--method", "minimax-tilting",
            "--budget", "1e3,1e4", "--store", str(store), "--scheduler", scheduler,
            "--no-report", *more]


def test_the_targets_are_the_verdicts_tightest():
    for quantity, limit in (("log_z", mr.LOG_Z_TARGET), ("probabilities", mr.MAE_TARGET)):
        assert limit == min(t.limit for t in TARGETS if t.quantity == quantity)
    assert mr.IN_SWEEP.target_se == mr.SHARE * mr.LOG_Z_TARGET
    assert mr.IN_SWEEP.target_test_se == mr.SHARE * mr.MAE_TARGET


def test_own_csv_gets_its_reference_inside_the_sweep(dask_cluster, tmp_path, capsys):
    spec, store = _csv(tmp_path), tmp_path / "own.sqlite"
    address = str(dask_cluster.address)
    assert main(_args(spec, tmp_path / "check.sqlite", address, "--check")) == 0
    assert "reference to compute for 1 problem(s) without truth" in capsys.readouterr().out

    assert main(_args(spec, store, address)) == 0
    out = capsys.readouterr().out
    assert "reference to compute for 1 problem(s)" in out and "computed, log Z" in out
    with ResultStore(store, read_only=True) as st:
        (name, record), = st.references().items()
    assert record["stopped"] == "targets reached"
    assert record["log_marginal_likelihood_se"] <= mr.IN_SWEEP.target_se
    assert max(record["test_probabilities_se"]) <= mr.IN_SWEEP.target_test_se
    # the report's data use it as the truth, and it resolves every target of the verdict
    data = load(store)
    assert data.problems[name]["truth_kind"] == "reference"
    for column, target in (("abs_log_error", mr.LOG_Z_TARGET), ("mae", mr.MAE_TARGET)):
        floor, _ = precision_floor(data, name, column)
        assert floor < target, (column, floor)

    # a second run finds it stored and computes nothing
    assert main(_args(spec, store, address)) == 0
    assert "reference to compute" not in capsys.readouterr().out
    # --no-reference: none computed, none planned
    bare = tmp_path / "bare.sqlite"
    assert main(_args(spec, bare, address, "--no-reference")) == 0
    assert "reference" not in capsys.readouterr().out.replace("--no-reference", "")
    with ResultStore(bare, read_only=True) as st:
        assert st.references() == {}


@pytest.fixture
def entry(tmp_path):
    text = f'problems = ["{_csv(tmp_path)}"]\nbudgets = [1000]\nevery_method = true\n'
    return parse_sweep(text, str(tmp_path / "own.toml")).problems[0]


def _record(entry, se, test_se, targets=None):
    return {"problem": entry.name, "problem_summary": entry.summary,
            "log_marginal_likelihood_se": se, "test_probabilities_se": [test_se] * 3,
            "targets": targets}


def test_which_problems_need_a_reference(entry):
    assert mr.missing([entry], {}, 0) == [entry]
    with_truth = replace(entry, summary={**entry.summary, "truth_kind": "exact"})
    assert mr.missing([with_truth], {}, 0) == []
    # a stored reference that resolves the tightest targets is used as it is
    fine = _record(entry, 0.004, 4e-4)
    assert mr.missing([entry], {entry.name: fine}, 0) == []
    # too coarse (2 SE above a target), computed with other settings: computed again
    coarse = _record(entry, 0.006, 4e-4)
    assert mr.missing([entry], {entry.name: coarse}, 0) == [entry]
    assert mr.missing([entry], {entry.name: _record(entry, 0.004, 6e-4)}, 0) == [entry]
    # a stored reference of another problem of the same name does not count
    other = {**fine, "problem_summary": {**entry.summary, "n_train": entry.n_train + 1}}
    assert mr.missing([entry], {entry.name: other}, 0) == [entry]
