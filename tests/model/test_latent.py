"""The latent-space machinery of the latent-variable methods (harness.model.latent): the
cached prior and its jitter, and the predictive probabilities from latent means (log Φ is
harness.core.special's, tests/core/test_special.py)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.datasets.linear1d import FAMILY as LINEAR1D
from harness.datasets.linear1d import linear1d
from harness.model.latent import (
    jitter_effect_linear1d,
    latent_prior,
    predict_from_means,
)

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def test_prior_is_cached_per_problem_and_jitter():
    problem = linear1d(n_train=40, n_test=5, seed=2)
    a = latent_prior(problem, 1e-6)
    assert latent_prior(problem, 1e-6) is a
    assert latent_prior(problem, 1e-4) is not a
    # the factor and the predictive weights solve the jittered system
    np.testing.assert_allclose(a.L @ a.L.T, a.K_j, atol=1e-12)
    kstar = problem.y_train[:, None] * problem.test_cross
    np.testing.assert_allclose(a.K_j @ (a.y[:, None] * a.A), kstar, atol=1e-8)


def test_jitter_effect_on_linear1d_is_negligible():
    """GPML's jitter perturbs the model; measured exactly on the paper's P1 and P3."""
    for preset in ("linear1d-p1", "linear1d-p3"):
        effect = jitter_effect_linear1d(LINEAR1D.make(LINEAR1D.presets[preset]))
        assert abs(effect["delta_log_z"]) < 1e-5
        assert effect["mae"] < 1e-6


def test_gpml_predictive_variance_shrinks_towards_one_half():
    rng = np.random.default_rng(0)
    mu = rng.normal(1.0, 0.7, size=(300, 4))
    sigma2 = np.full(4, 0.3)
    right = predict_from_means(mu, sigma2)
    gpml = predict_from_means(mu, sigma2, gpml_compat=True)
    assert np.all(np.abs(gpml - 0.5) < np.abs(right - 0.5))
