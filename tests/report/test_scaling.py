"""The report's "Cost against N" section (harness.report.scaling).

Hand-made stores with planted growth laws check the numbers (exponents, the fixed budget, the
error column); a small real store (onefactor N = 64, 128, 256, two fast methods through
harness.execution.runner.run_one) checks that the section is drawn in the HTML and the PDF builds.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from store_helpers import make_store, real_store, record, summary

from harness.plugins.registry import get_method
from harness.report import scaling, scaling_section
from harness.report.build import build_report
from harness.report.style import Palette

SIZES = (256, 512, 1024, 2048)


def test_fit_exponent_recovers_planted_power_and_its_error():
    n = np.array(SIZES, float)
    fit = scaling.fit_exponent(n, 3e-7 * n**2)
    assert fit.exponent == pytest.approx(2.0, abs=1e-12) and fit.points == 4
    assert fit.se == pytest.approx(0.0, abs=1e-12)
    noisy = scaling.fit_exponent(n, 3e-7 * n**1.5 * np.array([1.1, 0.9, 1.05, 0.97]))
    assert abs(noisy.exponent - 1.5) < 0.1 and noisy.se > 0
    two = scaling.fit_exponent([100, 200], [1.0, 8.0])
    assert two.exponent == pytest.approx(3.0) and math.isnan(two.se)
    assert math.isnan(scaling.fit_exponent([100, 100], [1.0, 2.0]).exponent)   # one size
    assert math.isnan(scaling.fit_exponent([100, 200], [0.0, np.nan]).exponent)


def _scaled_store(tmp_path, *, setup=True, truth=True, budgets=None, noise=0.0):
    """Methods A (set-up ~ N^2, per sample ~ N, error ~ N^0.5) and B (N^3, N^2, flat) on one
    family at SIZES; two replicates; the records optionally without set-up times."""
    budgets = budgets or {"A": (100, 1000), "B": (1000, 10_000)}
    rng = np.random.default_rng(0)
    laws = {"A": (2.0, 1.0, 0.5), "B": (3.0, 2.0, 0.0)}
    recs, probs = [], []
    for n in SIZES:
        name = f"fam:n={n}"
        true_lz = -0.7 * n
        probs.append(summary(name, family="fam", n_train=n, lz=true_lz, probs=None,
                             kind="exact" if truth else None))
        for method, (ps, pc, pe) in laws.items():
            for b in budgets[method]:
                for rep in range(2):
                    jitter = 1.0 + noise * rng.standard_normal()
                    err = 1e-3 * n**pe * (1 + 0.1 * rep)
                    r = record(f"{method}-{n}-{b}-{rep}", name, method, b, rep,
                               log_z=true_lz + err, cpu=1e-9 * n**pc * b * jitter, n_train=n)
                    if setup:
                        r["setup_cpu_seconds"] = 1e-8 * n**ps * jitter
                        r["setup_wall_seconds"] = r["setup_cpu_seconds"]
                        r["setup_cached"] = rep > 0
                    recs.append(r)
        if not truth:   # a consensus needs an exact method with an unbiased Ẑ (here sov)
            for rep in range(3):
                recs.append(record(f"ref-{n}-{rep}", name, "sov", 10_000, rep,
                                   log_z=true_lz, cpu=1.0, n_train=n))
    return make_store(tmp_path / "scale.sqlite", recs, probs)


def test_section_numbers_on_planted_growth(tmp_path):
    data = _scaled_store(tmp_path)
    assert scaling.series(data) == {"fam": [f"fam:n={n}" for n in SIZES]}
    s = scaling.scaling(data, "fam")
    assert s.shared_budget == 1000 and s.budgets == {"A": 1000, "B": 1000}
    assert s.error_column == "abs_log_error" and s.error_against == "the exact truth"
    for method, (ps, pc, pe) in {"A": (2.0, 1.0, 0.5), "B": (3.0, 2.0, 0.0)}.items():
        f = s.fits[method]
        assert abs(f["setup"].exponent - ps) < 0.05
        assert abs(f["sample"].exponent - pc) < 0.05
        assert abs(f["error"].exponent - pe) < 0.05
    a = s.points[(s.points["method"] == "A") & (s.points["n_train"] == 1024)].iloc[0]
    assert a["sample"] == pytest.approx(1e-9 * 1024)               # cpu / budget
    assert a["error"] == pytest.approx(1e-3 * 32 * 1.05, rel=1e-9)  # mean of the 2 replicates
    assert a["runs"] == 2
    palette = Palette(data.methods, [])
    table = scaling.exponent_table(s, palette)
    row = next(r for r in table.rows if r[0].text.startswith("A"))
    assert [c.text for c in row[1:4]] == ["2.00 ± 0.00", "1.00 ± 0.00", "0.50 ± 0.00"]


def test_noisy_cost_still_gives_exponent_within_tolerance(tmp_path):
    data = _scaled_store(tmp_path, noise=0.05)
    s = scaling.scaling(data, "fam")
    assert abs(s.fits["A"]["setup"].exponent - 2.0) < 0.05
    assert s.fits["A"]["setup"].se > 0


def test_no_shared_budget_uses_each_methods_largest(tmp_path):
    data = _scaled_store(tmp_path, budgets={"A": (100, 1000), "B": (5000, 20_000)})
    s = scaling.scaling(data, "fam")
    assert s.shared_budget is None and s.budgets == {"A": 1000, "B": 20_000}
    assert abs(s.fits["B"]["sample"].exponent - 2.0) < 0.05
    assert "each at its own largest" in dict(scaling.facts(s))["fixed budget"]


def test_store_without_setup_times_and_without_truth(tmp_path):
    """Records written before set-up was timed: (a) is empty, the rest works; no truth:
    errors against the consensus."""
    data = _scaled_store(tmp_path, setup=False, truth=False)
    s = scaling.scaling(data, "fam")
    assert not s.has_setup and math.isnan(s.fits["A"]["setup"].exponent)
    assert s.error_column == "med_abs_log_error" and s.error_against == "the consensus"
    assert abs(s.fits["A"]["error"].exponent - 0.5) < 0.05
    palette = Palette(data.methods, [])
    keys = [f.key for f in scaling_section.sections(data, palette)[0].figures]
    assert "scale-setup-fam" not in keys and "scale-sample-fam" in keys


def test_one_size_has_no_section(tmp_path):
    recs = [record(f"j{i}", "p", "A", 100, i, log_z=-10.0) for i in range(2)]
    data = make_store(tmp_path / "one.sqlite", recs, [summary("p", probs=None)])
    assert scaling.series(data) == {} and scaling.scaling(data, "hand") is None


def _sized(name, n, params, method="A"):
    """Two ok jobs of `method` on a problem of size n with `params` (cost ~ n)."""
    recs = [record(f"{name}-{method}-{r}", name, method, 100, r, log_z=-0.7 * n + 0.01,
                   cpu=1e-3 * n, n_train=n) for r in range(2)]
    s = summary(name, family="fam", n_train=n, lz=-0.7 * n, probs=None)
    return recs, {**s, "params": {"n": n, "seed": 0, **params}}


def _series_store(tmp_path, problems):
    recs, sums = [], []
    for name, n, params in problems:
        r, s = _sized(name, n, params)
        recs += r
        sums.append(s)
    return make_store(tmp_path / "series.sqlite", recs, sums)


def test_no_fit_from_two_sizes_or_from_two_different_problems(tmp_path):
    """Once, 'hmc: ~N^-12.34' came from two different problems at two sizes."""
    two = _series_store(tmp_path, [("p1", 100, {"sd": 0.5}), ("p2", 200, {"sd": 2.0})])
    assert scaling_section.sections(two, Palette(two.methods)) == []
    assert scaling.series(two) == {}
    same = _series_store(tmp_path, [("a", 100, {"sd": 1.0}), ("b", 200, {"sd": 1.0})])
    assert scaling.series(same) == {}                  # one series, but only two sizes
    mixed = _series_store(tmp_path, [("a", 100, {"sd": 1.0}), ("b", 200, {"sd": 1.0}),
                                     ("c", 400, {"sd": 2.0})])
    assert scaling.series(mixed) == {}                 # three sizes, but of two series


def test_three_sizes_of_one_series_are_fitted_apart_from_another_series(tmp_path):
    problems = [(f"a{n}", n, {"sd": 1.0}) for n in (100, 200, 400)]
    problems += [(f"b{n}-{seed}", n, {"sd": 2.0, "seed": seed})
                 for n in (100, 200, 400, 800) for seed in (1, 2)]   # seeds pooled per size
    data = _series_store(tmp_path, problems)
    found = scaling.series(data)
    assert found == {"fam (sd=1.0)": ["a100", "a200", "a400"],
                     "fam (sd=2.0)": [p for p, _, _ in problems if p.startswith("b")]}
    s = scaling.scaling(data, "fam (sd=2.0)")
    assert s.fits["A"]["sample"].points == 4
    assert s.fits["A"]["sample"].exponent == pytest.approx(1.0, abs=1e-9)


# ---- a small real store: HTML and PDF --------------------------------------------------------
@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale-report")
    methods = [get_method("sov")(), get_method("rejection-bootstrap")()]
    store = real_store(root / "scale.sqlite", [f"onefactor:n={n},seed=1" for n in (64, 128, 256)],
                       methods, (256, 1024), 2, "scale-small", {"sweep_name": "scale-small"})
    written = build_report(store, root / "out")
    return written, written["html"].read_text(encoding="utf-8")


def test_real_store_section_in_html_and_pdf(real_report):
    written, html = real_report
    assert 'id="scale"' in html and "Cost against N: onefactor" in html
    assert "Fitted exponents p (cost ~ N^p): onefactor" in html
    assert "Cost and error by N: onefactor" in html
    for q in ("sample", "error"):   # set-up too once the runner records it
        assert re.search(rf'<figure id="scale-{q}-onefactor">\s*<img src="data:image/svg', html)
    assert "against the exact truth" in html
    pdf = written["pdf"].read_bytes()
    assert pdf.startswith(b"%PDF") and len(pdf) > 5000


def test_real_store_exponents_are_sane(real_report, tmp_path):
    """sov's per-sample cost is ~ N^2 (a dense walk, docs/math.md §4) at best ~N; on tiny N the
    overheads flatten it, so only bound it: a positive exponent below 2.5 for both methods."""
    written, _ = real_report
    from harness.analysis.aggregate import load

    data = load(written["html"].parent.parent / "scale.sqlite")
    s = scaling.scaling(data, "onefactor")
    assert s.shared_budget == 1024 and set(s.methods) == {"sov", "rejection-bootstrap"}
    for m in s.methods:
        assert 0.0 < s.fits[m]["sample"].exponent < 2.5
        assert np.all(np.isfinite(s.points[s.points["method"] == m]["error"]))
