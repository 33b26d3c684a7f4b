"""Which methods' Ẑ (not log Ẑ) is unbiased for Z (Method.unbiased_z; pseudo-marginal MCMC
over hyperparameters relies on it, docs/math.md §12): the mean of many tiny-budget Ẑ on a 3-D
orthant with a closed form must equal Z within 4 standard errors of the mean."""

from __future__ import annotations

import numpy as np
import pytest

from harness.model.problem import Problem
from harness.plugins.registry import get_method, methods

pytestmark = pytest.mark.usefixtures("one_blas_thread")

R = np.array([[1.0, 0.6, 0.3], [0.6, 1.0, -0.5], [0.3, -0.5, 1.0]])
# P(v >= 0) for a trivariate normal: 1/8 + (asin r12 + asin r13 + asin r23) / (4 pi)
Z = 1 / 8 + (np.arcsin(0.6) + np.arcsin(0.3) + np.arcsin(-0.5)) / (4 * np.pi)
UNBIASED = {  # instance -> (a budget that keeps the estimate crude, runs)
    ("sov", (("randomisations", 2),)): (4, 1000),
    ("sir", (("randomisations", 2), ("ess_threshold", 1.0))): (4, 1000),
    ("sir", (("randomisations", 2),)): (16, 1000),    # adaptive resampling (ESS < 0.5 M)
    ("minimax-tilting", (("randomisations", 2),)): (4, 1000),
    ("rejection-bootstrap", (("count", "hard"),)): (2, 5000),
}


def mean_ratio(name, settings, budget, reps):
    """(mean Ẑ / Z, its standard error) over independent runs; a failed run is Ẑ = 0."""
    method = get_method(name).from_settings(dict(settings))
    problem = Problem.orthant("r3", R)
    rng = np.random.default_rng(11)
    z = np.array([np.exp(e.log_marginal_likelihood) if e.status == "ok" else 0.0
                  for e in (method.estimate(problem, budget, rng) for _ in range(reps))])
    return z.mean() / Z, z.std(ddof=1) / Z / np.sqrt(reps)


def test_the_claims_are_the_tested_ones():
    claimed = {name for name, cls in methods().items() if cls().unbiased_z()}
    assert claimed == {name for name, _ in UNBIASED} - {"rejection-bootstrap"}
    assert get_method("rejection-bootstrap")(count="hard").unbiased_z()
    assert not get_method("rejection-bootstrap")(count="soft").unbiased_z()


@pytest.mark.slow
@pytest.mark.parametrize("name, settings", list(UNBIASED))
def test_mean_of_z_hat_is_z(name, settings):
    ratio, se = mean_ratio(name, settings, *UNBIASED[(name, settings)])
    assert abs(ratio - 1) < 4 * se, (ratio, se)
    assert se < 0.03          # the test can see a bias of 12 %


def test_soft_count_is_biased_so_it_is_not_claimed():
    ratio, se = mean_ratio("rejection-bootstrap", (("count", "soft"),), 2, 2000)
    assert ratio < 1 - 10 * se, (ratio, se)    # measured 0.62
