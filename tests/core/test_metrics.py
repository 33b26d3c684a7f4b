"""Predictive scores against held-out labels (harness.core.metrics.predictive_scores): known
values, and what a run, the analysis tables, the export and the report make of them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from harness.analysis.aggregate import load
from harness.analysis.results import job_rows
from harness.cli.main import main
from harness.core.metrics import LOG_LOSS_FLOOR, predictive_scores
from harness.execution.formatting import format_record
from harness.plugins.specs import make_problem
from harness.report.palette import palette_for
from harness.report.predictive import predictive_table


def test_predictive_scores_known_values():
    p, y = [0.9, 0.2, 0.5, 1.0], [1, 1, -1, -1]
    s = predictive_scores(p, y)
    assert s["accuracy"] == pytest.approx((1 + 0 + 0.5 + 0) / 4)   # p = 1/2 counts one half
    # a certain miss (p = 1, y = -1) costs -log(1e-15), not infinity
    assert s["log_loss"] == pytest.approx(-(math.log(0.9) + math.log(0.2) + math.log(0.5)
                                            + math.log(LOG_LOSS_FLOOR)) / 4)
    assert s["brier"] == pytest.approx((0.1**2 + 0.8**2 + 0.5**2 + 1.0**2) / 4)
    perfect = predictive_scores([1.0, 0.0], [1, -1])
    assert perfect == {"accuracy": 1.0, "log_loss": 0.0, "brier": 0.0}
    assert predictive_scores([0.5] * 3, [1, -1, 1]) == pytest.approx(
        {"accuracy": 0.5, "log_loss": math.log(2), "brier": 0.25})


def test_a_run_scores_its_test_probabilities_against_the_held_out_labels(capsys):
    argv = ["run", "--problem", "linear1d:n_train=8,n_test=3", "--method", "sov", "--budget",
            "400", "--json"]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    y = make_problem("linear1d:n_train=8,n_test=3").y_test
    assert {k: record[k] for k in ("accuracy", "log_loss", "brier")} == pytest.approx(
        predictive_scores(record["test_probabilities"], y))
    assert "held-out labels: accuracy" in format_record(record)
    assert main(["run", "--problem", "onefactor:n=5", "--method", "sov", "--budget", "200",
                 "--json"]) == 0
    assert "accuracy" not in json.loads(capsys.readouterr().out)   # no test points


@pytest.fixture(scope="module")
def tiny_data(tiny_store):
    return load(tiny_store)


def test_the_analysis_scores_every_job_of_a_problem_with_labels(tiny_data):
    data = tiny_data
    jobs = data.jobs[data.jobs["status"] == "ok"]
    for name, grp in jobs.groupby("problem"):
        labels = data.problems[name]["y_test"]
        assert labels and set(labels) <= {-1, 1}
        for _, row in grp.iterrows():
            assert row[["accuracy", "log_loss", "brier"]].to_dict() == pytest.approx(
                predictive_scores(row["probabilities"], labels))
    cells = data.cells
    assert (cells["accuracy_n"] == cells["n_ok"]).all()
    columns, rows = job_rows(data)
    assert {"accuracy", "log_loss", "brier"} <= set(columns)
    # the stored records carry the runner's scores: the same numbers
    by_id = {r["job_id"]: r for r in data.records}
    for row in rows:
        if row["status"] == "ok":
            assert by_id[row["job_id"]]["accuracy"] == pytest.approx(row["accuracy"])


def test_the_report_table_has_the_truth_row_and_each_method(tiny_data):
    data = tiny_data
    table = predictive_table(data, palette_for(data))
    text = [[c.text for c in row] for row in table.rows]
    for name, summary in data.problems.items():
        start = text.index([f"{name} ({len(summary['y_test'])} held-out labels)"] + [""] * 5)
        truth = summary.get("true_test_probabilities")
        if truth is not None:   # the exact predictive probabilities' scores come first
            assert text[start + 1][0] == "exact predictive (truth)"
            want = predictive_scores(truth, summary["y_test"])["accuracy"]
            assert float(text[start + 1][3]) == pytest.approx(want, abs=5e-4)
        cells = data.cells[data.cells["problem"] == name]
        top = cells.sort_values("budget").groupby("method").tail(1).set_index("method")
        rows = {r[0].removesuffix(" (approx.)"): r for r in text[start + 1:start + 3 + len(top)]}
        assert set(top.index) <= set(rows)   # each method once, at its largest budget
        for method, r in rows.items():
            if method in top.index:
                assert float(r[3]) == pytest.approx(top.loc[method, "accuracy_mean"], abs=5e-4)
    assert "held-out labels" in table.caption


def test_no_labels_no_scores(tmp_path, tiny_store):
    """A store whose problem summaries have no y_test (made before) and whose records carry no
    scores: NaN scores, and no predictive table."""
    import shutil
    import sqlite3

    old = tmp_path / "old.sqlite"
    shutil.copy(tiny_store, old)
    with sqlite3.connect(old) as db:   # as stored before: drop the fields (and the seals)
        for name, text in db.execute("SELECT name, summary FROM problems").fetchall():
            s = json.loads(text)
            s.pop("y_test")
            db.execute("UPDATE problems SET summary = ?, checksum = NULL WHERE name = ?",
                       (json.dumps(s), name))
        for job_id, text in db.execute("SELECT job_id, record FROM jobs").fetchall():
            r = {k: v for k, v in json.loads(text).items()
                 if k not in ("accuracy", "log_loss", "brier")}
            db.execute("UPDATE jobs SET record = ?, checksum = NULL WHERE job_id = ?",
                       (json.dumps(r), job_id))
    data = load(old)
    assert np.isnan(data.jobs["accuracy"].to_numpy(float)).all()
    assert not predictive_table(data, palette_for(data))
