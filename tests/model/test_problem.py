"""Problems (harness/model/problem.py): class ordering, the orthant covariance, the appended test
variables, and input validation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg

from harness.core.errors import InputError
from harness.core.kernels import RBF, Linear
from harness.model.problem import ORDERS, Problem, Truth, check_labels, class_order

pytestmark = pytest.mark.usefixtures("one_blas_thread")



def data(n=15, n_test=4, d=2, seed=0, n_pos=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    n_pos = n // 2 if n_pos is None else n_pos
    y = np.array([-1] * (n - n_pos) + [1] * n_pos)  # blocks: one class first
    return X, y, rng.normal(size=(n_test, d))


def assert_input_error(excinfo, field):
    assert excinfo.value.field == field
    assert field in str(excinfo.value)


# ---- class order ---------------------------------------------------------------------------
def test_interleave_alternates_equal_classes():
    y = np.array([-1] * 6 + [1] * 6)
    perm = class_order(y, "interleave")
    assert sorted(perm) == list(range(12))
    assert list(y[perm]) == [1, -1] * 6


def prefix_discrepancy(z):
    """max over prefixes k of |#positives among the first k - k * (fraction of positives)|."""
    k = np.arange(1, len(z) + 1)
    return float(np.max(np.abs(np.cumsum(z == 1) - k * np.mean(z == 1))))


@pytest.mark.parametrize("n_pos,n_neg", [(2, 8), (8, 2), (3, 17), (40, 7), (1, 9), (10, 0)])
def test_interleave_spreads_unequal_classes_evenly(n_pos, n_neg):
    y = np.array([1] * n_pos + [-1] * n_neg)
    perm = class_order(y, "interleave")
    z = y[perm]
    assert sorted(perm) == list(range(len(y)))
    # every prefix holds its fair share of each class, within one point
    assert prefix_discrepancy(z) < 1.0
    # the blocked input is far from even (so the check above has teeth)
    if min(n_pos, n_neg) >= 2:
        assert prefix_discrepancy(y) >= 1.0


def test_interleave_spreads_evenly_for_random_inputs_and_keeps_class_order():
    rng = np.random.default_rng(3)
    for _ in range(200):
        y = rng.choice([-1, 1], size=rng.integers(1, 50))
        perm = class_order(y, "interleave")
        z = y[perm]
        assert prefix_discrepancy(z) < 1.0
        for label in (-1, 1):  # points of one class keep their relative order
            idx = perm[z == label]
            assert np.all(np.diff(idx) > 0)


def test_unequal_classes_example():
    # 2 positives among 10: at positions 2 and 7 (quarters of the sequence), not 0 and 1
    y = np.array([1, 1] + [-1] * 8)
    z = y[class_order(y, "interleave")]
    assert list(np.flatnonzero(z == 1)) == [2, 7]


def test_shuffle_is_seeded():
    y = np.array([1] * 10 + [-1] * 10)
    a = class_order(y, "shuffle", np.random.default_rng(4))
    b = class_order(y, "shuffle", np.random.default_rng(4))
    c = class_order(y, "shuffle", np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert sorted(a) == list(range(20))
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, np.arange(20))


def test_as_given_keeps_order():
    y = np.array([1, 1, -1, 1, -1, -1])
    np.testing.assert_array_equal(class_order(y, "as-given"), np.arange(6))


def test_unknown_order():
    with pytest.raises(InputError) as exc:
        class_order(np.array([1, -1]), "sorted")
    assert_input_error(exc, "order")


@pytest.mark.parametrize("order", ORDERS)
def test_classification_keeps_points_and_labels_together(order):
    X, y, Xs = data(n=20, seed=1)
    p = Problem.classification("t", X, y, Xs, RBF(2.0, 1.0), order=order, seed=3)
    # the same (x, y) pairs, possibly rearranged
    before = sorted(map(tuple, np.column_stack([X, y])))
    after = sorted(map(tuple, np.column_stack([p.X_train, p.y_train])))
    assert before == after
    np.testing.assert_array_equal(p.X_test, Xs)  # test points are never reordered
    if order == "as-given":
        np.testing.assert_array_equal(p.X_train, X)
    if order == "interleave":
        assert list(p.y_train) == [1, -1] * 10


def test_shuffled_problem_is_deterministic_in_its_seed():
    X, y, Xs = data(n=20, seed=1)
    a = Problem.classification("t", X, y, Xs, RBF(), order="shuffle", seed=7)
    b = Problem.classification("t", X, y, Xs, RBF(), order="shuffle", seed=7)
    c = Problem.classification("t", X, y, Xs, RBF(), order="shuffle", seed=8)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.R, b.R)
    assert not np.array_equal(a.X_train, c.X_train)


