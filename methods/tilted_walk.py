"""The tilted proposal's step and the saddle point it is shifted by (docs/math.md §7, §7b),
shared by `minimax-tilting` (methods.minimax_tilting) and `sir` with proposal 'tilted'
(methods.sir): at variable j the SOV step's proposal moves to N(μ_j, 1) truncated to
z_j >= -t_j, weighted by Botev's log Φ(t_j + μ_j) + μ_j²/2 − μ_j z_j or by the twisted
log Φ(t_j + μ_j) + μ_j²/2 − P_j t_j, with μ and P from the saddle point of the walked factor.
The twisted walk also looks one variable ahead: z_j's proposal includes the quadratic part of
the next variable's twisted weight, exp(−c_{j+1} (t_{j+1} − t*_{j+1})² / 2), a Gaussian factor
in z_j (§7b).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.core.saddle_point import mills, solve_saddle_point
from harness.core.tlr_ops import TileLowRankOperator
from harness.core.truncnorm import draw_above
from harness.methods.sov import SetupFailed, SovStep
from harness.model.footprint import MemoryEstimate
from harness.model.ordered import cached, ordered_problem
from harness.model.problem import Problem


@dataclass(frozen=True)
class Twist:
    """log Φ(t + μ_j) around the saddle point's offset t*_j, per variable (docs/math.md §7b):
    its slope P_j = φ(s_j) / Φ(s_j) (the inverse Mills ratio) and curvature
    c_j = P_j (s_j + P_j) (minus the second derivative) at s_j = t*_j + μ_j."""

    slope: np.ndarray
    curvature: np.ndarray
    offset: np.ndarray    # t*

    @classmethod
    def at(cls, s: np.ndarray, mu: np.ndarray) -> Twist:
        """The twist at the saddle point's s = t* + μ."""
        P = mills(s)
        return cls(P, P * (s + P), s - mu)


class TiltStep(SovStep):
    """SOV's step with the proposal of variable j shifted by μ_j: Botev's weights (module doc).

    With a `twist` (docs/math.md §7b) the weight of variable j is the twisted one,
    log Φ(t_j + μ_j) + μ_j²/2 − P_j t_j: over a whole path the same product as Botev's, but
    spread so that every partial product is a fair weight to resample on (methods.sir,
    proposal 'tilted'). The twisted step also looks ahead when the walk says how the next
    offset depends on z_j, t_{j+1} = a + b z_j: the prefix's target gains the factor
    exp(h_{j+1}), h_{j+1} = −c_{j+1} (t_{j+1} − t*_{j+1})² / 2, Gaussian in z_j, so z_j is drawn
    from N(m, 1/λ) truncated to z_j >= −t_j with λ = 1 + c_{j+1} b², m = (μ_j − c_{j+1} b d) / λ,
    d = a − t*_{j+1}, and weighted by its normaliser, log Φ(√λ (t_j + m)) + λ m²/2 − c_{j+1} d²/2
    − log(λ)/2 − P_j t_j; the next step divides exp(h_{j+1}) out again. Without a look-ahead
    (c = 0) this is the plain twisted step."""

    def __init__(self, E: np.ndarray, mu: np.ndarray, twist: Twist | None = None):
        super().__init__(E)
        self.mu = mu
        self.twist = twist
        self.looks_ahead = twist is not None   # the walk then passes `ahead`
        self._ahead_of = -1                    # the variable whose h the last step included

    def __call__(self, j: int, t: np.ndarray, ahead=None):
        m = self.mu[j]
        if self.twist is not None:
            return self._twisted(j, t, ahead)
        if m == 0.0:
            return super().__call__(j, t)
        t += m
        y, lp = draw_above(t, self.E[j], overwrite=True)   # y = z - μ_j >= -(t_j + μ_j)
        lp -= 0.5 * m * m
        lp -= m * y                                         # log Φ + μ²/2 - μ z
        self.logw += lp
        y += m
        return y, None

    def _twisted(self, j: int, t: np.ndarray, ahead):
        tw, m = self.twist, self.mu[j]
        lw = -tw.slope[j] * t
        if self._ahead_of == j:                 # divide out the previous step's exp(h_j)
            d = t - tw.offset[j]
            lw += 0.5 * tw.curvature[j] * d * d
        self._ahead_of = -1
        lam, mean = 1.0, m
        if ahead is not None and j + 1 < len(self.mu) and tw.curvature[j + 1] > 0.0:
            a, b = ahead
            c = tw.curvature[j + 1]
            d = a - tw.offset[j + 1]
            lam = 1.0 + c * b * b
            mean = (m - c * b * d) / lam
            lw -= 0.5 * c * d * d
            self._ahead_of = j + 1
        lw += 0.5 * lam * mean * mean - 0.5 * np.log(lam)
        root = np.sqrt(lam)
        y, lp = draw_above(root * (t + mean), self.E[j], overwrite=True)
        self.logw += lw
        self.logw += lp
        y /= root
        y += mean
        return y, None


