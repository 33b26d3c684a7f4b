"""A tuning sweep end to end on real Dask processes: run, store, references, resume, report."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from harness.cli.main import main
from harness.execution.store import ResultStore
from harness.sweep.plan import plan
from harness.sweep.spec import load_sweep
from harness.sweep.tune_exact import reference_key

TINY = """\
name = "tiny-tune"
kind = "tune"
seed = 5
replicates = 1
budgets = [300]
time_limit = 60
problems = ["linear1d:n_train=12,n_test=3"]
[methods.sov]
[methods.rejection-bootstrap]
count = "hard"
[tune]
parameters = { scale = { start = 0.1, stop = 100, num = 5 } }
strategies = ["grid", "explore-exploit", "pseudo-marginal"]
explore_budget = 30
top_k = 2
walkers = 4
steps = 6
"""


def test_tune_sweep_runs_stores_resumes_and_reports(dask_cluster, tmp_path, capsys):
    sweep_file = tmp_path / "tiny.toml"
    sweep_file.write_text(TINY + f'[output]\nreport = "{tmp_path / "report"}"\n')
    store = tmp_path / "tiny.sqlite"
    args = ["sweep", str(sweep_file), "--scheduler", str(dask_cluster.scheduler_file),
            "--store", str(store)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "0 done, 6 to run" in out and "tuning: grid, explore-exploit, pseudo-marginal" in out
    assert "tune reference: linear1d:n_test=3,n_train=12" in out
    jobs = plan(load_sweep(sweep_file))
    with ResultStore(store) as db:
        records = {r["job_id"]: r for r in db.records()}
        rows = {r[0]: r[1:] for r in db._db.execute(
            "SELECT job_id, log_z, cpu_seconds, method, budget FROM jobs")}
        meta = db.metadata()
    assert set(records) == {j.job_id for j in jobs}
    assert Counter(r["strategy"] for r in records.values()) == {
        "grid": 2, "explore-exploit": 2, "pseudo-marginal": 2}
    assert all(r["status"] == "ok" and r["kind"] == "tune" for r in records.values())
    assert {r["method"] for r in records.values()} == {"sov", "rejection-bootstrap[count=hard]"}
    for job_id, r in records.items():
        lz, cpu, _, _ = rows[job_id]
        assert cpu == r["cpu_seconds"] > 0 and r["worker"] in meta["workers"]
        if r["strategy"] == "grid":
            assert r["n_evaluations"] == 5 and lz == r["chosen_log_z"]
        if r["strategy"] == "explore-exploit":
            assert r["n_evaluations"] == 5 + 2 and lz == r["chosen_log_z"]
        if r["strategy"] == "pseudo-marginal":
            assert len(r["chain"]["samples"]) > 0 and r["chosen"]["scale"] > 0
    # the exact reference, computed once on the client
    ref = meta[reference_key("linear1d:n_test=3,n_train=12")]
    surface = ref["surface"]
    assert ref["space"] == {"scale": [0.1, 100.0, 5]} and surface["kind"] == "exact"
    assert surface["optimum_log_z"] >= max(surface["log_z"])
    post = ref["posterior"]
    density = np.exp(post["log_density"])
    assert abs(np.trapezoid(density, post["log_grid"]) - 1) < 1e-6
    # each grid evaluation's exact value is the reference's at that point
    grid_rec = next(r for r in records.values() if r["strategy"] == "grid")
    true = {e["params"]["scale"]: e["true_log_z"] for e in grid_rec["evaluations"]}
    for p, lz in zip(surface["points"], surface["log_z"], strict=True):
        assert math.isclose(true[p["scale"]], lz, rel_tol=1e-9)

    # resume: nothing reruns, nothing is recomputed
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "6 done, 0 to run" in out and "tune reference" not in out
    with ResultStore(store) as db:
        assert set(Counter(e["job_id"] for e in db.job_log()).values()) == {1}

    # the report: a tuning section with the surface and chain figures, no estimate figures
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "Hyperparameter tuning" in html and "Optimum found by each method" in html
    assert html.count('id="tune-surface-') == 1 and html.count('id="tune-chain-') == 1
    assert 'id="time-error-' not in html
