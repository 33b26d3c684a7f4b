"""Short-range probit GPC with exact truth: the `markov1d` family (docs/math.md §3e).

The exponential (Matérn-1/2) kernel k(x, x') = beta exp(-|x - x'| / alpha) on 1-D inputs makes
the latent f an Ornstein–Uhlenbeck process, so Z = E[∏ Φ(y_i f_i)] and the test probabilities
are exact at any N by a forward–backward grid filter (harness.core.markov, O(N) time).

Design on [0, 1): `regular` x_i = i / N, or `random` sorted uniform points. `rho` is the
correlation of neighbours at the mean spacing Δ = 1/N, rho = exp(-Δ / alpha), so
alpha = -Δ / log(rho). The latent f is drawn from the GP with the family's seed (exactly, by the
OU recursion f_{i+1} = ρ_i f_i + sqrt(beta (1 - ρ_i²)) z_i), labels y_i = sign(f_i + ε_i) from the
probit model. The n_test test points sit at distinct training locations x_j (chosen with the
seed), with labels drawn the same way; the truth J*_j = p(y* = +1 | y) = E[Φ(f_j) | y].

Presets markov-p1 … markov-p6 go from easy (N = 500, rho = 0.5, beta = 0.5) to hard
(N = 65,536, rho = 0.99, beta = 4). The random design needs a grid as fine as its closest pair
(whose transition width is sqrt(1 - ρ_i²)); it is refused with an InputError when that grid is
beyond the oracle's memory or time bounds (in practice from a few hundred points on: sorted
uniform points have pairs ~1/N² apart).
"""

from __future__ import annotations

import numpy as np

from harness.core.errors import InputError
from harness.core.kernels import Matern12
from harness.core.markov import MAX_GRID, MAX_STORE, MAX_WORK, grid_nodes, ou_probit_oracle, work
from harness.datasets.parameters import check_positive, check_seed, check_sizes, exact_truth
from harness.model.family import ProblemFamily
from harness.model.problem import Problem, Truth

DESIGNS = ("regular", "random")
TOLERANCE = 1e-9   # agreement required between the oracle's two grids (log Z relative, J*)


def design_points(n: int, design: str, rng: np.random.Generator) -> np.ndarray:
    """The sorted inputs on [0, 1): i / n, or n sorted uniform points."""
    if design == "regular":
        return np.arange(n) / n
    if design == "random":
        return np.sort(rng.uniform(0.0, 1.0, n))
    raise InputError("problem markov1d: parameter 'design'", f"unknown design {design!r}",
                     f"use one of {list(DESIGNS)}")


def markov1d(
    n_train: int = 1000, n_test: int = 100, rho: float = 0.9, beta: float = 1.0,
    design: str = "regular", seed: int = 0, order: str = "interleave", name: str = "markov1d",
) -> Problem:
    """Matérn-1/2 probit GPC on 1-D inputs with exact log Z and test probabilities."""
    field = "problem markov1d: parameter"
    check_sizes("markov1d", n_train, n_test)
    check_seed("markov1d", seed)
    check_positive("markov1d", beta=beta)
    if not (np.isfinite(rho) and 0.0 < rho < 1.0):
        raise InputError(f"{field} 'rho'", f"must lie strictly between 0 and 1, got {rho}",
                         "rho is the correlation of neighbouring points, e.g. rho=0.9")
    if n_test > n_train:
        raise InputError(f"{field} 'n_test'", f"{n_test} test points need as many training "
                         f"locations, got n_train={n_train}", "use n_test <= n_train")
    rng = np.random.default_rng(seed)
    x = design_points(n_train, design, rng)
    alpha = -(1.0 / n_train) / np.log(rho)
    gaps = np.diff(x)
    if np.any(gaps <= 0):
        raise InputError(f"{field} 'design'", "the random design drew two equal points",
                         "use another seed or design=regular")
    rho_i = np.exp(-gaps / alpha)
    nodes = grid_nodes(rho_i, beta)
    if nodes > MAX_GRID or nodes * n_test > MAX_STORE or work(rho_i, beta) > MAX_WORK:
        raise InputError(f"{field} 'design'" if design == "random" else f"{field} 'rho'",
                         f"the exact filter would need a grid of {nodes:,} nodes and "
                         f"{work(rho_i, beta):.2g} operations (at most {MAX_GRID:,} nodes, "
                         f"n_test x nodes <= {MAX_STORE:,}, {MAX_WORK:.0e} operations)",
                         "use design=regular, a smaller n_train or rho, or fewer test points"
                         if design == "random" else "use a smaller rho or fewer test points")
    # f from the GP: the exact OU recursion, then probit labels
    s = np.sqrt(beta * -np.expm1(2.0 * np.log(rho_i)))
    z = rng.standard_normal(n_train)
    f = np.empty(n_train)
    f[0] = np.sqrt(beta) * z[0]
    for i in range(1, n_train):   # O(N) scalar loop: 10^6 steps take ~0.3 s
        f[i] = rho_i[i - 1] * f[i - 1] + s[i - 1] * z[i]
    y = np.where(f + rng.standard_normal(n_train) >= 0, 1, -1).astype(np.int8)
    test_at = np.sort(rng.choice(n_train, size=n_test, replace=False))
    y_test = np.where(f[test_at] + rng.standard_normal(n_test) >= 0, 1, -1).astype(np.int8)
    exact = exact_truth("markov1d", lambda: ou_probit_oracle(rho_i, beta, y, test_at,
                                                             tol=TOLERANCE))
    truth = Truth(exact.log_integral, exact.test_probabilities, kind="exact",
                  source=(f"OU forward–backward grid filter, {exact.nodes[0]} and "
                          f"{exact.nodes[1]} nodes (steps {exact.steps[0]:.3g}, "
                          f"{exact.steps[1]:.3g}), agreeing to {exact.error_estimate:.1e} "
                          "(docs/math.md §3e)"))
    params = {"n_train": n_train, "n_test": n_test, "rho": rho, "beta": beta,
              "design": design, "seed": seed, "order": order}
    return Problem.classification(
        name, x[:, None], y, x[test_at][:, None], Matern12(alpha, beta), y_test=y_test,
        order=order, seed=seed, truth=truth, family="markov1d", params=params,
        description=(f"matern12 kernel (alpha={alpha:.4g}, beta={beta}), {design} 1-D design "
                     f"on [0, 1), neighbour correlation {rho}, N={n_train}, {n_test} test "
                     "points at training locations"),
    )


FAMILY = ProblemFamily(
    name="markov1d",
    build=markov1d,
    summary="Matérn-1/2 (Ornstein–Uhlenbeck) probit GPC on 1-D inputs: short-range "
            "correlation at any N; exact (forward–backward filter)",
    truth="exact",
    presets={
        "markov-p1": {"n_train": 500, "n_test": 50, "rho": 0.5, "beta": 0.5},
        "markov-p2": {"n_train": 1000, "n_test": 100, "rho": 0.8, "beta": 1.0},
        "markov-p3": {"n_train": 2000, "n_test": 100, "rho": 0.9, "beta": 1.0},
        "markov-p4": {"n_train": 4096, "n_test": 200, "rho": 0.95, "beta": 2.0},
        "markov-p5": {"n_train": 16384, "n_test": 200, "rho": 0.98, "beta": 3.0},
        "markov-p6": {"n_train": 65536, "n_test": 256, "rho": 0.99, "beta": 4.0},
    },
)
