"""The report's metrics (harness.analysis.aggregate: errors against the truth, aggregation, the
consensus, the best method at equal time) and the tables and formats that show them, on
hand-made stores with known answers (no figures drawn, fast)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from store_helpers import TRUE_LZ, TRUE_P, make_store, record, summary

from harness.analysis import aggregate as agg
from harness.core import metrics
from harness.execution.store import ResultStore
from harness.report import problem_tables, tables
from harness.report.style import Palette, fmt, fmt_budget, fmt_se


def cell(data, problem, method, budget):
    c = data.cells
    rows = c[(c["problem"] == problem) & (c["method"] == method) & (c["budget"] == budget)]
    assert len(rows) == 1
    return rows.iloc[0]


# ---- metrics module ------------------------------------------------------------------------
def test_metric_helpers_known_values():
    assert metrics.standard_error([1, 2, 3, 4]) == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    assert math.isnan(metrics.standard_error([3.0]))
    med, iqr, se = metrics.median_consensus([[0.1, 0.9], [0.3, 0.7], [0.2, 0.8]])
    np.testing.assert_allclose(med, [0.2, 0.8])
    np.testing.assert_allclose(iqr, [0.1, 0.1])
    np.testing.assert_allclose(se, 1.2533 * (0.1 / 1.349) / np.sqrt(3))
    assert metrics.at_reference_precision(0.015, 0.01)
    assert not metrics.at_reference_precision(0.025, 0.01)
    assert not metrics.at_reference_precision(0.0, 0.0)   # an exact truth has no floor


# ---- errors against truth, aggregation ----------------------------------------------------
@pytest.fixture
def truth_data(tmp_path):
    recs = []
    # method A at budget 100: log Z errors 0.1, 0.3 (MAPE 1 %, 3 %), CPU 1..4 over 4 replicates
    lzs = [-10.1, -9.7, -10.1, -9.7]
    probs = [[0.2, 0.8], [0.3, 0.7], [0.25, 0.85], [0.25, 0.75]]   # MAE .05 .05 .05 0
    for i in range(4):
        recs.append(record(f"a{i}", "P", "A", 100, i, log_z=lzs[i], probs=probs[i], cpu=i + 1.0))
    # two failures and a timeout at the same cell, and one crash elsewhere
    recs.append(record("a-f1", "P", "A", 100, 4, status="failed", reason="all rejected", cpu=0.5))
    recs.append(record("a-f2", "P", "A", 100, 5, status="failed", reason="all rejected", cpu=0.5))
    recs.append(record("a-t", "P", "A", 100, 6, status="timeout", reason="CPU limit 60 s",
                       cpu=None))
    recs.append(record("b-e", "P", "B", 100, 0, status="error", reason="ValueError: boom"))
    recs.append(record("b0", "P", "B", 1000, 0, log_z=-10.0, probs=TRUE_P, cpu=2.0))
    return make_store(tmp_path / "t.sqlite", recs, [summary("P")])


def test_errors_against_exact_truth(truth_data):
    jobs = truth_data.jobs.set_index("job_id")
    assert jobs.loc["a0", "abs_log_error"] == pytest.approx(0.1)
    assert jobs.loc["a1", "mape_percent"] == pytest.approx(3.0)
    assert jobs.loc["a0", "mae"] == pytest.approx(0.05)
    assert jobs.loc["a3", "mae"] == pytest.approx(0.0)
    assert math.isnan(jobs.loc["a-f1", "mape_percent"])      # a failure has no error ...


def test_aggregation_mean_se_median(truth_data):
    c = cell(truth_data, "P", "A", 100)
    assert c["cpu_seconds_mean"] == pytest.approx(2.5)
    assert c["cpu_seconds_se"] == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    assert c["cpu_seconds_median"] == pytest.approx(2.5)
    assert (c["cpu_seconds_q25"], c["cpu_seconds_q75"]) == pytest.approx((1.75, 3.25))
    assert c["mape_percent_mean"] == pytest.approx(2.0)
    assert c["mape_percent_se"] == pytest.approx(np.std([1, 3, 1, 3], ddof=1) / 2)
    assert c["mae_mean"] == pytest.approx(0.0375)
    assert c["mae_n"] == 4


def test_failures_counted_and_listed_never_dropped(truth_data):
    c = cell(truth_data, "P", "A", 100)
    assert (c["n_jobs"], c["n_ok"], c["n_not_ok"]) == (7, 4, 3)
    assert c["statuses"] == "failed 2, timeout 1"
    assert len(truth_data.jobs) == 9                           # ... but it is kept
    f = truth_data.failures.set_index(["method", "status"])
    assert f.loc[("A", "failed"), "count"] == 2
    assert f.loc[("A", "failed"), "reason"] == "all rejected"
    assert f.loc[("A", "timeout"), "reason"] == "CPU limit 60 s"
    assert f.loc[("B", "error"), "reason"] == "ValueError: boom"
    assert int(truth_data.failures["count"].sum()) == 4
    text = [r for r in tables.failures_table(truth_data).text_rows()]
    assert any("ValueError: boom" in r for r in text)
    status = tables.frame(tables.status_table(truth_data)).set_index(["problem", "method"])
    assert status.loc[("P", "A"), "failed"] == "2"
    assert status.loc[("P", "B"), "error"] == "1"


# ---- consensus (MAE-MED) and MAE-POST -----------------------------------------------------
@pytest.fixture
def consensus_data(tmp_path):
    recs = [
        # exact sov: budget 10 (ignored: not its best), budget 100 (used)
        record("a10", "Q", "sov", 10, 0, log_z=-30.0, probs=[0.9, 0.9]),
        record("a100-0", "Q", "sov", 100, 0, log_z=-20.0, probs=[0.10, 0.60]),
        record("a100-1", "Q", "sov", 100, 1, log_z=-20.4, probs=[0.30, 0.40]),
        # exact sir: budget 50 is its best
        record("b50", "Q", "sir", 50, 0, log_z=-20.2, probs=[0.20, 0.50]),
        # sir's failed run at a larger budget does not make 500 its "best"
        record("b500", "Q", "sir", 500, 0, status="failed", reason="degenerate"),
        # approximate ep: excluded from the consensus, but measured against it
        record("c", "Q", "ep", 10, 0, log_z=-25.0, probs=[0.5, 0.5], exact=False),
        # a run that predicts but has no log Z
        record("d", "Q", "minimax-tilting", 10, 0, log_z=None, probs=[0.2, 0.5]),
    ]
    post = [0.0, 1.0]
    return make_store(tmp_path / "c.sqlite", recs,
                      [summary("Q", kind=None, probs=None, posterior=post)])


def test_consensus_is_median_of_exact_methods_best_budgets(consensus_data):
    c = consensus_data.consensus["Q"]
    # log Z: sov@100 (-20.0, -20.4: its median -20.2), sir@50 (-20.2); minimax-tilting has none
    assert c.log_z == pytest.approx(-20.2)
    assert c.log_z_runs == 3
    assert c.log_z_iqr == pytest.approx(0.0)   # over the 2 method medians
    # probabilities also from minimax-tilting@10: medians .2/.5 (sov), .2/.5, .2/.5
    np.testing.assert_allclose(c.probabilities, [0.2, 0.5])
    assert c.probability_runs == 4
    assert {m for m, _, _ in c.members} == {"sov", "sir", "minimax-tilting"}
    assert c.methods == ["minimax-tilting", "sir", "sov"]
    assert c.excluded == [("ep", "an approximation (Tags.exact is False)")]
    assert ("sov", 10, 1) not in c.members


def test_mae_med_and_log_z_deviation(consensus_data):
    jobs = consensus_data.jobs.set_index("job_id")
    assert jobs.loc["c", "mae_med"] == pytest.approx((0.3 + 0.0) / 2)
    assert jobs.loc["c", "med_abs_log_error"] == pytest.approx(4.8)
    assert jobs.loc["c", "med_mape_percent"] == pytest.approx(100 * 4.8 / 20.2)
    assert jobs.loc["a100-0", "mae_med"] == pytest.approx((0.1 + 0.1) / 2)
    assert jobs.loc["a10", "mae_med"] == pytest.approx((0.7 + 0.4) / 2)
    # no truth on this problem: no truth metrics, and the figures use the consensus ones
    assert jobs["mae"].isna().all() and jobs["mape_percent"].isna().all()
    assert agg.problem_metrics(consensus_data, "Q") == ("mae_med", "med_mape_percent")


def test_mae_post_against_bayes_posterior(consensus_data):
    jobs = consensus_data.jobs.set_index("job_id")
    assert jobs.loc["c", "mae_post"] == pytest.approx(0.5)
    assert jobs.loc["b50", "mae_post"] == pytest.approx((0.2 + 0.5) / 2)
    t4 = tables.frame(tables.problem_by_method_table(consensus_data, Palette(
        consensus_data.methods, ["ep"])))
    assert "ep (approx.): MAE-POST" in t4.columns
    assert t4.iloc[0]["sir: MAE-POST"].startswith("0.350 @50")


def test_log_z_not_estimated_is_not_a_failure(consensus_data):
    c = cell(consensus_data, "Q", "minimax-tilting", 10)
    assert (c["n_ok"], c["n_not_ok"], c["log_z_estimated"]) == (1, 0, 0)
    pal = Palette(consensus_data.methods)
    methods = tables.frame(tables.methods_table(consensus_data, pal)).set_index("method")
    assert methods.loc["minimax-tilting", "not ok"] == "0"
    assert methods.loc["minimax-tilting", "log Z not estimated"] == "1"
    assert methods.loc["ep", "kind"] == "approximation"
    rows = tables.frame(problem_tables.results_table(consensus_data, pal, "Q"))
    mm = rows[rows["method"] == "minimax-tilting"].iloc[0]
    assert mm["log Ẑ (SE)"] == "not estimated" and mm["runs"] == "1 of 1 ok"
    assert mm["|Δ log Z| vs consensus (nats) (SE)"] == "not estimated"


# ---- reference truth: errors below 2 SE are "at reference precision" -----------------------
def test_reference_precision(tmp_path):
    recs = [record("close", "R", "A", 100, 0, log_z=-10.015, probs=TRUE_P),
            record("far", "R", "A", 1000, 0, log_z=-10.5, probs=TRUE_P)]
    data = make_store(tmp_path / "r.sqlite", recs, [summary("R", kind="reference", se=0.01)])
    floor, what = agg.precision_floor(data, "R", "abs_log_error")
    assert floor == pytest.approx(0.02) and what == "reference precision"
    assert agg.precision_floor(data, "R", "mape_percent")[0] == pytest.approx(0.2)
    rows = tables.frame(problem_tables.results_table(data, Palette(data.methods), "R"))
    near, far = rows.iloc[0], rows.iloc[1]
    assert near["|Δ log Z| (nats) (SE)"].startswith("at reference precision (< 0.020)")
    assert far["|Δ log Z| (nats) (SE)"] == "0.500"
    # an exact truth never gets a floor
    assert math.isnan(agg.precision_floor(data, "nope", "abs_log_error")[0])


# ---- tables of the paper's shape ----------------------------------------------------------
def test_tables_by_n_and_by_problem(tmp_path):
    recs, probs = [], []
    for n, err in ((50, 0.1), (200, 0.3)):
        for seed in range(2):
            name = f"of:n={n},seed={seed}"
            probs.append(summary(name, family="of", n_train=n, probs=None))
            for b in (100, 1000):
                recs.append(record(f"{name}-{b}", name, "A", b, 0,
                                   log_z=TRUE_LZ - err * 100 / b, n_train=n))
    data = make_store(tmp_path / "n.sqlite", recs, probs)
    pal = Palette(data.methods)
    (t1,) = problem_tables.n_grid(data, pal, "mape_percent")
    t1 = tables.frame(t1).set_index("N")
    assert t1.loc["50", "budget 100"].startswith("1.00")      # 0.1 nats of 10 = 1 %
    assert t1.loc["200", "budget 1e3"].startswith("0.300")
    assert t1.loc["200", "problems"] == "2"
    t2 = problem_tables.problem_grid(data, pal, "mape_percent")
    assert len(t2.rows) == 4


# ---- presentation helpers -----------------------------------------------------------------
def test_palette_is_fixed_per_label():
    p1 = Palette(["b", "a", "c"], approximate=["c"])
    p2 = Palette(["c", "a", "b"])
    assert p1.colour("a") == p2.colour("a") != p1.colour("b")
    assert p1.linestyle("c") == "--" and p1.linestyle("a") == "-"
    assert p1.legend_label("c") == "c (approx.)"
    many = Palette([f"m{i}" for i in range(14)])     # told apart by colour and marker
    assert len({(many.colour(f"m{i}"), many.marker(f"m{i}")) for i in range(14)}) == 14


def test_number_formats():
    assert fmt(0.0123456) == "0.0123"
    assert fmt(float("nan")) == "—"
    assert fmt(2.5e-5) == "2.50e-05"
    assert fmt_se(0.25, 0.0123) == "0.250 (0.012)"
    assert (fmt_budget(1000), fmt_budget(30000), fmt_budget(1500)) == ("1e3", "3e4", "1500")


def test_missing_store_is_a_clear_error(tmp_path, capsys):
    from harness.cli.main import main

    assert main(["report", "--store", str(tmp_path / "nope.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "--store" in err and "nope.sqlite" in err and "Traceback" not in err
    assert not (tmp_path / "nope.sqlite").exists()


def test_environment_rows_compact_workers():
    client = {"python": "3.11", "blas": [{"internal_api": "openblas", "version": "0.3",
                                          "num_threads": 2, "filepath": "/x/libopenblas.so"}],
              "thread_env": {"OMP_NUM_THREADS": None}}
    worker = {**client, "blas": [{**client["blas"][0], "num_threads": 1}],
              "thread_env": {"OMP_NUM_THREADS": "1"}}
    rows = dict(tables.environment_rows({
        "environment": client, "workers": {"tcp://a": worker, "tcp://b": worker},
        "cluster": "local", "sweep_file": "long text",
        "sweeps": {"q": {"text": "t", "path": "p"}}}))
    assert rows["blas 0"] == "openblas 0.3, 2 thread(s), libopenblas.so"
    assert rows["thread_env"] == "none set"
    assert rows["workers (2): thread_env"] == "OMP_NUM_THREADS=1"
    assert rows["workers (2): blas 0"].startswith("openblas 0.3, 1 thread(s)")
    assert "workers (2): python" not in rows                    # same as the client
    assert rows["cluster"] == "local" and rows["sweeps.q.path"] == "p"
    assert "sweep_file" not in rows and "sweeps.q.text" not in rows


def test_report_of_empty_and_all_failed_stores(tmp_path):
    from harness.report import build_report

    with ResultStore(tmp_path / "empty.sqlite") as st:
        st.add_problem(summary("P"))
    paths = build_report(tmp_path / "empty.sqlite", tmp_path / "e", pdf_file=False)
    assert "No jobs yet." in paths["html"].read_text(encoding="utf-8")
    recs = [record(f"f{i}", "P", "A", 10 * (i + 1), status="timeout", reason="CPU limit",
                   cpu=None) for i in range(3)]
    make_store(tmp_path / "failed.sqlite", recs, [summary("P")])
    html = build_report(tmp_path / "failed.sqlite", tmp_path / "f",
                        pdf_file=False)["html"].read_text(encoding="utf-8")
    assert "3 jobs did not succeed" in html and "CPU limit" in html
    assert "<img" not in html                    # nothing to draw, and nothing drawn wrongly


def test_figures_build_their_palette_when_none_is_given(tmp_path):
    """A loaded store has no palette until a report draws it: the figure functions build the
    report's own (harness.report.build.palette_for) instead of failing on None."""
    from harness.report import figures
    from harness.report.build import palette_for

    recs = [record(f"{m}-{b}-{i}", "P", m, b, i, log_z=TRUE_LZ - 0.1 / b, probs=TRUE_P,
                   cpu=b / 100 + 1e-3 * i, exact=m != "ep")
            for m in ("A", "ep") for b in (100, 1000) for i in range(2)]
    data = make_store(tmp_path / "f.sqlite", recs, [summary("P")])
    assert data.palette is None
    spec = figures.time_error(data, "P", data.palette)
    try:
        want = palette_for(data)
        drawn = [c.lines[0] for ax in spec.figure.axes for c in ax.containers
                 if c.get_label() == "A"]
        assert drawn and all(ln.get_color() == want.colour("A") for ln in drawn)
    finally:
        figures.close([spec])
    specs = figures.all_figures(data, None)
    assert len(specs) == 3
    figures.close(specs)


