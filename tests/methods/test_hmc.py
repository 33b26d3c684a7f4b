"""HMC + AIS: accuracy against the linear1d oracle, step-size adaptation and its
diagnostics, GPML compatibility, the Gaussian leapfrog acceptance used for ε₀."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.metrics import mae
from harness.datasets.linear1d import FAMILY as LINEAR1D
from harness.methods.hmc import HamiltonianMC, gaussian_leapfrog_acceptance, prior_step_size

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def p1():
    return LINEAR1D.make(LINEAR1D.presets["linear1d-p1"])


def test_accuracy_on_p1(p1):
    """N = 100: MAE <= 0.01 and |Δ log Z| within 3 of the method's own standard error."""
    est = HamiltonianMC(ais_runs=10, skip=20).estimate(p1, 100, np.random.default_rng(0))
    assert est.status == "ok"
    assert mae(est.test_probabilities, p1.truth.test_probabilities) <= 0.01
    err = abs(est.log_marginal_likelihood - p1.truth.log_marginal_likelihood)
    assert err <= 3 * est.log_marginal_likelihood_se, (err, est.log_marginal_likelihood_se)


def test_step_size_is_adapted_then_frozen_and_recorded(p1):
    est = HamiltonianMC(skip=10, burn_in=10, target_accept=0.7).estimate(
        p1, 20, np.random.default_rng(1))
    d = est.diagnostics
    assert 0 < d["step_size"] < d["step_size_prior"] < 2
    # frozen after burn-in: the posterior chain's acceptance is near the target
    assert 0.5 < d["acceptance_rate_posterior"] <= 1
    assert 0.5 < d["acceptance_rate_ais"] <= 1 and d["acceptance_rate_ais_min_level"] > 0.3


def test_gpml_compat_adapts_gpml_style(p1):
    est = HamiltonianMC(skip=10, burn_in=5, gpml_compat=True).estimate(
        p1, 20, np.random.default_rng(1))
    d = est.diagnostics
    assert d["variant"] == "gpml_compat"
    assert 1e-6 <= d["step_size"] <= 0.9 and d["step_size"] != 0.01
    assert 0 <= d["acceptance_rate_posterior"] <= 1


def test_gaussian_leapfrog_acceptance_matches_simulation():
    rng = np.random.default_rng(0)
    dim, n_leap, eps = 50, 10, 0.4
    q, p = rng.standard_normal((2, 4000, dim))
    h0 = 0.5 * (q**2 + p**2).sum(1)
    for _ in range(n_leap):
        p -= 0.5 * eps * q
        q += eps * p
        p -= 0.5 * eps * q
    dh = 0.5 * (q**2 + p**2).sum(1) - h0
    simulated = np.minimum(1, np.exp(-dh)).mean()
    assert gaussian_leapfrog_acceptance(eps, n_leap, dim) == pytest.approx(simulated, abs=0.02)
    e0 = prior_step_size(n_leap, dim, 0.8)
    assert gaussian_leapfrog_acceptance(e0, n_leap, dim) == pytest.approx(0.8, abs=1e-3)


@pytest.mark.parametrize("setting, value", [("leapfrog_steps", 0), ("target_accept", 1.0),
                                            ("target_accept", 0)])
def test_bad_hmc_settings(setting, value):
    with pytest.raises(InputError, match=setting):
        HamiltonianMC(**{setting: value}).check_settings()
