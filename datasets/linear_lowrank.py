"""Linear-kernel GPC on d = 1..3 features with exact truth (docs/math.md §3c).

Two classes of Gaussian data in d features, unit covariance, means ±(separation/2)·e/sqrt(d)
(e the all-ones vector), half the points in each class; kernel K = beta X X^T (rank d).
f = sqrt(beta) X u with u ~ N(0, I_d), so Z = ∫ φ_d(u) Π Φ(sqrt(beta) y_i x_i.u) du, a
d-dimensional integral of a log-concave function: the Laplace-centred Gauss–Hermite oracle
(harness.core.oracles.low_rank_integral) evaluates it and the test probabilities to ~1e-13.
Harder than the one-feature family: larger beta makes the posterior of u narrower and the
orthant covariance C(K + I)C more strongly correlated.
"""

from __future__ import annotations

import numpy as np

from harness.core.errors import InputError
from harness.core.kernels import Linear
from harness.core.oracles import low_rank_integral
from harness.datasets.parameters import check_seed, check_sizes, exact_truth
from harness.model.family import ProblemFamily
from harness.model.problem import Problem, Truth


def two_gaussians(n: int, d: int, separation: float, rng) -> tuple[np.ndarray, np.ndarray]:
    n_neg = n // 2
    y = np.concatenate([-np.ones(n_neg), np.ones(n - n_neg)]).astype(np.int8)
    centre = 0.5 * separation * np.ones(d) / np.sqrt(d)
    X = rng.standard_normal((n, d)) + y[:, None] * centre
    return X, y


def linear_lowrank(
    n_train: int = 200, n_test: int = 50, d: int = 2, beta: float = 1.0,
    separation: float = 2.0, seed: int = 0, order: str = "interleave",
    name: str = "linear-lowrank",
) -> Problem:
    """A rank-d linear-kernel GPC problem with its exact truth."""
    field = "problem linear-lowrank: parameter"
    if d not in (1, 2, 3):
        raise InputError(f"{field} 'd'", f"must be 1, 2 or 3, got {d}")
    check_sizes("linear-lowrank", n_train, n_test)
    check_seed("linear-lowrank", seed)
    if not beta > 0:
        raise InputError(f"{field} 'beta'", f"must be > 0, got {beta}")
    rng = np.random.default_rng(seed)
    X_train, y_train = two_gaussians(n_train, d, separation, rng)
    X_test, y_test = two_gaussians(n_test, d, separation, rng)
    root = np.sqrt(beta)

    def oracle():
        exact = low_rank_integral(root * y_train[:, None] * X_train, root * X_test)
        if exact.error_estimate > 1e-8:
            raise ArithmeticError(f"low-rank oracle did not converge ({exact.error_estimate:g})")
        return exact

    exact = exact_truth("linear-lowrank", oracle)
    truth = Truth(exact.log_integral, exact.test_probabilities, kind="exact",
                  source=(f"Laplace-centred Gauss–Hermite, {exact.nodes}^{d} nodes, "
                          f"error estimate {exact.error_estimate:.1e} (docs/math.md §3c)"))
    params = {"n_train": n_train, "n_test": n_test, "d": d, "beta": beta,
              "separation": separation, "seed": seed, "order": order}
    return Problem.classification(
        name, X_train, y_train, X_test, Linear(beta), y_test=y_test, order=order, seed=seed,
        truth=truth, family="linear-lowrank", params=params,
        description=(f"linear kernel (beta={beta}) on {d} features, N={n_train}, "
                     f"{n_test} test points, class separation {separation}"),
    )


FAMILY = ProblemFamily(
    name="linear-lowrank",
    build=linear_lowrank,
    summary="linear-kernel GPC on 2-3 Gaussian features (rank-d K = beta X X^T); exact",
    truth="exact",
    presets={
        "lowrank-d2-beta1": {"n_train": 400, "n_test": 100, "d": 2, "beta": 1.0},
        "lowrank-d2-beta9": {"n_train": 400, "n_test": 100, "d": 2, "beta": 9.0},
        "lowrank-d3-beta1": {"n_train": 400, "n_test": 100, "d": 3, "beta": 1.0},
    },
)
