"""Pseudo-marginal MCMC over log scale (harness/tuning/pseudo_marginal.py; docs/math.md §12):
with an unbiased Ẑ the chain's stationary law is the exact posterior p(log s | y) ∝ Z(s)
(uniform prior on the log box), which the 1-D oracle gives on a grid (tuning.reference).

Tolerance: k = 4 Monte Carlo standard errors, each from the chain itself — the mean's
sd · √(τ / n) and a quantile's √(p (1 - p) τ_p / n) / f(q_p) (τ, τ_p: integrated
autocorrelation times of the chain and of the indicator 1{x ≤ q_p} about the ensemble's mean,
pseudo_marginal.integrated_time, checked below on an AR(1) series; f: the exact density).
Four comparisons at 4 sigma: a false alarm has probability ~ 3e-4.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.tuning.exact import exact_log_posterior, posterior_summary
from harness.tuning.job import run_tune_job
from harness.tuning.pseudo_marginal import check_unbiased, integrated_time, unbiased_methods
from harness.tuning.space import TuneSpace

pytestmark = pytest.mark.usefixtures("one_blas_thread")

SPEC = "linear1d:n_train=40,n_test=0"
SPACE = TuneSpace.from_dict({"scale": [0.1, 100, 13]})
K = 4.0


def pm_job(method="rejection-bootstrap", settings=None, budget=500, key="pm", **tune):
    """A pseudo-marginal tune job; by default hard-count rejection-bootstrap in one
    population (the binomial SE, no unreliable status at these small budgets)."""
    tune = {"walkers": 8, "steps": 12, **tune}
    settings = {"count": "hard", "populations": 1} if settings is None else settings
    return {"job_id": "pm", "key": {"test": key}, "sweep": "test", "problem": SPEC,
            "method": method, "settings": settings,
            "budget": budget, "replicate": 0, "seed": 0, "time_limit": None, "kind": "tune",
            "tune": {"space": SPACE.to_dict(), "strategy": "pseudo-marginal", **tune}}


def test_chain_record_and_no_reestimation_of_the_current_point():
    record = run_tune_job(pm_job(burn=4))
    assert record["status"] == "ok", record["reason"]
    chain = record["chain"]
    assert (chain["walkers"], chain["steps"], chain["burn"]) == (8, 12, 4)
    samples = np.array(chain["samples"])
    assert samples.shape == (8 * 8, 1)
    box = SPACE.log_bounds()[0]
    assert np.all((samples >= box[0]) & (samples <= box[1]))
    evaluations = record["evaluations"]
    assert {e["stage"] for e in evaluations} == {"chain"}
    assert {e["budget"] for e in evaluations} == {500}
    # one evaluation per initial walker and per proposal inside the box: never the current point
    assert len(evaluations) + chain["proposals_outside_box"] == 8 + 8 * 12
    # every sample is a point that was evaluated (a stored estimate is reused, not renewed)
    visited = {round(np.log(e["params"]["scale"]), 12) for e in evaluations}
    assert {round(x, 12) for x in samples[:, 0]} <= visited
    assert 0 < chain["acceptance_fraction"] <= 1
    assert record["chosen"]["scale"] == pytest.approx(np.exp(samples.mean()))
    assert record["chosen_log_z"] is None


def test_unreliable_estimates_still_drive_the_chain():
    """Ẑ stays unbiased when its standard error is not trusted: 10 populations of 20
    particles are often `unreliable` here, and the chain uses their Ẑ like any other."""
    record = run_tune_job(pm_job(settings={"count": "hard"}, budget=200, steps=4, burn=0))
    chain = [e for e in record["evaluations"] if e["stage"] == "chain"]
    unreliable = [e for e in chain if e["status"] == "unreliable"]
    assert unreliable and all(np.isfinite(e["log_z"]) for e in unreliable)
    assert record["status"] == "ok" and record["chain"]["acceptance_fraction"] > 0


def test_explore_start_is_near_the_best_grid_point():
    record = run_tune_job(pm_job(explore_budget=200, steps=3, burn=0))
    explored = [e for e in record["evaluations"] if e["stage"] == "explore"]
    assert len(explored) == 13 and {e["budget"] for e in explored} == {200}
    best = max(explored, key=lambda e: e["log_z"])
    first = [np.log(e["params"]["scale"]) for e in record["evaluations"]
             if e["stage"] == "chain"][:8]
    # the start: best ± 0.5 grid step (normal jitter), so within 3 grid steps
    assert np.all(np.abs(np.array(first) - np.log(best["params"]["scale"]))
                  < 3 * SPACE.axes[0].log_step)


def test_only_unbiased_estimators_drive_the_chain():
    allowed = unbiased_methods()
    assert {"sov", "sir", "minimax-tilting"} <= set(allowed)
    assert any(a.startswith("rejection-bootstrap (with count=hard") for a in allowed)
    assert not any(a.startswith(("ep", "laplace", "sov-tlr", "vb-meanfield")) for a in allowed)
    for method, settings in (("ep", {}), ("rejection-bootstrap", {})):   # soft count: biased
        record = run_tune_job(pm_job(method=method, settings=settings))
        assert record["status"] == "error" and record["evaluations"] == []
        assert record["reason"].startswith("tune.strategy: pseudo-marginal needs an unbiased Ẑ")
        assert repr(method) in record["reason"] and "sov" in record["reason"]
    from harness.plugins.registry import get_method
    check_unbiased(get_method("rejection-bootstrap")(count="hard"))
    with pytest.raises(InputError, match="rejection-bootstrap"):
        check_unbiased(get_method("rejection-bootstrap")())


def mc_errors(chain: np.ndarray, probs, density) -> tuple[float, dict[float, float]]:
    """MC standard errors of the mean and of the p-quantiles of a (steps, walkers) chain."""
    x = chain.ravel()
    n = x.size
    se_mean = x.std() * np.sqrt(integrated_time(chain) / n)
    se_q = {}
    for p in probs:
        q = np.quantile(x, p)
        tau_p = integrated_time((chain <= q).astype(float))
        se_q[p] = np.sqrt(p * (1 - p) * tau_p / n) / density(q)
    return se_mean, se_q


def test_integrated_time_of_ar1_series():
    # AR(1) with coefficient r has tau = (1 + r) / (1 - r) = 9 for r = 0.8
    rng = np.random.default_rng(5)
    r, steps, walkers = 0.8, 4000, 16
    x = np.empty((steps, walkers))
    x[0] = rng.standard_normal(walkers)
    for t in range(1, steps):
        x[t] = r * x[t - 1] + np.sqrt(1 - r * r) * rng.standard_normal(walkers)
    assert integrated_time(x) == pytest.approx(9.0, rel=0.1)
    # walkers stuck at different levels: emcee's per-walker centring would call this white
    # noise (tau ~ 1); about the common mean the between-walker spread makes tau large
    stuck = rng.standard_normal((400, 8)) * 0.1 + np.arange(8)
    assert integrated_time(stuck) > 50
    assert integrated_time(np.ones((50, 4))) is None


@pytest.mark.slow
def test_chain_recovers_the_exact_posterior_of_log_scale():
    """Rejection-bootstrap (hard count, se(log Ẑ) ≈ 0.25): a genuinely noisy Ẑ."""
    walkers, steps, burn = 12, 250, 50
    record = run_tune_job(pm_job(walkers=walkers, steps=steps, burn=burn, key="pm-accuracy"))
    assert record["status"] == "ok", record["reason"]
    chain = np.array(record["chain"]["samples"])[:, 0].reshape(steps - burn, walkers)
    grid, log_density = exact_log_posterior(SPEC, SPACE, 401)
    probs = (0.1, 0.5, 0.9)
    exact = posterior_summary(np.log(grid), log_density, probs)

    def density(x):
        return np.interp(x, np.log(grid), np.exp(log_density))

    se_mean, se_q = mc_errors(chain, probs, density)
    assert abs(chain.mean() - exact["mean"]) < K * se_mean, (chain.mean(), exact, se_mean)
    for p in probs:
        q = np.quantile(chain, p)
        assert abs(q - exact["quantiles"][p]) < K * se_q[p], (p, q, exact, se_q)
    # the test has power: its tolerance is well below the posterior's own spread
    assert K * se_mean < 0.5 * exact["sd"]
    ses = [e["log_z_se"] for e in record["evaluations"] if e["status"] == "ok"]
    assert np.median(ses) > 0.1     # the estimates are noisy: a real pseudo-marginal test
