"""sweeps/scale.toml: parsed and planned without building its problems (as the
paper-*.toml files are), and the same file at small N through `sweep --check`, which builds
every problem and checks every method's settings against every budget."""

from __future__ import annotations

import re
from pathlib import Path

from harness.cli.main import main
from harness.plugins.registry import get_method
from harness.sweep.plan import plan
from harness.sweep.spec import load_sweep

ROOT = Path(__file__).resolve().parents[2]
SCALE = ROOT / "sweeps" / "scale.toml"
SIZES = [1024 * 2**k for k in range(7)]          # 1,024 … 65,536
EXACT = {"sov-tlr", "sov", "sir", "minimax-tilting", "rejection-bootstrap", "ess", "hmc"}


def test_scale_sweep_loads_and_plans():
    sweep = load_sweep(SCALE, build=False)
    assert sweep.name == "scale" and sweep.time_limit and sweep.replicates >= 2
    jobs = plan(sweep)
    problems = {j.problem for j in jobs}
    assert problems == ({f"onefactor:n={n},seed=1" for n in SIZES}
                        | {f"gauss2class:alpha=0.5,beta=1.0,d=2,n_test=100,n_train={n},seed=1"
                           for n in SIZES})
    labels = {j.label for j in jobs}
    assert EXACT <= labels and "ep" in labels
    assert all(get_method(m).tags.exact for m in EXACT)
    # every method runs the shared budget 1000, so the report compares errors there
    for m in labels:
        assert 1000 in {j.budget for j in jobs if j.label == m}, m
    assert max(j.budget for j in jobs) <= 10_000                   # modest budgets
    assert len(jobs) == sweep.n_jobs


def test_scale_sweep_checks_at_small_n(tmp_path, capsys):
    """The file itself, with its sizes cut to 40 and 80: `sweep --check` builds every problem
    and validates every method's settings; the orthant-only pairs are left out of the plan."""
    text = SCALE.read_text(encoding="utf-8")
    small, count = re.subn(r"\[1024, 2048, 4096, 8192, 16384, 32768, 65536\]", "[40, 80]", text)
    assert count == 2
    path = tmp_path / "scale-small.toml"
    small = small.replace('store = "../results/scale.sqlite"', 'store = "s.sqlite"')
    path.write_text(small.replace('report = "../reports/scale"', 'report = "report"'),
                    encoding="utf-8")
    assert main(["sweep", str(path), "--check"]) == 0
    out = capsys.readouterr().out
    assert f"{path}: valid" in out and "problem onefactor:n=80,seed=1" in out
    assert f"; store {tmp_path / 's.sqlite'}" in out and not (tmp_path / "s.sqlite").exists()
    for m in EXACT | {"ep"}:
        assert f"method  {m} " in out
    sweep = load_sweep(path)
    jobs = plan(sweep)
    onefactor = {j.label for j in jobs if j.problem.startswith("onefactor")}
    assert {"ess", "hmc", "ep"}.isdisjoint(onefactor)              # need data and a kernel
    assert EXACT - {"ess", "hmc"} <= onefactor
    assert EXACT | {"ep"} <= {j.label for j in jobs if j.problem.startswith("gauss2class")}
