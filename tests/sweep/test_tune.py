"""Tuning sweeps (kind = "tune"): validation of the [tune] table, planning and job ids."""

from __future__ import annotations

import pytest
from sweep_helpers import refused

from harness.core.errors import InputError
from harness.sweep.execute import failure_record
from harness.sweep.plan import plan
from harness.sweep.spec import parse_sweep

TUNE = """\
name = "tune"
kind = "tune"
seed = 1
replicates = 2
budgets = [1000]
problems = ["linear1d:n_train=20,n_test=5"]

[methods.sov]

[methods.rejection-bootstrap]
count = "hard"

[tune]
parameters = { scale = { start = 0.1, stop = 100, num = 7 } }
strategies = ["grid", "explore-exploit", "pseudo-marginal"]
explore_budget = 100
top_k = 2
walkers = 4
steps = 10
"""

# the estimate sweep of test_sweep_spec, whose job ids must not change with the job kinds
BASE = """\
name = "t"
seed = 1
replicates = 2
budgets = [100, 300]
problems = ["onefactor:n=5"]

[methods.rejection-bootstrap]
count = ["soft", "hard"]
"""


def test_tune_table_is_parsed_and_planned():
    sweep = parse_sweep(TUNE, "tune.toml")
    assert sweep.kind == "tune" and sweep.tune.space == {"scale": [0.1, 100.0, 7]}
    assert sweep.tune.strategies == ("grid", "explore-exploit", "pseudo-marginal")
    jobs = plan(sweep)
    assert len(jobs) == sweep.n_jobs == 1 * 2 * 3 * 2     # problems × methods × strategies × reps
    assert len({j.job_id for j in jobs}) == len(jobs)    # distinct per strategy and replicate
    spec = jobs[0].spec()
    assert spec["kind"] == "tune" and spec["tune"] == {
        "space": {"scale": [0.1, 100.0, 7]}, "strategy": "grid", "explore_budget": 100,
        "top_k": 2, "walkers": 4, "steps": 10}
    # the key holds the settings that matter to each strategy, and only those
    tunes = {j.tune["strategy"]: j.key["tune"] for j in jobs}
    assert tunes["grid"] == {"strategy": "grid", "space": {"scale": [0.1, 100.0, 7]}}
    assert set(tunes["explore-exploit"]) == {"strategy", "space", "explore_budget", "top_k"}
    assert set(tunes["pseudo-marginal"]) == {"strategy", "space", "explore_budget", "walkers",
                                             "steps"}
    assert all(j.key["kind"] == "tune" for j in jobs)
    # changing the walkers or the burn-in changes only the pseudo-marginal jobs' ids
    for edit in (("walkers = 4", "walkers = 6"), ("steps = 10", "steps = 10\nburn = 3")):
        other = plan(parse_sweep(TUNE.replace(*edit), "tune.toml"))
        changed = {j.tune["strategy"] for j, k in zip(jobs, other, strict=True)
                   if j.job_id != k.job_id}
        assert changed == {"pseudo-marginal"}
    assert other[-1].tune["burn"] == 3 and "burn" not in jobs[-1].tune


def test_explore_budget_defaults_to_a_tenth_of_each_budget():
    text = TUNE.replace("explore_budget = 100\n", "").replace("[1000]", "[1000, 5000]")
    jobs = plan(parse_sweep(text, "tune.toml"))
    assert {(j.budget, j.tune["explore_budget"]) for j in jobs} == {(1000, 100), (5000, 500)}


def test_estimate_job_ids_are_unchanged():
    jobs = plan(parse_sweep(BASE, "t.toml"))
    assert jobs[0].kind == "estimate" and "kind" not in jobs[0].key
    # pinned: computed before the job kinds existed; re-pinned when rejection-bootstrap gained
    # the `populations` setting (its default estimate changed, so new jobs)
    assert [j.job_id for j in jobs[:2]] == [
        "44961c2fc8dec8a356c8325e4ae913abab14ccfbc3aa6b89c179119c7117644b",
        "9219aa8660fbf6cffb514b56f0a565a4a621ceff700f6d94ba8544a74f93beae"]


