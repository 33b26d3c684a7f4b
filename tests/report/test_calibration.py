"""The calibration section (harness.report.calibration): z = (estimate − truth) / SE per method,
on a small real store with exact truth and on synthetic records with known answers."""

from __future__ import annotations

import csv
import math
import shutil
import subprocess

import matplotlib.pyplot as plt
import numpy as np
import pytest
from scipy import stats

from harness.analysis import aggregate as agg
from harness.core.seeding import rng_for
from harness.execution.runner import run_one
from harness.execution.store import ResultStore
from harness.plugins.registry import get_method
from harness.plugins.specs import make_problem
from harness.report import calibration_section
from harness.report.build import build_report
from harness.report.calibration import (
    FAR,
    TAIL,
    allowed_share,
    calibration,
    csv_rows,
    table,
    z_scores,
)
from harness.report.palette import palette_for

SPECS = ("linear1d:n_train=30,n_test=8", "linear1d:n_train=30,n_test=8,seed=1")
SEEDS = 3
RB = "rejection-bootstrap[populations=1]"   # one population: no per-point SEs


# ---- a small real store ------------------------------------------------------------------
@pytest.fixture(scope="module")
def real(tmp_path_factory):
    root = tmp_path_factory.mktemp("calibration")
    path = root / "small.sqlite"
    methods = [get_method("sov")(), get_method("rejection-bootstrap")(populations=1)]
    with ResultStore(path) as store:
        for spec in SPECS:
            problem = make_problem(spec)
            store.add_problem(problem.summary())
            for m in methods:
                for rep in range(SEEDS):
                    key = {"problem": problem.name, "method": m.label(), "r": rep}
                    store.add_record(run_one(problem, m, 1000, rng_for(key),
                                             job_id=f"{problem.name}-{m.label()}-{rep}",
                                             replicate=rep, sweep="small", problem_spec=spec,
                                             sweep_seed=0))
    return {"path": path, "root": root, "data": agg.load(path)}


def test_real_store_numbers_match_a_direct_computation(real):
    data = real["data"]
    cal = calibration(data)
    for method in ("sov", RB):
        z = []
        for rec in data.records:
            if rec["method"] != method:
                continue
            s = data.problems[rec["problem"]]
            assert s["truth_kind"] == "exact"
            z.append((rec["log_marginal_likelihood"] - s["true_log_marginal_likelihood"])
                     / rec["log_marginal_likelihood_se"])
        z = np.array(z)
        g = cal.group(method, "log_z")
        assert g.jobs == g.n == len(SPECS) * SEEDS and g.no_se == 0
        np.testing.assert_allclose(np.sort(g.z), np.sort(z), rtol=1e-12)
        assert g.mean == pytest.approx(np.mean(z))
        assert g.sd == pytest.approx(np.std(z, ddof=1))
        assert g.share_beyond(TAIL) == pytest.approx(np.mean(np.abs(z) > 3))
        assert g.median_abs == pytest.approx(np.median(np.abs(z)))
    # per test point, for sov (it reports per-point SEs)
    zp = []
    for rec in data.records:
        if rec["method"] == "sov":
            s = data.problems[rec["problem"]]
            zp.append((np.array(rec["test_probabilities"]) - s["true_test_probabilities"])
                      / np.array(rec["test_probabilities_se"]))
    zp = np.concatenate(zp)
    g = cal.group("sov", "probabilities")
    assert g.n == len(zp) == len(SPECS) * SEEDS * 8 and g.jobs == len(SPECS) * SEEDS
    assert g.mean == pytest.approx(np.mean(zp))
    assert g.sd == pytest.approx(np.std(zp, ddof=1))
    assert g.share_beyond(FAR) == pytest.approx(np.mean(np.abs(zp) > 5))
    # rejection-bootstrap with one population gives no per-point SEs: its jobs are counted,
    # not dropped
    assert cal.group(RB, "probabilities") is None
    assert cal.no_se == {(RB, "probabilities"): len(SPECS) * SEEDS}
    t = table(cal, palette_for(data))
    assert f"{RB} (test probabilities: 6)" in t.caption
    assert len(t.rows) == 3 and cal.no_truth == 0


