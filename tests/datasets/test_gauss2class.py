"""The `gauss2class` family (datasets/gauss2class.py, docs/math.md §10–11): synthetic two-class
Gaussian data with the generating model's Bayes posterior, and the paper's Table 4 presets."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.kernels import RBF
from harness.datasets.gauss2class import (
    FAMILY,
    bayes_posterior,
    class_covariance,
    gauss2class,
    two_gaussians,
)

pytestmark = pytest.mark.usefixtures("one_blas_thread")

SIGMA1 = np.array([[1.0, 0.25], [0.25, 1.0]])


def density_2d(x, mean, S):
    """The bivariate normal density written out by hand (no scipy)."""
    det = S[0, 0] * S[1, 1] - S[0, 1] ** 2
    inv = np.array([[S[1, 1], -S[0, 1]], [-S[0, 1], S[0, 0]]]) / det
    r = x - mean
    return np.exp(-0.5 * r @ inv @ r) / (2 * np.pi * np.sqrt(det))


def fingerprint(p) -> str:
    h = hashlib.sha256()
    for a in (p.X_train, p.y_train, p.X_test, p.y_test):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


# ---- the generating model ---------------------------------------------------------------------
def test_covariances_are_the_papers():
    np.testing.assert_array_equal(class_covariance("sigma1", 2), SIGMA1)
    S2 = class_covariance("banded", 10)
    assert np.all(np.diag(S2) == 0.5) and np.all(np.diag(S2, 1) == 0.2)
    assert np.all(np.diag(S2, -1) == 0.2) and np.count_nonzero(S2) == 10 + 2 * 9
    assert np.linalg.eigvalsh(S2).min() > 0.1
    np.testing.assert_array_equal(class_covariance("identity", 3), np.eye(3))


@pytest.mark.parametrize("mean", [1.0, 0.5, 2.0])
def test_bayes_posterior_against_densities_by_hand(mean):
    X = np.array([[0.0, 0.0], [1.0, 1.0], [-1.5, 2.0], [3.0, -0.5], [0.7, 0.2]])
    expected = []
    for x in X:
        pos = density_2d(x, np.full(2, mean), SIGMA1)
        neg = density_2d(x, np.zeros(2), np.eye(2))
        expected.append(pos / (pos + neg))
    np.testing.assert_allclose(bayes_posterior(X, mean, "sigma1"), expected, rtol=1e-12)


def test_bayes_posterior_is_stable_far_out():
    """Far out the class with the larger variance in that direction wins: Sigma1 has variance
    1.25 along e (class +1 wins both ways) and 0.75 across it (class -1 wins)."""
    X = np.array([[60.0, 60.0], [-60.0, -60.0], [60.0, -60.0], [1e3, -1e3]])
    p = bayes_posterior(X, 1.0, "sigma1")
    assert np.all(np.isfinite(p)) and p[0] == p[1] == 1.0 and 0 <= p[2] < 1e-100
    assert p[3] == 0.0
    q = bayes_posterior(np.full((1, 10), -40.0), 1.0, "banded")
    assert np.isfinite(q[0]) and q[0] < 1e-100


@pytest.mark.parametrize("d,mean,cov", [(1, 0.8, "identity"), (2, 1.0, "sigma1"),
                                        (3, 0.5, "banded")])
def test_posterior_is_the_conditional_class_frequency(d, mean, cov):
    """Monte Carlo: among points drawn from the model, the share of class +1 among those with
    posterior in a bin equals the bin's mean posterior, within 4 binomial standard errors."""
    X, y = two_gaussians(200_000, d, 0.0, np.random.default_rng(1), mean=mean, cov=cov)
    post = bayes_posterior(X, mean, cov)
    bins = np.digitize(post, np.linspace(0, 1, 11)[1:-1])
    for b in range(10):
        inside = bins == b
        n = inside.sum()
        assert n > 1000
        p = post[inside]
        se = np.sqrt(np.mean(p * (1 - p)) / n)
        assert abs(np.mean(y[inside] == 1) - p.mean()) < 4 * se, (b, n)


@pytest.mark.parametrize("cov", ["sigma1", "banded"])
def test_class_moments(cov):
    d, n, mean = 3, 40_000, 1.5
    X, y = two_gaussians(n, d, 0.0, np.random.default_rng(2), mean=mean, cov=cov)
    pos, neg = X[y == 1], X[y == -1]
    S = class_covariance(cov, d)
    tol = 5 / np.sqrt(n / 2)  # entries have variance <= 1 (means) or <= 2 (covariances)
    np.testing.assert_allclose(pos.mean(0), mean, atol=tol)
    np.testing.assert_allclose(neg.mean(0), 0.0, atol=tol)
    np.testing.assert_allclose(np.cov(pos.T), S, atol=tol * np.sqrt(2))
    np.testing.assert_allclose(np.cov(neg.T), np.eye(d), atol=tol * np.sqrt(2))