def test_failure_record_of_a_tune_job_is_tune_shaped():
    job = plan(parse_sweep(TUNE, "tune.toml"))[0]
    rec = failure_record(job, "failed", "KilledWorker: pretend")
    assert rec["kind"] == "tune" and rec["strategy"] == "grid"
    assert rec["space"] == {"scale": [0.1, 100.0, 7]}
    assert rec["evaluations"] == [] and rec["chosen"] is None and rec["n_evaluations"] == 0
    assert rec["log_marginal_likelihood"] is None and rec["status"] == "failed"
    est = failure_record(plan(parse_sweep(BASE, "t.toml"))[0], "failed", "x")
    assert "kind" not in est and "evaluations" not in est


@pytest.mark.parametrize("edit, key, words", [
    (('kind = "tune"', 'kind = "tuning"'), "kind", "did you mean 'tune'"),
    (('kind = "tune"', ""), "tune", 'needs kind = "tune"'),
    (("[tune]", "[other]"), "other", "unknown key"),
    (('kind = "tune"', 'kind = "tune"\n[tune]\n'), "", "is not valid TOML"),
    (("top_k = 2", "topk = 2"), "tune.topk", "did you mean 'top_k'"),
    (("num = 7", "num = 1"), "tune.parameters.scale.num", "must be >= 2"),
    (("num = 7", "num = 7.5"), "tune.parameters.scale.num", "must be an integer"),
    (("start = 0.1", "start = 0"), "tune.parameters.scale", "0 < start < stop"),
    (("start = 0.1", "start = 500"), "tune.parameters.scale", "0 < start < stop"),
    (("stop = 100, ", ""), "tune.parameters.scale", "needs stop"),
    (("num = 7 }", "num = 7, step = 2 }"), "tune.parameters.scale.step", "unknown key"),
    (("{ scale = {", "{ alpha = {"), "tune.parameters.alpha", "has no parameter 'alpha'"),
    (("{ scale = {", "{ n_train = {"), "tune.parameters.n_train", "not continuous"),
    (('"pseudo-marginal"]', '"pseudo"]'), "tune.strategies[2]", "unknown strategy"),
    (('"grid", "explore-exploit", "pseudo-marginal"', ""), "tune.strategies", "non-empty"),
    (("[methods.sov]", "[methods.laplace]"), "tune.strategies",
     "pseudo-marginal needs an unbiased estimate"),
    (('count = "hard"', 'count = "soft"'), "tune.strategies", "rejection-bootstrap"),
    (("top_k = 2", "top_k = 8"), "tune.top_k", "only 7 points"),
    (("walkers = 4", "walkers = 1"), "tune.walkers", "must be >= 2"),
    (("steps = 10", "steps = 10\nburn = 10"), "tune.burn", "not less than steps"),
    (("explore_budget = 100", "explore_budget = 2000"), "tune.explore_budget",
     "more than the budget"),
    (("parameters = { scale = { start = 0.1, stop = 100, num = 7 } }", ""),
     "tune.parameters", "missing"),
])
def test_malformed_tune_table_names_the_key_and_the_fix(edit, key, words):
    assert "(" in refused(TUNE, edit, key, words)     # every message says how to fix it


def test_a_tune_table_without_kind_tune_is_refused():
    with pytest.raises(InputError, match=r"bad.toml: tune: .*kind = \"tune\""):
        parse_sweep(BASE + '[tune]\nparameters = { scale = { start = 1, stop = 2, num = 2 } }\n',
                    "bad.toml")


@pytest.mark.parametrize("name, strategies, truth", [
    ("tune-linear1d", ("grid", "explore-exploit", "pseudo-marginal"), "exact"),
    ("tune-rbf", ("grid", "explore-exploit"), "reference"),   # gauss-p1: shipped reference
])
def test_shipped_tune_sweeps_are_valid(name, strategies, truth, capsys):
    from pathlib import Path

    from harness.cli.main import main
    from harness.sweep.spec import load_sweep

    path = Path(__file__).resolve().parents[2] / "sweeps" / f"{name}.toml"
    sweep = load_sweep(path)
    assert sweep.kind == "tune" and sweep.tune.strategies == strategies
    assert all(p.summary.get("truth_kind") == truth for p in sweep.problems)
    # its store and report are the checkout's: a test neither reads nor probes them
    assert main(["sweep", str(path), "--check", "--store", "tune.sqlite", "--no-report"]) == 0
    assert "tuning: " + ", ".join(strategies) in capsys.readouterr().out
