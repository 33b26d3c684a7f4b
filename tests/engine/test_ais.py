"""Annealed importance sampling (harness.engine.ais) in ess and hmc: the schedule and the
combination, AIS exactness and unbiasedness, its error and unreliable status, GPML's AIS error,
bad settings, and the RBF agreement study (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.kernels import RBF
from harness.datasets.linear1d import linear1d
from harness.datasets.markov1d import markov1d
from harness.datasets.onefactor import onefactor
from harness.engine.ais import IncrementVariance, combine_ais, temperature_schedule
from harness.methods.ess import EllipticalSlice
from harness.methods.hmc import HamiltonianMC
from harness.model.latent import latent_prior
from harness.model.problem import Problem
from harness.plugins.registry import methods

pytestmark = pytest.mark.usefixtures("one_blas_thread")

SAMPLERS = [EllipticalSlice, HamiltonianMC]
LATENT = [m for m in methods().values() if not m.tags.handles_orthant]


def test_schedule_and_combination():
    tau = temperature_schedule(200)
    assert tau[0] == 0 and tau[-1] == 1 and np.all(np.diff(tau) > 0)
    np.testing.assert_allclose(tau, np.linspace(0, 1, 200) ** 4)
    lz, se = combine_ais(np.array([-10.0, -10.0, -10.0]))
    assert lz == pytest.approx(-10.0) and se == 0.0
    lz, se = combine_ais(np.array([np.log(1.0), np.log(3.0)]))
    assert lz == pytest.approx(np.log(2.0)) and se == pytest.approx(np.sqrt(2) / np.sqrt(2) / 2)
    assert combine_ais(np.array([-3.0]))[1] is None


@pytest.mark.parametrize("cls", SAMPLERS, ids=lambda c: c.name)
@pytest.mark.parametrize("compat", [False, True])
def test_ais_is_exact_when_the_kernel_vanishes(cls, compat):
    """β → 0 (K ≈ 0): every AIS weight is exactly −N log 2 and J* = 1/2."""
    problem = linear1d(n_train=50, n_test=4, scale=1e-30, seed=1)
    method = cls(skip=3, burn_in=2, ais_runs=3, gpml_compat=compat)
    est = method.estimate(problem, 12, np.random.default_rng(0))
    assert est.log_marginal_likelihood == pytest.approx(-50 * np.log(2), abs=1e-9)
    np.testing.assert_allclose(est.test_probabilities, 0.5, atol=1e-12)


def _three_point_problem():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 2))
    problem = Problem.classification("n3", X, [1, -1, 1], X[:2], RBF(1.0, 4.0))
    prior = latent_prior(problem, 1e-6)
    R = prior.Kc + np.eye(3)            # orthant covariance of the (jittered) model
    d = np.sqrt(np.diag(R))
    C = R / np.outer(d, d)
    Z = 0.125 + (np.arcsin(C[0, 1]) + np.arcsin(C[0, 2]) + np.arcsin(C[1, 2])) / (4 * np.pi)
    return problem, Z


@pytest.mark.parametrize("cls", SAMPLERS, ids=lambda c: c.name)
def test_ais_weights_are_unbiased_for_z(cls):
    """E[w] = Z (Neal 1998) with a short schedule, against the N = 3 arcsine formula."""
    problem, Z = _three_point_problem()
    method = cls(skip=2, burn_in=1, ais_runs=3000, temperatures=6)
    est = method.estimate(problem, 5, np.random.default_rng(0))
    w = np.exp(est.diagnostics["ais_log_weights"])
    assert abs(w.mean() / Z - 1) <= 4 * w.std(ddof=1) / np.sqrt(len(w)) / Z
    d = est.diagnostics
    assert d["log_z_runs_se"] == pytest.approx(w.std(ddof=1) / np.sqrt(len(w)) / w.mean(),
                                               rel=1e-9)
    iv = d["ais_increment_variance"]
    assert d["log_z_increments_se"] == pytest.approx(
        min(np.sqrt(np.expm1(iv) / len(w)), np.sqrt(iv)), rel=1e-12)
    assert est.log_marginal_likelihood_se == max(d["log_z_runs_se"], d["log_z_increments_se"])


def test_increment_variance_sums_the_autocovariances_of_the_increments():
    """Γ(k) sums a_{t,r} a_{t+k,r} over levels and runs (deviations from the runs' mean at each
    level, divided by R − 1); summed over every lag it is exactly the runs' sample variance of
    their log weights, lag 0 alone the variance of independent increments, and the reported
    variance lies between, never below lag 0."""
    rng = np.random.default_rng(4)
    walk = np.cumsum(rng.standard_normal((300, 5)), axis=0) * 0.02     # correlated levels
    steps = rng.uniform(0.5, 1.5, 300)
    iv = IncrementVariance()
    for step, row in zip(steps, walk, strict=True):
        iv.add(step, row)
    a = steps[:, None] * (walk - walk.mean(axis=1, keepdims=True))
    gamma = np.array([(a[:300 - k] * a[k:]).sum() / 4 for k in range(300)])
    np.testing.assert_allclose(iv._autocovariances(), gamma, rtol=1e-9, atol=1e-12)
    log_w = (steps[:, None] * walk).sum(axis=0)
    assert gamma[0] + 2 * gamma[1:].sum() == pytest.approx(log_w.var(ddof=1), rel=1e-9)
    assert iv.independent == pytest.approx(gamma[0], rel=1e-12)
    assert 3 * iv.independent < iv.variance
    white = IncrementVariance()
    for row in rng.standard_normal((300, 5)):
        white.add(1.0, row)
    assert white.independent <= white.variance <= 1.3 * white.independent
    one = IncrementVariance()
    one.add(1.0, np.array([2.0]))
    assert one.variance is None and one.independent is None


@pytest.mark.parametrize("skip", [10, 2])
@pytest.mark.parametrize("cls", SAMPLERS, ids=lambda c: c.name)
def test_increment_variance_is_the_variance_of_the_log_weights(cls, skip):
    """The increments' variance, summed over lags, matches the variance of the log weights over
    many runs (measured at 1,000 runs: ess 0.383 against 0.376 with 10 transitions a level,
    0.715 against 0.709 with 2; hmc 0.529 against 0.518 and 0.861 against 0.864). Lag 0 alone
    (independent increments) is close with 10 transitions a level and low with 2 (0.40),
    where slow mixing correlates the increments."""
    problem, _ = _three_point_problem()
    est = cls(skip=skip, burn_in=1, ais_runs=1000, temperatures=20).estimate(
        problem, 5, np.random.default_rng(3))
    d = est.diagnostics
    observed = np.var(d["ais_log_weights"], ddof=1)
    assert 0.85 * observed <= d["ais_increment_variance"] <= 1.15 * observed, (d, observed)
    if skip == 2:
        assert d["ais_increment_variance_independent"] < 0.7 * observed


def test_slow_transitions_are_unreliable_and_their_error_covered():
    """markov1d N = 150 (neighbour correlation 0.9) with 2 elliptical-slice transitions a level:
    the runs lag behind the tempered targets and end 0.2-4.6 nats low. Lag 0 of the increments
    says σ² < 1 (0.3-0.9) and the three runs' SE misses by up to 5 SEs; the lags (σ² 3-33) flag
    every run, and the SE they give covers its error."""
    problem = markov1d(n_train=150, rho=0.9, beta=1.0, n_test=20)
    truth = problem.truth.log_marginal_likelihood
    for seed in range(6):
        est = EllipticalSlice(skip=2, temperatures=200, burn_in=2).estimate(
            problem, 50, np.random.default_rng(seed))
        d = est.diagnostics
        assert d["ais_increment_variance_independent"] < 1 < d["ais_increment_variance"], d
        assert est.status == "unreliable" and "too slow" in est.reason, est.reason
        err = abs(est.log_marginal_likelihood - truth)
        assert err <= 3 * est.log_marginal_likelihood_se, (seed, err, d)


@pytest.mark.parametrize("cls", SAMPLERS, ids=lambda c: c.name)
def test_coarse_annealing_is_unreliable_and_its_error_covered(cls):
    """Five temperatures on linear1d-p2 (N = 200): the increments imply a log-weight sd of
    several nats, so the run is unreliable with the reason, and the SE it reports (the larger of
    the runs' and the increments') covers its error. The runs' SE alone does not (hmc seed 1:
    9.8 nats low, runs' SE 1.0, increments' 18)."""
    problem = linear1d(n_train=200, n_test=10, seed=3)
    truth = problem.truth.log_marginal_likelihood
    for seed in range(3):
        est = cls(temperatures=5, skip=5).estimate(problem, 20, np.random.default_rng(seed))
        assert est.status == "unreliable" and "annealing too coarse" in est.reason, est.reason
        d = est.diagnostics
        err = abs(est.log_marginal_likelihood - truth)
        assert err <= 3 * est.log_marginal_likelihood_se, (seed, err, d)
        assert est.log_marginal_likelihood_se <= np.sqrt(d["ais_increment_variance"])


def test_gpml_ais_weights_overestimate_z():
    """GPML's increment uses the state after each level: E[w] > Z (here by ~80 %)."""
    problem, Z = _three_point_problem()
    method = EllipticalSlice(skip=2, burn_in=1, ais_runs=3000, temperatures=6, gpml_compat=True)
    est = method.estimate(problem, 5, np.random.default_rng(0))
    w = np.exp(est.diagnostics["ais_log_weights"])
    assert w.mean() / Z - 1 > 10 * w.std(ddof=1) / np.sqrt(len(w)) / Z
    assert est.diagnostics["variant"] == "gpml_compat"


