"""The notebook API (harness.api): harness.estimate, load_results, plot_time_error, and the
one column list shared by load_results, `export` and the report's jobs.csv."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pandas as pd
import pytest

import harness
from harness.analysis.aggregate import METRICS, load
from harness.cli.main import main
from harness.core.errors import InputError
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")

# ---- harness.estimate -----------------------------------------------------------------------
def test_estimate_is_a_function_with_its_own_signature():
    import inspect

    from harness.model.result import Estimate
    assert harness.Estimate is Estimate and harness.Method and harness.Problem
    assert inspect.isfunction(harness.estimate)
    assert list(inspect.signature(harness.estimate).parameters) == [
        "problem", "method", "budget", "seed", "memory_limit", "threads", "settings"]
    assert harness.estimate.__doc__.startswith("Run `method` on `problem` at `budget`")
    r = harness.estimate("onefactor:n=5", "sov", 200)
    assert r.status == "ok" and r.log_marginal_likelihood < 0


# what differs between two runs of the same job: the clock, the memory, the process
MEASURED = ("cpu_seconds", "process_cpu_seconds", "wall_seconds", "setup_cpu_seconds",
            "setup_wall_seconds", "setup_cached", "peak_memory_mb")


def test_estimate_matches_run_json(capsys):
    """Same problem, method, budget and seed: the record of `run --json`, field for field."""
    argv = ["run", "--problem", "linear1d:n_train=8,n_test=3", "--method", "sov",
            "--set", "randomisations=5", "--budget", "400", "--seed", "3", "--json"]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    r = harness.estimate("linear1d:n_train=8,n_test=3", "sov", 400, seed=3, randomisations=5)
    mine = r.to_dict()
    assert set(mine) == set(record)
    for field in set(record) - set(MEASURED):
        assert mine[field] == record[field], field
    for field in ("log_marginal_likelihood", "mae", "truth_kind", "status", "settings"):
        assert getattr(r, field) == record[field], field
    assert isinstance(r.test_probabilities, np.ndarray)
    np.testing.assert_array_equal(r.test_probabilities, record["test_probabilities"])
    assert r.cpu_seconds > 0
    assert "log Z truth (exact)" in repr(r)
    # against the truth, within the method's own standard error
    assert abs(r.log_marginal_likelihood - r.true_log_marginal_likelihood) < \
        6 * r.log_marginal_likelihood_se + 1e-9


def test_run_and_estimate_share_one_pipeline(monkeypatch, capsys):
    """`run` and harness.estimate both go through harness.execution.single.run_single."""
    from harness.execution import single

    calls = []
    real = single.run_single

    def spy(problem, method, budget, seed, *args, **kwargs):
        calls.append((problem.name, method.label(), budget, seed))
        return real(problem, method, budget, seed, *args, **kwargs)

    monkeypatch.setattr(single, "run_single", spy)
    assert main(["run", "--problem", "onefactor:n=5", "--method", "sov", "--budget", "200",
                 "--seed", "2", "--json"]) == 0
    capsys.readouterr()
    harness.estimate("onefactor:n=5", "sov", "200", seed=2)
    assert calls == [("onefactor:n=5", "sov", 200, 2)] * 2


def test_estimate_accepts_objects_files_and_specs(tmp_path, method_file):
    from harness.methods.sov import Sov

    problem = make_problem("linear1d:n_train=8,n_test=3")
    by_name = harness.estimate("linear1d:n_train=8,n_test=3", "sov", 300, seed=2)
    for method in (Sov, Sov(), "sov"):
        r = harness.estimate(problem, method, 300, seed=2)
        assert r.log_marginal_likelihood == by_name.log_marginal_likelihood
    mine = harness.estimate(problem, f"{method_file(tmp_path)}:MySov", 300, seed=2)
    assert mine.method == "my-sov" and math.isfinite(mine.log_marginal_likelihood)
    # a problem file (an orthant problem: no truth, no test points)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    np.savez(tmp_path / "p.npz", cov=a @ a.T + 4 * np.eye(4))
    r = harness.estimate(tmp_path / "p.npz", "sov", 200, points="random")
    assert r.status == "ok" and r.settings["points"] == "random"
    assert r.mae is None and r.truth_kind is None and len(r.test_probabilities) == 0
    with pytest.raises(AttributeError, match="no field 'nonsense'"):
        _ = r.nonsense
    assert "log_marginal_likelihood" in dir(r)


@pytest.mark.parametrize("call, field", [
    (lambda: harness.estimate("linear1d-p1", "nope", 100), "method"),
    (lambda: harness.estimate("linear1d-p1", 42, 100), "method"),
    (lambda: harness.estimate("linear1d-p1", int, 100), "method"),
    (lambda: harness.estimate(3.5, "sov", 100), "problem"),
    (lambda: harness.estimate("linear1d-p1", "sov", 0), "budget"),
    (lambda: harness.estimate("linear1d-p1", "sov", 100, seed=-1), "seed"),
    (lambda: harness.estimate("linear1d-p1", "sov", 100, cuont=3), "setting 'cuont'"),
])
def test_estimate_bad_input(call, field):
    with pytest.raises(InputError, match=field):
        call()


def test_estimate_refuses_settings_with_an_instance():
    from harness.methods.sov import Sov

    with pytest.raises(InputError, match="settings: given with a method instance"):
        harness.estimate("onefactor:n=5", Sov(), 100, points="random")


def test_estimate_refuses_a_job_that_cannot_fit_before_it_runs():
    """Like `run --memory-limit`: the job's estimate against the limit, no job run."""
    from harness.model.footprint import TooLarge

    with pytest.raises(TooLarge, match=r"^sov on onefactor:n=2000 at budget 10 needs .* "
                                       r"dense factor L 32 MB.*the memory limit \(memory_limit\)"
                                       r" is 10 MB$"):
        harness.estimate("onefactor:n=2000", "sov", 10, memory_limit="10MB")
    assert harness.estimate("onefactor:n=20", "sov", 10, memory_limit="1GB").status == "ok"


