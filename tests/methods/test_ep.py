"""Expectation propagation: accuracy on linear1d-p1, the stable log Z against the
textbook formula, exact limits, labelled as an approximation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr

from harness.core.kernels import RBF
from harness.core.metrics import mae
from harness.datasets.linear1d import FAMILY as LINEAR1D
from harness.datasets.linear1d import linear1d
from harness.execution.runner import run_one
from harness.methods.ep import EPState, ExpectationPropagation, probit_moments
from harness.model.problem import Problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def test_ep_is_close_to_exact_on_p1():
    """EP's log Z within 0.5 % of the truth and its probabilities within 0.01 MAE."""
    problem = LINEAR1D.make(LINEAR1D.presets["linear1d-p1"])
    est = ExpectationPropagation().estimate(problem, 100, np.random.default_rng(0))
    truth = problem.truth
    assert est.diagnostics["converged"] == 1
    assert abs(est.log_marginal_likelihood / truth.log_marginal_likelihood - 1) <= 0.005
    assert mae(est.test_probabilities, truth.test_probabilities) <= 0.01


def test_stable_log_z_equals_the_textbook_formula():
    """R&W (3.65) evaluated directly (fine on a small well-conditioned problem)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 2))
    y = np.array([1, -1, 1, 1, -1, -1, 1, -1])
    problem = Problem.classification("small", X, y, X[:2], RBF(2.0, 1.5))
    K, yy = problem.K, problem.y_train.astype(float)
    state = EPState(K, yy)
    for _ in range(30):
        state.sweep(np.arange(8))
        state.recompute()
    d = np.diag(state.Sigma)
    tau_c, nu_c = 1 / d - state.tau, state.mu / d - state.nu
    mu_c, var_c = nu_c / tau_c, 1 / tau_c
    s2, m_site = 1 / state.tau, state.nu / state.tau
    A = K + np.diag(s2)
    direct = (-0.5 * np.linalg.slogdet(A)[1] - 0.5 * m_site @ np.linalg.solve(A, m_site)
              + np.sum(log_ndtr(yy * mu_c / np.sqrt(1 + var_c)))
              + 0.5 * np.sum(np.log(var_c + s2))
              + np.sum((mu_c - m_site) ** 2 / (2 * (var_c + s2))))
    assert state.log_z() == pytest.approx(direct, abs=1e-9)


def test_probit_moments_against_quadrature():
    f = np.linspace(-30, 30, 200001)
    for y, mu, var in [(1.0, 0.3, 2.0), (-1.0, 4.0, 0.5), (1.0, -9.0, 1.0)]:
        w = np.exp(log_ndtr(y * f) - 0.5 * (f - mu) ** 2 / var) / np.sqrt(2 * np.pi * var)
        Z = np.trapezoid(w, f)
        m = np.trapezoid(w * f, f) / Z
        v = np.trapezoid(w * (f - m) ** 2, f) / Z
        lz, mean, variance = probit_moments(y, mu, var)
        assert lz == pytest.approx(np.log(Z), rel=1e-7)
        assert mean == pytest.approx(m, rel=1e-6, abs=1e-9)
        assert variance == pytest.approx(v, rel=1e-5)


def test_exact_limits():
    vanishing = linear1d(n_train=40, n_test=3, scale=1e-30)
    est = ExpectationPropagation().estimate(vanishing, 50, np.random.default_rng(0))
    assert est.log_marginal_likelihood == pytest.approx(-40 * np.log(2), abs=1e-9)
    np.testing.assert_allclose(est.test_probabilities, 0.5, atol=1e-12)
    one = Problem.classification("one", [[0.3]], [-1], [[1.0]], RBF(1.0, 2.0))
    est = ExpectationPropagation().estimate(one, 50, np.random.default_rng(0))
    assert est.log_marginal_likelihood == pytest.approx(np.log(0.5), abs=1e-12)


def test_labelled_as_an_approximation():
    problem = linear1d(n_train=30, n_test=5)
    cls = ExpectationPropagation
    assert not cls.tags.exact and not cls.tags.stochastic and "APPROXIMATION" in cls.summary
    record = run_one(problem, cls(), 10, np.random.default_rng(0))
    assert record["exact_method"] is False and record["status"] == "ok"
    assert record["diagnostics"]["approximation"] == "EP"


def test_budget_caps_the_sweeps():
    problem = linear1d(n_train=60, n_test=5)
    est = ExpectationPropagation().estimate(problem, 1, np.random.default_rng(0))
    assert est.diagnostics["sweeps"] == 1 and est.diagnostics["converged"] == 0
