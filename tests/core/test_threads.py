"""harness.core.threads: one switch for the threads of an estimate, the clock that counts them,
and numbers that do not depend on the thread count (docs/design.md, "Threads")."""

from __future__ import annotations

import time

import numpy as np
import pytest

import harness
from harness.core import special
from harness.core.deadline import TimeLimitExceeded, check_deadline, cpu_time_limit
from harness.core.threads import available_cores, compute_threads, cpu_clock, threads


def test_compute_threads_sets_and_restores():
    assert threads() == 1 and cpu_clock() is time.thread_time
    with compute_threads(2):
        assert threads() == 2 and cpu_clock() is time.process_time
        with compute_threads(1):
            assert threads() == 1
        assert threads() == 2
    assert threads() == 1
    assert available_cores() >= 1
    with pytest.raises(ValueError, match="at least 1"):
        with compute_threads(0):
            pass


def test_a_cpu_limit_counts_every_thread():
    with compute_threads(2), cpu_time_limit(0.05):
        x = np.random.default_rng(0).normal(size=400_000)
        with pytest.raises(TimeLimitExceeded):
            for _ in range(10_000):
                special.log_ndtr(x)
                check_deadline()


CASES = [   # every path where the threads act: BLAS products and the chunked kernels
    ("onefactor:n=300,seed=1", "sov", {}, 20_000),
    ("onefactor:n=300,seed=1", "minimax-tilting", {}, 20_000),
    ("markov1d:n_train=400,n_test=20,rho=0.9", "sir", {"proposal": "tilted"}, 20_000),
    ("markov1d:n_train=400,n_test=20,rho=0.9", "sov-tlr", {"reorder": "kdtree"}, 20_000),
    ("markov1d:n_train=400,n_test=20,rho=0.9", "vecchia-tilting", {}, 20_000),
    ("linear1d-p1", "rejection-bootstrap", {}, 20_000),
]


@pytest.mark.parametrize(("problem", "method", "settings", "budget"), CASES,
                         ids=[c[1] for c in CASES])
def test_one_and_two_threads_give_the_same_numbers(problem, method, settings, budget):
    one = harness.estimate(problem, method, budget, seed=5, threads=1, **settings)
    two = harness.estimate(problem, method, budget, seed=5, threads=2, **settings)
    assert (one.threads, two.threads) == (1, 2)
    assert one.status == two.status
    assert one.log_marginal_likelihood == two.log_marginal_likelihood
    assert one.log_marginal_likelihood_se == two.log_marginal_likelihood_se
    assert np.array_equal(one.test_probabilities, two.test_probabilities)
    assert np.array_equal(one.test_probabilities_se, two.test_probabilities_se)
    assert two.cpu_seconds > 0 and two.process_cpu_seconds >= two.cpu_seconds * 0.99
