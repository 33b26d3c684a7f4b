"""Laplace approximation: runs, finds the mode, is labelled as an approximation."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.kernels import RBF
from harness.core.metrics import mae
from harness.datasets.linear1d import FAMILY as LINEAR1D
from harness.datasets.linear1d import linear1d
from harness.execution.runner import run_one
from harness.methods.laplace import LaplaceApproximation, probit_derivatives
from harness.model.problem import Problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def test_runs_on_p1_and_is_a_reasonable_approximation():
    problem = LINEAR1D.make(LINEAR1D.presets["linear1d-p1"])
    est = LaplaceApproximation().estimate(problem, 100, np.random.default_rng(0))
    assert est.status == "ok" and est.diagnostics["converged"] == 1
    truth = problem.truth
    # Laplace underestimates log Z for the probit (a known bias); it is a few percent here
    assert abs(est.log_marginal_likelihood / truth.log_marginal_likelihood - 1) < 0.05
    assert mae(est.test_probabilities, truth.test_probabilities) < 0.05


def test_mode_satisfies_the_fixed_point_on_a_singular_kernel():
    """At the mode f = K ∇log p(y|f), even when K has rank 1 (the linear kernel)."""
    problem = linear1d(n_train=50, n_test=4, seed=3)
    method = LaplaceApproximation()
    est = method.estimate(problem, 100, np.random.default_rng(0))
    assert est.diagnostics["converged"] == 1 and np.linalg.matrix_rank(problem.K) == 1
    # re-run the Newton iteration's fixed point check on an RBF problem too
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, 1, -1)
    rbf = Problem.classification("rbf", X, y, X[:3], RBF(1.0, 2.0))
    est = method.estimate(rbf, 100, np.random.default_rng(0))
    assert est.diagnostics["converged"] == 1


def test_probit_derivatives_by_finite_differences():
    y = np.array([1.0, -1.0, 1.0])
    f = np.array([0.3, 2.0, -7.0])
    ll, grad, W = probit_derivatives(y, f)
    h = 1e-6
    for i in range(3):
        e = np.zeros(3)
        e[i] = h
        up, down = probit_derivatives(y, f + e), probit_derivatives(y, f - e)
        assert grad[i] == pytest.approx((up[0] - down[0]) / (2 * h), rel=1e-6)
        assert W[i] == pytest.approx(-(up[1][i] - down[1][i]) / (2 * h), rel=1e-5)


def test_exact_limit_and_label():
    vanishing = linear1d(n_train=40, n_test=3, scale=1e-30)
    est = LaplaceApproximation().estimate(vanishing, 50, np.random.default_rng(0))
    assert est.log_marginal_likelihood == pytest.approx(-40 * np.log(2), abs=1e-9)
    cls = LaplaceApproximation
    assert not cls.tags.exact and not cls.tags.stochastic and "APPROXIMATION" in cls.summary
    record = run_one(linear1d(n_train=20, n_test=2), cls(), 10, np.random.default_rng(0))
    assert record["exact_method"] is False
    assert record["diagnostics"]["approximation"] == "Laplace"
