"""The tuning job's record and its failure modes (harness/tuning/job.py, evaluate.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.methods.sov import Sov
from harness.model.result import Estimate
from harness.tuning.job import check_tune, run_tune_job

pytestmark = pytest.mark.usefixtures("one_blas_thread")

SPEC = "linear1d:n_train=30,n_test=4"
SPACE = {"scale": [0.1, 10, 5]}
IDENTITY = ("job_id", "sweep", "replicate", "seed", "problem_spec", "job_key", "time_limit")
CONTRACT = IDENTITY + (
    "kind", "problem", "method", "method_name", "settings", "budget", "budget_unit", "n_train",
    "n_test", "strategy", "space", "status", "reason", "evaluations", "chosen", "chosen_log_z",
    "log_marginal_likelihood", "cpu_seconds", "wall_seconds", "n_evaluations", "chain",
    "diagnostics", "worker", "finished_at", "job_wall_seconds")
EVALUATION = ("params", "budget", "log_z", "log_z_se", "cpu_seconds", "status", "stage")


def job(strategy="grid", method="sov", settings=None, budget=256, key=1, time_limit=None,
        **tune):
    return {"job_id": "j1", "key": {"test": key}, "sweep": "s", "problem": SPEC,
            "method": method, "settings": settings or {}, "budget": budget, "replicate": 0,
            "seed": 7, "time_limit": time_limit, "kind": "tune",
            "tune": {"space": SPACE, "strategy": strategy, **tune}}


def without_timings(record):
    drop = {"cpu_seconds", "prepare_cpu_seconds", "wall_seconds", "job_wall_seconds",
            "finished_at"}
    out = {k: v for k, v in record.items() if k not in drop}
    out["evaluations"] = [{k: v for k, v in e.items() if k not in drop}
                          for e in record["evaluations"]]
    return out


def test_record_has_the_contract_fields_in_plain_json():
    record = run_tune_job(job(settings={"randomisations": 4}))
    assert record["status"] == "ok" and record["reason"] is None
    assert set(CONTRACT) <= set(record)
    assert json.loads(json.dumps(record)) == record      # plain JSON types only
    assert record["problem"] == "linear1d:n_test=4,n_train=30"
    assert record["method"] == "sov[randomisations=4]" and record["method_name"] == "sov"
    assert record["problem_spec"] == SPEC and record["job_key"] == {"test": 1}
    assert (record["n_train"], record["n_test"], record["budget_unit"]) == (30, 4, "qmc points")
    assert record["space"] == {"scale": [0.1, 10.0, 5]} and record["kind"] == "tune"
    for e in record["evaluations"]:
        assert set(EVALUATION) <= set(e) and e["cpu_seconds"] >= e["prepare_cpu_seconds"] >= 0
    assert record["n_evaluations"] == 5 and record["chain"] is None


@pytest.mark.parametrize("strategy, extra", [
    ("grid", {}), ("explore-exploit", {"explore_budget": 64, "top_k": 2}),
    ("pseudo-marginal", {"walkers": 4, "steps": 3, "explore_budget": 64}),
])
def test_same_key_same_record_other_key_other_record(strategy, extra):
    a = run_tune_job(job(strategy, **extra))
    b = run_tune_job(job(strategy, **extra))
    c = run_tune_job(job(strategy, key=2, **extra))
    assert a["status"] == "ok", a["reason"]
    assert without_timings(a) == without_timings(b)
    assert [e["log_z"] for e in a["evaluations"]] != [e["log_z"] for e in c["evaluations"]]
    # every evaluation has its own stream: the same point twice gives two estimates
    if strategy == "explore-exploit":
        assert a["evaluations"][5]["log_z"] != [e for e in a["evaluations"][:5]
                                                if e["params"] == a["evaluations"][5]["params"]
                                                ][0]["log_z"]


def test_failing_evaluations_are_recorded_not_raised():
    # hard-count rejection-bootstrap with 2 particles on N = 30 rejects every particle
    record = run_tune_job(job(method="rejection-bootstrap", settings={"count": "hard"},
                              budget=2))
    assert record["status"] == "failed" and record["chosen"] is None
    assert record["reason"].startswith("no successful evaluation to choose from: ")
    assert "all particles rejected" in record["reason"]
    assert len(record["evaluations"]) == 5
    assert all(e["status"] == "failed" and e["log_z"] is None for e in record["evaluations"])
    chain = run_tune_job(job("pseudo-marginal", method="rejection-bootstrap",
                             settings={"count": "hard"}, budget=2, walkers=4, steps=2))
    assert chain["status"] == "failed" and chain["chosen"] is None
    assert chain["chain"]["acceptance_fraction"] >= 0      # the chain ran on log Ẑ = -inf
    assert all(e["status"] == "failed" for e in chain["evaluations"])


def test_an_erroring_method_at_some_points_leaves_the_others(monkeypatch):
    original = Sov._estimate

    def flaky(self, problem, budget, rng):
        if problem.params["scale"] > 2:
            raise RuntimeError("boom")
        if problem.params["scale"] < 0.2:
            return Estimate.failed("not today")
        return original(self, problem, budget, rng)

    monkeypatch.setattr(Sov, "_estimate", flaky)
    record = run_tune_job(job())
    statuses = [e["status"] for e in record["evaluations"]]
    assert statuses == ["failed", "ok", "ok", "error", "error"]
    assert record["evaluations"][3]["reason"].startswith(
        "RuntimeError: boom (test_job.py:")   # the raising line (harness.model.debugging)
    assert record["status"] == "ok" and record["chosen"]["scale"] in (0.31622776601683794, 1.0)


def test_timeout_stops_the_tuning_and_keeps_the_evaluations():
    # one evaluation takes ~0.2 s: the limit passes inside the method (its next check stops
    # it: status timeout) or, if the method has no check left, before the next evaluation
    record = run_tune_job(job(budget=200_000, time_limit=0.05))
    assert record["status"] == "timeout" and "CPU-time limit" in record["reason"]
    assert record["chosen"] is None and 1 <= len(record["evaluations"]) <= 2
    assert record["evaluations"][-1]["status"] in ("timeout", "ok")
    assert record["cpu_seconds"] == pytest.approx(sum(e["cpu_seconds"]
                                                      for e in record["evaluations"]))


@pytest.mark.parametrize("change, field", [
    ({"tune": {"space": {"alpha": [1, 2, 3]}, "strategy": "grid"}}, "tune.parameters.alpha"),
    ({"tune": {"space": SPACE, "strategy": "annealing"}}, "tune.strategy"),
    ({"tune": {"space": SPACE, "strategy": "explore-exploit"}}, "tune.explore_budget"),
    ({"tune": {"space": SPACE, "strategy": "grid", "top_k": 0}}, "tune.top_k"),
    ({"tune": {"space": SPACE, "strategy": "pseudo-marginal", "walkers": 1}}, "tune.walkers"),
    ({"tune": {"space": SPACE, "strategy": "pseudo-marginal", "steps": 5, "burn": 5}},
     "tune.burn"),
    ({"tune": {"space": {"scale": [0, 1, 3]}, "strategy": "grid"}}, "tune.parameters.scale"),
    ({"method": "nomethod"}, "method"),
    ({"settings": {"bogus": 1}}, "method sov: setting 'bogus'"),
    ({"budget": 0}, "budget"),
])
def test_bad_input_is_an_error_record_naming_the_field(change, field):
    spec = {**job(), **change}
    record = run_tune_job(spec)
    assert record["status"] == "error" and record["reason"].startswith(f"{field}: ")
    assert record["evaluations"] == [] and record["chosen"] is None
    with pytest.raises(ValueError, match=field.replace("[", r"\[")):
        check_tune(spec)


def test_evaluation_truth_matches_the_problem_built_at_that_point():
    from harness.plugins.specs import make_problem

    record = run_tune_job(job())
    for e in record["evaluations"]:
        p = make_problem(f"{SPEC},scale={e['params']['scale']!r}")
        assert e["true_log_z"] == p.truth.log_marginal_likelihood
        assert abs(e["log_z"] - e["true_log_z"]) < 5 * e["log_z_se"] + 1e-3
    assert np.isfinite(record["chosen_log_z"])


def test_rbf_problem_two_parameters_without_exact_truth():
    spec = {**job(), "problem": "gauss2class:n_train=20,n_test=2",
            "tune": {"space": {"alpha": [1, 5, 2], "beta": [0.5, 2, 2]}, "strategy": "grid"}}
    record = run_tune_job(spec)
    assert record["status"] == "ok", record["reason"]
    assert [e["params"] for e in record["evaluations"]] == [
        {"alpha": 1.0, "beta": 0.5}, {"alpha": 1.0, "beta": 2.0},
        {"alpha": 5.0, "beta": 0.5}, {"alpha": 5.0, "beta": 2.0}]
    assert all(e["true_log_z"] is None for e in record["evaluations"])
    assert record["chosen"] in [e["params"] for e in record["evaluations"]]