def test_real_store_report_has_the_section_in_html_pdf_and_csv(real):
    out = real["root"] / "out"
    written = build_report(real["path"], out)
    html = written["html"].read_text(encoding="utf-8")
    assert 'id="calibration"' in html and 'href="#calibration"' in html
    assert "Calibration of the standard errors" in html
    with open(written["calibration_csv"], newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cal = calibration(real["data"])
    assert [(r["quantity"], r["method"], r["status"]) for r in rows] == [
        (g.quantity, g.method, g.status) for g in cal.groups]
    for r, g in zip(rows, cal.groups, strict=True):
        assert int(r["n_z"]) == g.n
        assert float(r["mean_z"]) == pytest.approx(g.mean)
        assert float(r["share_abs_z_gt_3"]) == pytest.approx(g.share_beyond(TAIL))
    # the reliability rule's table: sov and the one-population rejection sampler (log Z SE
    # only) on both problems, every replicate judged
    assert "Does the reliability rule catch the misses?" in html
    with open(written["reliability_rule_csv"], newline="", encoding="utf-8") as f:
        rule = list(csv.DictReader(f))
    assert {(r["method"], r["problem"]) for r in rule} == {
        (m, make_problem(s).name) for m in ("sov", RB) for s in SPECS}
    assert all(int(r["runs"]) == SEEDS for r in rule)
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(written["pdf"]), "-"], capture_output=True,
                              text=True, timeout=60).stdout
        assert "Calibration of the standard errors" in text


def test_figure_is_drawn_with_a_panel_per_quantity(real):
    data = real["data"]
    sec = calibration_section.section(data, palette_for(data))
    assert sec is not None and len(sec.figures) == 1
    spec = sec.figures[0]
    try:
        titles = [ax.get_title() for ax in spec.figure.axes if ax.get_title()]
        assert titles == ["log Z: one z per job",
                          "test probabilities: one z per job and test point"]
        assert spec.to_bytes("svg").startswith(b"<?xml")
        assert spec.section == calibration_section.TITLE
    finally:
        plt.close(spec.figure)


# ---- synthetic records -------------------------------------------------------------------
TRUE_LZ = -20.0
TRUE_P = np.array([0.1, 0.4, 0.6, 0.9])


def _summary(name, kind="exact", lz_se=None, p_se=None):
    return {"name": name, "family": "hand", "n_train": 10, "n_test": len(TRUE_P),
            "truth_kind": kind, "true_log_marginal_likelihood": TRUE_LZ,
            "true_log_marginal_likelihood_se": lz_se,
            "true_test_probabilities": TRUE_P.tolist(),
            "true_test_probabilities_se": p_se}


def _record(i, method, problem, lz, lz_se, p, p_se, status="ok"):
    return {"job_id": f"{method}-{i}", "problem": problem, "method": method, "budget": 100,
            "replicate": i, "status": status, "reason": "" if status == "ok" else "weights: x",
            "log_marginal_likelihood": lz, "log_marginal_likelihood_se": lz_se,
            "test_probabilities": None if p is None else list(p),
            "test_probabilities_se": None if p_se is None else list(p_se), "cpu_seconds": 1.0}


def synthetic(n_jobs=300, seed=0):
    """'honest' reports the SE its errors are drawn with; 'overconfident' the same errors with
    SEs divided by 10; 'overconfident' also has a few unreliable runs, far off."""
    rng = np.random.default_rng(seed)
    records = []
    for method, shrink in (("honest", 1.0), ("overconfident", 10.0)):
        for i in range(n_jobs):
            se, pse = 0.05, np.full(len(TRUE_P), 0.01)
            lz = TRUE_LZ + se * rng.standard_normal()
            p = TRUE_P + pse * rng.standard_normal(len(TRUE_P))
            records.append(_record(i, method, "P", lz, se / shrink, p, pse / shrink))
    for i in range(5):
        records.append(_record(1000 + i, "overconfident", "P", TRUE_LZ - 3.0, 0.01,
                               TRUE_P + 0.2, np.full(len(TRUE_P), 0.01), status="unreliable"))
    return records


