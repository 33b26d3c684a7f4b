"""The `linear1d` family (datasets/linear1d.py, docs/math.md §3b): linear-kernel GPC on 1-D
two-Gaussian data, with exact log Z and test probabilities."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg

from harness.core.errors import InputError
from harness.core.kernels import Linear
from harness.datasets.linear1d import FAMILY, linear1d

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def corr(S):
    s = np.sqrt(np.diag(S))
    return S / np.outer(s, s)


def orthant_2(r):
    return 0.25 + np.arcsin(r[0, 1]) / (2 * np.pi)


def orthant_3(r):
    return 0.125 + (np.arcsin(r[0, 1]) + np.arcsin(r[0, 2]) + np.arcsin(r[1, 2])) / (4 * np.pi)


def joint(p, j):
    """The (N+1) x (N+1) orthant covariance of the training variables and test variable j,
    from the problem's own matrices (what every method sees)."""
    n = p.n_train
    S = np.empty((n + 1, n + 1))
    S[:n, :n] = p.R
    S[:n, n] = S[n, :n] = p.test_cross[:, j]
    S[n, n] = p.test_variance[j]
    return S


def test_shapes_classes_and_kernel():
    p = linear1d(n_train=41, n_test=9, seed=2)
    assert p.X_train.shape == (41, 1) and p.X_test.shape == (9, 1)
    assert set(np.unique(p.y_train)) == {-1, 1}
    assert np.sum(p.y_train == -1) == 20 and np.sum(p.y_train == 1) == 21
    assert np.sum(p.y_test == -1) == 4 and np.sum(p.y_test == 1) == 5
    assert p.kernel == Linear(1.0)
    np.testing.assert_allclose(p.K, np.outer(p.X_train[:, 0], p.X_train[:, 0]))
    assert p.truth.kind == "exact"
    assert p.truth.test_probabilities.shape == (9,)
    assert np.all((p.truth.test_probabilities >= 0) & (p.truth.test_probabilities <= 1))
    assert list(p.y_train[:6]) == [1, -1, 1, -1, 1, -1]  # default order: interleave


def test_class_means_and_spreads():
    p = linear1d(n_train=400, n_test=0, mu_neg=-2.0, mu_pos=3.0, sd_neg=0.1, sd_pos=0.2)
    x, y = p.X_train[:, 0], p.y_train
    assert abs(x[y == -1].mean() + 2.0) < 0.05 and abs(x[y == 1].mean() - 3.0) < 0.05
    assert abs(x[y == -1].std() - 0.1) < 0.03 and abs(x[y == 1].std() - 0.2) < 0.05


@pytest.mark.parametrize("scale", [1.0, 2.5, 0.2])
@pytest.mark.parametrize("seed", range(4))
def test_truth_matches_closed_forms_with_two_training_points(seed, scale):
    p = linear1d(n_train=2, n_test=3, seed=seed, scale=scale, sd_neg=1.0, sd_pos=1.0)
    r = corr(p.R)
    assert abs(np.exp(p.truth.log_marginal_likelihood) - orthant_2(r)) < 1e-9
    for j in range(3):
        S = corr(joint(p, j))
        j_star = orthant_3(S) / orthant_2(S)
        assert abs(p.truth.test_probabilities[j] - j_star) < 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_truth_matches_closed_form_with_three_training_points(seed):
    p = linear1d(n_train=3, n_test=0, seed=seed, scale=1.7)
    assert abs(np.exp(p.truth.log_marginal_likelihood) - orthant_3(corr(p.R))) < 1e-9


