"""Shared helpers of the method tests."""

from __future__ import annotations

import numpy as np
import pytest


def rms_errors(method, problem, budget: int, seeds) -> tuple[float, float]:
    """(RMS error of log Ẑ, mean MAE of the test probabilities) over the seeds, against truth."""
    truth = problem.truth
    lz, mae = [], []
    for s in seeds:
        e = method.estimate(problem, budget, np.random.default_rng(s))
        lz.append(e.log_marginal_likelihood - truth.log_marginal_likelihood)
        if problem.n_test:
            mae.append(np.mean(np.abs(e.test_probabilities - truth.test_probabilities)))
    return float(np.sqrt(np.mean(np.square(lz)))), (float(np.mean(mae)) if mae else 0.0)


@pytest.fixture
def errors_against_truth():
    """The rms_errors function, for tests comparing methods at equal budget."""
    return rms_errors
