"""Botev's minimax saddle point ∇ψ(x, μ) = 0 by damped Newton steps (docs/math.md §7).

With L the lower Cholesky factor (R = L Lᵀ), D = diag L, L̃ = D⁻¹ L - I (strictly lower) and
x_N = μ_N = 0, ψ(x; μ) = Σ_j [μ_j²/2 - x_j μ_j + log Φ(s_j)], s = L̃ x + μ. The 2(N - 1)
equations (components 1..N-1, written on length-N vectors whose last entry is dropped) are

    g_x = -μ + L̃ᵀ P = 0,   g_μ = μ - x + P = 0,   P = φ(s) / Φ(s),

with Jacobian [[L̃ᵀ P' L̃, L̃ᵀ P' - I], [P' L̃ - I, I + P']], P' = diag(dP/ds) ∈ (-1, 0).
The second diagonal block I + P' is diagonal and positive, so a Newton step eliminates δμ.
With q = P'/(1 + P') < 0, the Schur complement of that block is

    S = [L̃ᵀ P' L̃]_{<N} - (P' L̃ - I)ᵀ (I + P')⁻¹ (P' L̃ - I) = -(I + Bᵀ W B),
    B = (D⁻¹ L)[:, :N-1],   W = diag(|q_1|, ..., |q_{N-1}|, |P'_N|)

(expand, use P' - P'²/(1 + P') = q and q - 1/(1 + P') = -1; B's last row is L̃'s last row,
which enters through L̃ᵀ P' L̃). So -S is symmetric positive definite with eigenvalues >= 1 (ψ
is convex in μ and, after minimising over μ, concave in x), the Jacobian is never singular,
and each Newton step solves one (N-1) x (N-1) SPD system

    (I + Bᵀ W B) δx = g_x - L̃ᵀ (q g_μ) + g_μ / (1 + P'),
    δμ = -(g_μ + P' L̃ δx - δx) / (1 + P').

By default this is solved by conjugate gradients (an inexact Newton step, relative accuracy
min(0.1, |∇ψ|^½)), whose products need only L v and Lᵀ u: O(N²) each, no N x N matrix besides
L. On one-factor and RBF problems a step takes 3-15 products at every N measured
(benchmarks/bench_tilting.py), against O(N³) for forming I + BᵀWB and a LAPACK Cholesky
(`linear_solver="cholesky"`, kept as a reference). The Newton direction is a descent direction
of ½|∇ψ|², so Armijo backtracking on it gives convergence from x = μ = 0.

Everything the solver reads from the factor goes through `TriangularFactor` (the diagonal,
products with L and Lᵀ, and for the Cholesky reference the weighted Gram matrix Lᵀ diag(w) L),
so a structured (e.g. tile-low-rank) factor can supply the same operations.

`solve_saddle_point_hybr` is the previous solver (MINPACK hybrj on the dense 2(N-1) x 2(N-1)
Jacobian, `saddle_point_system`), kept as a reference for tests and benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.linalg.blas import dtrmv
from scipy.optimize import root
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import erfcx

from harness.core.deadline import check_deadline
from harness.core.progress import advance, phase
from harness.core.truncnorm import inverse_mills

LINEAR_SOLVERS = ("cg", "cholesky")
_SERIES_BELOW = -50.0   # s below this: 1 + dP/ds from its asymptotic series
_SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi)
_SQRT_HALF = np.sqrt(0.5)
_GRAM_BLOCK = 256
_MAX_HALVINGS = 30      # line search: give up below a step of 2^-30
_CG_MAX_ITER = 1000


class TriangularFactor:
    """What the saddle-point solver needs from a lower factor L, for a dense array.

    The protocol: `n`, `diag` (diag L), `lower(v)` = L v, `upper(u)` = Lᵀ u, and only for
    linear_solver="cholesky" `weighted_gram(w)` = Lᵀ diag(w) L. Any object providing them
    (e.g. a tile-low-rank factor) can be passed to `solve_saddle_point` instead of an array.
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

    def weighted_gram(self, w: np.ndarray) -> np.ndarray:
        """Lᵀ diag(w) L with its lower triangle filled (column blocks of GEMMs; O(N³))."""
        L, n = self.L, self.n
        out = np.empty((n, n))
        for j0 in range(0, n, _GRAM_BLOCK):
            j1 = min(n, j0 + _GRAM_BLOCK)
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


