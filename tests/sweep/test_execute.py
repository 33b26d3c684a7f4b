"""Worker-side jobs, the cooperative CPU-time limit, the store's audit log and export."""

from __future__ import annotations

import csv
import json
import time

import numpy as np
import pytest

from harness.cli.main import main
from harness.core.deadline import TimeLimitExceeded, check_deadline, cpu_time_limit
from harness.execution.provenance import environment_facts
from harness.execution.store import ResultStore
from harness.execution.timed import run_method
from harness.plugins.registry import get_method
from harness.plugins.specs import make_problem
from harness.sweep.execute import failure_record, run_job
from harness.sweep.plan import plan
from harness.sweep.spec import parse_sweep

SWEEP = """\
name = "exec"
seed = 7
replicates = 2
budgets = [200]
problems = ["linear1d:n_train=10,n_test=3"]
[methods.rejection-bootstrap]
count = ["soft", "hard"]
"""


def _burn(seconds: float) -> None:
    t0 = time.thread_time()
    while time.thread_time() - t0 < seconds:
        sum(range(1000))


def test_deadline_raises_only_after_the_limit():
    check_deadline()                      # no limit: nothing happens
    with cpu_time_limit(None):
        _burn(0.01)
        check_deadline()
    with cpu_time_limit(0.05):
        check_deadline()
        _burn(0.06)
        with pytest.raises(TimeLimitExceeded, match="CPU-time limit of 0.05 s exceeded"):
            check_deadline()
    check_deadline()                      # the limit ended with its block
    with cpu_time_limit(0.02), cpu_time_limit(100):   # nested: the earlier deadline wins
        _burn(0.03)
        with pytest.raises(TimeLimitExceeded):
            check_deadline()


def test_a_method_past_its_limit_is_a_timeout():
    problem = make_problem("onefactor:n=300")
    method = get_method("rejection-bootstrap")()
    with cpu_time_limit(0.005):
        result = run_method(problem, method, 20000, np.random.default_rng(0))
    assert result["status"] == "timeout"
    assert "CPU-time limit" in result["reason"]
    assert result["cpu_seconds"] < 5


def test_run_job_is_deterministic_and_complete():
    jobs = plan(parse_sweep(SWEEP, "exec.toml"))
    assert len(jobs) == 4
    a, b = run_job(jobs[0].spec()), run_job(jobs[0].spec())
    assert a["status"] == "ok" and a["job_id"] == jobs[0].job_id
    for field in ("sweep", "replicate", "seed", "problem_spec", "job_key",
                  "log_marginal_likelihood", "test_probabilities", "cpu_seconds",
                  "wall_seconds", "peak_memory_mb", "setup_cpu_seconds", "setup_wall_seconds",
                  "true_log_marginal_likelihood", "mae", "finished_at", "budget_unit"):
        assert field in a, field
    # the worker process prepared this problem x method for the first job: the second reused it
    assert b["setup_cached"] is True and b["setup_cpu_seconds"] == a["setup_cpu_seconds"]
    assert a["log_marginal_likelihood"] == b["log_marginal_likelihood"]
    assert a["test_probabilities"] == b["test_probabilities"]
    other = run_job(jobs[1].spec())       # next replicate: its own random stream
    assert other["log_marginal_likelihood"] != a["log_marginal_likelihood"]
    json.dumps(a, allow_nan=False)        # plain data only


def test_run_job_reports_problems_it_cannot_build_and_time_limits(tmp_path):
    job = plan(parse_sweep(SWEEP, "exec.toml"))[0].spec()
    missing = {**job, "problem": str(tmp_path / "gone.npz")}
    record = run_job(missing)
    assert record["status"] == "error" and "does not exist" in record["reason"]
    record = run_job({**job, "method": "no-such-method"})
    assert record["status"] == "error" and "unknown method" in record["reason"]
    slow = {**job, "problem": "onefactor:n=300", "budget": 50000, "time_limit": 0.001}
    record = run_job(slow)
    assert record["status"] == "timeout" and record["time_limit"] == 0.001


@pytest.mark.parametrize("stage", ["prepare", "_estimate"])
def test_run_job_error_reasons_name_the_raising_line(monkeypatch, stage):
    from harness.methods.rejection_bootstrap import RejectionBootstrap

    def broken(self, problem, *args):
        return list(range(0, 10, 0))

    monkeypatch.setattr(RejectionBootstrap, stage, broken)
    record = run_job(plan(parse_sweep(SWEEP, "exec.toml"))[0].spec())
    line = broken.__code__.co_firstlineno + 1
    assert record["status"] == "error"
    assert record["reason"] == ("ValueError: range() arg 3 must not be zero "
                                f"(test_execute.py:{line} in broken)")


def test_run_job_records_warnings(monkeypatch):
    import warnings

    from harness.methods.rejection_bootstrap import RejectionBootstrap

    original = RejectionBootstrap._estimate

    def noisy(self, problem, budget, rng):
        warnings.warn("something odd", RuntimeWarning, stacklevel=1)
        return original(self, problem, budget, rng)

    monkeypatch.setattr(RejectionBootstrap, "_estimate", noisy)
    record = run_job(plan(parse_sweep(SWEEP, "exec.toml"))[0].spec())
    assert record["status"] == "ok"
    assert record["warnings"] == ["RuntimeWarning: something odd"]


def test_store_keeps_an_audit_log_and_failure_records(tmp_path):
    jobs = plan(parse_sweep(SWEEP, "exec.toml"))
    with ResultStore(tmp_path / "s.sqlite") as store:
        store.add_record(run_job(jobs[0].spec()))
        store.add_record(failure_record(jobs[1], "failed", "KilledWorker: test"))
        store.add_record(failure_record(jobs[1], "failed", "KilledWorker: again"))
        assert [e["job_id"] for e in store.job_log()] == [jobs[0].job_id] + [jobs[1].job_id] * 2
        assert store.status_counts() == {"ok": 1, "failed": 1}
        assert store.status_counts([jobs[1].job_id]) == {"failed": 1}
        assert len(store.records()) == 2


def test_environment_facts():
    facts = environment_facts()
    for key in ("python", "numpy", "scipy", "dask", "distributed", "cpu_model", "blas",
                "thread_env", "harness"):
        assert key in facts
    json.dumps(facts)


def test_export_csv_and_parquet(tmp_path, capsys):
    jobs = plan(parse_sweep(SWEEP, "exec.toml"))
    store_path = tmp_path / "s.sqlite"
    with ResultStore(store_path) as store:
        for job in jobs[:2]:
            store.add_record(run_job(job.spec()))
        store.add_record(failure_record(jobs[2], "failed", "KilledWorker: test"))
    out = tmp_path / "out" / "jobs.csv"
    assert main(["export", "--store", str(store_path), "--out", str(out)]) == 0
    with open(out, newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 3
    assert {"job_id", "status", "settings.count", "diagnostics.chunks"} <= set(table[0])
    ok = [r for r in table if r["status"] == "ok"]
    assert len(json.loads(ok[0]["test_probabilities"])) == 3
    assert main(["export", "--store", str(store_path), "--out", str(tmp_path / "x.xlsx")]) == 2
    assert main(["export", "--store", str(tmp_path / "none.sqlite"), "--out", str(out)]) == 2
    capsys.readouterr()
    parquet = tmp_path / "jobs.parquet"
    code = main(["export", "--store", str(store_path), "--out", str(parquet)])
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert code == 2
        assert "pyarrow" in capsys.readouterr().err
    else:
        assert code == 0 and pq.read_table(parquet).num_rows == 3