# ---- the problems -----------------------------------------------------------------------------
def test_shapes_labels_and_posterior_attached():
    p = gauss2class(n_train=41, n_test=9, d=3, mean=0.5, cov="banded", seed=3)
    assert p.X_train.shape == (41, 3) and p.X_test.shape == (9, 3)
    assert set(np.unique(p.y_train)) == {-1, 1} and set(np.unique(p.y_test)) <= {-1, 1}
    assert np.sum(p.y_train == 1) == 21
    assert p.kernel == RBF(5.0, 1.0) and p.truth is None
    assert p.bayes_posterior.shape == (9,)
    np.testing.assert_array_equal(p.bayes_posterior, bayes_posterior(p.X_test, 0.5, "banded"))
    assert p.params["mean"] == 0.5 and p.params["cov"] == "banded"
    assert "N(0.5 e, banded)" in p.description


def test_default_posterior_uses_separation():
    p = gauss2class(n_train=10, n_test=20, d=4, separation=3.0)
    np.testing.assert_allclose(p.bayes_posterior, bayes_posterior(p.X_test, 1.5, "identity"))


def test_deterministic_by_seed():
    a, b = (gauss2class(n_train=30, n_test=10, mean=1.0, cov="sigma1", seed=7) for _ in "ab")
    c = gauss2class(n_train=30, n_test=10, mean=1.0, cov="sigma1", seed=8)
    assert fingerprint(a) == fingerprint(b) != fingerprint(c)
    np.testing.assert_array_equal(a.bayes_posterior, b.bayes_posterior)


@pytest.mark.parametrize("params,digest", [
    ({}, "78fe49741ddd34a2"),
    ({"n_train": 31, "n_test": 7, "d": 3, "separation": 1.5, "seed": 4}, "7b15bb5880df5e71"),
    ({"n_train": 20, "n_test": 5, "d": 1, "order": "shuffle", "seed": 2}, "1ef82c323cdbdf3b"),
])
def test_old_specs_are_unchanged(params, digest):
    """Digests of the data before `mean`/`cov` existed; params and description too."""
    p = gauss2class(**params)
    assert fingerprint(p) == digest
    assert set(p.params) == {"n_train", "n_test", "d", "alpha", "beta", "separation", "seed",
                             "order"}
    assert "identity covariance" in p.description
    # an explicit mean equal to separation / sqrt(d) gives the same data
    d = params.get("d", 2)
    same = gauss2class(**params, mean=params.get("separation", 2.0) / np.sqrt(d))
    assert fingerprint(same) == digest


@pytest.mark.parametrize("preset,n_train,n_test,d,mean,cov", [
    ("gauss-p1", 50, 50, 2, 1.0, "sigma1"),
    ("gauss-p2", 200, 200, 2, 1.0, "sigma1"),
    ("gauss-p3", 50, 50, 2, 0.5, "sigma1"),
    ("gauss-p4", 50, 50, 2, 2.0, "sigma1"),
    ("gauss-p5", 50, 50, 10, 1.0, "banded"),
    ("gauss-p6", 1000, 1000, 2, 1.0, "sigma1"),
])
def test_table4_presets(preset, n_train, n_test, d, mean, cov):
    params = FAMILY.presets[preset]
    assert params == {"n_train": n_train, "n_test": n_test, "d": d, "mean": mean, "cov": cov}
    if n_train > 200:
        return  # building P6 (N = 1000) is checked by its sizes only
    p = FAMILY.make(params, name=preset)
    assert (p.n_train, p.n_test, p.X_train.shape[1]) == (n_train, n_test, d)
    assert p.kernel == RBF(5.0, 1.0) and p.bayes_posterior.shape == (n_test,)
    assert np.all((p.bayes_posterior >= 0) & (p.bayes_posterior <= 1))


def test_string_options_from_a_spec():
    p = FAMILY.make({"n_train": "20", "n_test": "5", "mean": "0.5", "cov": "sigma1",
                     "alpha": "3", "beta": "2"})
    assert p.params["mean"] == 0.5 and p.kernel == RBF(3.0, 2.0)


@pytest.mark.parametrize("params,field", [
    ({"cov": "diagonal"}, "'cov'"),
    ({"cov": "banded", "d": 0}, "'d'"),
    ({"mean": float("inf")}, "'mean'"),
    ({"separation": float("nan")}, "'separation'"),
    ({"alpha": 0.0}, "'alpha'"),
])
def test_bad_parameters(params, field):
    with pytest.raises(InputError, match=field):
        gauss2class(n_train=10, n_test=2, **params)


@pytest.mark.parametrize("kernel", ["matern12", "matern32", "matern52"])
def test_matern_kernel_parameter(kernel):
    from harness.core.kernels import make_kernel
    from harness.plugins.registry import get_family
    fam = get_family("gauss2class")
    p = fam.make({"n_train": 20, "n_test": 4, "kernel": kernel, "alpha": 0.5})
    assert p.kernel == make_kernel(kernel, alpha=0.5, beta=1.0)
    assert p.params["kernel"] == kernel and p.description.startswith(f"{kernel} kernel")
    assert p.name == f"gauss2class:alpha=0.5,kernel={kernel},n_test=4,n_train=20"
    # the default kernel leaves names, params and descriptions exactly as before
    q = fam.make({"n_train": 20, "n_test": 4})
    assert "kernel" not in q.params and q.name == "gauss2class:n_test=4,n_train=20"
    assert q.description.startswith("RBF kernel (alpha=5.0, beta=1.0)")


def test_unknown_kernel_parameter():
    with pytest.raises(InputError) as exc:
        gauss2class(n_train=10, n_test=0, kernel="linear")
    assert "'kernel'" in exc.value.field and "matern32" in str(exc.value)
