"""Botev's minimax saddle point ∇ψ(x, μ) = 0 by Newton's method on its profile (docs/math.md §7).

With L the lower Cholesky factor (R = L Lᵀ), D = diag L, L̃ = D⁻¹ L - I (strictly lower) and
x_N = μ_N = 0, ψ(x; μ) = Σ_j [μ_j²/2 - x_j μ_j + log Φ(s_j)], s = L̃ x + μ. The 2(N - 1)
equations (components 1..N-1, written on length-N vectors whose last entry is dropped) are

    g_x = -μ + L̃ᵀ P = 0,   g_μ = μ - x + P = 0,   P = φ(s) / Φ(s).

The solver maximises the profile in x, with y = D⁻¹ L x, G(r) = r + P(r) the truncated mean,
r = G⁻¹(a) and q = P'/(1 + P') < 0 (the derivation: docs/math.md §7):

    φ(x) = min_μ ψ(x; μ) = -|x|²/2 + Σ_{j<N} κ(y_j) + log Φ(y_N),
    κ(a) = log Φ(r) + P(r)²/2 = log(erfcx(-r/√2)/2) - r a + a²/2,
    ∇φ = -x + Bᵀ P,   -∇²φ = I + Bᵀ W B,   B = D⁻¹ L,   W = diag(|q_1|, ..., |q_{N-1}|, |P'_N|)

(two forms of κ, each free of cancellation on its side of r = 0). φ is concave on the cone
(L x)_{<N} > 0 and tends to -∞ at its boundary, so the saddle point is its interior maximiser.
Newton's method with Armijo backtracking on φ starts from the mean path (`mean_path`) scaled
by the c > 0 that maximises φ(c x); a step that would leave the cone is shortened like any
other, and a full step that gains more than the quadratic model predicts is doubled while φ
rises (near the boundary, where φ ~ log of the distance, a full step only doubles the
distance). Steps, backtracking and the stopping rule (the Newton decrement λ² = ∇φᵀ δx, twice
the gain left in φ, at most tol²; or max |∇ψ| <= tol) are affine invariant, so the solver does
not care how the coordinates are scaled, which nearly singular covariances need.

The Newton system is solved by conjugate gradients (an inexact Newton step: the error in the
H-norm at most min(0.1, λ^½) of the step, estimated from CG's own energy increments, not from
the residual, whose size depends on the scaling), whose products need only L v and Lᵀ u:
O(N²) each, no N x N matrix besides L. `linear_solver="cholesky"` forms I + BᵀWB and
factorises it (O(N³) per step, a reference that fails on nearly singular covariances). How
the solver behaves on hard cases: docs/studies.md, "Saddle-point solver".

Everything the solver reads from the factor goes through `TriangularFactor` (the diagonal,
products with L and Lᵀ, and for the Cholesky reference the weighted Gram matrix Lᵀ diag(w) L),
so a structured (e.g. tile-low-rank) factor can supply the same operations.
`solve_saddle_point_hybr` (MINPACK hybrj on the dense Jacobian of `saddle_point_system`) is a
reference for tests and benchmarks; `SaddleSystem.newton_step` is the Newton step of the
joint equations, of which the profile's is the case g_μ = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.linalg.blas import dtrmv
from scipy.optimize import minimize_scalar, root
from scipy.special import erfcx, log_ndtr

from harness.core.deadline import check_deadline
from harness.core.progress import advance, phase
from harness.core.truncnorm import inverse_mills

LINEAR_SOLVERS = ("cg", "cholesky")
_SERIES_BELOW = -50.0   # s below this: 1 + dP/ds from its asymptotic series
_CF_BELOW = -3.0        # r below this: G(r) from a continued fraction of _CF_TERMS terms
_CF_TERMS = 60
_SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi)
_SQRT_HALF = np.sqrt(0.5)
_EPS = float(np.finfo(float).eps)
_BLOCK = 256            # rows of L per pass (Gram matrix, squares, mean path)
_MAX_HALVINGS = 60      # line search: give up below a step of 2^-60
_CG_MAX_ITER = 1000
_CG_DELAY = 3          # conjugate gradients: increments in the error estimate
_ROOT_MAX_ITER = 100


class TriangularFactor:
    """What the saddle-point solver needs from a lower factor L, for a dense array.

    The protocol: `n`, `diag` (diag L), `lower(v)` = L v, `upper(u)` = Lᵀ u, `rows(i, j)` =
    L[i:j, :j] (the starting point's forward pass; or instead `mean_path(value)`, that pass
    itself), and only for linear_solver="cholesky" `weighted_gram(w)` = Lᵀ diag(w) L. Any
    object providing them (harness.core.tlr_ops.TileLowRankOperator for a tile-low-rank
    factor, harness.core.vecchia's sparse Vecchia factor) can be passed to
    `solve_saddle_point` instead of an array.
    """

    def __init__(self, L: np.ndarray):
        L = np.asarray(L, dtype=float)
        if not (L.flags.c_contiguous or L.flags.f_contiguous):
            L = np.ascontiguousarray(L)
        self.L = L
        self.n = len(L)
        self.diag = np.ascontiguousarray(np.diag(L))
        # BLAS wants column-major storage: a C-ordered L is handed over as Lᵀ (upper), no copy
        self._f, self._lower = (L, 1) if L.flags.f_contiguous else (L.T, 0)

    def lower(self, v: np.ndarray) -> np.ndarray:
        """L v (a new vector)."""
        return dtrmv(self._f, v, lower=self._lower, trans=1 - self._lower)

    def upper(self, u: np.ndarray) -> np.ndarray:
        """Lᵀ u (a new vector)."""
        return dtrmv(self._f, u, lower=self._lower, trans=self._lower)

    def rows(self, i: int, j: int) -> np.ndarray:
        """L[i:j, :j] (a view)."""
        return self.L[i:j, :j]

    def weighted_gram(self, w: np.ndarray) -> np.ndarray:
        """Lᵀ diag(w) L with its lower triangle filled (column blocks of GEMMs; O(N³))."""
        L, n = self.L, self.n
        out = np.empty((n, n))
        for j0 in range(0, n, _BLOCK):
            j1 = min(n, j0 + _BLOCK)
            # (Lᵀ W L)[j0:, j0:j1] = L[j0:, j0:]ᵀ (W L[j0:, j0:j1]) since L is lower
            np.matmul(L[j0:, j0:].T, w[j0:, None] * L[j0:, j0:j1], out=out[j0:, j0:j1])
        return out


def mills(s: np.ndarray) -> np.ndarray:
    """P = φ(s)/Φ(s) = √(2/π) / erfcx(-s/√2), to a few eps at every s (0 once φ underflows)."""
    return _SQRT_2_OVER_PI / erfcx(s * -_SQRT_HALF)


def mills_and_slope(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, 1 + P') for P = φ(s)/Φ(s), P' = dP/ds = -P (P + s) ∈ (-1, 0), accurate in the tails.

    1 - P (P + s) cancels as s -> -∞ (relative error ~ s⁴ eps); there, with t = -s,
    P = t + 1/t - 2/t³ + 10/t⁵ - 74/t⁷ + 706/t⁹ - ..., so 1 + P' = 1/t² - 6/t⁴ + 50/t⁶ - 518/t⁸
    + O(t⁻¹⁰) replaces it below `_SERIES_BELOW` (both agree to ~1e-10 there).
    """
    P = mills(s)
    slope1 = 1.0 - P * (P + s)
    far = s < _SERIES_BELOW
    if np.any(far):
        a = 1.0 / (s[far] * s[far])
        slope1[far] = a * (1.0 - a * (6.0 - a * (50.0 - 518.0 * a)))
    return P, np.clip(slope1, np.finfo(float).tiny, 1.0)


def truncated_mean(r: np.ndarray) -> np.ndarray:
    """G(r) = r + P(r) = E[Y | Y > 0] for Y ~ N(r, 1): positive, increasing and convex (slope
    1 + P' ∈ (0, 1)). r + P(r) cancels for r < 0 (relative error ~ eps r² measured); below
    _CF_BELOW it comes from Laplace's continued fraction instead, with t = -r:
    G = 1/(t + 2/(t + 3/(t + ...))), _CF_TERMS terms (to eps from t = 3 on, against 50 digits)."""
    r = np.asarray(r, dtype=float)
    G = r + mills(r)
    far = r < _CF_BELOW
    if np.any(far):
        t = -r[far]
        v = t.copy()
        for k in range(_CF_TERMS, 1, -1):
            v = t + k / v
        G[far] = 1.0 / v
    return G


def truncated_mean_inverse(a: np.ndarray) -> np.ndarray:
    """r with G(r) = a, for a > 0 (G = truncated_mean). Newton from r = a - 1/a: G is convex
    and increasing, so after the first step the iterates fall monotonically onto the root;
    stops where rounding would move them back up or by no more than a few eps."""
    a = np.asarray(a, dtype=float)
    r = a - 1.0 / a
    active = np.ones(r.shape, dtype=bool)
    for i in range(_ROOT_MAX_ITER):
        ra = r[active]
        _, slope1 = mills_and_slope(ra)
        step = (a[active] - truncated_mean(ra)) / slope1
        done = np.abs(step) <= 8.0 * _EPS * np.maximum(1.0, np.abs(ra))
        if i:
            done |= step >= 0.0
        r[active] = np.where(done, ra, ra + step)
        active[np.flatnonzero(active)[done]] = False
        if not active.any():
            break
    return r


def _profile_terms(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    """κ(a) = log Φ(r) + P(r)²/2 with r = G⁻¹(a) (module doc), in the form free of
    cancellation on each side: log(erfcx(-r/√2)/2) - r a + a²/2 for r < 0."""
    out = np.empty_like(a)
    left = r < 0.0
    rl, al = r[left], a[left]
    out[left] = np.log(0.5 * erfcx(rl * -_SQRT_HALF)) - rl * al + 0.5 * al * al
    rr = r[~left]
    out[~left] = log_ndtr(rr) + 0.5 * mills(rr) ** 2
    return out


@dataclass(frozen=True)
class Profile:
    """φ at one x of the cone (module doc): its value, y = D⁻¹ L x and s (s_j = G⁻¹(y_j) for
    j < N, s_N = y_N), which give μ(x) = s - y + x and ∇φ."""

    value: float
    y: np.ndarray
    s: np.ndarray
    scale: float      # Σ of the magnitudes of φ's terms: its rounding is ~ eps times this


class SaddleSystem:
    """∇ψ, its profile φ in x and Newton steps for one factor (module doc); vectors have
    length N, last entry 0."""

    def __init__(self, factor: TriangularFactor):
        self.factor = factor
        self.n = factor.n

    def ltilde(self, v: np.ndarray) -> np.ndarray:
        """L̃ v = D⁻¹ L v - v."""
        return self.factor.lower(v) / self.factor.diag - v

    def ltilde_t(self, u: np.ndarray) -> np.ndarray:
        """L̃ᵀ u = Lᵀ D⁻¹ u - u."""
        return self.factor.upper(u / self.factor.diag) - u

    def gradient(self, x: np.ndarray, mu: np.ndarray):
        """(g_x, g_μ, s) at (x, μ)."""
        s = self.ltilde(x) + mu
        P = mills(s)
        gx = self.ltilde_t(P) - mu
        gm = mu - x + P
        gx[-1] = gm[-1] = 0.0
        return gx, gm, s

    # ---- the profile φ(x) = min_μ ψ(x; μ) ---------------------------------------------
    def profile(self, x: np.ndarray, y: np.ndarray | None = None) -> Profile | None:
        """φ at x (None outside the cone, where it is -∞); y = D⁻¹ L x if already known."""
        if y is None:
            y = self.factor.lower(x) / self.factor.diag
        a = y[:-1]
        if not np.all(a > 0.0):
            return None
        s = y.copy()
        s[:-1] = truncated_mean_inverse(a)
        terms = _profile_terms(a, s[:-1])
        last = float(log_ndtr(y[-1]))
        half = 0.5 * float(x @ x)
        value = float(terms.sum()) + last - half
        return Profile(value, y, s, float(np.abs(terms).sum()) + abs(last) + half)

    def profile_gradient(self, x: np.ndarray, prof: Profile) -> tuple[np.ndarray, np.ndarray]:
        """(∇φ = -x + Bᵀ P(s), μ(x)) at a point of the cone (module doc)."""
        g = self.factor.upper(mills(prof.s) / self.factor.diag) - x
        mu = prof.s - prof.y + x
        g[-1] = mu[-1] = 0.0
        return g, mu

    # ---- Newton steps -------------------------------------------------------------------
    def spd_solve(self, s: np.ndarray, rhs: np.ndarray, linear_solver: str = "cg",
                  forcing: float = 0.0) -> tuple[np.ndarray, int]:
        """(δx, conjugate-gradient iterations) solving (I + Bᵀ W B) δx = rhs on the first
        N - 1 components, W from s (module doc). Conjugate gradients stop when their estimate
        of the error in the H-norm is at most forcing times the solution's (_cg)."""
        _, slope1 = mills_and_slope(s)
        dP = slope1 - 1.0
        w = -dP / slope1                    # |q_j|, j < N
        w[-1] = -dP[-1]                     # |P'_N|
        m, d = self.n - 1, self.factor.diag
        scale = w / (d * d)                 # Bᵀ W B = Lᵀ diag(w / D²) L
        dx = np.zeros(self.n)
        if linear_solver == "cholesky":
            A = self.factor.weighted_gram(scale)[:m, :m]
            A[np.diag_indices(m)] += 1.0
            c = scipy.linalg.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
            dx[:m] = scipy.linalg.cho_solve(c, rhs[:m], check_finite=False)
            return dx, 0
        if linear_solver != "cg":
            raise ValueError(f"unknown linear solver {linear_solver!r}; use {LINEAR_SOLVERS}")

        def matvec(v):
            full = np.zeros(self.n)
            full[:m] = v
            return (full + self.factor.upper(scale * self.factor.lower(full)))[:m]

        dx[:m], its = _cg(matvec, rhs[:m], forcing)
        return dx, its

    def newton_step(self, gx, gm, s, linear_solver: str = "cg", forcing: float = 0.0):
        """(δx, δμ, conjugate-gradient iterations) solving J (δx, δμ) = -∇ψ (module doc): δμ
        eliminated, then (I + BᵀWB) δx = g_x - L̃ᵀ (q g_μ) + g_μ / (1 + P'). With g_μ = 0 this
        is the profile's Newton step."""
        _, slope1 = mills_and_slope(s)
        dP = slope1 - 1.0
        rhs = gx - self.ltilde_t(dP / slope1 * gm) + gm / slope1
        dx, its = self.spd_solve(s, rhs, linear_solver, forcing)
        dmu = -(gm + dP * self.ltilde(dx) - dx) / slope1
        dmu[-1] = 0.0
        return dx, dmu, its


def _cg(matvec, b: np.ndarray, forcing: float) -> tuple[np.ndarray, int]:
    """(x, iterations): conjugate gradients for A x = b, A SPD given by `matvec`, until the
    error in A's norm is at most `forcing` times |x|_A (both squared: forcing² bᵀx), as
    estimated by Hestenes and Stiefel's sum of the last _CG_DELAY energy increments α_k |r_k|²
    (the error of iterate k is the sum of all later increments). Unlike a test on |r|, this
    does not depend on how the unknowns are scaled: on the nearly singular one-factor case
    one component of the right-hand side was thousands of times the others, and stopping at
    |r| <= 0.1 |b| after one step left λ² = bᵀx at 7e-11 instead of 10.9."""
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = float(r @ r)
    energy, increments, its = 0.0, [], 0
    while rr > 0.0 and its < _CG_MAX_ITER:
        check_deadline()
        Ap = matvec(p)
        curvature = float(p @ Ap)
        if not curvature > 0.0:          # rounding: no further progress possible
            break
        alpha = rr / curvature
        x += alpha * p
        r -= alpha * Ap
        its += 1
        increments.append(alpha * rr)
        energy += alpha * rr
        if len(increments) >= _CG_DELAY \
                and sum(increments[-_CG_DELAY:]) <= forcing * forcing * energy:
            break
        rr, rr_old = float(r @ r), rr
        p *= rr / rr_old
        p += r
    return x, its


@dataclass(frozen=True)
class SaddlePoint:
    """The solver's result: μ (length N, μ_N = 0), x, and how it got there."""

    mu: np.ndarray
    x: np.ndarray
    converged: bool
    residual: float          # max |∇ψ| at (x, μ)
    iterations: int          # Newton steps
    cg_iterations: int       # conjugate-gradient iterations over all steps
    evaluations: int         # evaluations of φ (line search included)
    decrement: float = float("nan")   # Newton decrement λ² at (x, μ): twice the gain left
    #                                   in φ (NaN: not computed, the hybr reference)

    def diagnostics(self) -> dict:
        return {"saddle_converged": int(self.converged), "saddle_residual": self.residual,
                "saddle_decrement": self.decrement,
                "saddle_iterations": self.iterations,
                "saddle_cg_iterations": self.cg_iterations,
                "saddle_evaluations": self.evaluations}


def mean_path(factor) -> np.ndarray:
    """x_j = P(t_j), t_j = L_{j,<j} x_{<j} / L_jj for j < N, x_N = 0: each variable at its
    truncated conditional mean given the earlier ones at theirs; (L x)_j = L_jj G(t_j) > 0.
    A factor with a `mean_path(value)` method of its own (the forward pass x_j = value(t_j)
    without rows of L: harness.core.tlr_ops, harness.core.vecchia) does it."""
    if hasattr(factor, "mean_path"):
        return factor.mean_path(mills)
    n, d = factor.n, factor.diag
    x = np.zeros(n)
    for i in range(0, n - 1, _BLOCK):
        j = min(n - 1, i + _BLOCK)
        block = factor.rows(i, j)
        c = block[:, :i] @ x[:i]
        for k in range(i, j):
            t = (c[k - i] + block[k - i, i:k] @ x[i:k]) / d[k]
            x[k] = mills(np.array([t]))[0]
    return x


def _starting_point(system: SaddleSystem) -> tuple[np.ndarray, Profile] | None:
    """The mean path scaled by the c > 0 maximising φ(c x) (module doc), with φ there; None
    when rounding leaves the path outside the cone (then nothing is known to be inside)."""
    path = mean_path(system.factor)
    y = system.factor.lower(path) / system.factor.diag
    if system.profile(path, y) is None:
        return None

    def minus_phi(log_c: float) -> float:
        c = np.exp(log_c)
        prof = system.profile(c * path, c * y)
        return np.inf if prof is None else -prof.value

    best = minimize_scalar(minus_phi, bounds=(-50.0, 5.0), method="bounded",
                           options={"xatol": 1e-3})
    c = float(np.exp(best.x)) if best.fun <= minus_phi(0.0) else 1.0
    return c * path, system.profile(c * path, c * y)


def _line_search(system: SaddleSystem, x, dx, prof: Profile, lam2: float):
    """(t, φ at x + t δx, evaluations) for the Newton direction δx, or (0, None, evaluations)
    when no step raises φ beyond its rounding. Armijo backtracking from t = 1 (a step out of
    the cone counts as a failure); a full step that gains more than the quadratic model's
    λ²/2 by a fifth is doubled while φ keeps rising (near the cone's boundary, where φ ~ log
    distance, a Newton step only doubles the distance)."""
    t, slack, evaluations = 1.0, 64.0 * _EPS * prof.scale, 0
    for _ in range(_MAX_HALVINGS):
        new = system.profile(x + t * dx)
        evaluations += 1
        if new is not None and new.value >= prof.value + 1e-4 * t * lam2 - slack:
            break
        t *= 0.5
    else:
        return 0.0, None, evaluations
    while t >= 1.0 and new.value > prof.value + 0.6 * lam2:
        longer = system.profile(x + 2.0 * t * dx)
        evaluations += 1
        if longer is None or longer.value <= new.value:
            break
        t, new = 2.0 * t, longer
    return t, new, evaluations


def solve_saddle_point(L, tol: float = 1e-10, max_iter: int = 100,
                       linear_solver: str = "cg") -> SaddlePoint:
    """Minimax tilting's saddle point by Newton's method on the profile φ (module doc), from
    the scaled mean path.

    Converged when max |∇ψ| <= tol, or when the Newton decrement λ² <= tol², after which one
    more full step is taken (quadratic convergence: it leaves ~tol⁴). Otherwise it stops
    after max_iter steps, or when the line search cannot raise φ beyond its rounding
    (converged if λ² <= 1e-12 by then: less than 1e-12 nats of φ left). Its progress
    (harness.core.progress) counts Newton steps.

    Parameters
    ----------
    L : ndarray or factor
        The lower Cholesky factor of R, or a factor object with the TriangularFactor protocol.
    tol : float
        The tolerance on max |∇ψ|, and on the decrement (λ² <= tol²).
    max_iter : int
        The most Newton steps.
    linear_solver : str
        "cg" (conjugate gradients, O(N²) a product) or "cholesky" (the dense reference).

    Returns
    -------
    SaddlePoint
        μ and x with how the solver got there. Should rounding leave even the starting point
        outside the cone: x = μ = 0 (plain SOV), not converged, with λ² = inf.
    """
    with phase("saddle point (Newton steps)"):
        return _solve_saddle_point(L, tol, max_iter, linear_solver)


def _solve_saddle_point(L, tol: float, max_iter: int, linear_solver: str) -> SaddlePoint:
    factor = L if hasattr(L, "upper") else TriangularFactor(L)
    n = factor.n
    if n == 1:
        return SaddlePoint(np.zeros(1), np.zeros(1), True, 0.0, 0, 0, 0, 0.0)
    system = SaddleSystem(factor)
    start = _starting_point(system)
    if start is None:
        gx, gm, _ = system.gradient(np.zeros(n), np.zeros(n))
        residual = float(max(np.max(np.abs(gx)), np.max(np.abs(gm))))
        return SaddlePoint(np.zeros(n), np.zeros(n), False, residual, 0, 0, 1, np.inf)
    x, prof = start
    evaluations, cg_its, it, converged, lam2 = 1, 0, 0, False, np.inf
    g, mu = system.profile_gradient(x, prof)
    while np.max(np.abs(g)) > tol and it < max_iter:
        check_deadline()
        dx, k = system.spd_solve(prof.s, g, linear_solver, min(0.1, lam2 ** 0.25))
        cg_its += k
        lam2 = float(g @ dx)
        it += 1
        if lam2 <= tol * tol:
            new = system.profile(x + dx)
            evaluations += 1
            if new is not None:
                x, prof = x + dx, new
                g, mu = system.profile_gradient(x, prof)
            converged = True
            break
        t, new, used = _line_search(system, x, dx, prof, lam2)
        evaluations += used
        if new is None:
            converged = lam2 <= 1e-12
            break
        x, prof = x + t * dx, new
        g, mu = system.profile_gradient(x, prof)
        advance()
    else:
        converged = bool(np.max(np.abs(g)) <= tol)
        lam2 = float(g @ g)                           # an upper bound (I + BᵀWB >= I)
        if not converged:                             # max_iter: the decrement where it stopped
            lam2 = float(g @ system.spd_solve(prof.s, g, linear_solver, 0.1)[0])
            converged = lam2 <= tol * tol
    _, gm, _ = system.gradient(x, mu)
    residual = float(max(np.max(np.abs(g)), np.max(np.abs(gm))))
    return SaddlePoint(mu, x, converged, residual, it, cg_its, evaluations, lam2)


# ---- the joint equations solved by MINPACK, kept as a reference -------------------------------
def saddle_point_system(L: np.ndarray):
    """(L̃, y -> (∇ψ(y), dense Jacobian)) for y = (x, μ) without their last entries.

    The Jacobian is [[L̃ᵀ P' L̃, L̃ᵀ P' - I], [P' L̃ - I, I + P']], P' = diag(dP/ds) ∈ (-1, 0).
    """
    d = len(L)
    Lt = L / np.diag(L)[:, None]
    Lt[np.diag_indices(d)] = 0.0
    n = d - 1

    def grad(y: np.ndarray):
        x, mu = np.zeros(d), np.zeros(d)
        x[:n], mu[:n] = y[:n], y[n:]
        s = Lt @ x + mu
        P = inverse_mills(s)
        g = np.concatenate([(-mu + Lt.T @ P)[:n], (mu - x + P)[:n]])
        dP = -P * P - s * P
        DL = dP[:, None] * Lt
        mx = DL[:n, :n] - np.eye(n)
        xx = (Lt.T @ DL)[:n, :n]
        J = np.block([[xx, mx.T], [mx, np.diag(1.0 + dP[:n])]])
        return g, J

    return Lt, grad


def solve_saddle_point_hybr(L: np.ndarray, tol: float = 1e-10) -> SaddlePoint:
    """The saddle point by MINPACK hybrj (Powell dogleg, dense unblocked Jacobian; O(N³))."""
    d = len(L)
    if d == 1:
        return SaddlePoint(np.zeros(1), np.zeros(1), True, 0.0, 0, 0, 0)
    _, grad = saddle_point_system(L)
    sol = root(grad, np.zeros(2 * (d - 1)), jac=True, method="hybr", options={"xtol": tol})
    residual = float(np.max(np.abs(sol.fun)))
    x, mu = np.zeros(d), np.zeros(d)
    x[: d - 1], mu[: d - 1] = sol.x[: d - 1], sol.x[d - 1 :]
    return SaddlePoint(mu, x, bool(sol.success) or residual < 1e-8, residual, 0, 0,
                       int(sol.nfev))
