"""Exact ground truth by one-dimensional quadrature in log space (MATH.md §3a–b).

Both exact families reduce to a one-factor integral

    P = ∫ φ(u) ∏_i Φ(a_i u) du,
    one-factor orthant (A.63):    a_i = d_i / sqrt(1 - d_i^2)
    linear kernel, one feature:   a_i = sqrt(scale) * y_i * x_i          (A.66)

and a test probability is J*_j = ∫ φ(u) Φ(b_j u) ∏_i Φ(a_i u) du / P with b_j = sqrt(scale) x*_j.
The log integrand g(u) = log φ(u) + Σ log Φ(a_i u) is concave, so: find its mode (bounded Brent),
bracket the region where g > max g - 75, and integrate exp(g - max g) with Gauss–Legendre,
doubling the nodes until two rules agree to `rtol`. Values like log P ≈ -460 are normal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, logsumexp

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
_DROP = 75.0  # nats below the maximum where the bracket ends: e^-75 ~ 3e-33


@dataclass(frozen=True)
class OneFactorResult:
    log_integral: float
    test_probabilities: np.ndarray
    nodes: int
    error_estimate: float  # |difference| between the last two rules (log integral)


def _log_integrand(a: np.ndarray, u: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """g(u) for a vector of u, in blocks so that memory stays at chunk * len(a)."""
    u = np.atleast_1d(np.asarray(u, dtype=float))
    out = np.empty(len(u))
    for s in range(0, len(u), chunk):
        uu = u[s : s + chunk]
        out[s : s + chunk] = -0.5 * uu**2 - _LOG_SQRT_2PI + log_ndtr(np.outer(uu, a)).sum(1)
    return out


def _bracket(g, mode: float, gmax: float) -> tuple[float, float]:
    """Points on each side of the mode where g has dropped by more than _DROP nats."""
    ends = []
    for sign in (-1.0, 1.0):
        step = 0.5
        while g(mode + sign * step)[0] > gmax - _DROP:
            step *= 2.0
        ends.append(mode + sign * step)
    return ends[0], ends[1]


def one_factor_integral(
    a, b=None, *, rtol: float = 1e-13, start_nodes: int = 128, max_nodes: int = 1 << 15
) -> OneFactorResult:
    """log ∫ φ(u) ∏ Φ(a_i u) du and the test probabilities for the slopes b (see module doc)."""
    a = np.asarray(a, dtype=float)
    b = np.empty(0) if b is None else np.asarray(b, dtype=float)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("one-factor slopes must be finite")

    def g(u):
        return _log_integrand(a, u)

    # g(u) <= log φ(u) and g(0) = log φ(0) - N log 2, so the mode lies within ±B
    bound = np.sqrt(2.0 * (len(a) * np.log(2.0) + 50.0))
    res = minimize_scalar(lambda u: -g(u)[0], bounds=(-bound, bound), method="bounded",
                          options={"xatol": 1e-10})
    mode, gmax = float(res.x), float(g(res.x)[0])
    lo, hi = _bracket(g, mode, gmax)

    previous = None
    nodes = start_nodes
    while True:
        x, w = np.polynomial.legendre.leggauss(nodes)
        u = 0.5 * (hi - lo) * x + 0.5 * (hi + lo)
        logw = np.log(0.5 * (hi - lo) * w)
        gu = g(u) + logw
        log_p = float(logsumexp(gu))
        if len(b):
            log_num = logsumexp(gu[None, :] + log_ndtr(np.outer(b, u)), axis=1)
            probs = np.exp(log_num - log_p)
        else:
            probs = np.empty(0)
        current = np.concatenate([[log_p], probs])
        if previous is not None:
            err = float(np.max(np.abs(current - previous)))
            if err <= rtol * max(1.0, abs(log_p)) or nodes >= max_nodes:
                if err > 1e-8:
                    raise ArithmeticError(f"one-factor quadrature did not converge (err {err:g})")
                return OneFactorResult(log_p, np.clip(probs, 0.0, 1.0), nodes, err)
        previous = current
        nodes *= 2
