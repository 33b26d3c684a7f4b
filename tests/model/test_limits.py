"""Hard per-job limits (harness.model.limits): a job past its CPU-time or memory limit is stopped
whatever the method does, set-up counts, and a cached set-up does not change a job's status."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from harness.core.deadline import TimeLimitExceeded, charged, check_deadline, cpu_time_limit
from harness.execution.runner import run_one
from harness.model.limits import Limits, call_in_child, data_size
from harness.plugins.method_files import read_method_file
from harness.plugins.registry import get_method
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")

# A method whose set-up or estimate misbehaves on demand. spin() is one C call that does not
# return (catastrophic backtracking in the regex engine): no check_deadline() can run in it.
PLUGIN = '''\
import re
import threading
import time

import numpy as np

from harness import Method
from harness.model.result import Estimate
from harness.model.ordered import cached
from harness.model.tags import Tags


def spin():
    re.match(r"(a+)+$", "a" * 64 + "b")


def burn(seconds):
    t0 = time.thread_time()
    while time.thread_time() - t0 < seconds:
        sum(range(1000))


class Misbehaving(Method):
    name = "misbehaving"
    summary = "test method: a slow set-up or estimate, or a large allocation"
    tags = Tags(predicts=False)

    def __init__(self, stage: str = "none", seconds: float = 0.0, mb: float = 0.0):
        self.stage, self.seconds, self.mb = stage, seconds, mb

    def prepare(self, problem):
        if self.stage == "setup-spin":
            spin()
        if self.stage == "setup-burn":   # a set-up that ends, but never checks the deadline;
            cached(problem, ("misbehaving", self.seconds), lambda: burn(self.seconds))  # kept

    def _estimate(self, problem, budget, rng):
        if self.stage == "estimate-spin":
            spin()
        if self.stage == "allocate":
            block = np.ones(int(self.mb * 2**20) // 8)
            return Estimate(-float(block[0]))
        if self.stage.startswith("thread-"):   # the thread's fate is not the method's
            thread = threading.Thread(target=self.work, name="helper")
            thread.start()
            thread.join()
        return Estimate(-1.0)

    def work(self):
        if self.stage == "thread-allocate":
            np.ones(int(self.mb * 2**20) // 8).sum()
        if self.stage == "thread-raise":
            raise ValueError("a planted bug")
'''


@pytest.fixture
def misbehaving(tmp_path):
    path = tmp_path / "misbehaving.py"
    path.write_text(PLUGIN)
    return read_method_file(f"{path}:Misbehaving").load()


def fresh_problem(seed: int):
    """A problem object of its own (make_problem caches per spec; set-ups cache per object)."""
    return make_problem.__wrapped__(f"onefactor:n=20,seed={seed}")


def run(problem, method, limits=None, budget=100):
    return run_one(problem, method, budget, np.random.default_rng(0), limits=limits)


def test_charged_counts_cached_seconds_against_the_limit():
    with cpu_time_limit(10.0):
        with charged(3.0):
            check_deadline()
        with charged(11.0), pytest.raises(TimeLimitExceeded, match=r"used 11"):
            check_deadline()
    with charged(100.0):
        check_deadline()   # no limit: nothing to charge


def test_a_set_up_spinning_in_c_is_stopped_and_timed(misbehaving):
    t0 = time.perf_counter()
    record = run(fresh_problem(1), misbehaving(stage="setup-spin"), Limits(1.0))
    assert record["status"] == "timeout", record["reason"]
    assert "stopped in the set-up" in record["reason"]
    # the CPU it really used: the kernel stopped it at limit + grace (2 s), not at 0 s
    assert 1.5 <= record["setup_cpu_seconds"] <= 3.0 and record["setup_cached"] is False
    assert record["cpu_seconds"] == 0.0
    assert time.perf_counter() - t0 < Limits(1.0).wall_cap()


def test_an_estimate_in_one_long_c_call_is_stopped_within_limit_and_grace(misbehaving):
    limits = Limits(1.0)
    record = run(fresh_problem(2), misbehaving(stage="estimate-spin"), limits)
    assert record["status"] == "timeout", record["reason"]
    assert "stopped in the estimate" in record["reason"]
    assert 1.5 <= record["cpu_seconds"] <= limits.time + limits.grace + 0.5
    assert record["diagnostics"]["stopped_in"] == "estimate"


def test_a_real_c_integrator_past_its_limit_is_a_timeout():
    """scipy-genz: one Fortran call for the whole budget (8 CPU s here), no deadline checks;
    stored as ok on the cooperative limit alone."""
    record = run(make_problem("onefactor:n=100"), get_method("scipy-genz")(), Limits(1.0),
                 budget=300_000)
    assert record["status"] == "timeout", record["reason"]
    assert record["cpu_seconds"] <= 2.5


def test_status_does_not_depend_on_which_job_built_the_set_up(misbehaving):
    """Set-up 0.6 CPU s against a 0.3 s limit: a timeout whether this job builds it or finds
    it cached by an earlier job (of the same limit, or of none)."""
    slow = misbehaving(stage="setup-burn", seconds=0.6)
    first_problem, other_problem = fresh_problem(3), fresh_problem(4)
    first = run(first_problem, slow, Limits(0.3))          # builds the set-up
    again = run(first_problem, slow, Limits(0.3))          # the worker kept it (adopt_setup)
    unlimited = run(other_problem, slow)                   # a job without a limit builds it
    after = run(other_problem, slow, Limits(0.3))          # ... then one with a limit
    assert [r["status"] for r in (first, again, unlimited, after)] == [
        "timeout", "timeout", "ok", "timeout"]
    assert first["setup_cached"] is False and again["setup_cached"] is True
    assert again["setup_cpu_seconds"] == first["setup_cpu_seconds"] >= 0.6
    assert "by the set-up alone" in after["reason"]
    with cpu_time_limit(0.3):   # the cooperative limit alone (no child) charges it too
        assert run(other_problem, slow)["status"] == "timeout"
    # a limit above the set-up's cost leaves the job ok, cached or not
    assert run(other_problem, slow, Limits(3.0))["status"] == "ok"
    assert run(fresh_problem(5), slow, Limits(3.0))["status"] == "ok"


def test_minimax_tilting_set_up_counts_against_the_limit():
    """The reported case: minimax-tilting on onefactor:n=1200 (set-up ~0.3 CPU s: factor,
    reordering, saddle point; estimate at budget 10 ~0.1 s) with a limit between the two. On
    main the job that built the set-up was a timeout and a job reusing it was ok."""
    spec = "onefactor:n=1200,seed=7"
    problem, method = make_problem.__wrapped__(spec), get_method("minimax-tilting")()
    built = run(problem, method, budget=10)     # no limit: builds and caches the set-up
    assert built["status"] == "ok"
    limit = 0.6 * built["setup_cpu_seconds"]
    cached = run(problem, method, Limits(limit), budget=10)
    assert cached["status"] == "timeout" and cached["setup_cached"] is True
    assert cached["setup_cpu_seconds"] == built["setup_cpu_seconds"]
    with cpu_time_limit(limit):                 # the cooperative path agrees
        assert run(problem, method, budget=10)["status"] == "timeout"
    fresh = run(make_problem.__wrapped__(spec), method, Limits(limit), budget=10)
    assert fresh["status"] == "timeout" and fresh["setup_cached"] is False
    assert fresh["setup_cpu_seconds"] >= limit   # the set-up CPU it really used, recorded


@pytest.mark.parametrize("time_limit", [None, 60.0], ids=["in-process", "child"])
def test_an_allocation_past_the_memory_limit_fails_with_the_numbers(misbehaving, time_limit):
    limits = Limits(time_limit, 2**28)
    assert limits.needs_child == (time_limit is not None)
    record = run(fresh_problem(6), misbehaving(stage="allocate", mb=500), limits)
    assert record["status"] == "failed"
    assert record["reason"].startswith("memory: asked for 524 MB"), record["reason"]
    assert "RLIMIT_DATA" in record["reason"]
    small = run(fresh_problem(6), misbehaving(stage="allocate", mb=20), limits)
    assert small["status"] == "ok" and small["log_marginal_likelihood"] == -1.0
    assert run(fresh_problem(6), misbehaving(stage="allocate", mb=500))["status"] == "ok"


@pytest.mark.parametrize("time_limit", [None, 60.0], ids=["in-process", "child"])
def test_a_memory_error_in_a_thread_of_the_method_fails_the_job(misbehaving, time_limit,
                                                                 capfd):
    """The method returns a log Z while the thread it started ran out of memory: the job is
    failed, with the numbers and the thread's name, and no traceback is printed."""
    limits = Limits(time_limit, 2**28)
    record = run(fresh_problem(7), misbehaving(stage="thread-allocate", mb=500), limits)
    assert record["status"] == "failed", record
    assert record["reason"].startswith("memory: asked for 524 MB"), record["reason"]
    assert record["reason"].endswith("(in thread 'helper')")
    assert record["log_marginal_likelihood"] is None
    assert "Traceback" not in capfd.readouterr().err
    small = run(fresh_problem(7), misbehaving(stage="thread-allocate", mb=20), limits)
    assert small["status"] == "ok" and small["log_marginal_likelihood"] == -1.0


