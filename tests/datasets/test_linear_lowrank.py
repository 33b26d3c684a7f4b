"""The multi-feature linear-kernel family and its Gauss–Hermite oracle (docs/math.md §3c)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, logsumexp

from harness.core.errors import InputError
from harness.core.oracles import low_rank_integral, one_factor_integral
from harness.datasets.linear_lowrank import linear_lowrank
from harness.plugins.specs import make_problem


def _data(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ np.linspace(1, 0.3, d) + 0.7 * rng.standard_normal(n) > 0, 1, -1)
    return y[:, None] * X, rng.standard_normal((6, d))


def test_d1_agrees_with_the_one_dimensional_oracle():
    A, B = _data(300, 1, 0)
    lr, one = low_rank_integral(A, B), one_factor_integral(A[:, 0], B[:, 0])
    assert lr.log_integral == pytest.approx(one.log_integral, abs=1e-10)
    np.testing.assert_allclose(lr.test_probabilities, one.test_probabilities, atol=1e-10)


@pytest.mark.parametrize("scale", [1.0, 9.0])
def test_d2_agrees_with_a_dense_grid(scale):
    A, B = _data(150, 2, 1)
    A, B = np.sqrt(scale) * A, np.sqrt(scale) * B
    lr = low_rank_integral(A, B)
    # trapezoid rule on a 601^2 grid around the mode: spectrally accurate for this integrand
    half = 10.0 / np.sqrt(np.linalg.eigvalsh(A.T @ A / 4 + np.eye(2))[0])
    g = np.linspace(-half, half, 601)
    h = g[1] - g[0]
    U = lr.mode + np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    G = -0.5 * np.sum(U**2, 1) - np.log(2 * np.pi) + log_ndtr(U @ A.T).sum(1)
    log_z = logsumexp(G) + 2 * np.log(h)
    assert lr.log_integral == pytest.approx(log_z, abs=1e-10)
    probs = np.exp(logsumexp(G[None] + log_ndtr(B @ U.T), axis=1) + 2 * np.log(h) - log_z)
    np.testing.assert_allclose(lr.test_probabilities, probs, atol=1e-10)
    assert lr.error_estimate < 1e-10


def test_d2_small_n_agrees_with_brute_force_monte_carlo():
    problem = linear_lowrank(n_train=5, n_test=0, d=2, seed=3)
    rng = np.random.default_rng(0)
    v = rng.standard_normal((2_000_000, 5)) @ problem.chol.T
    hits = np.mean(np.all(v >= 0, axis=1))
    se = np.sqrt(hits * (1 - hits) / len(v))
    assert abs(hits - np.exp(problem.truth.log_marginal_likelihood)) <= 4 * se


def test_d3_converges():
    A, B = _data(200, 3, 2)
    lr = low_rank_integral(A, B)
    finer = low_rank_integral(A, B, nodes=56)
    assert lr.log_integral == pytest.approx(finer.log_integral, abs=1e-10)
    np.testing.assert_allclose(lr.test_probabilities, finer.test_probabilities, atol=1e-10)


def test_family_and_presets():
    p = make_problem("linear-lowrank:n_train=60,n_test=10,d=3,beta=2,seed=4")
    assert p.X_train.shape == (60, 3) and p.X_test.shape == (10, 3)
    assert set(np.unique(p.y_train)) == {-1, 1}
    assert p.truth.kind == "exact" and np.all((p.truth.test_probabilities >= 0)
                                               & (p.truth.test_probabilities <= 1))
    again = make_problem("linear-lowrank:n_train=60,n_test=10,d=3,beta=2,seed=4")
    np.testing.assert_array_equal(p.X_train, again.X_train)
    other = linear_lowrank(n_train=60, n_test=10, d=3, beta=2.0, seed=5)
    assert other.truth.log_marginal_likelihood != p.truth.log_marginal_likelihood
    np.testing.assert_allclose(p.K, 2.0 * p.X_train @ p.X_train.T)


@pytest.mark.parametrize("params", [{"d": 4}, {"beta": 0.0}, {"n_train": 1}])
def test_bad_parameters(params):
    with pytest.raises(InputError):
        linear_lowrank(**params)


def test_hard_onefactor_presets():
    p = make_problem("onefactor-hard-n500")
    d = np.sqrt(np.abs(p.R[0, 1] * p.R[0, 2] / p.R[1, 2]))
    assert 0.95 <= d <= 0.999
    assert np.any(p.R[0] < 0) and np.any(p.R[0, 1:] > 0)  # random signs
