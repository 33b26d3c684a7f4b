"""Kernels (harness/kernels.py) in the papers' parameterisation (MATH.md §1, A.3 and A.65)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import InputError
from harness.kernels import RBF, Linear, make_kernel

pytestmark = pytest.mark.usefixtures("one_blas_thread")



def test_rbf_hand_value():
    # ||x - x'||^2 = 1 + 4 = 5; alpha = 2, beta = 3: 3 exp(-5/2), NOT 3 exp(-5 / (2 * 2^2))
    k = RBF(alpha=2.0, beta=3.0)
    value = k(np.array([[0.0, 0.0]]), np.array([[1.0, 2.0]]))
    assert value.shape == (1, 1)
    assert abs(value[0, 0] - 3.0 * np.exp(-2.5)) < 1e-15
    assert abs(value[0, 0] - 0.246254995871696) < 1e-14


def test_rbf_matrix_against_a_loop():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    k = RBF(alpha=0.7, beta=1.9)
    expected = np.array([[1.9 * np.exp(-np.sum((a - b) ** 2) / 0.7) for b in B] for a in A])
    np.testing.assert_allclose(k(A, B), expected, rtol=1e-13)
    np.testing.assert_allclose(k.diag(A), np.diag(k(A, A)), rtol=1e-15)
    np.testing.assert_allclose(k.diag(A), 1.9)
    K = k(A, A)
    np.testing.assert_allclose(K, K.T)
    assert np.linalg.eigvalsh(K).min() > -1e-12


def test_rbf_limits():
    A = np.array([[0.0], [1.0], [3.0]])
    # alpha -> 0: K -> beta I (MATH.md §2: then R -> (1 + beta) I)
    np.testing.assert_allclose(RBF(alpha=1e-6, beta=2.0)(A, A), 2.0 * np.eye(3), atol=1e-300)
    # alpha -> infinity: K -> beta everywhere
    np.testing.assert_allclose(RBF(alpha=1e12, beta=2.0)(A, A), 2.0, rtol=1e-10)


def test_linear_hand_value_and_scale():
    A = np.array([[1.0, 2.0], [0.5, -1.0]])
    B = np.array([[3.0, 4.0]])
    np.testing.assert_allclose(Linear()(A, B), [[11.0], [-2.5]])
    np.testing.assert_allclose(Linear(scale=2.0)(A, B), [[22.0], [-5.0]])
    np.testing.assert_allclose(Linear(scale=2.0).diag(A), [10.0, 2.5])
    np.testing.assert_allclose(Linear().diag(A), np.diag(Linear()(A, A)))


def test_linear_on_one_feature_is_rank_one():
    x = np.linspace(-1, 2, 7)[:, None]
    K = Linear()(x, x)
    np.testing.assert_allclose(K, np.outer(x, x))
    assert np.linalg.matrix_rank(K) == 1


def test_params_and_names():
    assert RBF(2, 3).params() == {"alpha": 2.0, "beta": 3.0}
    assert Linear(0.5).params() == {"scale": 0.5}
    assert RBF().name == "rbf" and Linear().name == "linear"
    assert all(isinstance(v, float) for v in RBF(2, 3).params().values())


def test_make_kernel():
    assert make_kernel("rbf", alpha=2.0, beta=3.0) == RBF(2.0, 3.0)
    assert make_kernel("linear", scale=4.0) == Linear(4.0)
    assert make_kernel("rbf") == RBF(1.0, 1.0)


@pytest.mark.parametrize("field,kwargs", [
    ("alpha", {"alpha": 0.0}), ("alpha", {"alpha": -1.0}), ("alpha", {"alpha": np.nan}),
    ("alpha", {"alpha": np.inf}), ("alpha", {"alpha": "wide"}), ("alpha", {"alpha": None}),
    ("beta", {"beta": 0.0}), ("beta", {"beta": -2.0}), ("beta", {"beta": np.nan}),
    ("beta", {"beta": np.inf}), ("beta", {"beta": True}),
])
def test_rbf_invalid_params(field, kwargs):
    with pytest.raises(InputError) as exc:
        RBF(**kwargs)
    assert exc.value.field == f"kernel.{field}"
    assert f"kernel.{field}" in str(exc.value)


@pytest.mark.parametrize("scale", [0.0, -1.0, np.nan, np.inf, "big", None])
def test_linear_invalid_scale(scale):
    with pytest.raises(InputError) as exc:
        Linear(scale)
    assert exc.value.field == "kernel.scale"


def test_make_kernel_errors():
    with pytest.raises(InputError) as exc:
        make_kernel("matern")
    assert exc.value.field == "kernel" and "matern" in str(exc.value)
    with pytest.raises(InputError) as exc:
        make_kernel("rbf", gamma=1.0)
    assert exc.value.field == "kernel.gamma"
    with pytest.raises(InputError) as exc:
        make_kernel("linear", alpha=1.0)
    assert exc.value.field == "kernel.alpha"
    with pytest.raises(InputError) as exc:
        make_kernel("rbf", alpha=-3.0)
    assert exc.value.field == "kernel.alpha"