def test_default_order_is_interleave():
    X, y, Xs = data(n=10, seed=2)
    p = Problem.classification("t", X, y, Xs, RBF())
    assert list(p.y_train) == [1, -1] * 5


# ---- orthant covariance and its factor ---------------------------------------------------
@pytest.mark.parametrize("kernel", [RBF(alpha=3.0, beta=2.0), RBF(alpha=0.5, beta=5.0),
                                    Linear(), Linear(0.25)])
def test_R_is_C_K_plus_I_C(kernel):
    X, y, Xs = data(n=12, seed=3)
    p = Problem.classification("t", X, y, Xs, kernel, order="shuffle", seed=1)
    K = kernel(p.X_train, p.X_train)
    C = np.diag(p.y_train.astype(float))
    np.testing.assert_allclose(p.K, K, rtol=1e-14)
    np.testing.assert_allclose(p.R, C @ (K + np.eye(12)) @ C, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(p.chol @ p.chol.T, p.R, rtol=1e-12, atol=1e-12)
    assert np.allclose(p.chol, np.tril(p.chol))


def test_R_from_hand_computed_rbf():
    X = np.array([[0.0], [1.0]])
    p = Problem.classification("t", X, [1, -1], None, RBF(alpha=2.0, beta=3.0),
                               order="as-given")
    k = 3.0 * np.exp(-1.0 / 2.0)
    np.testing.assert_allclose(p.R, [[4.0, -k], [-k, 4.0]], rtol=1e-14)


@pytest.mark.parametrize("kernel", [RBF(alpha=2.0, beta=1.5), Linear(0.7)])
def test_test_rows_and_sd_match_full_joint_cholesky(kernel):
    X, y, Xs = data(n=14, n_test=5, seed=4)
    p = Problem.classification("t", X, y, Xs, kernel, seed=2)
    n = p.n_train
    C = np.diag(p.y_train.astype(float))
    assert p.test_rows.shape == (n, 5) and p.test_sd.shape == (5,)
    for j in range(5):
        xs = Xs[j : j + 1]
        k_star = C @ kernel(p.X_train, xs)[:, 0]
        joint = np.empty((n + 1, n + 1))
        joint[:n, :n] = C @ (kernel(p.X_train, p.X_train) + np.eye(n)) @ C
        joint[:n, n] = joint[n, :n] = k_star
        joint[n, n] = 1.0 + kernel(xs, xs)[0, 0]
        L = scipy.linalg.cholesky(joint, lower=True)
        np.testing.assert_allclose(p.chol, L[:n, :n], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(p.test_rows[:, j], L[n, :n], rtol=1e-10, atol=1e-12)
        assert abs(p.test_sd[j] - L[n, n]) < 1e-10
        assert p.test_sd[j] >= 1.0 - 1e-12  # the probit noise keeps the pivot >= 1
    np.testing.assert_allclose(p.test_cross, C @ kernel(p.X_train, Xs), rtol=1e-14)
    np.testing.assert_allclose(p.test_variance, 1.0 + kernel.diag(Xs), rtol=1e-14)


def test_no_test_points():
    X, y, _ = data(n=6)
    p = Problem.classification("t", X, y, None, RBF())
    assert p.n_test == 0 and p.n_train == 6
    assert p.test_rows.shape == (6, 0) and p.test_sd.shape == (0,)


def test_orthant_problem():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(8, 8))
    S = A @ A.T + 8 * np.eye(8)
    p = Problem.orthant("o", S)
    assert p.is_orthant and p.n_train == 8 and p.n_test == 0
    np.testing.assert_array_equal(p.R, S)
    np.testing.assert_allclose(p.chol, np.linalg.cholesky(S), rtol=1e-12)
    assert p.test_rows.shape == (8, 0)
    with pytest.raises(AttributeError):
        p.K  # noqa: B018


# ---- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("labels", [[0, 1, 1, 0], [1, 2, -1, 1], [1.0, -1.0, 0.5, 1.0],
                                    [1.0, np.nan, -1.0, 1.0], ["a", "b", "a", "b"]])
def test_bad_training_labels(labels):
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X, labels, None, RBF())
    assert_input_error(exc, "y_train")


def test_float_labels_are_fine():
    p = Problem.classification("t", [[0.0], [1.0]], [1.0, -1.0], None, RBF())
    assert p.y_train.dtype.kind == "i"


def test_bad_test_labels():
    X, y, Xs = data(n=6, n_test=3)
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X, y, Xs, RBF(), y_test=[1, 0, 1])
    assert_input_error(exc, "y_test")
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X, y, Xs, RBF(), y_test=[1, -1])
    assert_input_error(exc, "y_test")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features(bad):
    X, y, Xs = data(n=6, n_test=3)
    X[2, 1] = bad
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X, y, Xs, RBF())
    assert_input_error(exc, "X_train")
    X, y, Xs = data(n=6, n_test=3)
    Xs[0, 0] = bad
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X, y, Xs, RBF())
    assert_input_error(exc, "X_test")


