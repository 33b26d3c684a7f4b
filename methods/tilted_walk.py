"""The tilted proposal's step and the saddle point it is shifted by (docs/math.md §7, §7b),
shared by `minimax-tilting` (methods.minimax_tilting) and `sir` with proposal 'tilted'
(methods.sir): at variable j the SOV step's proposal moves to N(μ_j, 1) truncated to
z_j >= -t_j, weighted by Botev's log Φ(t_j + μ_j) + μ_j²/2 − μ_j z_j or by the twisted
log Φ(t_j + μ_j) + μ_j²/2 − P_j t_j, with μ and P from the saddle point of the walked factor.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from harness.core.saddle_point import mills, solve_saddle_point
from harness.core.tlr_ops import TileLowRankOperator
from harness.core.truncnorm import draw_above
from harness.methods.sov import SetupFailed, SovStep
from harness.model.footprint import MemoryEstimate
from harness.model.ordered import cached, ordered_problem
from harness.model.problem import Problem


class TiltStep(SovStep):
    """SOV's step with the proposal of variable j shifted by μ_j (module doc). With `twist`
    (the inverse Mills ratios P at the saddle point) the weight of variable j is the twisted
    one, log Φ(t_j + μ_j) + μ_j²/2 − P_j t_j (docs/math.md §7b): over a whole path the same
    product as Botev's, but spread so that every partial product is a fair weight to resample
    on (methods.sir, proposal 'tilted'). All shifts and twists zero is SOV's step."""

    def __init__(self, E: np.ndarray, mu: np.ndarray, twist: np.ndarray | None = None):
        super().__init__(E)
        self.mu = mu
        self.twist = twist

    def __call__(self, j: int, t: np.ndarray):
        m = self.mu[j]
        p = 0.0 if self.twist is None else self.twist[j]
        if m == 0.0 and p == 0.0:
            return super().__call__(j, t)
        if self.twist is not None:
            self.logw += 0.5 * m * m - p * t               # μ²/2 − P t, before t moves
        t += m
        y, lp = draw_above(t, self.E[j], overwrite=True)   # y = z - μ_j >= -(t_j + μ_j)
        if self.twist is None:
            lp -= 0.5 * m * m
            lp -= m * y                                     # log Φ + μ²/2 - μ z
        self.logw += lp
        y += m
        return y, None


class SaddleShifts:
    """The saddle point of the factor a method walks (the dense factor in its ordering, or on
    the tlr path the tile-low-rank operator), solved once per problem and cached: the shifts μ,
    the twists P = φ(t* + μ) / Φ(t* + μ) at the saddle point's x (t* = L̃ x, docs/math.md §7),
    and the solver's diagnostics. Shared by `minimax-tilting` and `sir` (proposal 'tilted');
    the class needs TiledOrdering's and Sov's factor methods."""

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

    def shifts(self, problem: Problem) -> tuple[np.ndarray, np.ndarray, dict]:
        """(μ, P, diagnostics with the solver's CPU seconds) for this problem's factor."""
        key, factor = self.saddle_factor(problem)

        def build():
            L = factor()
            t0 = time.thread_time()
            sp = solve_saddle_point(L)
            if isinstance(L, np.ndarray):
                diag, lx = np.diag(L), L @ sp.x
            else:
                diag, lx = L.diag, L.lower(sp.x)
            twist = mills(lx / diag - sp.x + sp.mu)
            return sp.mu, twist, {**sp.diagnostics(),
                                  "saddle_seconds": time.thread_time() - t0}

        return cached(problem, key, build)

    def saddle_set_up(self, problem: Problem) -> tuple[np.ndarray, np.ndarray, dict]:
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
