"""RBF-kernel GPC on synthetic two-class Gaussian data in d dimensions (MATH.md §1, §11).

Class -1 ~ N(0, I_d) and class +1 ~ N(mu, I_d) with mu = separation * (1, ..., 1) / sqrt(d)
(the class means are `separation` apart whatever d), half of the points in each class; the
kernel is the papers' RBF, k(x, x') = beta * exp(-|x - x'|^2 / alpha). There is no exact truth:
this family is for large N (several thousand training points), where the one-factor and
linear-kernel oracles are the only exact checks and methods are compared with each other.
(The paper's Table 4 presets and the generating model's Bayes posterior are left to a later
issue; the parameters here are meant to be extended, not renamed.)
"""

from __future__ import annotations

import numpy as np

from harness.errors import InputError
from harness.family import ProblemFamily
from harness.kernels import RBF
from harness.problem import Problem


def two_gaussians(n: int, d: int, separation: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """n points in d dimensions, the first n//2 of class -1 (ordering is applied later)."""
    n_neg = n // 2
    y = np.concatenate([-np.ones(n_neg), np.ones(n - n_neg)]).astype(np.int8)
    X = rng.standard_normal((n, d))
    X[y > 0] += separation / np.sqrt(d)
    return X, y


def gauss2class(
    n_train: int = 200, n_test: int = 50, d: int = 2, alpha: float = 5.0, beta: float = 1.0,
    separation: float = 2.0, seed: int = 0, order: str = "interleave",
    name: str = "gauss2class",
) -> Problem:
    """Two-class Gaussian data in d dimensions with an RBF(alpha, beta) kernel; no truth."""
    field = "problem gauss2class: parameter"
    if n_train < 2:
        raise InputError(f"{field} 'n_train'", f"must be >= 2, got {n_train}")
    if n_test < 0:
        raise InputError(f"{field} 'n_test'", f"must be >= 0, got {n_test}")
    if d < 1:
        raise InputError(f"{field} 'd'", f"must be >= 1, got {d}")
    for key, value in (("alpha", alpha), ("beta", beta)):
        if not (np.isfinite(value) and value > 0):
            raise InputError(f"{field} {key!r}", f"must be a positive number, got {value}")
    rng = np.random.default_rng(seed)
    X_train, y_train = two_gaussians(n_train, d, separation, rng)
    X_test, y_test = two_gaussians(n_test, d, separation, rng)
    params = {"n_train": n_train, "n_test": n_test, "d": d, "alpha": alpha, "beta": beta,
              "separation": separation, "seed": seed, "order": order}
    return Problem.classification(
        name, X_train, y_train, X_test, RBF(alpha, beta), y_test=y_test, order=order,
        seed=seed, family="gauss2class", params=params,
        description=(f"RBF kernel (alpha={alpha}, beta={beta}), {d}-D two-class Gaussian data "
                     f"(means {separation} apart, identity covariance), N={n_train}, "
                     f"{n_test} test points"),
    )


FAMILY = ProblemFamily(
    name="gauss2class",
    build=gauss2class,
    summary="RBF-kernel GPC on synthetic two-class Gaussian data in d dimensions (large N); "
            "no exact truth",
    truth="none",
    presets={
        "gauss2class-n1000": {"n_train": 1000, "n_test": 100},
        "gauss2class-n4000": {"n_train": 4000, "n_test": 200},
    },
)