# ---- unreliable estimates (harness.model.reliability) -------------------------------------------
def test_unreliable_jobs_are_kept_with_their_numbers_but_shown_apart(tmp_path):
    """An unreliable job keeps its log Ẑ, probabilities and errors (jobs, export) but is not
    part of the cell's means, the consensus or the failures list; it has its own table."""
    from harness.analysis.results import job_rows
    from harness.report import build_report

    recs = [record(f"a{i}", "P", "sov", 100, i, log_z=-10.1, probs=[0.25, 0.75])
            for i in range(2)]
    recs.append(record("a-u", "P", "sov", 100, 2, log_z=-4e10, probs=[0.9, 0.1],
                       status="unreliable",
                       reason="weights degenerate: effective sample size 1 of 100 points; "
                              "randomisations degenerate: one of 10 holds 100.0% of Ẑ"))
    recs.append(record("a-f", "P", "sov", 100, 3, status="failed", reason="all rejected"))
    data = make_store(tmp_path / "u.sqlite", recs, [summary("P")])
    c = cell(data, "P", "sov", 100)
    assert (c["n_jobs"], c["n_ok"]) == (4, 2) and c["statuses"] == "failed 1, unreliable 1"
    assert c["abs_log_error_mean"] == pytest.approx(0.1) and c["abs_log_error_n"] == 2
    assert data.consensus["P"].log_z == pytest.approx(-10.1)
    jobs = data.jobs.set_index("job_id")
    assert jobs.loc["a-u", "abs_log_error"] == pytest.approx(4e10 - 10)
    assert jobs.loc["a-u", "mae"] == pytest.approx(0.65)
    assert list(data.failures["status"]) == ["failed"]
    u = data.unreliable.iloc[0]
    assert (u["count"], u["n_jobs"], u["log_z_median"]) == (1, 4, -4e10)
    assert u["reasons"] == "randomisations degenerate; weights degenerate"
    text = tables.unreliable_table(data).text_rows()
    assert text[0][3] == "1 of 4" and "weights degenerate" in text[0][6]

    columns, rows = job_rows(data)
    row = next(r for r in rows if r["job_id"] == "a-u")
    assert row["status"] == "unreliable" and row["reason"].startswith("weights degenerate")
    assert row["log_marginal_likelihood"] == -4e10
    assert list(row["test_probabilities"]) == [0.9, 0.1]

    html = build_report(tmp_path / "u.sqlite", tmp_path / "r",
                        pdf_file=False)["html"].read_text(encoding="utf-8")
    assert 'id="unreliable"' in html and "1 job gave an" in html
    assert "1 job did not succeed" in html   # the failed one only