# ---- load_results, export, jobs.csv -----------------------------------------------------
def test_load_results_has_the_report_errors(tiny_store):
    table = harness.load_results(tiny_store)
    data = load(tiny_store)
    assert isinstance(table, pd.DataFrame) and len(table) == len(data.jobs) == 20
    assert list(table["job_id"]) == list(data.jobs["job_id"])
    for col in METRICS:   # truth, posterior and consensus errors, exactly the report's
        np.testing.assert_array_equal(table[col].to_numpy(float), data.jobs[col].to_numpy(float))
    np.testing.assert_array_equal(table["log_marginal_likelihood"], data.jobs["log_z"])
    linear = table[table["problem"].str.startswith("linear1d")]
    gauss = table[table["problem"].str.startswith("gauss2class")]
    assert linear["mae"].notna().all() and (linear["truth_kind"] == "exact").all()
    assert gauss["mae"].isna().all() and gauss["mae_post"].notna().all()
    assert gauss["mae_med"].notna().all()
    assert {"settings.count", "diagnostics.ess", "seed", "worker"} <= set(table.columns)
    assert all(len(p) == n for p, n in zip(table["test_probabilities"], table["n_test"],
                                           strict=True))


def test_export_and_jobs_csv_have_the_load_results_columns(tiny_store, tmp_path):
    from harness.report.build import build_report

    table = harness.load_results(tiny_store)
    out = tmp_path / "export.csv"
    assert main(["export", "--store", str(tiny_store), "--out", str(out)]) == 0
    written = build_report(tiny_store, tmp_path / "report", pdf_file=False)
    with open(out, newline="") as f:
        exported = list(csv.DictReader(f))
    with open(written["jobs_csv"], newline="") as f:
        jobs_csv = list(csv.DictReader(f))
    assert list(exported[0]) == list(jobs_csv[0]) == list(table.columns)
    assert exported == jobs_csv
    # the predictive scores against the held-out labels: columns here, a table in the report
    assert "Predictive quality on the held-out labels" in written["html"].read_text()
    for row, (_, expect) in zip(exported, table.iterrows(), strict=True):
        for col in ("mae", "mae_med", "mae_post", "abs_log_error", "accuracy", "log_loss"):
            assert (row[col] == "") == (not np.isfinite(expect[col]))
            if row[col]:
                assert float(row[col]) == pytest.approx(expect[col], rel=1e-12)
        assert json.loads(row["test_probabilities"]) == pytest.approx(
            list(expect["test_probabilities"]))