def test_overconfident_method_is_flagged_and_the_honest_one_is_not():
    data = agg.prepare(synthetic(), {"P": _summary("P")}, {})
    cal = calibration(data)
    for q in ("log_z", "probabilities"):
        honest, over = cal.group("honest", q), cal.group("overconfident", q)
        assert not honest.flagged, (q, honest.share_beyond(TAIL), honest.allowed_share)
        assert over.flagged
        assert 0.8 < honest.sd < 1.2 and 8 < over.sd < 12
        bad = cal.group("overconfident", q, "unreliable")
        assert bad is not None and bad.jobs == 5 and bad.flagged     # the flag catches them too
    t = table(cal, None)
    verdicts = {(r[1].text, r[0].text, r[2].text): r[-1].text for r in t.rows}
    assert verdicts[("honest", "log Z", "ok")] == "covered"
    assert verdicts[("overconfident", "log Z", "ok")] == "SEs too small"
    assert verdicts[("overconfident", "log Z", "unreliable")] == "SEs too small"
    sec = calibration_section.section(data, palette_for(data))
    try:
        assert calibration_section.context(sec, {"calibration": b""})["flagged"] == [
            "overconfident (log Z)", "overconfident (test probabilities)"]
    finally:
        plt.close(sec.figures[0].figure)


def test_jobs_without_se_are_counted_not_dropped():
    records = synthetic(n_jobs=20)
    records += [_record(500 + i, "honest", "P", TRUE_LZ, None, TRUE_P, None) for i in range(7)]
    records += [_record(600 + i, "no-se", "P", TRUE_LZ + 0.1, None, TRUE_P, None)
                for i in range(4)]
    records += [_record(700, "honest", "Q", -5.0, 0.1, TRUE_P, [0.01] * 4)]   # no truth
    problems = {"P": _summary("P"), "Q": {**_summary("Q"), "truth_kind": None}}
    cal = calibration(agg.prepare(records, problems, {}))
    assert cal.group("honest", "log_z").jobs == 20 and cal.group("honest", "log_z").no_se == 7
    assert cal.group("no-se", "log_z") is None
    assert cal.no_se == {("honest", "log_z"): 7, ("honest", "probabilities"): 7,
                         ("no-se", "log_z"): 4, ("no-se", "probabilities"): 4}
    assert cal.no_truth == 1
    t = table(cal, None)
    assert "22 job-quantities" in t.caption and "no-se (log Z: 4)" in t.caption
    assert "1 answered jobs are on problems without truth" in t.caption
    columns, rows = csv_rows(cal)
    honest = next(r for r in rows if r["method"] == "honest" and r["quantity"] == "log_z")
    assert honest["jobs_without_se"] == 7


def test_reference_truth_adds_its_standard_error():
    records = [_record(0, "m", "R", TRUE_LZ + 0.5, 0.3, TRUE_P + 0.02, [0.01] * 4)]
    ref = _summary("R", kind="reference", lz_se=0.4, p_se=[0.01] * 4)
    cal = calibration(agg.prepare(records, {"R": ref}, {}))
    assert cal.group("m", "log_z").z[0] == pytest.approx(0.5 / 0.5)
    np.testing.assert_allclose(cal.group("m", "probabilities").z, 0.02 / math.sqrt(2e-4))
    assert cal.against_reference == 2
    assert "SE = sqrt(SE_est² + SE_ref²)" in table(cal, None).caption


def test_z_scores_with_a_zero_standard_error():
    z = z_scores([1.0, 1.0, 2.0], [0.0, 0.0, 0.5], [1.0, 0.5, 1.0])
    assert z[0] == 0 and z[1] == math.inf and z[2] == pytest.approx(2.0)