# ---- who enters the consensus (docs/math.md §3d) ----------------------------------------------
def _plugin(unbiased: bool):
    """A plugin registered in this process (as a method file is), exact by Tags' default, with
    a setting so that it can run in two variants."""
    from harness.model.method import Method
    from harness.model.tags import Tags
    from harness.plugins.registry import register_file_method

    class Broken(Method):
        name = f"Broken@{'unbiased' if unbiased else 'plain'}"
        summary = "adds `shift` to log Z"
        budget_unit = "particles"
        tags = Tags(unbiased_z=unbiased)

        def __init__(self, shift: float = 0.0):
            self.shift = shift

        def _estimate(self, problem, budget, rng):  # pragma: no cover - never run here
            raise NotImplementedError

    register_file_method(Broken.name, Broken)
    return Broken.name


def _auditor_store(tmp_path, plugin: str):
    """linear1d:n_train=30 with three exact unbiased methods near the exact -13.728 and a
    broken plugin, 0.8 nats low, in two setting variants of 3 replicates each."""
    from harness.plugins.specs import make_problem

    s = make_problem("linear1d:n_train=30").summary()
    true_lz = s["true_log_marginal_likelihood"]
    name = s["name"]
    recs = []
    for m, offsets in (("sov", (-0.002, 0.0, 0.002)), ("sir", (-0.001, 0.001)),
                       ("minimax-tilting", (0.0,))):
        recs += [record(f"{m}{i}", name, m, 1000, i, log_z=true_lz + d, n_train=30)
                 for i, d in enumerate(offsets)]
    for shift in (1, 2):
        for i in range(3):
            r = record(f"b{shift}-{i}", name, f"{plugin}[shift={shift}]", 1000, i,
                       log_z=true_lz - 0.8 - 0.01 * shift, n_train=30)
            r["method_name"], r["settings"] = plugin, {"shift": float(shift)}
            recs.append(r)
    return make_store(tmp_path / "audit.sqlite", recs, [dict(s, truth_kind=None)]), name, true_lz