class SaddleShifts:
    """The saddle point of the factor a method walks (the dense factor in its ordering, or on
    the tlr path the tile-low-rank operator), solved once per problem and cached: the shifts μ,
    the Twist (P = φ(t* + μ) / Φ(t* + μ) and the curvature there) at the saddle point's x
    (t* = L̃ x, docs/math.md §7), and the solver's diagnostics. Shared by `minimax-tilting`
    and `sir` (proposal 'tilted'); the class needs TiledOrdering's and Sov's factor methods."""

    tolerance: float

    def saddle_factor(self, problem: Problem) -> tuple[tuple, Callable[[], object]]:
        """(cache key, a maker of the factor the saddle point is solved with): the reordered
        dense factor, or on the tlr path the tile-low-rank operator."""
        if self.uses_tlr(problem.n_train):
            f = self.tlr_factor(problem)
            return (("minimax-tilting", "tlr", f.order_kind, f.tile, self.tolerance),
                    lambda: TileLowRankOperator(f))
        kind, tile = self.ordering(problem)
        return (("minimax-tilting", kind, tile),
                lambda: ordered_problem(problem, kind, tile).chol)

    def shifts(self, problem: Problem) -> tuple[np.ndarray, Twist, dict]:
        """(μ, the Twist, diagnostics with the solver's CPU seconds) for this problem's
        factor."""
        key, factor = self.saddle_factor(problem)

        def build():
            L = factor()
            t0 = time.thread_time()
            sp = solve_saddle_point(L)
            if isinstance(L, np.ndarray):
                diag, lx = np.diag(L), L @ sp.x
            else:
                diag, lx = L.diag, L.lower(sp.x)
            twist = Twist.at(lx / diag - sp.x + sp.mu, sp.mu)
            return sp.mu, twist, {**sp.diagnostics(),
                                  "saddle_seconds": time.thread_time() - t0}

        return cached(problem, key, build)

    def saddle_set_up(self, problem: Problem) -> tuple[np.ndarray, Twist, dict]:
        """shifts(), with a solver failure as SetupFailed and |μ|'s maximum in the
        diagnostics."""
        try:
            mu, twist, info = self.shifts(problem)
        except np.linalg.LinAlgError as exc:
            raise SetupFailed(f"the saddle-point system could not be solved: {exc}") from None
        return mu, twist, {**info, "mu_max_abs": float(np.max(np.abs(mu)))}


def with_saddle_vectors(est: MemoryEstimate, n_train: int) -> MemoryEstimate:
    """`est` plus the saddle point's work: Newton steps by conjugate gradients with products
    by the factor (harness.core.saddle_point) need a few dozen vectors of length N, no N x N
    matrix."""
    return MemoryEstimate(est.held, est.work,
                          {**est.setup, "saddle-point vectors": 64 * 8 * n_train})