def test_any_exception_in_a_thread_of_the_method_is_an_error(misbehaving, capfd):
    record = run(fresh_problem(8), misbehaving(stage="thread-raise"))
    assert record["status"] == "error"
    assert record["reason"].startswith("ValueError: a planted bug (misbehaving.py:"), record
    assert record["reason"].endswith("in work) (in thread 'helper')")
    assert "Traceback" not in capfd.readouterr().err
    # a thread that was there before the job is not the job's: it goes to the hook there was,
    # which is back once the block ends
    from harness.execution.timed import thread_errors

    ready, go, seen = threading.Event(), threading.Event(), []

    def old():
        ready.set()
        go.wait()
        raise KeyError("not the job's")
    previous, threading.excepthook = threading.excepthook, seen.append
    try:
        thread = threading.Thread(target=old)
        thread.start()
        ready.wait()
        with thread_errors(grace=0) as caught:
            go.set()
            thread.join()
        assert threading.excepthook == seen.append
    finally:
        threading.excepthook = previous
    assert caught == [] and [type(a.exc_value) for a in seen] == [KeyError]


def test_a_limited_job_gives_the_same_record_as_an_unlimited_one():
    problem, method = make_problem("linear1d:n_train=10,n_test=3"), get_method("sov")()
    plain = run(problem, method, budget=500)
    limited = run(problem, method, Limits(60.0, 2**30), budget=500)
    for key in ("status", "log_marginal_likelihood", "log_marginal_likelihood_se",
                "test_probabilities", "setup_cpu_seconds", "mae"):
        assert limited[key] == plain[key], key