def test_mismatched_lengths_and_shapes():
    X, y, Xs = data(n=6, n_test=3)
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X, y[:-1], Xs, RBF())
    assert_input_error(exc, "y_train")
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X, y, Xs[:, :1], RBF())
    assert_input_error(exc, "X_test")
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X[None], y, Xs, RBF())
    assert_input_error(exc, "X_train")


def test_no_training_points():
    with pytest.raises(InputError) as exc:
        Problem.classification("t", np.empty((0, 2)), np.empty(0), None, RBF())
    assert_input_error(exc, "X_train")


def test_overflowing_kernel_matrix_is_rejected():
    with pytest.raises(InputError) as exc, np.errstate(over="ignore"):
        Problem.classification("t", [[1e200], [1.0], [2.0]], [1, -1, 1], None, Linear())
    assert_input_error(exc, "kernel matrix")


def test_unknown_order_in_problem():
    X, y, Xs = data(n=6)
    with pytest.raises(InputError) as exc:
        Problem.classification("t", X, y, Xs, RBF(), order="random")
    assert_input_error(exc, "order")


@pytest.mark.parametrize("cov,why", [
    ([[1.0, 0.5], [0.2, 1.0]], "symmetric"),
    ([[1.0, 2.0], [2.0, 1.0]], "positive definite"),
    ([[1.0, 0.0], [0.0, 0.0]], "positive definite"),
    ([[1.0, np.nan], [np.nan, 1.0]], "NaN"),
    ([[1.0, np.inf], [np.inf, 1.0]], "infinite"),
    ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "square"),
    (np.empty((0, 0)), "non-empty"),
])
def test_bad_orthant_covariance(cov, why):
    with pytest.raises(InputError) as exc:
        Problem.orthant("o", cov)
    assert_input_error(exc, "cov")
    assert why in str(exc.value)


def test_check_labels_returns_small_ints():
    out = check_labels(np.array([1.0, -1.0, 1.0]))
    assert out.dtype == np.int8 and list(out) == [1, -1, 1]


@pytest.mark.parametrize("labels, shown", [(np.array([1.0, 0.0]), "found 0 "),
                                           (np.array([1, 2], dtype=np.int64), "found 2 "),
                                           (np.array([1.0, 0.5]), "found 0.5 ")])
def test_check_labels_names_the_bad_label_as_a_plain_value(labels, shown):
    with pytest.raises(InputError) as exc:
        check_labels(labels)
    assert shown in str(exc.value) and "np." not in str(exc.value)


# ---- summary -------------------------------------------------------------------------------
def test_summary_is_json_serialisable():
    X, y, Xs = data(n=8, n_test=3)
    truth = Truth(np.float64(-4.5), np.array([0.2, 0.5, 0.9]), kind="reference", source="x")
    p = Problem.classification("t", X, y, Xs, RBF(2.0, 3.0), truth=truth,
                               params={"seed": np.int64(3), "alpha": np.float64(2.0)},
                               bayes_posterior=[0.1, 0.2, 0.3])
    s = json.loads(json.dumps(p.summary(), allow_nan=False))
    assert s["n_train"] == 8 and s["n_test"] == 3 and s["n_features"] == 2
    assert s["kernel"] == {"name": "rbf", "alpha": 2.0, "beta": 3.0}
    assert s["params"] == {"seed": 3, "alpha": 2.0}
    assert s["true_log_marginal_likelihood"] == -4.5
    assert s["true_test_probabilities"] == [0.2, 0.5, 0.9]
    assert s["truth_kind"] == "reference"
    assert s["bayes_posterior"] == [0.1, 0.2, 0.3]

    o = Problem.orthant("o", np.eye(3))
    s = json.loads(json.dumps(o.summary(), allow_nan=False))
    assert s["n_train"] == 3 and s["n_test"] == 0
    assert s["kernel"] is None and s["n_features"] is None
    assert s["true_log_marginal_likelihood"] is None


# ---- structured, lazy problems ---------------------------------------------------------------
DENSE = ("K", "R", "chol", "test_cross", "test_rows", "test_sd")


def built(p) -> list[str]:
    """The dense quantities a problem holds already (cached properties)."""
    return [name for name in DENSE if name in p.__dict__]


