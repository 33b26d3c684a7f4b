"""`python -m harness compare` (harness.analysis.compare): ratios of geometric means with Welch t
intervals on the logs, the flagging rule, pairing, one yardstick, and two real runs of a sweep
in which one method changed: that method is flagged and no other."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from scipy import stats

from harness.analysis.compare import Ratio, compare, load_side, log_ratio, pooled
from harness.cli.main import main
from harness.execution.store import ResultStore

# ---- the statistics -----------------------------------------------------------------------------


def test_the_interval_is_welchs_on_the_logs():
    rng = np.random.default_rng(1)
    a, b = np.exp(rng.normal(0, 0.5, 4)), np.exp(rng.normal(0.7, 0.2, 6))
    r = log_ratio(a, b)
    want = stats.ttest_ind(np.log(b), np.log(a), equal_var=False).confidence_interval(0.95)
    assert r.interval() == pytest.approx((math.exp(want.low), math.exp(want.high)))
    assert math.exp(r.d) == pytest.approx(stats.gmean(b) / stats.gmean(a))


@pytest.mark.parametrize("n_a, n_b, cells", [(3, 3, 1), (5, 2, 3)])
def test_the_interval_covers_the_true_ratio_95_percent_of_the_time(n_a, n_b, cells):
    """Lognormal values with a known ratio of medians: coverage of the 95 % interval, per cell
    and pooled over cells of different spreads, within 4 binomial SEs (slightly conservative
    is allowed: Welch–Satterthwaite's degrees of freedom are an approximation)."""
    rng = np.random.default_rng(7)
    trials, hits, truth = 1000, 0, 1.7
    for _ in range(trials):
        ratios = []
        for k in range(cells):
            sd_a, sd_b = 0.3 + 0.4 * k, 0.8 - 0.2 * k
            ratios.append(log_ratio(np.exp(rng.normal(0, sd_a, n_a)),
                                    np.exp(rng.normal(math.log(truth), sd_b, n_b))))
        low, high = pooled(ratios).interval()
        hits += low <= truth <= high
    tolerance = 4 * math.sqrt(0.95 * 0.05 / trials)
    assert 0.95 - tolerance <= hits / trials <= 0.99, hits / trials


def test_the_rule_flags_an_interval_beyond_the_threshold():
    def ratio(low, high):   # a Ratio with this interval (infinite degrees of freedom)
        d, half = (math.log(low) + math.log(high)) / 2, (math.log(high) - math.log(low)) / 2
        return Ratio(d, (((half / stats.norm.ppf(0.975)) ** 2, math.inf),), (3, 3))

    assert ratio(1.2, 1.6).verdict(0.1) == "worse"
    assert ratio(1.05, 1.6).verdict(0.1) == ""          # not surely beyond 10 %
    assert ratio(1.2, 1.6).verdict(0.5) == ""           # CPU time: needs beyond 50 %
    assert ratio(0.5, 0.8).verdict(0.1) == "better"
    assert ratio(0.5, 2.0).verdict(0.1) == ""
    assert Ratio(math.log(1.2), (), (1, 1)).verdict(0.1) == "worse"   # deterministic: exact
    assert Ratio(math.log(1.05), (), (1, 1)).verdict(0.1) == ""
    assert Ratio(math.log(9.0), None, (1, 1)).verdict(0.1) == ""      # no interval, no flag
    # one run on a side: no interval unless a pooled spread is given for it
    assert log_ratio([1.0], [2.0, 2.2]).var is None
    assert log_ratio([1.0], [2.0, 2.2], spread=((0.01, 20), None)).interval()[0] > 1


# ---- hand-made stores: pairing, failures, one yardstick -----------------------------------------
def job(job_id, problem, method, replicate, log_z, cpu=1.0, status="ok", probs=None):
    return {"job_id": job_id, "problem": problem, "method": method,
            "method_name": method.split("[")[0], "budget": 100, "replicate": replicate,
            "status": status, "reason": "" if status == "ok" else "it broke",
            "log_marginal_likelihood": log_z if status == "ok" else None,
            "test_probabilities": probs, "cpu_seconds": cpu, "exact_method": True,
            "settings": {}}


def problem(name, truth):
    return {"name": name, "family": "hand", "n_train": 5, "n_test": 0,
            "truth_kind": "exact" if truth is not None else None,
            "true_log_marginal_likelihood": truth}


def store(path, jobs):
    with ResultStore(path) as db:
        db.add_problem(problem("T", -10.0))
        db.add_problem(problem("U", None))
        for r in jobs:
            db.add_record(r)
    return load_side(path)


def side(path, errors, extra=()):
    """Method label -> log Z errors of its three replicates on problem T (truth -10)."""
    jobs = [job(f"{m}-{i}", "T", m, i, -10.0 + e, cpu=0.5 + 0.01 * i)
            for m, es in errors.items() for i, e in enumerate(es)]
    return store(path, jobs + list(extra))


def test_pairing_failures_and_flags(tmp_path):
    same = [0.01, 0.02, 0.015]
    a = side(tmp_path / "a.sqlite", {"sov": same, "sir": same, "ess": same, "gone": same},
             [job("f-0", "T", "emcee", 0, -10.01), job("f-1", "T", "emcee", 1, -10.02)])
    b = side(tmp_path / "b.sqlite", {"sov": same, "sir": [0.3, 0.25, 0.35],
                                     "ess[skip=5]": same, "new": same},
             [job("f-0", "T", "emcee", 0, -10.01),
              job("f-1", "T", "emcee", 1, None, status="failed")])
    result = compare(a, b)
    methods = {m["method"]: m for m in result.methods}
    assert methods["ess[skip=5]"]["baseline_method"] == "ess"   # a setting changed: paired
    assert methods["ess[skip=5]"]["verdict"] == "" and methods["sov"]["verdict"] == ""
    assert methods["sir"]["verdict"] == "worse"                 # errors x17
    assert methods["sir"]["log_z_error"]["ratio"] == pytest.approx(
        stats.gmean([0.3, 0.25, 0.35]) / stats.gmean(same))
    assert methods["emcee"]["verdict"] == "worse"               # one more job fails
    cell = next(c for c in result.cells if c["method"] == "emcee")
    assert cell["why"] == ["more jobs fail (1 of 2, baseline 0 of 2)"]
    assert sorted(result.flagged) == ["emcee", "sir"]
    assert (result.only_baseline, result.only_candidate) == (["gone"], ["new"])
    assert methods["sov"]["cpu_seconds"]["ratio"] == pytest.approx(1.0)


def test_errors_without_truth_use_the_baselines_consensus(tmp_path):
    """On U (no truth) the consensus is the median over sov and sir. The candidate's sov moved
    by 2 nats; against the candidate's own consensus the unchanged sir would look worse too."""
    lz = {"sov": [-10.0, -10.02, -9.99], "sir": [-10.01, -9.98, -10.03]}

    def jobs(shift):
        return [job(f"{m}-{i}", "U", m, i, v + (shift if m == "sov" else 0.0))
                for m, vs in lz.items() for i, v in enumerate(vs)]

    result = compare(store(tmp_path / "a.sqlite", jobs(0.0)), store(tmp_path / "b.sqlite",
                                                                    jobs(-2.0)))
    methods = {m["method"]: m for m in result.methods}
    assert result.cells[0]["log_z_error_measure"] == "med_abs_log_error"
    assert methods["sir"]["log_z_error"]["ratio"] == pytest.approx(1.0)
    assert result.flagged == ["sov"]


# ---- two real runs of a sweep in which one method changed ---------------------------------------
V1 = '''from harness.methods.sov import Sov


class MySov(Sov):
    name = "my-sov"
    summary = "SOV, as a method file"
'''
V2 = V1 + '''
    def _estimate(self, problem, budget, rng):   # a bug: log Z 0.5 nats high, p pulled to 1/2
        import dataclasses

        est = super()._estimate(problem, budget, rng)
        return dataclasses.replace(est, log_marginal_likelihood=est.log_marginal_likelihood + 0.5,
                                   test_probabilities=0.5 + 0.8 * (est.test_probabilities - 0.5))
'''
SWEEP = """\
name = "NAME"
seed = 3
replicates = 3
budgets = [200, 800]
problems = ["linear1d:n_train=8,n_test=3"]
[methods.sov]
[methods.ep]
[methods."FILE:MySov"]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory, sweep_here):
    """Stores of the same sweep before (a) and after (b) the method file changed; and c, a's
    copy into which the changed sweep, under another name, ran too (its other jobs shared)."""
    root = tmp_path_factory.mktemp("compare")
    paths = {}
    for version, text in (("v1", V1), ("v2", V2)):
        (root / f"{version}.py").write_text(text)
    for name, version in (("a", "v1"), ("b", "v2")):
        paths[name] = root / f"{name}.sqlite"
        outcome = sweep_here(paths[name], SWEEP.replace("NAME", "tiny").replace(
            "FILE", str(root / f"{version}.py")))
        assert outcome.complete and outcome.statuses == {"ok": 14}, outcome
    paths["c"] = root / "c.sqlite"
    shutil.copy(paths["a"], paths["c"])
    outcome = sweep_here(paths["c"], SWEEP.replace("NAME", "tiny-v2").replace(
        "FILE", str(root / "v2.py")))
    assert outcome.skipped == 8 and outcome.statuses == {"ok": 6}   # only my-sov ran
    return paths


def compared(capsys, *argv) -> tuple[int, dict]:
    code = main(["compare", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_two_stores_one_method_changed_flags_it_and_no_other(runs, capsys):
    code, result = compared(capsys, str(runs["a"]), str(runs["b"]))
    assert code == 1 and result["flagged"] == ["my-sov"]
    mine = next(m for m in result["methods"] if m["method"] == "my-sov")
    assert mine["log_z_error"]["low"] > 10 and mine["probability_error"]["low"] > 1.1
    for m in result["methods"]:
        if m["method"] != "my-sov":   # the same job keys: the same answers, ratio exactly 1
            assert m["log_z_error"]["ratio"] == 1.0 and m["verdict"] == "", m
    assert main(["compare", str(runs["a"]), str(runs["b"])]) == 1
    text = capsys.readouterr().out
    assert "+ my-sov" in text and "1 method(s) worse: my-sov" in text


def test_two_sweeps_of_one_store(runs, capsys):
    code, result = compared(capsys, str(runs["c"]), "--sweeps", "tiny", "tiny-v2")
    assert code == 1 and result["flagged"] == ["my-sov"]
    assert result["baseline"]["jobs"] == result["candidate"]["jobs"] == 14
    assert main(["compare", str(runs["c"]), "--sweeps", "tiny", "tiny-v3"]) == 2
    assert "holds no sweep 'tiny-v3' (did you mean 'tiny-v2'?" in capsys.readouterr().err
    assert main(["compare", str(runs["c"])]) == 2
    assert main(["compare", str(runs["a"]), str(runs["b"]), "--error-threshold", "-1"]) == 2


def test_nothing_in_common_is_said_in_one_line_with_exit_2(tmp_path, capsys):
    """Two stores with no problem (or no problem × method × budget) in common: one line saying
    so, exit 2 (docs/design.md, "Exit codes"), not a table of dashes and exit 0."""
    on_t = [job(f"sov-{i}", "T", "sov", i, -10.01) for i in range(2)]
    on_u = [job(f"sov-u{i}", "U", "sov", i, -10.01) for i in range(2)]
    other_budget = [dict(r, job_id=f"{r['job_id']}-b", budget=400) for r in on_t]
    store(tmp_path / "t.sqlite", on_t)
    store(tmp_path / "u.sqlite", on_u)
    store(tmp_path / "b.sqlite", other_budget)
    store(tmp_path / "empty.sqlite", [])
    for candidate, said in (
            ("u", "nothing to compare: the two have no problem in common (baseline: T; "
                  "candidate: U)"),
            ("b", "nothing to compare: the two have problems in common (T) but no method run "
                  "on them at a budget in common"),
            ("empty", "nothing to compare: the candidate (")):
        for extra in ([], ["--json"]):
            code = main(["compare", str(tmp_path / "t.sqlite"), str(tmp_path / f"{candidate}"
                                                                      ".sqlite"), *extra])
            out, err = capsys.readouterr()
            lines = err.strip().splitlines()
            assert code == 2 and out == "" and len(lines) == 1, (code, out, err)
            assert lines[0].startswith(f"error: compare: {said}"), lines[0]
    assert "holds no estimate job" in lines[0]
    assert main(["compare", str(tmp_path / "t.sqlite"), str(tmp_path / "t.sqlite")]) == 0
