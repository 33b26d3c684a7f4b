"""Rejection–bootstrap sampler: exact cases, chunking, failure reporting, accuracy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from harness.core.errors import InputError
from harness.core.metrics import mae, mape_percent
from harness.datasets.linear1d import linear1d
from harness.datasets.onefactor import onefactor
from harness.methods.rejection_bootstrap import COUNTS, RejectionBootstrap
from harness.model.reliability import LOG_Z_SD_MAX
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
    method = RejectionBootstrap(count="hard", populations=1)   # one filter per estimate
    rng = np.random.default_rng(1)
    z = np.exp([method.estimate(problem, 20, rng).log_marginal_likelihood for _ in range(3000)])
    assert abs(z.mean() - exact) <= 4 * z.std(ddof=1) / np.sqrt(len(z))


def test_chunks_are_recombined_exactly():
    """Each of the 10 populations runs in memory chunks (near-equal, independent runs)."""
    problem = onefactor(n=150, seed=2)
    small = RejectionBootstrap(chunk_mb=0.5)
    sizes = small.chunk_sizes(2_000, problem.n_train, 0)
    assert sum(sizes) == 2_000 and len(sizes) > 1 and max(sizes) - min(sizes) <= 1
    runs = [small.estimate(problem, 20_000, np.random.default_rng(s)) for s in range(4)]
    assert all(r.diagnostics["chunks"] == 10 * len(sizes) for r in runs)
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
                                            ("chunk_mb", 0.0), ("populations", 0)])
def test_bad_settings(setting, value):
    with pytest.raises(InputError, match=setting):
        RejectionBootstrap(**{setting: value}).check_settings()


# ---- accuracy targets at M = 1e5 (paper Tables 1-3) ------------------------------------------
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
    method = RejectionBootstrap(count="hard", populations=1, chunk_mb=0.02)  # a few particles
    sizes = method.chunk_sizes(400, 40, 0)
    assert max(sizes) < 40
    est = method.estimate(problem, 400, np.random.default_rng(2))
    assert est.status == "ok" and est.diagnostics["dead_chunks"] > 0
    assert np.isfinite(est.log_marginal_likelihood)


# ---- standard errors from independent populations ---------------------------------------
# main at f3964b8 (one population, the binomial SE A.44): linear1d(n_train=60, n_test=4,
# seed=3), 3000 particles in 59 memory chunks (chunk_mb=0.2), default_rng(5)
ONE_POPULATION = {
    "hard": (-33.157223051052625, 0.23043574022447155,
             [0.31677245291680783, 0.3378564465069446, 0.9060542107356514, 0.8539452932741803]),
    "soft": (-33.2283564461453, 0.1667907698452705,
             [0.327261071016162, 0.35674453466031064, 0.8874224531509245, 0.8319999893749983]),
}


@pytest.mark.parametrize("count", COUNTS)
def test_one_population_gives_the_numbers_and_binomial_se_of_before(count):
    problem = linear1d(n_train=60, n_test=4, seed=3)
    method = RejectionBootstrap(count=count, populations=1, chunk_mb=0.2)
    est = method.estimate(problem, 3000, np.random.default_rng(5))
    log_z, se, test = ONE_POPULATION[count]
    assert est.log_marginal_likelihood == pytest.approx(log_z, rel=1e-12)
    assert est.log_marginal_likelihood_se == pytest.approx(se, rel=1e-12)
    np.testing.assert_allclose(est.test_probabilities, test, rtol=1e-12)
    assert est.test_probabilities_se is None and est.status == "ok"
    assert est.diagnostics["se_method"] == "binomial approximation A.44"
    assert est.diagnostics["chunks"] == 59 and "randomisations" not in est.diagnostics


def test_populations_give_the_standard_errors_and_their_diagnostics():
    """Ẑ is the size-weighted mean of the populations' Ẑ_k; SEs from their spread."""
    problem = linear1d(n_train=60, n_test=4, seed=3)
    method = RejectionBootstrap(count="hard", populations=4)
    part = method.estimate_part(problem, 1003, np.random.default_rng(1))
    assert [sum(c["particles"] for c in q) for q in part["populations"]] == [251, 251, 251, 250]
    est = method.combine_parts(problem, [part])
    alone = [RejectionBootstrap(count="hard", populations=1).combine_parts(
        problem, [{**part, "populations": [q]}]) for q in part["populations"]]
    lz = np.array([e.log_marginal_likelihood for e in alone])
    log_mass = lz + np.log(np.array([251, 251, 251, 250]) / 1003)
    assert est.log_marginal_likelihood == pytest.approx(logsumexp(log_mass), abs=1e-12)
    d = est.diagnostics
    assert d["randomisations"] == 4 and d["dead_populations"] == 0
    assert d["log_z_randomisation_sd"] == pytest.approx(np.std(lz, ddof=1), rel=1e-12)
    assert d["top_randomisation_share"] == pytest.approx(np.exp(log_mass.max() - logsumexp(
        log_mass)), rel=1e-12)
    assert d["se_method"].startswith("spread of independent populations")
    assert est.log_marginal_likelihood_se >= d["log_z_delta_se"] > 0
    assert est.test_probabilities_se.shape == (4,) and np.all(est.test_probabilities_se > 0)


def test_an_easy_problem_is_ok_and_its_standard_errors_cover_the_error():
    problem = make_problem("linear1d-p1")
    est = RejectionBootstrap().estimate(problem, 10_000, np.random.default_rng(3))
    assert est.status == "ok", est.reason
    assert est.diagnostics["log_z_randomisation_sd"] < LOG_Z_SD_MAX
    truth = problem.truth
    assert abs(est.log_marginal_likelihood - truth.log_marginal_likelihood) \
        <= 3 * est.log_marginal_likelihood_se
    z = np.abs(est.test_probabilities - truth.test_probabilities) / est.test_probabilities_se
    assert z.max() < 3, z   # (one slope drives all test points: their errors move together)


def test_a_short_range_problem_is_unreliable_where_one_population_was_ok_and_far_off():
    """markov1d (Matérn-1/2, neighbour correlation 0.99, exact truth): one population's
    binomial SE put log Ẑ 7 SEs off, status ok; ten populations disagree by sd 10.8 nats in
    log Ẑ_k, so the run is unreliable, its numbers and standard errors kept."""
    problem = make_problem("markov1d:n_train=200,rho=0.99,beta=1,n_test=5,seed=1")
    truth = problem.truth.log_marginal_likelihood
    one = RejectionBootstrap(count="hard", populations=1).estimate(problem, 2000,
                                                                  np.random.default_rng(1))
    assert one.status == "ok"
    assert abs(one.log_marginal_likelihood - truth) > 5 * one.log_marginal_likelihood_se
    est = RejectionBootstrap(count="hard").estimate(problem, 2000, np.random.default_rng(1))
    assert est.status == "unreliable"
    assert est.reason.startswith("randomisations spread: the log Ẑ of 10 independent")
    assert est.diagnostics["log_z_randomisation_sd"] > 5 * LOG_Z_SD_MAX
    assert est.log_marginal_likelihood is not None and est.test_probabilities_se is not None
    est.check(problem.n_test)
