"""Exact ground truth by one-dimensional quadrature in log space (docs/math.md §3a–b).

Both exact families reduce to a one-factor integral

    P = ∫ φ(u) ∏_i Φ(a_i u) du,
    one-factor orthant (A.63):    a_i = d_i / sqrt(1 - d_i^2)
    linear kernel, one feature:   a_i = sqrt(scale) * y_i * x_i          (A.66)

and a test probability is J*_j = ∫ φ(u) Φ(b_j u) ∏_i Φ(a_i u) du / P with b_j = sqrt(scale) x*_j.
The log integrand g(u) = log φ(u) + Σ log Φ(a_i u) is concave, so: find its mode (bounded Brent),
bracket the region where g > max g - 75, and integrate exp(g - max g) with Gauss–Legendre,
doubling the nodes until two rules agree to `rtol`. Values like log P ≈ -460 are normal.
Every factor Φ(a_i u) turns over at u = 0 on the scale 1/|a_i| (|a_i| is large when |d_i| is
close to 1), so the rule is composite: panels split at 0 and graded geometrically towards it
down to the width 1/max|a_i|, the same number of nodes on each panel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, logsumexp, roots_hermitenorm, roots_legendre

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
_DROP = 75.0  # nats below the maximum where the bracket ends: e^-75 ~ 3e-33
_BLOCK = 1 << 21  # elements of a (nodes x N) temporary: 16 MB, whatever N
_LARGE_N = 4096   # from here on the integrands are sharply peaked (width ~ N^-1/2)


def orthant_closed_form(S: np.ndarray) -> float:
    """P(v >= 0) for v ~ N(0, S), len(S) <= 3, by the arcsine formulas of docs/math.md §2 on
    the correlations of S: 1/2; 1/4 + asin(r)/(2π); 1/8 + (asin r12 + asin r13 + asin r23)/(4π)."""
    S = np.asarray(S, float)
    n = len(S)
    if n > 3:
        raise ValueError(f"closed forms exist for at most 3 variables, got {n}")
    d = np.sqrt(np.diag(S))
    r = S / np.outer(d, d)
    if n == 1:
        return 0.5
    if n == 2:
        return 0.25 + np.arcsin(r[0, 1]) / (2 * np.pi)
    return 0.125 + (np.arcsin(r[0, 1]) + np.arcsin(r[0, 2]) + np.arcsin(r[1, 2])) / (4 * np.pi)


def _rows(n: int) -> int:
    """Quadrature nodes per block so that a block of log Φ values stays near _BLOCK elements."""
    return max(1, _BLOCK // max(n, 1))


@dataclass(frozen=True)
class OneFactorResult:
    log_integral: float
    test_probabilities: np.ndarray
    nodes: int
    error_estimate: float  # |difference| between the last two rules (log integral)


def _log_integrand(a: np.ndarray, u: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """g(u) for a vector of u, in blocks of at most `chunk` nodes and _BLOCK elements, so
    that memory stays bounded at any N (each row's sum is the same whatever the block)."""
    u = np.atleast_1d(np.asarray(u, dtype=float))
    chunk = min(chunk, _rows(len(a)))
    out = np.empty(len(u))
    for s in range(0, len(u), chunk):
        uu = u[s : s + chunk]
        out[s : s + chunk] = -0.5 * uu**2 - _LOG_SQRT_2PI + log_ndtr(np.outer(uu, a)).sum(1)
    return out


def _curvature(a: np.ndarray, u: float) -> float:
    """-g''(u) = 1 + Σ a_i² m_i (t_i + m_i), t_i = a_i u, m_i = φ(t_i)/Φ(t_i) (O(N))."""
    t = a * u
    m = np.exp(-0.5 * t**2 - _LOG_SQRT_2PI - log_ndtr(t))
    return 1.0 + float(np.sum(a * a * m * (t + m)))


def _bracket(g, mode: float, gmax: float, start: float = 0.5) -> tuple[float, float]:
    """Points on each side of the mode where g has dropped by more than _DROP nats.

    g is concave, so beyond such a point it keeps falling at least as fast: the mass outside
    the bracket is below e^-_DROP of the peak's."""
    ends = []
    for sign in (-1.0, 1.0):
        step = start
        while g(mode + sign * step)[0] > gmax - _DROP:
            step *= 2.0
        ends.append(mode + sign * step)
    return ends[0], ends[1]


@lru_cache(maxsize=16)
def _legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [-1, 1], cached (numpy's leggauss is O(n^3))."""
    x, w = roots_legendre(n)
    return x, w


def _panel_edges(lo: float, hi: float, amax: float) -> np.ndarray:
    """Breakpoints of the composite rule on [lo, hi]: 0 and ±w·2^k, w = 1/amax, if 0 is inside."""
    edges = [lo, hi]
    if lo < 0.0 < hi:
        edges.append(0.0)
        # innermost width: the turn-over scale, but no finer than rounding can see
        width = max(1.0 / amax if amax > 0 else np.inf, 1e-15 * (hi - lo))
        for side, end in ((-1.0, -lo), (1.0, hi)):
            w = width
            while 2.0 * w < end:
                edges.append(side * w)
                w *= 2.0
    return np.unique(edges)


def one_factor_integral(
    a, b=None, *, rtol: float = 1e-13, start_nodes: int = 32, max_nodes: int = 1 << 10
) -> OneFactorResult:
    """log ∫ φ(u) ∏ Φ(a_i u) du and the test probabilities for the slopes b (see module doc).

    start_nodes and max_nodes count the Gauss–Legendre nodes on each panel.
    """
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
    # from N = _LARGE_N on the peak's width 1/sqrt(-g'') is far below 0.5: bracket from 20
    # widths (a drop of ~200 nats for a Gaussian peak) so the panels fit the peak
    start = 0.5
    if len(a) >= _LARGE_N:
        start = min(start, 20.0 / np.sqrt(_curvature(a, mode)))
    lo, hi = _bracket(g, mode, gmax, start)
    amax = float(np.max(np.abs(np.concatenate([a, b])), initial=0.0))
    edges = _panel_edges(lo, hi, amax)
    half, mid = 0.5 * np.diff(edges), 0.5 * (edges[1:] + edges[:-1])

    previous = None
    nodes = start_nodes
    while True:
        x, w = _legendre(nodes)
        u = (half[:, None] * x + mid[:, None]).ravel()
        logw = np.log(half[:, None] * w).ravel()
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
                return OneFactorResult(log_p, np.clip(probs, 0.0, 1.0), len(u), err)
        previous = current
        nodes *= 2


@dataclass(frozen=True)
class LowRankResult:
    log_integral: float
    test_probabilities: np.ndarray
    nodes: int             # Gauss–Hermite nodes per dimension
    error_estimate: float  # max |difference| to the rule with half the nodes (log Z and J*)
    mode: np.ndarray


def _mode_and_curvature(A: np.ndarray, tol: float = 1e-12, max_iter: int = 100):
    """Newton for the mode of g(u) = -|u|^2/2 + Σ log Φ(a_i . u); returns (û, I + Σ w a a^T)."""
    d = A.shape[1]
    u = np.zeros(d)
    for _ in range(max_iter):
        t = A @ u
        m = np.exp(-0.5 * t**2 - _LOG_SQRT_2PI - log_ndtr(t))   # φ(t) / Φ(t), stable
        w = m * (t + m)
        grad = -u + A.T @ m
        H = np.eye(d) + (A * w[:, None]).T @ A
        step = np.linalg.solve(H, grad)
        u = u + step
        if np.max(np.abs(step)) < tol:
            break
    t = A @ u
    m = np.exp(-0.5 * t**2 - _LOG_SQRT_2PI - log_ndtr(t))
    return u, np.eye(d) + (A * (m * (t + m))[:, None]).T @ A


@lru_cache(maxsize=16)
def _hermite_log(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss–Hermite nodes and log weights (weight e^{-z^2/2}), cached.

    scipy's roots_hermitenorm stays accurate for hundreds of nodes, where numpy's hermegauss
    returns NaN or zero weights (numpy 2.4, from ~372 nodes). Weights that underflow belong to
    nodes far in the tail (|z| > 37) and get log weight -inf: they contribute nothing.
    """
    x, w = roots_hermitenorm(nodes)
    with np.errstate(divide="ignore"):
        return x, np.log(w)


def _gauss_hermite_log(A, B, mode, C, nodes, chunk=1 << 14):
    """log ∫ φ_d(u) Π Φ(a_i.u) du and the log numerators for the rows of B, on a tensor rule.

    Quadrature nodes go in blocks of at most `chunk` and _BLOCK elements of U A^T (memory
    bounded at any N)."""
    d = A.shape[1]
    chunk = min(chunk, _rows(len(A)))
    x, lw = _hermite_log(nodes)
    Zq = np.stack([g.ravel() for g in np.meshgrid(*([x] * d), indexing="ij")], axis=1)
    logw = sum(g.ravel() for g in np.meshgrid(*([lw] * d), indexing="ij"))
    log_det_c = float(np.sum(np.log(np.abs(np.diag(C)))))
    G = np.empty(len(Zq))
    num = np.empty((len(B), len(Zq)))
    for s in range(0, len(Zq), chunk):
        U = mode + Zq[s : s + chunk] @ C.T
        z2 = np.sum(Zq[s : s + chunk] ** 2, axis=1)
        G[s : s + chunk] = (logw[s : s + chunk] + 0.5 * z2 - 0.5 * np.sum(U**2, axis=1)
                            - d * _LOG_SQRT_2PI + log_ndtr(U @ A.T).sum(axis=1))
        if len(B):
            num[:, s : s + chunk] = log_ndtr(B @ U.T)
    log_z = float(logsumexp(G)) + log_det_c
    log_num = logsumexp(G[None, :] + num, axis=1) + log_det_c if len(B) else np.empty(0)
    return log_z, np.exp(log_num - log_z)


def low_rank_integral(A, B=None, *, nodes: int | None = None, rtol: float = 1e-11
                      ) -> LowRankResult:
    """log ∫ φ_d(u) Π_i Φ(a_i . u) du for d = 1..3 and J*_j = ∫ φ_d Φ(b_j . u) Π(...) / Z.

    docs/math.md §3c: Laplace-centred tensor Gauss–Hermite rule. u = û + C z with C C^T the inverse
    curvature at the mode û (found by Newton); the integrand is a log-concave function times
    the probabilists' Gaussian weight in z. The rule with half the nodes gives the error
    estimate; the nodes double (up to a cap) until it is below rtol (few data points make the
    integrand far from Gaussian). For a linear kernel K = β X X^T: a_i = sqrt(β) y_i x_i,
    b_j = sqrt(β) x*_j. From N = _LARGE_N on, the integrand in z is Gaussian up to terms of
    order N^{-1/2} (Bernstein–von Mises), so the rule starts small ({1: 32, 2: 16, 3: 12}
    nodes) and the same doubling check certifies it; the cost is O(N · nodes^d).
    A non-finite result raises ArithmeticError (never returned).
    """
    A = np.atleast_2d(np.asarray(A, dtype=float))
    d = A.shape[1]
    if not 1 <= d <= 3:
        raise ValueError("the tensor rule is for 1 to 3 dimensions")
    B = np.empty((0, d)) if B is None else np.atleast_2d(np.asarray(B, dtype=float))
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        raise ValueError("low-rank slopes must be finite")
    start = {1: 32, 2: 16, 3: 12} if len(A) >= _LARGE_N else {1: 200, 2: 64, 3: 40}
    nodes = nodes or start[d]
    cap = max(nodes, {1: 3200, 2: 512, 3: 160}[d])
    mode, H = _mode_and_curvature(A)
    C = np.linalg.cholesky(np.linalg.inv(H))
    coarse = _gauss_hermite_log(A, B, mode, C, nodes // 2)
    while True:
        log_z, probs = _gauss_hermite_log(A, B, mode, C, nodes)
        if not (np.isfinite(log_z) and np.all(np.isfinite(probs))):
            raise ArithmeticError(f"low-rank oracle: non-finite result with {nodes}^{d} nodes")
        err = float(max(abs(log_z - coarse[0]),
                        np.max(np.abs(probs - coarse[1]), initial=0.0)))
        if err <= rtol * max(1.0, abs(log_z)) or 2 * nodes > cap:
            return LowRankResult(log_z, np.clip(probs, 0.0, 1.0), nodes, err, mode)
        coarse, nodes = (log_z, probs), 2 * nodes
