"""The tuning section of the report on hand-made tune records with known answers."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from harness.analysis import aggregate as agg
from harness.execution.store import ResultStore
from harness.report import build_report
from harness.report import tuning as tun
from harness.report.style import Palette
from harness.sweep.tune_exact import reference_key

GRID = np.geomspace(0.1, 100.0, 7)            # log step ln(10) / 2
SPACE = {"scale": [0.1, 100.0, 7]}
OPT = 3.0                                     # the exact optimum (between grid points)


def exact_lz(scale):
    return -10.0 - (np.log(scale) - math.log(OPT)) ** 2


def tune_record(job_id, method, strategy, replicate, *, problem="p1", space=SPACE, offset=0.0,
                chosen=None, cpu=2.0, status="ok", chain=None, points=None, exact=True):
    points = points if points is not None else [{"scale": float(s)} for s in GRID]
    evals = []
    for p in points:
        lz = float(np.sum([exact_lz(v) for v in p.values()])) + offset
        evals.append({"params": p, "budget": 100, "log_z": lz, "log_z_se": 0.05,
                      "cpu_seconds": cpu / len(points), "status": "ok", "stage": "grid"})
    if chosen is None:
        best = max(evals, key=lambda e: e["log_z"])
        chosen, chosen_lz = best["params"], best["log_z"]
    else:
        chosen_lz = float(np.sum([exact_lz(v) for v in chosen.values()])) + offset
    return {"job_id": job_id, "sweep": "hand", "replicate": replicate, "seed": 0,
            "problem_spec": problem, "job_key": {}, "time_limit": None, "kind": "tune",
            "problem": problem, "method": method, "method_name": method, "settings": {},
            "budget": 100, "budget_unit": "samples", "n_train": 20, "n_test": 5,
            "strategy": strategy, "space": space, "status": status,
            "reason": None if status == "ok" else "boom",
            "evaluations": evals if status == "ok" else [],
            "chosen": chosen if status == "ok" else None,
            "chosen_log_z": chosen_lz if status == "ok" else None,
            "log_marginal_likelihood": chosen_lz if status == "ok" else None,
            "cpu_seconds": cpu if status == "ok" else None, "wall_seconds": cpu,
            "n_evaluations": len(evals), "chain": chain, "diagnostics": {},
            "worker": None, "finished_at": "2026-01-01T00:00:00", "exact_method": exact}


def exact_reference():
    grid = np.linspace(math.log(0.1), math.log(100.0), 201)
    logd = -(grid - math.log(OPT)) ** 2
    logd -= math.log(np.trapezoid(np.exp(logd), grid))
    return {"space": SPACE, "posterior": {"log_grid": grid.tolist(), "log_density": logd.tolist()},
            "surface": {"kind": "exact", "space": SPACE,
                        "points": [{"scale": float(s)} for s in GRID],
                        "log_z": [float(exact_lz(s)) for s in GRID],
                        "optimum": {"scale": OPT}, "optimum_log_z": -10.0, "source": "by hand"}}


def store_with(path, records, metadata=None, estimate=()):
    with ResultStore(path) as st:
        st.add_problem({"name": "p1", "family": "hand", "n_train": 20, "n_test": 5,
                        "truth_kind": "exact", "true_log_marginal_likelihood": -10.0,
                        "true_test_probabilities": [0.5] * 5, "kernel": None})
        for r in [*records, *estimate]:
            st.add_record(r)
        for k, v in (metadata or {}).items():
            st.set_metadata(k, v)
    return path


def one_d_records():
    rng = np.random.default_rng(0)
    chain = {"walkers": 4, "steps": 50, "burn": 10, "acceptance_fraction": 0.4,
             "samples": (math.log(OPT) + 0.7 * rng.standard_normal((4000, 1))).tolist(),
             "autocorr_time": None}
    return [
        tune_record("g0", "sov", "grid", 0, offset=0.1),
        tune_record("g1", "sov", "grid", 1, offset=-0.1),
        tune_record("e0", "sov", "explore-exploit", 0, chosen={"scale": float(GRID[2])}),
        tune_record("e1", "sov", "explore-exploit", 1, chosen={"scale": float(GRID[4])}),
        tune_record("pm0", "sov", "pseudo-marginal", 0, chain=chain),
        tune_record("x0", "sov", "explore-exploit", 2, status="failed"),
    ]


def test_surface_distance_and_loss_against_the_exact_reference(tmp_path):
    path = store_with(tmp_path / "t.sqlite", one_d_records(),
                      {reference_key("p1"): exact_reference()})
    data = agg.load(path)
    assert len(data.jobs) == 0 and len(data.tune_records) == 6   # not in the estimate tables
    (g,) = tun.groups(data)
    assert g.ref_kind == "exact" and g.ref_optimum == {"scale": OPT}
    s = g.surfaces["sov"]
    np.testing.assert_allclose(s.log_z, exact_lz(GRID), atol=1e-12)   # mean of ±0.1
    np.testing.assert_allclose(s.se, 0.1, rtol=1e-9)                  # sd 0.1414 / sqrt(2)
    step = math.log(10.0) / 2
    assert g.steps == pytest.approx([step])
    # the grid's best point is 3.16: ln(3.16/3) away, a small fraction of a step
    d_log, d_steps = g.distance({"scale": float(GRID[3])})
    assert d_log == pytest.approx(math.log(GRID[3] / OPT))
    assert d_steps == pytest.approx(d_log / step)
    assert g.lost({"scale": float(GRID[3])}) == pytest.approx(math.log(GRID[3] / OPT) ** 2)
    assert math.isnan(g.lost({"scale": 2.0}))                          # not a grid point
    table = tun.optimum_table(g, Palette(["sov"]))
    rows = {r[1].text: r for r in table.rows}
    assert set(rows) == {"grid", "explore-exploit", "pseudo-marginal"}
    assert rows["grid"][2].text == "2/2" and rows["grid"][3].text == "scale = 3.16"
    assert rows["explore-exploit"][2].text == "2/3" and "bad" in rows["explore-exploit"][2].cls
    assert "≈ 3.16 [1.0–10]" in rows["explore-exploit"][3].text             # replicates disagree
    expected = np.mean([abs(math.log(GRID[2] / OPT)), abs(math.log(GRID[4] / OPT))])
    assert float(rows["explore-exploit"][4].text) == pytest.approx(expected, rel=1e-2)
    chain = tun.chain_table(g, Palette(["sov"]))
    assert [r[0].text for r in chain.rows] == ["sov", "exact posterior"]
    mean, sd = tun.exact_posterior_moments(g.reference)
    assert mean == pytest.approx(math.log(OPT), abs=1e-5)   # trapezoid rule, h = 0.035
    assert sd == pytest.approx(math.sqrt(0.5), rel=1e-3)               # exp(-x^2): var 1/2
    assert float(chain.rows[0][3].text) == pytest.approx(math.log(OPT), abs=0.05)


def test_two_parameters_without_truth_use_the_consensus_of_exact_methods(tmp_path):
    space = {"alpha": [1.0, 9.0, 3], "beta": [1.0, 9.0, 3]}
    pts = [{"alpha": a, "beta": b} for a in (1.0, 3.0, 9.0) for b in (1.0, 3.0, 9.0)]
    recs = [tune_record(f"s{r}", "sov", "grid", r, space=space, points=pts, offset=0.2 * r)
            for r in range(3)]
    # an approximation far off, with its optimum elsewhere: not part of the consensus
    approx = tune_record("l0", "laplace", "grid", 0, space=space, points=pts[::-1], offset=5)
    approx["evaluations"] = [{**e, "params": p} for e, p in zip(approx["evaluations"], pts,
                                                                  strict=True)]
    approx["method_name"] = "laplace"
    path = store_with(tmp_path / "t.sqlite", [*recs, approx])
    (g,) = tun.groups(agg.load(path))
    assert g.ref_kind == "consensus" and g.shape == (3, 3)
    # median of the sov replicates (offsets 0, .2, .4): the true surface + 0.2
    expected = np.array([[exact_lz(a) + exact_lz(b) for b in (1, 3, 9)] for a in (1, 3, 9)])
    np.testing.assert_allclose(g.ref_surface, expected + 0.2, atol=1e-12)
    assert g.ref_optimum == {"alpha": 3.0, "beta": 3.0}
    assert g.distance({"alpha": 9.0, "beta": 9.0})[1] == pytest.approx(math.sqrt(2))


def test_report_of_a_tune_only_store_and_of_a_mixed_store(tmp_path):
    from store_helpers import record

    path = store_with(tmp_path / "t.sqlite", one_d_records(),
                      {reference_key("p1"): exact_reference()})
    out = build_report(path, tmp_path / "out")
    html = out["html"].read_text(encoding="utf-8")
    assert "Hyperparameter tuning" in html and 'id="tune-p1"' in html
    assert len(re.findall(r'<img src="data:image/svg\+xml;base64,', html)) == 2  # surface, chain
    assert "Optimum found by each method and strategy" in html and "exact posterior" in html
    assert "The store holds no finished jobs yet" not in html and "No estimate jobs." in html
    assert "<h3>Tuning jobs</h3>" in html and "boom" in html           # the failed one
    assert out["pdf"].read_bytes().startswith(b"%PDF") and out["tuning_csv"].stat().st_size
    # with estimate jobs as well: both parts, and the estimate figures stay in their section
    est = [record(f"est{i}", "p1", "sov", 100, i, log_z=-10.0 + 0.01 * i, probs=[0.5] * 5)
           for i in range(3)]
    mixed = store_with(tmp_path / "m.sqlite", one_d_records(),
                       {reference_key("p1"): exact_reference()}, estimate=est)
    data = agg.load(mixed)
    assert len(data.jobs) == 3 and len(data.tune_records) == 6
    html = build_report(mixed, tmp_path / "out2", pdf_file=False)["html"].read_text()
    assert "Hyperparameter tuning" in html and "Error against CPU time" in html
    assert html.index('id="tune-p1"') > html.index('id="p-p1"')


@pytest.fixture(scope="module")
def tune_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("tune-report")
    path = store_with(root / "t.sqlite", one_d_records(), {reference_key("p1"): exact_reference()})
    return build_report(path, root / "out")


def test_tuning_section_renders_in_headless_chromium(tune_report, tmp_path):
    from PIL import Image
    from test_build_render import _chromium, _run_chromium, opened

    exe = _chromium()
    shot = tmp_path / "page.png"
    res = _run_chromium(exe, tmp_path / "profile", f"--screenshot={shot}",
                        "--window-size=1200,2400", opened(tune_report["html"], tmp_path))
    assert shot.is_file(), res.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    rgb = np.array([int(Palette(["sov"]).colour("sov")[i:i + 2], 16) for i in (1, 3, 5)])
    assert (np.abs(img - rgb).sum(axis=2) < 40).sum() > 1500     # the curves and histograms drew


def test_tuning_section_is_in_the_pdf(tune_report, tmp_path):
    import shutil
    import subprocess

    if not shutil.which("pdftotext"):
        pytest.skip("PDF text check needs pdftotext (apt-get install poppler-utils)")
    res = subprocess.run(["pdftotext", str(tune_report["appendix_pdf"]), "-"],   # the rest
                         capture_output=True, text=True, timeout=60)
    text = res.stdout
    for needle in ("Hyperparameter tuning", "Optimum found by each method and strategy",
                   "log Z surface and the optimum found", "Pseudo-marginal posterior",
                   "Tuning jobs that did not succeed"):
        assert needle in text, needle


def test_the_tuning_consensus_counts_each_unbiased_exact_method_once(tmp_path):
    """The report's consensus rule (docs/math.md §3d): two variants of one method count once,
    an exact method whose Ẑ is not unbiased (rejection-bootstrap's soft count) stays out."""
    space = {"scale": [0.1, 100.0, 7]}
    recs = [tune_record(f"s{r}", "sov", "grid", r, space=space, offset=0.2 * r) for r in range(3)]
    for i, label in enumerate(("minimax-tilting[a]", "minimax-tilting[b]")):
        rec = tune_record(f"t{i}", label, "grid", 0, space=space, offset=1.0)
        recs.append({**rec, "method_name": "minimax-tilting"})
    soft = tune_record("rb", "rejection-bootstrap", "grid", 0, space=space, offset=-30.0)
    recs.append({**soft, "settings": {"count": "soft"}})
    path = store_with(tmp_path / "t.sqlite", recs)
    (g,) = tun.groups(agg.load(path))
    assert g.ref_kind == "consensus"
    # method medians: sov 0.2 (offsets 0, .2, .4), minimax-tilting 1.0 -> their median 0.6
    np.testing.assert_allclose(g.ref_surface, exact_lz(GRID) + 0.6, atol=1e-12)
