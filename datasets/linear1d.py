"""Linear-kernel GPC on one feature with exact truth (docs/math.md §3b, the paper's Tables 2–3).

Two classes of 1-D Gaussian data: class -1 ~ N(mu_neg, sd_neg), class +1 ~ N(mu_pos, sd_pos),
half of the points in each class. With K = scale * x x^T, f = sqrt(scale) x u, u ~ N(0, 1):
Z = ∫ φ(u) ∏ Φ(sqrt(scale) y_i x_i u) du and J*_j = ∫ φ(u) Φ(sqrt(scale) x*_j u) ∏(...) du / Z.

Presets linear1d-p1 … p4 are the paper's Problems 1–4. Digits of their class parameters were
lost in the paper's text; P1, P3 and P4 use the reconstruction of docs/math.md §11
(P1: mu=(0,1), sd=(0.5,0.5); P3: mu=(0,1.5), sd=(0.5,0.5); P4: mu=(0,1), sd=(1,0.5)).
"""

from __future__ import annotations

import numpy as np

from harness.core.errors import InputError
from harness.core.kernels import Linear
from harness.core.oracles import one_factor_integral
from harness.datasets.parameters import check_seed, check_sizes, exact_truth
from harness.model.family import ProblemFamily
from harness.model.problem import Problem, Truth


def two_gaussians_1d(n: int, mu_neg, sd_neg, mu_pos, sd_pos, rng) -> tuple[np.ndarray, np.ndarray]:
    """n points, the first n//2 of class -1 and the rest of class +1 (ordering is applied later)."""
    n_neg = n // 2
    y = np.concatenate([-np.ones(n_neg), np.ones(n - n_neg)]).astype(np.int8)
    x = np.where(y < 0, rng.normal(mu_neg, sd_neg, n), rng.normal(mu_pos, sd_pos, n))
    return x[:, None], y


def linear1d(
    n_train: int = 100, n_test: int = 50,
    mu_neg: float = 0.0, mu_pos: float = 1.0, sd_neg: float = 0.5, sd_pos: float = 0.5,
    scale: float = 1.0, seed: int = 0, order: str = "interleave", name: str = "linear1d",
) -> Problem:
    """A 1-D two-Gaussian GPC problem with a linear kernel and its exact truth."""
    check_sizes("linear1d", n_train, n_test)
    for key, sd in (("sd_neg", sd_neg), ("sd_pos", sd_pos), ("scale", scale)):
        if not (np.isfinite(sd) and sd > 0):
            raise InputError(f"problem linear1d: parameter {key!r}", f"must be > 0, got {sd}")
    for key, mu in (("mu_neg", mu_neg), ("mu_pos", mu_pos)):
        if not np.isfinite(mu):
            raise InputError(f"problem linear1d: parameter {key!r}", f"must be finite, got {mu}")
    check_seed("linear1d", seed)
    rng = np.random.default_rng(seed)
    X_train, y_train = two_gaussians_1d(n_train, mu_neg, sd_neg, mu_pos, sd_pos, rng)
    X_test, y_test = two_gaussians_1d(n_test, mu_neg, sd_neg, mu_pos, sd_pos, rng)
    root = np.sqrt(scale)
    exact = exact_truth("linear1d", lambda: one_factor_integral(root * y_train * X_train[:, 0],
                                                                root * X_test[:, 0]))
    truth = Truth(exact.log_integral, exact.test_probabilities, kind="exact",
                  source=f"1-D Gauss–Legendre quadrature, {exact.nodes} nodes (docs/math.md §3b)")
    params = {"n_train": n_train, "n_test": n_test, "mu_neg": mu_neg, "mu_pos": mu_pos,
              "sd_neg": sd_neg, "sd_pos": sd_pos, "scale": scale, "seed": seed, "order": order}
    return Problem.classification(
        name, X_train, y_train, X_test, Linear(scale), y_test=y_test, order=order, seed=seed,
        truth=truth, family="linear1d", params=params,
        description=(f"linear kernel, 1 feature, N={n_train}, {n_test} test points, "
                     f"class -1 ~ N({mu_neg}, {sd_neg}), class +1 ~ N({mu_pos}, {sd_pos})"),
    )


FAMILY = ProblemFamily(
    name="linear1d",
    build=linear1d,
    summary="linear-kernel GPC on 1-D two-Gaussian data (the paper's Problems 1–4); exact",
    truth="exact",
    presets={
        "linear1d-p1": {"n_train": 100, "n_test": 50, "mu_neg": 0.0, "mu_pos": 1.0,
                        "sd_neg": 0.5, "sd_pos": 0.5},
        "linear1d-p2": {"n_train": 200, "n_test": 100, "mu_neg": 0.0, "mu_pos": 1.0,
                        "sd_neg": 2.0, "sd_pos": 1.0},
        "linear1d-p3": {"n_train": 400, "n_test": 200, "mu_neg": 0.0, "mu_pos": 1.5,
                        "sd_neg": 0.5, "sd_pos": 0.5},
        "linear1d-p4": {"n_train": 800, "n_test": 400, "mu_neg": 0.0, "mu_pos": 1.0,
                        "sd_neg": 1.0, "sd_pos": 0.5},
    },
)
