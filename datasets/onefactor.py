"""One-factor orthant problems with exact truth (docs/math.md §3a, the paper's Table 1).

R_ii = 1, R_ij = d_i d_j with d_i ~ U(dmin, dmax);
P(v >= 0) = ∫ φ(u) ∏ Φ(d_i u / sqrt(1 - d_i^2)) du.
The problem carries R as harness.core.covariance.OneFactorCovariance(d): O(N) memory at any N.
The default range U(-0.99, 0.99) is the paper's; a range close to ±1 is much harder.
"""

from __future__ import annotations

import numpy as np

from harness.core.covariance import OneFactorCovariance
from harness.core.errors import InputError
from harness.core.oracles import one_factor_integral
from harness.datasets.parameters import check_count, check_seed, exact_truth
from harness.model.family import ProblemFamily
from harness.model.problem import Problem, Truth


def onefactor(
    n: int = 100, seed: int = 0, dmin: float = -0.99, dmax: float = 0.99,
    random_signs: bool = False, name: str = "onefactor",
) -> Problem:
    """An n-dimensional one-factor orthant problem.

    With random_signs=true, |d_i| ~ U(dmin, dmax) and each sign is random (for the hard
    presets with |d_i| close to 1).
    """
    check_count("onefactor", "n", n, 1)
    check_seed("onefactor", seed)
    if not (-1 < dmin <= dmax < 1):
        raise InputError("problem onefactor: parameters 'dmin', 'dmax'",
                         f"need -1 < dmin <= dmax < 1, got {dmin}, {dmax}")
    rng = np.random.default_rng(seed)
    d = rng.uniform(dmin, dmax, size=n)
    if random_signs:
        d *= rng.choice([-1.0, 1.0], size=n)
    exact = exact_truth("onefactor", lambda: one_factor_integral(d / np.sqrt(1.0 - d**2)))
    truth = Truth(exact.log_integral, None, kind="exact",
                  source=f"1-D Gauss–Legendre quadrature, {exact.nodes} nodes (docs/math.md §3a)")
    return Problem.orthant(
        name, OneFactorCovariance(d), truth=truth, family="onefactor",
        params={"n": n, "seed": seed, "dmin": dmin, "dmax": dmax, "random_signs": random_signs},
        description=f"one-factor orthant probability, N={n}, d ~ U({dmin}, {dmax})",
    )


def title(params) -> str:
    """'one-factor, N = 100 (d ∈ [−0.99, 0.99])'; with |d| >= 0.9 throughout, 'hard' (strongly
    correlated: the hard presets)."""
    lo, hi = params["dmin"], params["dmax"]
    hard = lo >= 0.9 or hi <= -0.9
    d = "|d|" if params["random_signs"] else "d"
    spread = (f"{d} ∈ [{lo:g}, {hi:g}]".replace("-", "−")
              + (", random signs" if params["random_signs"] else ""))
    seed = f", seed {params['seed']}" if params["seed"] else ""
    return f"one-factor, N = {params['n']}" + (", hard" if hard else "") + f" ({spread}{seed})"


FAMILY = ProblemFamily(
    name="onefactor",
    build=onefactor,
    summary="pure orthant probability with one-factor covariance d d^T + diag(1 - d^2); exact",
    truth="exact",
    presets={
        "onefactor-table1-n50": {"n": 50},
        "onefactor-table1-n200": {"n": 200},
        "onefactor-table1-n500": {"n": 500},
        # |d_i| close to 1 with random signs: strongly correlated, much harder
        "onefactor-hard-n500": {"n": 500, "dmin": 0.95, "dmax": 0.999, "random_signs": True},
        "onefactor-hard-n2000": {"n": 2000, "dmin": 0.95, "dmax": 0.999, "random_signs": True},
    },
    title=title,
)
