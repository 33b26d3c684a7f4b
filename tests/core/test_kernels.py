"""Kernels (harness/core/kernels.py) in the papers' parameterisation (docs/math.md §1, A.3
and A.65)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.kernels import PRML, RBF, Linear, Matern12, Matern32, Matern52, make_kernel
from harness.core.numdiff import central_difference

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
    # alpha -> 0: K -> beta I (docs/math.md §2: then R -> (1 + beta) I)
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


# ---- log parameters and derivatives (∂K/∂log θ_j, checked by central differences) ----------
H = 1e-5   # step in log θ; truncation (h²/6)|K'''| ~ 2e-11 |K|, rounding ~ ε|K|/h ~ 2e-11 |K|
KERNELS = [RBF(alpha=0.7, beta=1.9), RBF(alpha=30.0, beta=0.2), Linear(scale=2.5),
           PRML(theta0=1.3, theta1=4.0, theta2=0.6, theta3=0.8), PRML(theta0=1.0, theta1=1.0),
           PRML(theta0=2.0, theta1=0.5, theta3=1.5),
           Matern12(alpha=0.7, beta=1.9), Matern32(alpha=0.7, beta=1.9),
           Matern52(alpha=0.7, beta=1.9), Matern52(alpha=30.0, beta=0.2)]


def _points(n=7, d=2, seed=1):
    return np.random.default_rng(seed).normal(size=(n, d))


def _fd_tolerance(K):
    """Both error terms are ~2e-11 |K|; 1e-8 max|K| leaves a margin of 500 and still fails a
    derivative that is wrong by 0.01 % of K (see test_finite_differences_catch_a_wrong_one)."""
    return {"rtol": 1e-6, "atol": 1e-8 * np.abs(K).max()}


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_gradients_match_central_differences(kernel):
    A = _points()
    K, dK = kernel.gradients(A)
    assert dK.shape == (len(kernel.param_names()), len(A), len(A))
    np.testing.assert_allclose(K, kernel(A, A), rtol=1e-14)
    fd = central_difference(lambda th: kernel.with_log_params(th)(A, A), kernel.log_params(), H)
    np.testing.assert_allclose(dK, fd, **_fd_tolerance(K))


def test_finite_differences_catch_a_wrong_one():
    # ∂K/∂α instead of ∂K/∂log α (off by the factor α = 0.7) must fail the same check
    kernel, A = RBF(alpha=0.7, beta=1.9), _points()
    K, dK = kernel.gradients(A)
    fd = central_difference(lambda th: kernel.with_log_params(th)(A, A), kernel.log_params(), H)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(dK[0] / kernel.alpha, fd[0], **_fd_tolerance(K))
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(dK[0] * (1 + 1e-4), fd[0], **_fd_tolerance(K))


def test_rbf_and_linear_gradient_formulas():
    A = _points()
    kernel = RBF(alpha=0.7, beta=1.9)
    K, dK = kernel.gradients(A)
    r2 = np.sum((A[:, None] - A[None]) ** 2, axis=-1)
    np.testing.assert_allclose(dK[0], K * r2 / 0.7, rtol=1e-13)
    np.testing.assert_array_equal(dK[1], K)
    K, dK = Linear(scale=3.0).gradients(A)
    np.testing.assert_allclose(dK[0], 3.0 * A @ A.T, rtol=1e-14)


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_log_params_round_trip(kernel):
    theta = kernel.log_params()
    assert theta.shape == (len(kernel.param_names()),)
    same = kernel.with_log_params(theta).params()
    np.testing.assert_allclose(list(same.values()), list(kernel.params().values()), rtol=1e-15)
    moved = kernel.with_log_params(theta + 0.5)
    np.testing.assert_allclose(moved.log_params(), theta + 0.5, rtol=1e-14, atol=1e-15)
    assert type(moved) is type(kernel)


def test_param_names():
    assert RBF().param_names() == ("alpha", "beta")
    assert Linear().param_names() == ("scale",)
    assert PRML(1, 2, 3, 4).param_names() == ("theta0", "theta1", "theta2", "theta3")
    # a zero constant or linear term is held at zero: not tuned, and stays zero
    assert PRML(1, 2).param_names() == ("theta0", "theta1")
    assert PRML(1, 2, theta3=0.5).param_names() == ("theta0", "theta1", "theta3")
    moved = PRML(1, 2, theta3=0.5).with_log_params(np.zeros(3))
    assert moved == PRML(1.0, 1.0, 0.0, 1.0)


def test_prml_kernel_values():
    # PRML eq. 6.63 at x = (0, 0), x' = (1, 2): r² = 5, x·x' = 0; and x = x' = (1, 2)
    k = PRML(theta0=2.0, theta1=0.5, theta2=0.25, theta3=3.0)
    a, b = np.array([[0.0, 0.0]]), np.array([[1.0, 2.0]])
    assert abs(k(a, b)[0, 0] - (2.0 * np.exp(-1.25) + 0.25)) < 1e-15
    assert abs(k(b, b)[0, 0] - (2.0 + 0.25 + 15.0)) < 1e-14
    A = _points()
    np.testing.assert_allclose(k.diag(A), np.diag(k(A, A)), rtol=1e-14)
    # with θ2 = θ3 = 0 it is the RBF kernel with α = 2/θ1, β = θ0 (the PRML example's kernel)
    np.testing.assert_allclose(PRML(1.7, 4.0)(A, A), RBF(alpha=0.5, beta=1.7)(A, A), rtol=1e-14)
    assert make_kernel("prml", theta0=1.7, theta1=4.0) == PRML(1.7, 4.0)


@pytest.mark.parametrize("field,kwargs", [
    ("theta0", {"theta0": 0.0}), ("theta1", {"theta1": -1.0}), ("theta2", {"theta2": -0.1}),
    ("theta3", {"theta3": np.nan}), ("theta2", {"theta2": "x"}), ("theta3", {"theta3": True}),
    ("theta2", {"theta2": None}),
])
def test_prml_invalid_params(field, kwargs):
    with pytest.raises(InputError) as exc:
        PRML(**kwargs)
    assert exc.value.field == f"kernel.{field}"


def test_with_log_params_errors():
    with pytest.raises(InputError) as exc:
        RBF().with_log_params([0.0])
    assert exc.value.field == "kernel.log_params" and "alpha, beta" in str(exc.value)
    with pytest.raises(InputError) as exc:
        RBF().with_log_params([1e4, 0.0])   # exp overflows to inf
    assert exc.value.field == "kernel.alpha"


# ---- Matérn kernels (docs/math.md §1): alpha a length scale, beta the variance -------------
S3, S5 = np.sqrt(3.0), np.sqrt(5.0)
MATERN_FORMS = {
    "matern12": lambda t: np.exp(-t),
    "matern32": lambda t: (1 + S3 * t) * np.exp(-S3 * t),
    "matern52": lambda t: (1 + S5 * t + 5 * t**2 / 3) * np.exp(-S5 * t),
}


@pytest.mark.parametrize("name", sorted(MATERN_FORMS))
@pytest.mark.parametrize("r", [0.0, 0.1, 0.5, 1.0, 2.5, 10.0])
def test_matern_closed_forms(name, r):
    # x = (0, 0), x' = (0.6 r, 0.8 r): ||x - x'|| = r; alpha = 0.8, beta = 2.5
    k = make_kernel(name, alpha=0.8, beta=2.5)
    value = k(np.array([[0.0, 0.0]]), np.array([[0.6 * r, 0.8 * r]]))[0, 0]
    assert value == pytest.approx(2.5 * MATERN_FORMS[name](r / 0.8), rel=1e-13, abs=1e-300)


def test_matern_hand_values():
    # r = 1, alpha = 1, beta = 1
    a, b = np.array([[0.0]]), np.array([[1.0]])
    assert Matern12()(a, b)[0, 0] == pytest.approx(np.exp(-1.0), rel=1e-15)
    assert Matern32()(a, b)[0, 0] == pytest.approx(0.4833577245965077, rel=1e-14)
    assert Matern52()(a, b)[0, 0] == pytest.approx(0.5239941088318203, rel=1e-14)


@pytest.mark.parametrize("cls", [Matern12, Matern32, Matern52])
def test_matern_matrix_diag_and_positive_definite(cls):
    rng = np.random.default_rng(3)
    A = rng.normal(size=(40, 3))
    k = cls(alpha=0.9, beta=1.7)
    K = k(A, A)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=0)
    np.testing.assert_allclose(k.diag(A), np.diag(K), rtol=1e-15)
    np.testing.assert_allclose(k.diag(A), 1.7)
    assert np.linalg.eigvalsh(K).min() > 0
    np.linalg.cholesky(K)
    # the order of smoothness: at the same r, 1/2 < 3/2 < 5/2 < RBF-like
    t = np.array([[0.0]]), np.array([[0.3]])
    assert Matern12()(*t) < Matern32()(*t) < Matern52()(*t)


@pytest.mark.parametrize("cls", [Matern12, Matern32, Matern52])
def test_matern_params_names_and_errors(cls):
    k = cls(2, 3)
    assert k.params() == {"alpha": 2.0, "beta": 3.0} and k.param_names() == ("alpha", "beta")
    assert make_kernel(k.name, alpha=2.0, beta=3.0) == k
    with pytest.raises(InputError) as exc:
        cls(alpha=-1.0)
    assert exc.value.field == "kernel.alpha"
    with pytest.raises(InputError) as exc:
        make_kernel(k.name, scale=1.0)
    assert exc.value.field == "kernel.scale"


def test_matern_gradient_formulas():
    A = _points()
    r = np.sqrt(np.sum((A[:, None] - A[None]) ** 2, axis=-1))
    K, dK = Matern12(alpha=0.7, beta=1.9).gradients(A)
    np.testing.assert_allclose(dK[0], K * r / 0.7, rtol=1e-13)
    np.testing.assert_array_equal(dK[1], K)
