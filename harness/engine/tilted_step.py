"""The tilted step: minimax exponential tilting's proposal (Botev 2017; docs/math.md §7, §7b).

At variable j the SOV step's proposal moves to N(μ_j, 1) truncated to z_j >= -t_j, weighted by
Botev's log Φ(t_j + μ_j) + μ_j²/2 − μ_j z_j or, for a resampled walk, by the twisted
log Φ(t_j + μ_j) + μ_j²/2 − P_j t_j, whose partial products are fair weights of each prefix.
μ and P come from the saddle point of ψ for the walked factor (harness.core.saddle_point),
solved once per problem and factor and cached. On a walk that announces its blocks
(harness.core.sequential) the twisted step also looks ahead over the rest of the block: the
constraints still to come are replaced by Gaussian sites fitted at the saddle point and
integrated exactly, and z_j is drawn from that Gaussian's conditional times its own exact
constraint (BlockTwist, docs/math.md §7b).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from harness.core.saddle_point import mills_and_slope, solve_saddle_point, truncated_mean
from harness.core.truncnorm import draw_above
from harness.engine.factor import SetupFailed
from harness.engine.sov_block import sov_block
from harness.engine.sov_step import SovStep
from harness.model.ordered import cached
from harness.model.problem import Problem
from harness.model.reliability import unconverged_saddle_point

SITE_PRECISION_CAP = 1e6   # sites sharper than this are capped (any site keeps Ẑ unbiased)


@dataclass(frozen=True)
class Twist:
    """The saddle point's view of each variable's constraint (docs/math.md §7b): the slope
    P_j = φ(s_j) / Φ(s_j) of log Φ(t + μ_j) at the saddle point's offset t*_j
    (s_j = t*_j + μ_j), and the Gaussian site that matches the constraint u_j >= 0 of
    u_j = t_j + z_j ~ N(s_j, 1) in mean and variance: precision π_j = c_j / (1 − c_j) and
    mean ν_j = s_j + 1 / G(s_j), c_j = P_j G(s_j), G(s) = s + P(s) (so that
    N(s_j, 1) × site has the truncated normal's mean G(s_j) and variance 1 − c_j)."""

    slope: np.ndarray
    offset: np.ndarray            # t*
    site_precision: np.ndarray    # π
    site_mean: np.ndarray         # ν

    @classmethod
    def at(cls, s: np.ndarray, mu: np.ndarray) -> Twist:
        """The twist at the saddle point's s = t* + μ."""
        P, leftover = mills_and_slope(s)     # leftover = 1 − c, accurate in both tails
        G = truncated_mean(s)
        return cls(P, s - mu, np.minimum((P * G) / leftover, SITE_PRECISION_CAP), s + 1.0 / G)


class BlockTwist:
    """The Gaussian look-ahead over one block of the walk (docs/math.md §7b).

    In the block's own coordinates (o = 0..k−1 for variables i0..i1−1) the offsets are
    t = a + Λ z (a from the earlier blocks, per particle; Λ strictly lower, from the diagonal
    block D), so u = t + z = a + A z with A = I + Λ. The block's Gaussian approximation has
    density ∝ φ(z) exp(eᵀz) Π_o site_o(u_o): e_o = μ_o − Σ_{i>o} Λ_io P_i is the part of the
    linear twist that looks beyond the block, and the sites stand in for the block's own
    constraints. Its precision is Q = I + Aᵀ diag(π) A and its linear term
    h = e − Aᵀ diag(π)(a − ν); with Q = WᵀW, W lower triangular (the Cholesky factor of Q
    with its order reversed), the conditional of z_o given z_<o is
    N((g_o − W[o, :o] z_<o) / W_oo, 1 / W_oo²), g = W⁻ᵀ h. Dividing out the site of z_o itself
    leaves the precision κ = W_oo² − π_o >= 1 on z_o: the step's proposal is that Gaussian
    times the exact constraint. `entry` is the log weight the block's first variable pays:
    log ∫ of the block's Gaussian, −Σ log W_oo + |g|²/2 − Σ π (a − ν)²/2, less the linear
    twist's Σ P_o a_o that the blocks before it carried for these variables. `means` is the
    walk's block array (harness.core.sequential): the block's conditional means, then its
    draws."""

    def __init__(self, twist: Twist, mu: np.ndarray, i0: int, means: np.ndarray,
                 D: np.ndarray):
        k = means.shape[1]
        i1 = i0 + k
        pivots = np.diag(D)[:k]
        Lam = np.tril(D[:k, :k], -1) / pivots[:, None]
        A = Lam + np.eye(k)
        self.pi, self.nu = twist.site_precision[i0:i1], twist.site_mean[i0:i1]
        P = twist.slope[i0:i1]
        Q = A.T @ (self.pi[:, None] * A)
        Q[np.diag_indices(k)] += 1.0
        self.W = cholesky(Q[::-1, ::-1], lower=True).T[::-1, ::-1].copy()
        self.i0, self.draws = i0, means    # the walk overwrites its columns with the draws
        a = means / pivots
        dev = (a - self.nu) * self.pi
        h = (mu[i0:i1] - Lam.T @ P) - dev @ A
        self.g = solve_triangular(self.W, h.T, trans="T", lower=True, check_finite=False).T
        self.entry = (0.5 * np.einsum("ij,ij->i", self.g, self.g)
                      - 0.5 * np.einsum("ij,ij->i", a - self.nu, dev)
                      - np.log(np.diag(self.W)).sum() - a @ P)

    def step(self, o: int, t: np.ndarray, log_u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(z_o drawn from the proposal by inversion of log_u, its log weight)."""
        w = self.W[o, o]
        r = self.g[:, o] - self.draws[:, :o] @ self.W[o, :o] if o else self.g[:, 0]
        m = r / w                              # the Gaussian's conditional mean of z_o
        w2, pi, nu = w * w, self.pi[o], self.nu[o]
        kappa = w2 - pi
        mt = (w2 * m - pi * (nu - t)) / kappa  # ... with z_o's own site divided out
        d = t - nu
        lw = 0.5 * (kappa * mt * mt - w2 * m * m + pi * d * d + np.log(w2 / kappa))
        root = np.sqrt(kappa)
        z, lp = draw_above(root * (t + mt), log_u, overwrite=True)
        z /= root
        z += mt
        lw += lp
        return z, lw

    def resampled(self, src: np.ndarray) -> None:
        """Particle p continues particle src[p] (the walk permutes the draws itself)."""
        self.g = self.g[src]


class TiltStep(SovStep):
    """SOV's step with the proposal of variable j shifted by μ_j: Botev's weights (module doc).

    With a `twist` (docs/math.md §7b) the weight of variable j is the twisted one,
    log Φ(t_j + μ_j) + μ_j²/2 − P_j t_j: over a whole path the same product as Botev's, but
    spread so that every partial product is a fair weight to resample on (the resampled
    walk). A walk that announces its blocks (enter_block) gets the block's Gaussian
    look-ahead instead (BlockTwist): same final target, so the same unbiased Ẑ."""

    def __init__(self, E: np.ndarray, mu: np.ndarray, twist: Twist | None = None):
        super().__init__(E)
        self.mu = mu
        self.twist = twist
        self.block: BlockTwist | None = None
        if twist is None and isinstance(E, np.ndarray):   # Botev's weights: a whole block
            self.fused_block = self._shifted_block          # in one compiled call

    def _shifted_block(self, i0: int, i1: int, W: np.ndarray, D: np.ndarray,
                       pivots: np.ndarray):
        """Variables i0..i1-1 of every particle (harness.engine.sov_block with the shifts)."""
        sov_block(W, D, pivots, self.E[i0:i1], self.logw, self.mu[i0:i1])

    def enter_block(self, i0: int, i1: int, W: np.ndarray, D: np.ndarray) -> None:
        """The walk's announcement of variables i0..i1−1 (harness.core.sequential): W holds
        their conditional means given the earlier blocks, and becomes their draws."""
        if self.twist is not None:
            self.block = BlockTwist(self.twist, self.mu, i0, W, D)
            self.logw += self.block.entry

    def __call__(self, j: int, t: np.ndarray):
        m = self.mu[j]
        if self.twist is not None:
            return self._twisted(j, t)
        if m == 0.0:
            return super().__call__(j, t)
        t += m
        y, lp = draw_above(t, self.E[j], overwrite=True)   # y = z - μ_j >= -(t_j + μ_j)
        lp -= 0.5 * m * m
        lp -= m * y                                         # log Φ + μ²/2 - μ z
        self.logw += lp
        y += m
        return y, None

    def _twisted(self, j: int, t: np.ndarray):
        if self.block is not None:
            z, lw = self.block.step(j - self.block.i0, t, self.E[j])
            self.logw += lw
            return z, None
        m = self.mu[j]
        lw = 0.5 * m * m - self.twist.slope[j] * t
        t += m
        y, lp = draw_above(t, self.E[j], overwrite=True)
        self.logw += lw
        self.logw += lp
        y += m
        return y, None

    def resampled(self, src: np.ndarray) -> None:
        """Particle p continues particle src[p]: so does the block's per-particle state."""
        if self.block is not None:
            self.block.resampled(src)


@dataclass(frozen=True)
class Tilted:
    """The tilted step as a part of an orthant sampler (module doc).

    Parameters
    ----------
    twisted : bool
        Twisted weights and the Gaussian look-ahead over each block, for a resampled walk;
        False: Botev's weights, for importance sampling.
    """

    twisted: bool = False

    @property
    def looks_ahead(self) -> bool:
        """Whether the step holds per-particle block state (the look-ahead)."""
        return self.twisted

    def shifts(self, problem: Problem, factor) -> tuple[np.ndarray, Twist, dict]:
        """(μ, the Twist, the solver's diagnostics with its CPU seconds) for the factor part
        `factor` (its saddle_operator: dense L, tile-low-rank or sparse Vecchia products),
        cached per problem and factor."""
        key, operator = factor.saddle_operator(problem)

        def build():
            L = operator()
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

    def prepare(self, problem: Problem, factor) -> None:
        """Solve the saddle point before the timed region."""
        self.shifts(problem, factor)

    def set_up(self, problem: Problem, factor) -> tuple[Callable[[np.ndarray], TiltStep], dict]:
        """(the step's maker from a chunk's log(1 - w), the saddle point's diagnostics with
        max |μ|); SetupFailed if the saddle-point system cannot be solved."""
        try:
            mu, twist, info = self.shifts(problem, factor)
        except np.linalg.LinAlgError as exc:
            raise SetupFailed(f"the saddle-point system could not be solved: {exc}") from None
        kept = twist if self.twisted else None
        return (lambda E: TiltStep(E, mu, kept)), \
            {**info, "mu_max_abs": float(np.max(np.abs(mu)))}

    def reasons(self, diagnostics: Mapping) -> list[str]:
        """Shifts far from the saddle point (harness.model.reliability)."""
        return unconverged_saddle_point(diagnostics)

    def setup_memory(self, n_train: int) -> dict[str, int]:
        """Newton steps by conjugate gradients with products by the factor need a few dozen
        vectors of length N, no N x N matrix."""
        return {"saddle-point vectors": 64 * 8 * n_train}
