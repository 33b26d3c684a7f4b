"""Mean-field variational approximation of the truncated-normal posterior, "vb-meanfield"
(Cao–Durante–Genton §2.2 after Fasano et al. 2022; docs/math.md §8).

An APPROXIMATION (exact = False). In orthant form u = C z (C = diag(y)), the augmented
posterior is u ~ N(0, R), R = C (K + I) C, truncated to u >= 0, and Z = P(u >= 0). With
Λ = R^{-1} = C (I + K)^{-1} C the mean-field factors are (CAVI, coordinate by coordinate)

    q(u_i) = N(m_i, 1/Λ_ii) truncated to u_i >= 0,   m_i = -(1/Λ_ii) Σ_{j≠i} Λ_ij E_q[u_j],

with E_q[u_i] = m_i + σ_i φ(a_i)/Φ(a_i), a_i = m_i/σ_i, σ_i = Λ_ii^{-1/2}. Sweeps stop when
no mean moves by more than `tol` (relative to 1 + max |E u|), or after `max_iter` sweeps. The
ELBO, a LOWER BOUND on log Z, is reported as the log Z estimate:

    ELBO = -N/2 log 2π - ½ log|R| - ½ (E uᵀ Λ E u + Σ Λ_ii Var u_i) + Σ H(q_i).

Predictions use the Ω^{-1}-free form of docs/math.md §8: k*ᵀ(I + K)^{-1} z = Bᵀ Λ u and
1 + k** - k*ᵀ(I + K)^{-1} k* = s*^2 (the test variable's Cholesky pivot), so
J* ≈ (1/R) Σ_r Φ(Bᵀ Λ u^(r) / s*) over `budget` draws u^(r) ~ q (independent univariate
truncated normals, harness.core.truncnorm). The O(N^3) Λ is built once per problem in `prepare`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
from scipy.special import log_ndtr, ndtr

from harness.core.deadline import check_deadline
from harness.core.truncnorm import draw_above, inverse_mills
from harness.model.constraints import Integer, Number
from harness.model.footprint import MemoryEstimate, dense
from harness.model.method import Method
from harness.model.ordered import cached
from harness.model.problem import Problem
from harness.model.result import Estimate
from harness.model.tags import CheckSettings, Tags

_LOG_2PI_E = math.log(2.0 * math.pi) + 1.0
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _precision(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """(Λ = R^{-1}, G = Λ B): the CAVI precision and the test projections, once per problem."""
    def build():
        L = problem.chol
        Lam = scipy.linalg.cho_solve((L, True), np.eye(problem.n_train))
        Lam = 0.5 * (Lam + Lam.T)
        G = Lam @ problem.test_cross if problem.n_test else np.empty((problem.n_train, 0))
        return Lam, G

    return cached(problem, ("vb-meanfield", "precision"), build)


def truncated_moments(m: np.ndarray, sigma: np.ndarray):
    """Mean, variance and entropy of N(m, sigma^2) truncated to [0, inf) (log space)."""
    a = m / sigma
    lam = inverse_mills(a)
    mean = m + sigma * lam
    var = sigma**2 * np.maximum(1.0 - a * lam - lam * lam, 0.0)
    entropy = 0.5 * _LOG_2PI_E + np.log(sigma) + log_ndtr(a) - 0.5 * a * lam
    return mean, var, entropy


class VbMeanfield(Method):
    """Mean-field CAVI for the truncated-normal posterior; ELBO as log Z (module doc)."""

    name = "vb-meanfield"
    summary = ("mean-field variational truncated-normal approximation (CAVI); log Z is the "
               "ELBO, a lower bound; Monte Carlo predictive probabilities")
    budget_unit = "predictive draws"
    tags = Tags(exact=False, handles_orthant=False)
    checks = CheckSettings(test_budget=20000)
    constraints = {"tol": Number(low=0, low_open=True),
                   "max_iter": Integer(minimum=1, says="must be an integer >= 1"),
                   "chunk_mb": Number(low=0, low_open=True)}
    setting_help = {"tol": "stop when no mean moves by more than this (relative to "
                           "1 + max |E u|)",
                    "max_iter": "most coordinate-ascent sweeps"}

    def __init__(self, tol: float = 1e-8, max_iter: int = 1000, chunk_mb: float = 64.0):
        self.tol = tol
        self.max_iter = max_iter
        self.chunk_mb = chunk_mb

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """Dense R, L and the precision Λ = R^{-1} (built from the identity: 3 N x N while it
        is made symmetric); predictive draws in chunks of chunk_mb: log u, a, the draws, σ z and U
        (5 r x N numbers; measured 124 MB for 122 MB of 4 r x N at N = 2000)."""
        r = min(budget, max(1, int(self.chunk_mb * 2**20 // (8 * (2 * n_train + 2 * n_test)))))
        return MemoryEstimate(
            held={"dense R": dense(n_train), "dense factor L": dense(n_train),
                  "precision": dense(n_train), "test rows": 3 * dense(n_train, n_test)},
            work={"predictive draws": (dense(r, 5 * n_train + 2 * n_test) if n_test else 0)},
            setup={"precision work": 3 * dense(n_train)})

    def prepare(self, problem: Problem) -> None:
        if not problem.is_orthant:
            _precision(problem)

    def fit(self, problem: Problem) -> dict:
        """CAVI to convergence: the factors' location m, scale sigma, ELBO and diagnostics."""
        Lam, _ = _precision(problem)
        N = problem.n_train
        d = np.diag(Lam).copy()
        sigma = 1.0 / np.sqrt(d)
        E = sigma * inverse_mills(np.zeros(N))     # start from m = 0
        s = Lam @ E
        m = np.zeros(N)
        converged, sweeps = False, 0
        while sweeps < self.max_iter:
            sweeps += 1
            check_deadline()
            biggest = 0.0
            for i in range(N):
                mi = E[i] - s[i] / d[i]
                si = sigma[i]
                a = mi / si
                lam = math.exp(-0.5 * a * a - _LOG_SQRT_2PI - float(log_ndtr(a)))
                e_new = mi + si * lam
                delta = e_new - E[i]
                if delta:
                    s += Lam[:, i] * delta
                    E[i] = e_new
                m[i] = mi
                biggest = max(biggest, abs(delta))
            if biggest <= self.tol * (1.0 + float(np.max(np.abs(E)))):
                converged = True
                break
        mean, var, entropy = truncated_moments(m, sigma)
        log_det = 2.0 * float(np.sum(np.log(np.diag(problem.chol))))
        elbo = (-0.5 * N * math.log(2 * math.pi) - 0.5 * log_det
                - 0.5 * (float(mean @ Lam @ mean) + float(d @ var)) + float(entropy.sum()))
        return {"m": m, "sigma": sigma, "elbo": elbo, "sweeps": sweeps, "converged": converged}

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        fit = self.fit(problem)
        test = self._predict(problem, fit, budget, rng)
        elbo = min(fit["elbo"], 0.0)   # a bound on a log-probability (rounding guard only)
        return Estimate(
            elbo, test,
            diagnostics={"log_z_kind": "ELBO (lower bound on log Z)",
                         "sweeps": fit["sweeps"], "converged": int(fit["converged"]),
                         "draws": budget},
        )

    def _predict(self, problem, fit, budget, rng) -> np.ndarray:
        n_test = problem.n_test
        if n_test == 0:
            return np.empty(0)
        _, G = _precision(problem)
        m, sigma = fit["m"], fit["sigma"]
        a = m / sigma
        sd = problem.test_sd
        per = max(1, int(self.chunk_mb * 2**20 // (8 * (2 * problem.n_train + 2 * n_test))))
        total = np.zeros(n_test)
        for r0 in range(0, budget, per):
            check_deadline()
            r = min(per, budget - r0)
            log_u = -rng.standard_exponential((r, problem.n_train))
            np.minimum(log_u, -1e-300, out=log_u)
            z, _ = draw_above(np.broadcast_to(a, log_u.shape).copy(), log_u, overwrite=True)
            U = m + sigma * z
            T = U @ G
            T /= sd
            total += ndtr(T).sum(axis=0)
        return np.clip(total / budget, 0.0, 1.0)