@pytest.mark.parametrize("cls", LATENT, ids=lambda c: c.name)
def test_pure_orthant_problems_are_refused(cls):
    est = cls().estimate(onefactor(n=5, seed=0), 20, np.random.default_rng(0))
    assert est.status == "failed" and "needs a GPC problem" in est.reason


@pytest.mark.parametrize("cls", SAMPLERS, ids=lambda c: c.name)
@pytest.mark.parametrize("setting, value, match", [
    ("temperatures", -5, "temperatures"), ("temperatures", 1, "temperatures"),
    ("skip", 0, "skip"), ("burn_in", -1, "burn_in"), ("ais_runs", 0, "ais_runs"),
    ("jitter", -1.0, "jitter"), ("gpml_compat", "yes", "gpml_compat")])
def test_bad_settings_are_refused(cls, setting, value, match):
    with pytest.raises(InputError, match=match):
        cls(**{setting: value}).check_settings()
    if setting != "gpml_compat":
        with pytest.raises(InputError, match=match):
            cls.from_settings({setting: str(value)})


@pytest.mark.parametrize("cls", SAMPLERS, ids=lambda c: c.name)
def test_burn_in_longer_than_the_budget_is_refused_before_running(cls):
    method = cls(burn_in=50)
    with pytest.raises(InputError, match="burn_in.*larger than the budget of 20"):
        method.check_job(20, 100)
    with pytest.raises(InputError, match="burn_in"):
        method.estimate(linear1d(n_train=20, n_test=2), 20, np.random.default_rng(0))
    method.check_job(50, 100)   # equal is fine