def test_truth_agrees_with_brute_force_on_the_problem_matrices():
    """Monte Carlo from the problem's R, test_cross and test_variance (what the methods use)."""
    p = linear1d(n_train=6, n_test=2, seed=11, mu_pos=0.8, sd_neg=0.6, sd_pos=0.6)
    rng = np.random.default_rng(0)
    draws = 400_000
    for j in range(2):
        L = scipy.linalg.cholesky(joint(p, j), lower=True)
        v = rng.standard_normal((draws, 7)) @ L.T
        ok = np.all(v[:, :6] >= 0, axis=1)
        z = np.exp(p.truth.log_marginal_likelihood)
        assert abs(ok.mean() - z) < 4 * np.sqrt(z * (1 - z) / draws)
        hits = ok.sum()
        js = p.truth.test_probabilities[j]
        assert abs((ok & (v[:, 6] >= 0)).sum() / hits - js) < 4 * np.sqrt(js * (1 - js) / hits)


def test_truth_does_not_depend_on_the_order():
    base = linear1d(n_train=30, n_test=5, seed=3, order="as-given")
    for order in ("interleave", "shuffle"):
        p = linear1d(n_train=30, n_test=5, seed=3, order=order)
        assert p.truth.log_marginal_likelihood == base.truth.log_marginal_likelihood
        assert sorted(p.X_train[:, 0]) == sorted(base.X_train[:, 0])
        np.testing.assert_array_equal(p.X_test, base.X_test)
    # as-given keeps the generator's blocks: all of class -1 first
    assert list(base.y_train) == [-1] * 15 + [1] * 15


def test_scale_enters_the_kernel_and_the_truth():
    a = linear1d(n_train=20, n_test=4, seed=5, scale=1.0)
    b = linear1d(n_train=20, n_test=4, seed=5, scale=3.0)
    np.testing.assert_allclose(b.K, 3.0 * a.K)
    assert b.truth.log_marginal_likelihood != a.truth.log_marginal_likelihood
    assert np.all((b.truth.test_probabilities > 0) & (b.truth.test_probabilities < 1))


def test_determinism_and_seeds():
    a, b = linear1d(seed=4, n_train=20, n_test=5), linear1d(seed=4, n_train=20, n_test=5)
    c = linear1d(seed=5, n_train=20, n_test=5)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.truth.test_probabilities, b.truth.test_probabilities)
    assert not np.array_equal(a.X_train, c.X_train)


@pytest.mark.parametrize("kwargs,param", [
    ({"n_train": 1}, "n_train"), ({"n_test": -1}, "n_test"), ({"sd_neg": 0.0}, "sd_neg"),
    ({"sd_pos": -1.0}, "sd_pos"), ({"sd_pos": float("nan")}, "sd_pos"),
    ({"scale": 0.0}, "scale"), ({"scale": -1.0}, "scale"), ({"scale": float("inf")}, "scale"),
    ({"mu_neg": float("nan")}, "mu_neg"), ({"mu_pos": float("inf")}, "mu_pos"),
    ({"seed": -1}, "seed"), ({"order": "sorted"}, "order"),
])
def test_bad_parameters(kwargs, param):
    with pytest.raises(InputError) as exc:
        linear1d(**kwargs)
    assert param in str(exc.value)


def test_presets():
    sizes = {"linear1d-p1": (100, 50), "linear1d-p2": (200, 100),
             "linear1d-p3": (400, 200), "linear1d-p4": (800, 400)}
    assert set(FAMILY.presets) == set(sizes)
    for name, (n, m) in sizes.items():
        assert (FAMILY.presets[name]["n_train"], FAMILY.presets[name]["n_test"]) == (n, m)
    p = FAMILY.make(FAMILY.presets["linear1d-p1"], name="linear1d-p1")
    assert p.name == "linear1d-p1" and p.params["mu_pos"] == 1.0 and p.params["sd_neg"] == 0.5
    assert np.isfinite(p.truth.log_marginal_likelihood)


def test_summary_is_json():
    s = json.loads(json.dumps(linear1d(n_train=10, n_test=3).summary(), allow_nan=False))
    assert s["kernel"] == {"name": "linear", "scale": 1.0}
    assert len(s["true_test_probabilities"]) == 3 and s["n_features"] == 1