def test_onefactor_at_large_n_builds_without_dense_matrices():
    from harness.core.memory import peak_memory
    from harness.core.oracles import one_factor_integral
    from harness.datasets.onefactor import onefactor

    n = 20000
    with peak_memory() as mem:
        p = onefactor(n=n, seed=1)
    assert mem.mb < 100, f"{mem.mb:.0f} MiB: R alone would be {8 * n * n / 2**20:.0f} MiB"
    assert p.n_train == n and p.n_test == 0 and p.is_orthant and built(p) == []
    assert p.summary()["covariance"] == {"kind": "one-factor", "n": n, "n_test": 0,
                                         "nbytes": 8 * n}
    d = p.cov.d
    assert p.truth.kind == "exact"
    exact = one_factor_integral(d / np.sqrt(1 - d**2))
    assert p.truth.log_marginal_likelihood == exact.log_integral
    np.testing.assert_array_equal(p.cov.block(slice(0, 3), slice(0, 3)),
                                  [[1.0, d[0] * d[1], d[0] * d[2]],
                                   [d[1] * d[0], 1.0, d[1] * d[2]],
                                   [d[2] * d[0], d[2] * d[1], 1.0]])


def test_rbf_problem_at_large_n_builds_without_dense_matrices():
    from harness.core.memory import peak_memory
    from harness.datasets.gauss2class import gauss2class

    n = 16384
    with peak_memory() as mem:
        p = gauss2class(n_train=n, n_test=64, d=2, alpha=0.02, seed=3)
    assert mem.mb < 100, f"{mem.mb:.0f} MiB: R alone would be {8 * n * n / 2**20:.0f} MiB"
    assert p.n_train == n and p.n_test == 64 and built(p) == []
    assert p.cov.kind == "kernel" and p.summary()["covariance"]["nbytes"] < 1e6


def test_dense_quantities_are_built_on_demand_and_as_before():
    from harness.datasets.onefactor import onefactor

    p = onefactor(n=300, seed=4)
    assert built(p) == []
    d = p.cov.d
    R = np.outer(d, d)                       # the former construction, bit for bit
    R[np.diag_indices(300)] = 1.0
    np.testing.assert_array_equal(p.R, R)
    np.testing.assert_allclose(p.chol, np.linalg.cholesky(R), rtol=1e-12, atol=1e-14)

    X, y, Xs = data(n=40, n_test=6, seed=5)
    kernel = RBF(1.5, 2.0)
    a = Problem.classification("t", X, y, Xs, kernel)
    assert built(a) == []
    yy = a.y_train.astype(float)
    R = kernel(a.X_train, a.X_train) * np.outer(yy, yy)
    R[np.diag_indices(40)] += 1.0
    np.testing.assert_array_equal(a.R, R)    # from the representation, without K
    assert "K" not in a.__dict__
    b = Problem.classification("t", X, y, Xs, kernel)
    b.warm()                                 # K first, then R from it: the same matrix
    assert built(b) == ["K", "R", "chol"]
    np.testing.assert_array_equal(b.R, R)
    np.testing.assert_array_equal(a.test_cross, yy[:, None] * kernel(a.X_train, Xs))
    np.testing.assert_array_equal(a.test_variance, 1.0 + kernel.diag(Xs))
    c = Problem.classification("t", X, y, Xs, kernel)
    c.warm(max_n=39)                         # above the limit: nothing
    assert built(c) == []


def test_linear_kernel_problems_are_low_rank():
    X, y, Xs = data(n=30, n_test=3, d=2)
    p = Problem.classification("t", X, y, Xs, Linear(0.5))
    assert p.cov.kind == "low-rank" and built(p) == []
    v = np.random.default_rng(0).normal(size=30)
    np.testing.assert_allclose(p.cov.matmul(v), p.R @ v, rtol=1e-12)


def test_orthant_problem_from_a_representation():
    from harness.core.covariance import KernelCovariance, OneFactorCovariance

    d = np.array([0.3, -0.5, 0.9])
    p = Problem.orthant("o", OneFactorCovariance(d))
    assert p.n_train == 3 and p.n_test == 0 and built(p) == []
    assert p.test_rows.shape == (3, 0) and p.test_variance.shape == (0,)
    np.testing.assert_allclose(p.chol @ p.chol.T, p.R, rtol=1e-14)
    for cov, why in [(OneFactorCovariance(np.array([0.5, -1.0])), "|d_i| < 1"),
                     (OneFactorCovariance(np.array([0.5, np.nan])), "|d_i| < 1"),
                     (OneFactorCovariance(np.empty(0)), "non-empty"),
                     (KernelCovariance(RBF(), np.zeros((2, 1)), np.ones(2), np.zeros((1, 1))),
                      "no test variables")]:
        with pytest.raises(InputError) as exc:
            Problem.orthant("o", cov)
        assert_input_error(exc, "cov")
        assert why in str(exc.value)


def test_dense_orthant_is_still_checked_by_cholesky_at_construction():
    p = Problem.orthant("o", np.array([[2.0, 1.0], [1.0, 2.0]]))
    assert "chol" in p.__dict__ and p.cov.kind == "dense"
