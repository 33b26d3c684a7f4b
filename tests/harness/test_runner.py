"""harness/runner.py: the optional peak-memory tracing of run_method."""

from __future__ import annotations

import tracemalloc

import numpy as np

from harness.registry import get_method
from harness.runner import run_method
from harness.spec import make_problem


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