# ---- the RBF study: agreement with the sequential exact methods, GPML's bias ----
def rbf_problem(n: int = 200, n_test: int = 50, seed: int = 0) -> Problem:
    """2-D two-class Gaussian data (Σ = [[1, .25], [.25, 1]], means (0,0) and (1,1)),
    RBF kernel with the paper's α = 0.5, β = 3."""
    rng = np.random.default_rng(seed)
    chol = np.linalg.cholesky(np.array([[1.0, 0.25], [0.25, 1.0]]))

    def draw(m):
        y = np.where(np.arange(m) < m // 2, -1, 1)
        return rng.standard_normal((m, 2)) @ chol.T + (y[:, None] > 0), y

    X, y = draw(n)
    Xt, yt = draw(n_test)
    return Problem.classification("rbf2d-n200", X, y, Xt, RBF(0.5, 3.0), y_test=yt)


@pytest.mark.slow
def test_rbf_log_z_agrees_with_sequential_methods_and_gpml_bias_is_visible():
    """A hard problem (log Z ≈ −132.3; the SOV weights and the AIS weights are heavy-tailed,
    so every standard error here is rough): 20 AIS runs each, with schedules long enough
    that the runs' spread is a fair error bar (checked on other seeds: |z| <= 1.4)."""
    registry = methods()
    problem = rbf_problem()
    if "sov" in registry:       # Genz SOV with reordering: the sequential method that holds up
        ref_method = registry["sov"].from_settings({"reorder": "univariate"})
    else:
        ref_method = registry["rejection-bootstrap"]()
    ref_method.prepare(problem)
    ref = ref_method.estimate(problem, 200_000, np.random.default_rng(1))
    runs = {
        "ess": EllipticalSlice(ais_runs=20, temperatures=2000, skip=5).estimate(
            problem, 50, np.random.default_rng(2)),
        "hmc": HamiltonianMC(ais_runs=20, temperatures=300, skip=5).estimate(
            problem, 50, np.random.default_rng(3)),
    }
    for name, est in runs.items():
        combined = np.hypot(est.log_marginal_likelihood_se, ref.log_marginal_likelihood_se)
        assert abs(est.log_marginal_likelihood - ref.log_marginal_likelihood) <= 3 * combined, (
            name, est.log_marginal_likelihood, ref.log_marginal_likelihood, combined)
    # GPML's AIS error: its increments use states already moved at the new temperature, so its
    # log weights sit above those of a valid AIS (whose E log w lies below log Z) at the same
    # schedule. 50 temperatures, 40 runs each: mean log w −132.24 ± 0.38 against −135.41 ± 0.49
    # (its log Ẑ is not a fair test: with Var(log w) ≈ 7 here the SE that the increments give,
    # summed over lags, is ~2.7 nats, so the ~1-3 nats of bias in log Ẑ are within it).
    mean_log_w = {}
    for compat in (True, False):
        log_w = np.array(EllipticalSlice(ais_runs=40, temperatures=50, gpml_compat=compat)
                         .estimate(problem, 10, np.random.default_rng(4))
                         .diagnostics["ais_log_weights"])
        mean_log_w[compat] = (log_w.mean(), log_w.std(ddof=1) / np.sqrt(len(log_w)))
    gap = mean_log_w[True][0] - mean_log_w[False][0]
    assert gap > 3 * np.hypot(mean_log_w[True][1], mean_log_w[False][1]), mean_log_w
