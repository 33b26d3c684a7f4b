"""Elliptical slice sampling + AIS: accuracy against the linear1d oracle, the
budget's meaning, GPML compatibility, diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.metrics import mae
from harness.datasets.linear1d import FAMILY as LINEAR1D
from harness.datasets.linear1d import linear1d
from harness.methods.ess import EllipticalSlice

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def p1():
    return LINEAR1D.make(LINEAR1D.presets["linear1d-p1"])


def test_accuracy_on_p1(p1):
    """N = 100: MAE <= 0.01 and |Δ log Z| within 3 of the method's own standard error."""
    est = EllipticalSlice(ais_runs=10).estimate(p1, 100, np.random.default_rng(0))
    assert est.status == "ok"
    assert mae(est.test_probabilities, p1.truth.test_probabilities) <= 0.01
    err = abs(est.log_marginal_likelihood - p1.truth.log_marginal_likelihood)
    assert err <= 3 * est.log_marginal_likelihood_se, (err, est.log_marginal_likelihood_se)


def test_budget_counts_kept_samples_and_temperatures(p1):
    est = EllipticalSlice(skip=5, burn_in=3, ais_runs=2).estimate(
        p1, 30, np.random.default_rng(0))
    d = est.diagnostics
    assert d["temperatures"] == 30 and d["variant"] == "corrected"
    assert d["posterior_transitions"] == (3 + 30) * 5
    assert d["ais_transitions_per_run"] == (30 - 2) * 5
    assert len(d["ais_log_weights"]) == 2
    assert d["likelihood_evaluations_per_transition_posterior"] >= 1
    est = EllipticalSlice(skip=5, burn_in=3, temperatures=80).estimate(
        p1, 30, np.random.default_rng(0))
    assert est.diagnostics["temperatures"] == 80


def test_gpml_compat_runs_gpml_schedule(p1):
    est = EllipticalSlice(skip=5, burn_in=3, gpml_compat=True).estimate(
        p1, 30, np.random.default_rng(0))
    d = est.diagnostics
    assert d["variant"] == "gpml_compat"
    assert d["ais_transitions_per_run"] == (3 + 30) * 5   # burn-in at τ = 0, then every level
    assert est.status == "ok" and est.log_marginal_likelihood < 0


def test_chains_start_where_gpml_starts():
    """A one-transition run from f = 0 on an easy problem still gives valid output."""
    problem = linear1d(n_train=12, n_test=3, seed=4)
    est = EllipticalSlice(skip=1, burn_in=0, ais_runs=1).estimate(
        problem, 2, np.random.default_rng(1))
    assert est.status == "ok" and est.log_marginal_likelihood_se is None
    assert np.all((est.test_probabilities >= 0) & (est.test_probabilities <= 1))


@pytest.mark.slow
def test_gpml_default_settings_on_p3(capsys):
    """The paper's peer at its defaults on P3 (N = 400): 200 samples, skip 40, 10 burn-in,
    3 AIS runs; prints the CPU time."""
    import time

    problem = LINEAR1D.make(LINEAR1D.presets["linear1d-p3"])
    method = EllipticalSlice()
    method.prepare(problem)
    t0 = time.thread_time()
    est = method.estimate(problem, 200, np.random.default_rng(0))
    seconds = time.thread_time() - t0
    err = est.log_marginal_likelihood - problem.truth.log_marginal_likelihood
    with capsys.disabled():
        print(f"\nESS+AIS, GPML defaults, linear1d-p3: {seconds:.2f} s CPU, Δlog Z {err:+.3f} "
              f"(se {est.log_marginal_likelihood_se:.3f}), "
              f"MAE {mae(est.test_probabilities, problem.truth.test_probabilities):.4f}")
    assert abs(err) <= 5 * est.log_marginal_likelihood_se + 0.05
    assert mae(est.test_probabilities, problem.truth.test_probabilities) <= 0.01
