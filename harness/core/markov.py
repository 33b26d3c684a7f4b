"""Exact probit GPC with an Ornstein–Uhlenbeck latent: a grid filter (docs/math.md §3e).

With the exponential (Matérn-1/2) kernel k(x, x') = β exp(−|x − x'|/α) on sorted 1-D inputs the
latent is Markov. In the standardised variable u = f/√β:

    u_1 ~ N(0, 1),   u_{i+1} | u_i ~ N(ρ_i u_i, s_i²),   ρ_i = exp(−(x_{i+1} − x_i)/α),
    s_i² = 1 − ρ_i²,   p(y_i | u_i) = Φ(y_i √β u_i),

and Z = E[∏ Φ(y_i √β u_i)] is the normaliser of a hidden-Markov filter with continuous state

    F_1(u) = φ(u) Φ(a_1 u),   F_{i+1}(u) = Φ(a_{i+1} u) ∫ N(u; ρ_i v, s_i²) F_i(v) dv,
    Z = ∫ F_N(u) du,   a_i = √β y_i.

Quadrature: an equispaced grid u_k = −L + k h on [−L, L] and the trapezoid rule for every
integral. A Gaussian of width s integrated on a grid of step h has an aliasing error of order
exp(−2π² s²/h²) (spectral): at h = s/2 it is ~1e-34, so the rule is exact to rounding as long as
h is a fraction of the narrowest transition width s_min and of the likelihood's scale 1/√β.
The transition matrix is banded (|u_k − ρ u_l| ≤ 10 s: the dropped mass is below e^{−50}) and
recomputed only when ρ_i changes (once for a regular design). Each F_i is rescaled to unit
mass and the log scales are summed, so log Z ≈ −10⁵ is as accurate as log Z ≈ −1 (docs/math.md
"Numerical traps": successive normalisation).

Test probabilities at a training location j (p(y* = +1 | y) with f* = f_j): forward–backward.
The backward message B_j(u) = p(y_{j+1:N} | u_j = u) runs from B_N = 1 by
B_i(v) = ∫ N(u; ρ_i v, s_i²) Φ(a_{i+1} u) B_{i+1}(u) du (the transposed band, rescaled to max 1
at every step), the posterior of u_j is ∝ F_j B_j, and J*_j = ∫ F_j B_j Φ(√β u) / ∫ F_j B_j. The
backward pass keeps B_j at the test locations only (n_test × G numbers), the forward pass
combines them: all test points cost O(N G band) together, not one filter each.

`ou_probit_oracle` runs everything on two grids (step h and h/2, half-width L and L + 2) and
raises ArithmeticError unless log Z and every J* agree to `tol` (the returned error estimate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.special import log_ndtr

_WIDTH = 10.0          # the band keeps |u_k - ρ u_l| <= _WIDTH s: dropped mass < e^-50
MAX_GRID = 40_001      # nodes of the finer grid; beyond it the band table alone is gigabytes
MAX_STORE = 1 << 27    # n_test * nodes numbers kept for the test locations (1 GB)
MAX_WORK = 5e10        # N * nodes * band of the finer rule: a few minutes of filter passes


@njit(cache=True, nogil=True)
def _band(u0, h, G, rho, s, lo, cnt, w):
    """Row k of the transition: w[k, m] = h N(u_k; ρ u_l, s²) for l = lo[k] + m < lo[k] + cnt[k]."""
    nb = w.shape[1]
    norm = h / (s * np.sqrt(2.0 * np.pi))
    for k in range(G):
        uk = u0 + k * h
        a = int(np.ceil(((uk - _WIDTH * s) / rho - u0) / h))
        b = int(np.floor(((uk + _WIDTH * s) / rho - u0) / h))
        a = max(a, 0)
        b = min(b, G - 1, a + nb - 1)
        lo[k] = a
        cnt[k] = max(b - a + 1, 0)
        for m in range(cnt[k]):
            z = (uk - rho * (u0 + (a + m) * h)) / s
            w[k, m] = norm * np.exp(-0.5 * z * z)


@njit(cache=True, nogil=True)
def _passes(u0, h, G, nb, prior, lik, label, rho, s, test_at, test_lik):
    """Backward pass (messages kept at test_at, ascending), then the forward filter.

    Returns (log Z, J* at test_at). lik[c] = Φ(±√β u) at the nodes, label[i] in {0, 1}.
    """
    N = label.shape[0]
    T = test_at.shape[0]
    lo = np.empty(G, np.int64)
    cnt = np.empty(G, np.int64)
    w = np.zeros((G, nb))
    store = np.empty((T, G))
    # ---- backward: B_{N-1} = 1, B_i = T_i^T (lik_{i+1} * B_{i+1}) -------------------------
    B = np.ones(G)
    g = np.empty(G)
    t = T - 1
    last = -1.0
    for i in range(N - 1, -1, -1):
        if t >= 0 and test_at[t] == i:
            store[t] = B
            t -= 1
        if i == 0:
            break
        r = rho[i - 1]
        if r != last:
            _band(u0, h, G, r, s[i - 1], lo, cnt, w)
            last = r
        c = label[i]
        for k in range(G):
            g[k] = lik[c, k] * B[k]
        B[:] = 0.0
        for k in range(G):
            gk = g[k]
            if gk != 0.0:
                a = lo[k]
                for m in range(cnt[k]):
                    B[a + m] += w[k, m] * gk
        top = B.max()
        if not top > 0.0:
            return np.nan, np.full(T, np.nan)
        B /= top
    # ---- forward: F_0 = φ lik_0, F_{i+1} = lik_{i+1} * T_i F_i, each rescaled to mass 1 ------
    probs = np.empty(T)
    F = np.empty(G)
    Q = np.empty(G)
    c = label[0]
    for k in range(G):
        F[k] = prior[k] * lik[c, k]
    log_z = 0.0
    t = 0
    last = -1.0
    for i in range(N):
        if i > 0:
            r = rho[i - 1]
            if r != last:
                _band(u0, h, G, r, s[i - 1], lo, cnt, w)
                last = r
            c = label[i]
            for k in range(G):
                acc = 0.0
                a = lo[k]
                for m in range(cnt[k]):
                    acc += w[k, m] * F[a + m]
                Q[k] = acc * lik[c, k]
            F[:] = Q
        mass = h * F.sum()
        if not mass > 0.0:
            return -np.inf, np.full(T, np.nan)
        log_z += np.log(mass)
        F /= mass
        if t < T and test_at[t] == i:
            num = 0.0
            den = 0.0
            for k in range(G):
                pk = F[k] * store[t, k]
                den += pk
                num += pk * test_lik[k]
            probs[t] = num / den
            t += 1
    return log_z, probs


def ou_probit_filter(rho, beta: float, y, test_at=(), *, step: float, half_width: float
                     ) -> tuple[float, np.ndarray]:
    """(log Z, J*) on one grid of step `step` on [−half_width, half_width] (see module doc).

    rho: the N − 1 neighbour correlations ρ_i in (0, 1); y: N labels ±1; test_at: ascending
    distinct indices of the training locations whose J* = p(y* = +1 | y, x* = x_j) is wanted.
    """
    rho = np.asarray(rho, dtype=float)
    y = np.asarray(y)
    test_at = np.asarray(test_at, dtype=np.int64)
    n = len(y)
    if rho.shape != (n - 1,) or not np.all((rho > 0) & (rho < 1)):
        raise ValueError("need N - 1 neighbour correlations in (0, 1)")
    if len(test_at) and (np.any(np.diff(test_at) <= 0) or test_at[0] < 0 or test_at[-1] >= n):
        raise ValueError("test_at must be ascending distinct indices of the training points")
    s = np.sqrt(-np.expm1(2.0 * np.log(rho))) if n > 1 else np.ones(0)   # 1 - ρ², no cancellation
    G = int(np.floor(2.0 * half_width / step)) + 1
    u0 = -0.5 * (G - 1) * step
    u = u0 + step * np.arange(G)
    smax = float(s.max()) if n > 1 else 0.0
    rmin = float(rho.min()) if n > 1 else 1.0
    nb = int(min(G, np.ceil(2.0 * _WIDTH * smax / (rmin * step)) + 3))
    if G > MAX_GRID or G * max(nb, 1) > 4 * MAX_STORE or len(test_at) * G > MAX_STORE:
        raise MemoryError(f"a grid of {G} nodes (band {nb}, {len(test_at)} test locations) "
                          "is beyond this oracle's memory bounds")
    root = np.sqrt(beta)
    lik = np.exp(np.stack([log_ndtr(-root * u), log_ndtr(root * u)]))
    prior = np.exp(-0.5 * u * u - 0.5 * np.log(2.0 * np.pi))
    label = (y > 0).astype(np.int8)
    log_z, probs = _passes(u0, step, G, max(nb, 1), prior, lik, label, rho, s, test_at, lik[1])
    return float(log_z), probs


@dataclass(frozen=True)
class MarkovResult:
    log_integral: float
    test_probabilities: np.ndarray
    nodes: tuple[int, int]        # grid nodes of the two rules
    steps: tuple[float, float]    # their grid steps h
    error_estimate: float         # max |difference| of log Z and of the J* between the rules


def grid_step(rho, beta: float) -> float:
    """The coarse rule's step: half the narrowest transition width s_min = sqrt(1 − max ρ²),
    and at most half of 1/√β (the likelihood's scale) and 1/2 (the prior's)."""
    rho = np.asarray(rho, dtype=float)
    smin = float(np.sqrt(-np.expm1(2.0 * np.log(rho.max())))) if rho.size else 1.0
    return 0.5 * min(smin, 1.0 / np.sqrt(beta), 1.0)


def grid_nodes(rho, beta: float, half_width: float = 10.0) -> int:
    """Nodes of the finer of the two rules (for memory and time checks before any work)."""
    return int(np.floor(2.0 * (half_width + 2.0) / (0.5 * grid_step(rho, beta)))) + 1


def work(rho, beta: float, half_width: float = 10.0) -> float:
    """N * nodes * band of the finer rule: the multiply-adds of one pass (about 1e9 a second)."""
    rho = np.asarray(rho, dtype=float)
    if not rho.size:
        return 0.0
    nodes = grid_nodes(rho, beta, half_width)
    smax = float(np.sqrt(-np.expm1(2.0 * np.log(rho.min()))))
    band = min(nodes, 2.0 * _WIDTH * smax / (rho.min() * 0.5 * grid_step(rho, beta)) + 3)
    return float((rho.size + 1) * nodes * band)


def ou_probit_oracle(rho, beta: float, y, test_at=(), *, tol: float = 1e-9,
                     half_width: float = 10.0) -> MarkovResult:
    """Exact log Z and J* of probit GPC with an OU latent (docs/math.md §3e), certified.

    Two rules: step h = grid_step(ρ, β) on [−L, L] and h/2 on [−(L + 2), L + 2], L = half_width.
    The finer rule is returned; ArithmeticError unless both agree to `tol` (absolute, on log Z
    relative to max(1, |log Z|), and on every J*). Cost O(N G band) per rule, G ~ 2L/h.
    """
    h = grid_step(rho, beta)
    coarse = ou_probit_filter(rho, beta, y, test_at, step=h, half_width=half_width)
    fine = ou_probit_filter(rho, beta, y, test_at, step=0.5 * h, half_width=half_width + 2.0)
    for log_z, probs in (coarse, fine):
        if not (np.isfinite(log_z) and np.all(np.isfinite(probs))):
            raise ArithmeticError("OU filter: non-finite result (the likelihood underflowed "
                                  "on the whole grid)")
    err_z = abs(fine[0] - coarse[0])
    err_p = float(np.max(np.abs(fine[1] - coarse[1]), initial=0.0))
    if err_z > tol * max(1.0, abs(fine[0])) or err_p > tol:
        raise ArithmeticError(f"OU filter: grids disagree by {err_z:.2g} in log Z and "
                              f"{err_p:.2g} in J* (tolerance {tol:g})")
    G1 = int(np.floor(2.0 * half_width / h)) + 1
    G2 = int(np.floor(2.0 * (half_width + 2.0) / (0.5 * h))) + 1
    return MarkovResult(fine[0], np.clip(fine[1], 0.0, 1.0), (G1, G2), (h, 0.5 * h),
                        max(err_z, err_p))
