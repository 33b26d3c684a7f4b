"""Rejection–bootstrap sampler: exact cases, chunking, failure reporting, accuracy (issue 2)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.metrics import mae, mape_percent
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.methods.rejection_bootstrap import RejectionBootstrap
from harness.plugins.specs import make_problem


def test_identity_covariance_is_exact_for_the_soft_count():
    """beta -> 0: R = I, so every step has P_i = Phi(0) = 1/2 and J* = 1/2 exactly."""
    problem = linear1d(n_train=60, n_test=5, scale=1e-30)
    est = RejectionBootstrap(count="soft").estimate(problem, 300, np.random.default_rng(0))
    assert est.log_marginal_likelihood == pytest.approx(-60 * np.log(2), abs=1e-12)
    np.testing.assert_allclose(est.test_probabilities, 0.5, atol=1e-12)


def test_hard_count_is_unbiased_for_z_at_n2():
    """E[Ẑ] = Z for the hard count: mean of many tiny runs against 1/4 + asin(rho)/(2 pi)."""
    problem = onefactor(n=2, seed=4, dmin=0.5, dmax=0.9)
    exact = 0.25 + np.arcsin(problem.R[0, 1]) / (2 * np.pi)
    method = RejectionBootstrap(count="hard")
    rng = np.random.default_rng(1)
    z = np.exp([method.estimate(problem, 20, rng).log_marginal_likelihood for _ in range(3000)])
    assert abs(z.mean() - exact) <= 4 * z.std(ddof=1) / np.sqrt(len(z))


def test_chunks_are_recombined_exactly():
    problem = onefactor(n=150, seed=2)
    small = RejectionBootstrap(chunk_mb=0.5)
    sizes = small.chunk_sizes(20_000, problem.n_train, 0)
    assert sum(sizes) == 20_000 and len(sizes) > 1 and max(sizes) - min(sizes) <= 1
    runs = [small.estimate(problem, 20_000, np.random.default_rng(s)) for s in range(4)]
    assert all(r.diagnostics["chunks"] == len(sizes) for r in runs)
    lz = np.array([r.log_marginal_likelihood for r in runs])
    se = max(lz.std(ddof=1), runs[0].log_marginal_likelihood_se) / 2
    assert abs(lz.mean() - problem.truth.log_marginal_likelihood) <= 5 * se


def test_chunked_test_probabilities_are_weighted_by_z():
    problem = linear1d(n_train=80, n_test=10, seed=3)
    est = RejectionBootstrap(chunk_mb=0.6).estimate(problem, 8000, np.random.default_rng(0))
    assert est.diagnostics["chunks"] > 1
    assert mae(est.test_probabilities, problem.truth.test_probabilities) < 0.02


def test_block_size_does_not_change_the_answer():
    problem = linear1d(n_train=90, n_test=7, seed=5)
    a = RejectionBootstrap(block_size=4).estimate(problem, 3000, np.random.default_rng(9))
    b = RejectionBootstrap(block_size=64).estimate(problem, 3000, np.random.default_rng(9))
    assert a.log_marginal_likelihood == pytest.approx(b.log_marginal_likelihood, abs=1e-9)
    np.testing.assert_allclose(a.test_probabilities, b.test_probabilities, atol=1e-9)


def test_all_particles_rejected_is_a_failed_estimate():
    problem = onefactor(n=300, seed=1)
    est = RejectionBootstrap(count="hard").estimate(problem, 1, np.random.default_rng(0))
    assert est.status == "failed"
    assert "rejected" in est.reason and est.log_marginal_likelihood is None
    assert est.diagnostics["failed_variable"] >= 0


def test_diagnostics():
    problem = onefactor(n=100, seed=0)
    est = RejectionBootstrap().estimate(problem, 2000, np.random.default_rng(0))
    d = est.diagnostics
    assert 1 <= d["distinct_ancestors"] <= 2000
    assert 1 <= d["distinct_final_particles"] <= 2000
    assert d["min_log_p_step"] < 0 and 1 <= d["min_p_variable"] <= 100
    assert est.log_marginal_likelihood_se > 0


@pytest.mark.parametrize("setting, value", [("count", "medium"), ("block_size", -1),
                                            ("chunk_mb", 0.0)])
def test_bad_settings(setting, value):
    with pytest.raises(InputError, match=setting):
        RejectionBootstrap(**{setting: value}).check_settings()


# ---- the accuracy targets at M = 1e5 (paper Tables 1-3) --------------------------
@pytest.mark.slow
@pytest.mark.parametrize("count, factor", [("soft", 1.0), ("hard", 2.0)])
def test_onefactor_500_at_1e5(count, factor):
    mapes = []
    for seed in range(5):
        problem = onefactor(n=500, seed=seed)
        est = RejectionBootstrap(count=count).estimate(problem, 100_000,
                                                       np.random.default_rng(seed))
        mapes.append(mape_percent(est.log_marginal_likelihood,
                                  problem.truth.log_marginal_likelihood))
    assert np.median(mapes) <= 0.15 * factor, mapes


@pytest.mark.slow
@pytest.mark.parametrize("count, factor", [("soft", 1.0), ("hard", 2.0)])
def test_linear1d_p3_at_1e5(count, factor):
    problem = make_problem("linear1d-p3")
    est = RejectionBootstrap(count=count).estimate(problem, 100_000, np.random.default_rng(7))
    assert mae(est.test_probabilities, problem.truth.test_probabilities) <= 0.002 * factor
    assert mape_percent(est.log_marginal_likelihood,
                        problem.truth.log_marginal_likelihood) <= 0.05 * factor


def test_a_dead_chunk_counts_as_zero_not_as_failure():
    """Ẑ_c = 0 for a chunk whose particles all die; the mean over chunks stays unbiased."""
    problem = onefactor(n=40, seed=3)
    method = RejectionBootstrap(count="hard", chunk_mb=0.02)  # chunks of a few particles
    sizes = method.chunk_sizes(400, 40, 0)
    assert max(sizes) < 40
    est = method.estimate(problem, 400, np.random.default_rng(2))
    assert est.status == "ok" and est.diagnostics["dead_chunks"] > 0
    assert np.isfinite(est.log_marginal_likelihood)