def test_consensus_leaves_out_a_plugin_that_does_not_declare_an_unbiased_z(tmp_path):
    """The auditor's case: the plugin (exact by default, two variants) moved the consensus from
    the exact -13.728 to -14.548; it stays at the exact methods' value and names them."""
    from harness.report.build import _facts

    plugin = _plugin(unbiased=False)
    data, name, true_lz = _auditor_store(tmp_path, plugin)
    c = data.consensus[name]
    assert c.log_z == pytest.approx(true_lz, abs=1e-9)   # sov, sir, minimax-tilting medians
    assert c.methods == ["minimax-tilting", "sir", "sov"]
    assert not any(plugin in m for m, _, _ in c.members)
    assert {m for m, _ in c.excluded} == {f"{plugin}[shift=1]", f"{plugin}[shift=2]"}
    assert all("not declared unbiased" in why for _, why in c.excluded)
    facts = dict(_facts(data, name))
    assert facts["consensus"].endswith("from minimax-tilting, sir, sov (each method once)")
    assert plugin in facts["left out of the consensus"]
    jobs = data.jobs.set_index("job_id")
    assert jobs.loc["b1-0", "med_abs_log_error"] == pytest.approx(0.81)


def test_consensus_counts_each_method_once_whatever_its_variants(tmp_path):
    """A plugin that declares an unbiased Ẑ enters, but its two variants (6 runs) count as one
    method: the median of four method medians, not of 12 runs of which 6 are the plugin's."""
    plugin = _plugin(unbiased=True)
    data, name, true_lz = _auditor_store(tmp_path, plugin)
    c = data.consensus[name]
    assert c.methods == sorted(["minimax-tilting", "sir", "sov", plugin])
    assert c.log_z_runs == 12
    # method medians: true_lz (×3) and true_lz - 0.815 -> median true_lz
    assert c.log_z == pytest.approx(true_lz, abs=1e-9)
    assert c.excluded == []


def test_consensus_leaves_out_unregistered_methods(tmp_path):
    """Unbiasedness is asked of the registered class: a method unknown here stays out."""
    recs = [record("s", "U", "sov", 100, 0, log_z=-5.0),
            record("g", "U", "gone-method", 100, 0, log_z=-9.0)]
    data = make_store(tmp_path / "u.sqlite", recs, [summary("U", kind=None, probs=None)])
    c = data.consensus["U"]
    assert c.log_z == -5.0 and c.methods == ["sov"]
    assert c.excluded == [("gone-method", agg.UNREGISTERED)]
    assert agg.consensus_exclusion("rejection-bootstrap", {"count": "hard"}) is None
    assert "not declared unbiased" in agg.consensus_exclusion("rejection-bootstrap",
                                                              {"count": "soft"})
    assert "not declared unbiased" in agg.consensus_exclusion("ess", {})
    assert "approximation" in agg.consensus_exclusion("sov", {}, exact_method=False)
