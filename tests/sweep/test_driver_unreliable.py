"""A sweep stores degenerate estimates as `unreliable`, counts them in its summary, and the
store's readers (load_results, export) carry the status, reason and numbers."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from edge_problems import ill_conditioned_cov

import harness
from harness.cli.main import main


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sweep_counts_unreliable_jobs_and_exports_them(tmp_path):
    from distributed import Client

    from harness.sweep.driver import run_sweep
    from harness.sweep.spec import parse_sweep

    path = tmp_path / "ill.npz"
    np.savez(path, cov=ill_conditioned_cov())
    text = f"""
name = "unreliable"
replicates = 1
budgets = [1000]
problems = ["onefactor:n=20", "{path}"]
[methods.sov]
"""
    store = tmp_path / "u.sqlite"
    out, err = io.StringIO(), io.StringIO()
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=None) as client:
        outcome = run_sweep(parse_sweep(text, "u.toml"), store=store, client=client,
                            report=False, out=out, err=err, references=False)
    assert outcome.statuses == {"ok": 1, "unreliable": 1}
    assert "ran 2 jobs in" in out.getvalue() and "(1 ok, 1 unreliable)" in out.getvalue()
    assert "1 unreliable" in err.getvalue()                       # the progress line
    assert "unreliable: " in err.getvalue() and "weights degenerate" in err.getvalue()

    table = harness.load_results(store).set_index("problem")
    row = table.loc[str(path)]
    assert row["status"] == "unreliable" and row["reason"].startswith("weights degenerate")
    assert row["log_marginal_likelihood"] < -1e6 and row["diagnostics.ess"] < 1.1
    assert table.loc["onefactor:n=20", "status"] == "ok"

    csv_path = tmp_path / "jobs.csv"
    assert main(["export", "--store", str(store), "--out", str(csv_path)]) == 0
    with open(csv_path, newline="") as f:
        rows = {r["problem"]: r for r in csv.DictReader(f)}
    assert rows[str(path)]["status"] == "unreliable"
    assert float(rows[str(path)]["log_marginal_likelihood"]) < -1e6
