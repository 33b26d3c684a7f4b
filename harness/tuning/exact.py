"""Exact references for tuning on families with exact truth (docs/math.md §3b–c, §12).

A linear kernel with a scale, K = β x xᵀ, keeps the 1-D oracle (x scaled by √β), so the exact
log Z is known at every β: the true optimum of a tuning job and, for a 1-D space, the exact
posterior of log β under the uniform prior on the log box (the pseudo-marginal reference).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from harness.core.errors import InputError
from harness.tuning.evaluate import build_problem
from harness.tuning.space import FIELD, TuneSpace, with_params


def exact_log_z(spec: str, params: dict[str, float]) -> float | None:
    """The exact log Z of the spec at these parameters; None without exact truth."""
    return _exact(build_problem(with_params(spec, params)).truth)


def _exact(truth) -> float | None:
    return float(truth.log_marginal_likelihood) if truth and truth.kind == "exact" else None


def exact_surface(spec: str, space: TuneSpace) -> dict[str, Any] | None:
    """Exact log Z at every grid point and the true optimum (None without exact truth).

    The optimum: Nelder–Mead on the log-parameters, started at the best grid point and bounded
    by its grid neighbours (the surface is smooth; the oracle is accurate to ~1e-12).
    """
    points = space.points()
    first_truth = build_problem(with_params(spec, points[0])).truth
    if _exact(first_truth) is None:
        return None
    log_z = np.array([_exact(first_truth)] + [exact_log_z(spec, p) for p in points[1:]])
    i = int(np.argmax(log_z))
    x0 = space.to_log(points[i])
    box = space.log_bounds()
    step = np.array([a.log_step for a in space.axes])
    local = np.column_stack([np.maximum(x0 - step, box[:, 0]), np.minimum(x0 + step, box[:, 1])])

    def negative(theta):
        return -exact_log_z(spec, space.to_params(theta))

    res = minimize(negative, x0, method="Nelder-Mead", bounds=local,
                   options={"xatol": 1e-7, "fatol": 1e-11, "maxiter": 400})
    best_x, best_f = (res.x, -res.fun) if -res.fun >= log_z[i] else (x0, log_z[i])
    return {"kind": "exact", "space": space.to_dict(), "points": points,
            "log_z": log_z.tolist(), "optimum": space.to_params(best_x),
            "optimum_log_z": float(best_f),
            "source": f"{first_truth.source}; optimum by bounded Nelder–Mead on the log-parameters"}


def exact_log_posterior(spec: str, space: TuneSpace, num: int) -> tuple[np.ndarray, np.ndarray]:
    """(parameter grid, log density of the log-parameter) on `num` log-spaced points.

    Posterior under the uniform prior on the log box: p(log θ | y) ∝ Z(θ), normalised by the
    trapezoid rule in log θ. One-dimensional spaces of problems with exact truth only.
    """
    if len(space.axes) != 1:
        raise InputError(FIELD, f"the exact posterior needs one parameter, got {space.names}")
    axis = space.axes[0]
    grid = np.geomspace(axis.low, axis.high, num)
    log_z = [exact_log_z(spec, {axis.name: v}) for v in grid]
    if None in log_z:
        raise InputError("problem", f"{spec!r} has no exact truth",
                         "use a family with an oracle, e.g. linear1d with scale")
    log_z = np.array(log_z)
    return grid, log_z - logsumexp(log_z, b=trapezoid_weights(np.log(grid)))


def trapezoid_weights(x: np.ndarray) -> np.ndarray:
    h = np.diff(x)
    return np.concatenate([[h[0]], h[:-1] + h[1:], [h[-1]]]) / 2


def posterior_summary(log_grid: np.ndarray, log_density: np.ndarray,
                      probs=(0.1, 0.5, 0.9)) -> dict[str, Any]:
    """Mean, sd and quantiles of a 1-D density given on a grid (trapezoid rule, linear CDF)."""
    x = np.asarray(log_grid, float)
    p = np.exp(np.asarray(log_density, float) - np.max(log_density))
    p /= np.sum(trapezoid_weights(x) * p)
    cdf = np.concatenate([[0.0], np.cumsum(np.diff(x) * (p[1:] + p[:-1]) / 2)])
    w = trapezoid_weights(x) * p
    mean = float(np.sum(w * x))
    return {"mean": mean, "sd": float(np.sqrt(np.sum(w * (x - mean) ** 2))),
            "quantiles": {float(q): float(np.interp(q, cdf, x)) for q in probs}}