# ---- plot_time_error --------------------------------------------------------------------
def test_plot_time_error_builds_the_palette(tiny_store):
    import matplotlib.pyplot as plt

    from harness.report.build import palette_for

    problem = "linear1d:n_test=3,n_train=8"
    palette = palette_for(load(tiny_store))
    fig = harness.plot_time_error(tiny_store, problem)   # the report crashed without a Palette
    (ax,) = [a for a in fig.axes if a.get_title()]
    assert "MAE" in ax.get_title() and ax.get_xscale() == "log" == ax.get_yscale()
    drawn = {c.get_label(): c.lines[0].get_color() for c in ax.containers}   # errorbars
    assert drawn == {palette.legend_label(m): palette.colour(m)
                     for m in ("ep", "rejection-bootstrap", "sov")}
    plt.close(fig)

    # a filtered DataFrame into a given Axes: only its methods, in the store's colours
    table = harness.load_results(tiny_store)
    fig, ax = plt.subplots()
    out = harness.plot_time_error(table[table["method"] == "sov"], problem, "mape_percent", ax=ax)
    assert out is fig
    (drawn,) = ax.containers
    assert drawn.get_label() == "sov" and drawn.lines[0].get_color() == palette.colour("sov")
    assert len(drawn.lines[0].get_xdata()) == 2   # two budgets
    plt.close(fig)

    gauss = "gauss2class:n_test=4,n_train=10"
    plt.close(harness.plot_time_error(table, gauss, "mae_med"))
    with pytest.raises(InputError, match="metrics there: .*mae_post"):
        harness.plot_time_error(table, gauss, "mae")
    with pytest.raises(InputError, match="unknown metric"):
        harness.plot_time_error(table, gauss, "rmse")
    with pytest.raises(InputError, match="problems: gauss2class"):
        harness.plot_time_error(table, "linear1d-p9")


# ---- run_sweep: the report hook ---------------------------------------------------------------
def test_run_sweep_hands_the_report_writer_to_the_driver(tmp_path, monkeypatch):
    """The sweep driver (a lower layer than the report) writes a report only through the writer
    it is handed: harness.api.run_sweep hands harness.report's; the driver alone says none."""
    import io

    from distributed import Client

    import harness.api
    import harness.report
    from harness.sweep.driver import run_sweep
    from harness.sweep.spec import parse_sweep

    written = []

    def writer(store_path, out_dir, out):
        written.append((store_path, out_dir))
        print("report: written", file=out)
        return {"html": str(out_dir / "report.html")}

    monkeypatch.setattr(harness.report, "write_sweep_report", writer)
    sweep = parse_sweep('name = "hook"\nbudgets = [100]\nproblems = ["onefactor:n=3"]\n'
                        f'[methods.sov]\n[output]\nreport = "{tmp_path / "r"}"\n', "hook.toml")
    store = tmp_path / "s.sqlite"
    runs = []
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address="127.0.0.1:0") as client:
        for run, report in ((harness.api.run_sweep, True), (harness.api.run_sweep, False),
                            (run_sweep, True)):
            out = io.StringIO()
            outcome = run(sweep, store=store, client=client, report=report, out=out,
                          err=io.StringIO())
            runs.append((outcome.report, out.getvalue().splitlines()[-1]))
    assert written == [(store, tmp_path / "r")]
    assert runs[0] == ({"html": str(tmp_path / "r" / "report.html")}, "report: written")
    assert runs[1][0] is None and not runs[1][1].startswith("report:")
    assert runs[2][0] is None and runs[2][1].startswith("report: none written")