def test_allowed_share_is_the_binomial_quantile():
    assert allowed_share(3) == pytest.approx(1 / 3)
    for n in (10, 100, 1000):
        k = allowed_share(n) * n
        assert stats.binom.sf(k, n, 0.01) <= 0.001 < stats.binom.sf(k - 1, n, 0.01)
    assert math.isnan(allowed_share(0))


def test_no_truth_no_section():
    records = [_record(0, "m", "Q", -5.0, 0.1, TRUE_P, [0.01] * 4)]
    data = agg.prepare(records, {"Q": {**_summary("Q"), "truth_kind": None}}, {})
    assert calibration_section.section(data, palette_for(data)) is None


def test_an_approximation_is_left_out_and_named(tmp_path):
    """vecchia-sov reports an SE, but of its own approximated probability: its z against the
    truth says nothing about its error bars, so calibration leaves it out and says so."""
    from harness.report.calibration import caption

    path = tmp_path / "approx.sqlite"
    problem = make_problem(SPECS[0])
    with ResultStore(path) as store:
        store.add_problem(problem.summary())
        for m in (get_method("sov")(), get_method("vecchia-sov")(m=3)):
            key = {"problem": problem.name, "method": m.label()}
            store.add_record(run_one(problem, m, 1000, rng_for(key), job_id=m.label(),
                                     replicate=0, sweep="approx", problem_spec=SPECS[0],
                                     sweep_seed=0))
    cal = calibration(agg.load(path))
    assert {g.method for g in cal.groups} == {"sov"}
    assert cal.approximations == {"vecchia-sov[m=3]"}
    assert "Approximations are not in this table" in caption(cal)
    assert "(vecchia-sov[m=3])" in caption(cal)


# ---- does the reliability rule catch the misses? -----------------------------------------
def test_rule_table_counts_off_and_within_runs_by_status():
    """Runs off by > 3 SE (log Z or any one test point) against the status the rule gave them;
    runs without an SE are not judged; problems without the truth are not counted."""
    from harness.report import rule_check

    se, pse = 0.1, [0.01] * 4
    near, far = TRUE_P + 0.005, TRUE_P + np.array([0, 0, 0.05, 0])   # one point at 5 SE
    records = [
        _record(0, "m", "P", TRUE_LZ + 0.1, se, near, pse),  # within, ok
        _record(1, "m", "P", TRUE_LZ - 0.5, se, near, pse),  # off (log Z), ok
        _record(2, "m", "P", TRUE_LZ, se, far, pse),  # off (a point), ok
        _record(3, "m", "P", TRUE_LZ - 0.5, se, near, pse, status="unreliable"),  # off, flagged
        _record(4, "m", "P", TRUE_LZ + 0.1, se, near, pse, status="unreliable"),  # within, flagged
        _record(5, "m", "P", TRUE_LZ - 9.0, None, TRUE_P, None),  # no SE
        _record(6, "m", "Q", TRUE_LZ - 9.0, se, near, pse),  # no truth
    ]
    problems = {"P": _summary("P"), "Q": {**_summary("Q"), "truth_kind": None}}
    data = agg.prepare(records, problems, {})
    cells = rule_check.rule_cells(calibration(data))
    assert len(cells) == 1
    c = cells[0]
    assert (c.method, c.problem, c.budget) == ("m", "P", 100)
    assert (c.runs, c.off, c.off_flagged, c.within, c.within_flagged) == (5, 3, 1, 2, 1)
    assert c.ok_and_off == 2 and c.worst_ok == pytest.approx(5.0)
    t = rule_check.table(cells, data, None)
    assert [x.text for x in t.rows[0]][3:9] == ["5", "3", "1/3", "2", "1/2", "2"]
    assert "3 runs off, 1 of them flagged; 2 within, 1 of them flagged" in t.caption
    columns, rows = rule_check.csv_rows(cells)
    assert rows[0]["ok_and_off"] == 2 and rows[0]["off_flagged"] == 1

