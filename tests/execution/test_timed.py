"""harness.execution.timed: the optional peak-memory tracing of run_method; an error's reason
names the method's file and line (harness.model.debugging), raise_errors re-raises it."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from harness.execution.timed import run_method
from harness.plugins.registry import get_method
from harness.plugins.specs import make_problem


def test_trace_memory_off_gives_the_same_estimate_without_a_peak():
    problem = make_problem("linear1d:n_train=30,n_test=3")
    method = get_method("sov")()
    traced = run_method(problem, method, 512, np.random.default_rng(3))
    untraced = run_method(problem, method, 512, np.random.default_rng(3), trace_memory=False)
    # resident pages reused from earlier work are not new memory: the peak may be 0 here
    assert traced["peak_memory_mb"] >= 0 and untraced["peak_memory_mb"] is None
    assert traced["log_marginal_likelihood"] == untraced["log_marginal_likelihood"]
    assert traced["test_probabilities"] == untraced["test_probabilities"]
    assert not tracemalloc.is_tracing()


RAISING = '''
    import numpy as np
    from harness.model.result import Estimate
    from harness.model.method import Method

    def helper(n):
        return list(range(0, n, 0))                  # line 7: raises ValueError

    class Raising(Method):
        name = "raising"
        summary = "raises where told to"
        def __init__(self, where: str = "helper"):
            self.where = where
        def _estimate(self, problem, budget, rng):
            if self.where == "numpy":
                np.linalg.cholesky(-np.eye(2))       # line 16: raises inside numpy
            return Estimate(-float(len(helper(budget))))   # line 17
'''


@pytest.fixture
def raising(install_plugin):
    install_plugin("raising_plugin", RAISING, methods={"raising": "raising_plugin:Raising"})
    return get_method("raising")


@pytest.mark.parametrize(("where", "line"), [
    ("helper", "ValueError: range() arg 3 must not be zero (raising_plugin.py:7 in helper)"),
    ("numpy", "LinAlgError: Matrix is not positive definite (raising_plugin.py:16 in "
              "_estimate)")])
def test_an_error_reason_names_the_method_file_and_line(raising, where, line):
    """The innermost frame of the method's own code, not of numpy's."""
    problem = make_problem("linear1d:n_train=5,n_test=1")
    record = run_method(problem, raising(where=where), 10, np.random.default_rng(0))
    assert record["status"] == "error"
    assert record["reason"] == line


def test_raise_errors_reraises_with_the_traceback(raising):
    problem = make_problem("linear1d:n_train=5,n_test=1")
    with pytest.raises(ValueError, match="range") as info:
        run_method(problem, raising(), 10, np.random.default_rng(0), raise_errors=True)
    assert info.traceback[-1].name == "helper"



def test_a_failing_set_up_is_recorded_as_an_error_with_its_line():
    """An exception in prepare() (the set-up) is a recorded error, like one in the estimate."""
    from harness.methods.sov import Sov

    class FailingSetUp(Sov):
        name = "failing-set-up"
        summary = "sov whose set-up raises"

        def prepare(self, problem):
            raise ValueError("set-up exploded")

    problem = make_problem("linear1d:n_train=20,n_test=2")
    record = run_method(problem, FailingSetUp(), 64, np.random.default_rng(0))
    assert record["status"] == "error"
    assert record["reason"].startswith("ValueError: set-up exploded (test_timed.py:")
    assert record["log_marginal_likelihood"] is None
    with pytest.raises(ValueError, match="set-up exploded"):
        run_method(problem, FailingSetUp(), 64, np.random.default_rng(0), raise_errors=True)