def test_call_in_child_reports_how_the_child_ended():
    ok = call_in_child(lambda send: (send("note", 1), 2)[1])
    assert ok.messages == [("note", 1), ("result", 2)] and ok.exit_code == 0
    crashed = call_in_child(lambda send: 1 / 0)
    assert crashed.exit_code != 0 and "ZeroDivisionError" in crashed.last("crash")
    blocked = call_in_child(lambda send: time.sleep(60), wall_seconds=0.5)
    assert blocked.wall_killed and blocked.signal is not None and blocked.wall < 30
    assert data_size() > 0


SWEEP = """\
name = "limits"
seed = 1
replicates = 1
budgets = [100]
time_limit = 1
problems = ["onefactor:n=20"]
[methods."misbehaving.py:Misbehaving"]
stage = ["estimate-spin", "none"]
"""


def test_a_local_cluster_worker_stops_a_job_at_its_limit(tmp_path):
    """Forked from a real Dask worker process (threads: event loop, comms): the child is
    stopped, the worker lives on, and every job carries the worker's memory share."""
    from collections import Counter

    from harness.execution.store import ResultStore
    from harness.sweep.driver import run_sweep

    (tmp_path / "misbehaving.py").write_text(PLUGIN)
    (tmp_path / "limits.toml").write_text(SWEEP)
    store = tmp_path / "limits.sqlite"
    outcome = run_sweep(tmp_path / "limits.toml", store=store, workers=1, report=False)
    assert outcome.complete and outcome.statuses == Counter({"timeout": 1, "ok": 1})
    with ResultStore(store) as db:
        records = {r["settings"]["stage"]: r for r in db.records()}
    spun, fine = records["estimate-spin"], records["none"]
    assert "stopped in the estimate" in spun["reason"] and 1.5 <= spun["cpu_seconds"] <= 2.6
    assert spun["worker"] == fine["worker"] is not None   # the worker survived its child
    assert fine["memory_limit"] > 2**27 and fine["log_marginal_likelihood"] == -1.0