class SaddleSystem:
    """∇ψ and Newton steps for one factor (module doc); vectors have length N, last entry 0."""

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

    def newton_step(self, gx, gm, s, linear_solver: str = "cg", forcing: float = 0.0):
        """(δx, δμ, conjugate-gradient iterations) solving J (δx, δμ) = -∇ψ (module doc).

        With conjugate gradients the first block's residual is at most forcing * |∇ψ|.
        """
        _, slope1 = mills_and_slope(s)
        dP = slope1 - 1.0
        w = -dP / slope1                    # |q_j|, j < N
        w[-1] = -dP[-1]                     # |P'_N|
        rhs = gx - self.ltilde_t(dP / slope1 * gm) + gm / slope1
        m, d = self.n - 1, self.factor.diag
        scale = w / (d * d)                 # Bᵀ W B = Lᵀ diag(w / D²) L
        dx = np.zeros(self.n)
        its = 0
        if linear_solver == "cholesky":
            A = self.factor.weighted_gram(scale)[:m, :m]
            A[np.diag_indices(m)] += 1.0
            c = scipy.linalg.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
            dx[:m] = scipy.linalg.cho_solve(c, rhs[:m], check_finite=False)
        elif linear_solver == "cg":
            def matvec(v):
                full = np.zeros(self.n)
                full[:m] = v.ravel()
                return (full + self.factor.upper(scale * self.factor.lower(full)))[:m]

            def count(_):
                nonlocal its
                its += 1
                check_deadline()

            atol = forcing * float(np.sqrt(gx @ gx + gm @ gm))
            dx[:m], _ = cg(LinearOperator((m, m), matvec=matvec, dtype=float), rhs[:m],
                           rtol=0.0, atol=atol, maxiter=_CG_MAX_ITER, callback=count)
        else:
            raise ValueError(f"unknown linear solver {linear_solver!r}; use {LINEAR_SOLVERS}")
        dmu = -(gm + dP * self.ltilde(dx) - dx) / slope1
        dmu[-1] = 0.0
        return dx, dmu, its


@dataclass(frozen=True)
class SaddlePoint:
    """The solver's result: μ (length N, μ_N = 0), x, and how it got there."""

    mu: np.ndarray
    x: np.ndarray
    converged: bool
    residual: float          # max |∇ψ| at (x, μ)
    iterations: int          # Newton steps
    cg_iterations: int       # conjugate-gradient iterations over all steps
    evaluations: int         # gradient evaluations (line search included)

    def diagnostics(self) -> dict:
        return {"saddle_converged": int(self.converged), "saddle_residual": self.residual,
                "saddle_iterations": self.iterations,
                "saddle_cg_iterations": self.cg_iterations,
                "saddle_evaluations": self.evaluations}


def solve_saddle_point(L, tol: float = 1e-10, max_iter: int = 100,
                       linear_solver: str = "cg") -> SaddlePoint:
    """Damped Newton from x = μ = 0 for the factor L (an array, or a factor object with the
    TriangularFactor protocol).

    Stops when max |∇ψ| <= tol. If the line search cannot decrease |∇ψ| any more (rounding)
    the result counts as converged when max |∇ψ| <= 1e-8, as with the MINPACK solver before.
    Its progress (harness.core.progress) counts Newton steps (their number is not known ahead).
    """
    with phase("saddle point (Newton steps)"):
        return _solve_saddle_point(L, tol, max_iter, linear_solver)


def _solve_saddle_point(L, tol: float, max_iter: int, linear_solver: str) -> SaddlePoint:
    factor = L if hasattr(L, "upper") else TriangularFactor(L)
    n = factor.n
    x, mu = np.zeros(n), np.zeros(n)
    if n == 1:
        return SaddlePoint(mu, x, True, 0.0, 0, 0, 0)
    system = SaddleSystem(factor)
    gx, gm, s = system.gradient(x, mu)
    f = gx @ gx + gm @ gm
    evaluations, cg_its, it, stalled = 1, 0, 0, False
    while it < max_iter and max(np.max(np.abs(gx)), np.max(np.abs(gm))) > tol:
        check_deadline()
        it += 1
        dx, dmu, k = system.newton_step(gx, gm, s, linear_solver, min(0.1, f ** 0.25))
        cg_its += k
        t = 1.0
        for _ in range(_MAX_HALVINGS):
            new = system.gradient(x + t * dx, mu + t * dmu)
            evaluations += 1
            f_new = new[0] @ new[0] + new[1] @ new[1]
            if f_new <= (1.0 - 1e-4 * t) * f:       # Armijo on |∇ψ|² (slope -2|∇ψ|²)
                break
            t *= 0.5
        else:
            stalled = True
            break
        x, mu = x + t * dx, mu + t * dmu
        (gx, gm, s), f = new, f_new
        advance()
    residual = float(max(np.max(np.abs(gx)), np.max(np.abs(gm))))
    converged = residual <= tol or (stalled and residual <= 1e-8)
    return SaddlePoint(mu, x, converged, residual, it, cg_its, evaluations)


# ---- the previous solver, kept as a reference ----------------------------------------------
def saddle_point_system(L: np.ndarray):
    """(L̃, y -> (∇ψ(y), dense Jacobian)) for y = (x, μ) without their last entries."""
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
