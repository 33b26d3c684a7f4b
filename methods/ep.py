"""Expectation propagation for probit GPC, "ep" (Rasmussen & Williams §3.6, Algs 3.5–3.6).

An APPROXIMATION (exact = False): the likelihood terms Φ(y_i f_i) are replaced by Gaussian
sites t̃_i(f_i) ∝ N(f_i; ν̃_i / τ̃_i, 1 / τ̃_i), fitted one at a time by moment matching:

  cavity    τ₋ᵢ = 1/Σ_ii − τ̃_i,  ν₋ᵢ = μ_i/Σ_ii − ν̃_i,  μ₋ᵢ = ν₋ᵢ/τ₋ᵢ,  σ²₋ᵢ = 1/τ₋ᵢ
  moments   z = y_i μ₋ᵢ / sqrt(1 + σ²₋ᵢ),  ρ = φ(z)/Φ(z)  (from log_ndtr: no 0/0 in the tail)
            μ̂ = μ₋ᵢ + y_i σ²₋ᵢ ρ / sqrt(1 + σ²₋ᵢ),  σ̂² = σ²₋ᵢ − σ⁴₋ᵢ ρ (z + ρ) / (1 + σ²₋ᵢ)
  site      τ̃_i = max(1/σ̂² − τ₋ᵢ, 0),  ν̃_i = μ̂/σ̂² − ν₋ᵢ      (R&W 3.58–3.59)
  posterior rank-one update of Σ = (K⁻¹ + S̃)⁻¹ and μ = Σ ν̃

After every sweep Σ and μ are recomputed stably from B = I + S̃^½ K S̃^½ = LLᵀ (never K⁻¹:
K may be singular). The budget is the maximum number of sweeps; the iteration stops when
log Z_EP changes by less than `tol` between sweeps (diagnostic `converged`).

log Z_EP (R&W 3.65) in the stable form of GPML's infEP (m = 0):
  log Z = Σ log Φ(z_i) − Σ log L_ii + ½ ν̃ᵀΣν̃ − ½ Σ_i Σ_ii ν̃_i²
          + ½ Σ_i ν₋ᵢ Σ_ii (τ̃_i/τ₋ᵢ ν₋ᵢ − 2 ν̃_i) + ½ Σ_i log(1 + τ̃_i/τ₋ᵢ),
with the cavities of the final sites. Predictions (Alg. 3.6): f̄* = k*ᵀ(ν̃ − S̃^½ B⁻¹ S̃^½ K ν̃),
V* = k** − |L⁻¹ S̃^½ k*|², J* = Φ(f̄* / sqrt(1 + V*)) (the probit's exact average over N(f̄*, V*)).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
from scipy.special import log_ndtr, ndtr

from harness.core.deadline import check_deadline
from harness.model.constraints import Number
from harness.model.footprint import MemoryEstimate, dense
from harness.model.latent import LOG_SQRT_2PI
from harness.model.method import Method
from harness.model.problem import Problem
from harness.model.result import Estimate
from harness.model.tags import CheckSettings, Tags


def probit_moments(y, mu, var):
    """log Z_i, mean and variance of Φ(y f) N(f; mu, var) / Z_i (R&W 3.58), elementwise."""
    s = np.sqrt(1.0 + var)
    z = y * mu / s
    log_z = log_ndtr(z)
    rho = np.exp(-0.5 * z * z - LOG_SQRT_2PI - log_z)
    mean = mu + y * var * rho / s
    variance = var - var * var * rho * (z + rho) / (1.0 + var)
    return log_z, mean, variance


class EPState:
    """Site parameters and the posterior they imply (recomputed from K each sweep)."""

    def __init__(self, K: np.ndarray, y: np.ndarray):
        self.K, self.y, self.n = K, y, len(y)
        self.tau = np.zeros(self.n)
        self.nu = np.zeros(self.n)
        self.recompute()

    def recompute(self) -> None:
        """Σ = K − K S^½ B⁻¹ S^½ K, μ = Σ ν̃ with B = I + S^½ K S^½ = L Lᵀ (R&W Alg. 3.5)."""
        sw = np.sqrt(self.tau)
        B = np.outer(sw, sw) * self.K
        B[np.diag_indices(self.n)] += 1.0
        self.L = scipy.linalg.cholesky(B, lower=True, check_finite=False)
        V = scipy.linalg.solve_triangular(self.L, sw[:, None] * self.K, lower=True)
        self.Sigma = self.K - V.T @ V
        self.mu = self.Sigma @ self.nu

    def sweep(self, order: np.ndarray) -> None:
        Sigma, mu, y = self.Sigma, self.mu, self.y
        for i in order:
            sii = Sigma[i, i]
            tau_c = 1.0 / sii - self.tau[i]
            nu_c = mu[i] / sii - self.nu[i]
            _, mean, var = probit_moments(y[i], nu_c / tau_c, 1.0 / tau_c)
            tau_new = max(1.0 / var - tau_c, 0.0)
            d_tau = tau_new - self.tau[i]
            d_nu = mean / var - nu_c - self.nu[i]
            self.tau[i] = tau_new
            self.nu[i] += d_nu
            s = Sigma[:, i].copy()
            c = d_tau / (1.0 + d_tau * sii)
            # μ_new = Σ_new ν̃_new with Σ_new = Σ − c s sᵀ (rank one, O(N))
            mu += s * (d_nu - c * (mu[i] + d_nu * sii))
            Sigma -= c * np.outer(s, s)

    def log_z(self) -> float:
        """log Z_EP (module docstring; the same expression as GPML's infEP)."""
        d = np.diag(self.Sigma)
        tau_c = 1.0 / d - self.tau
        nu_c = self.mu / d - self.nu
        lz, _, _ = probit_moments(self.y, nu_c / tau_c, 1.0 / tau_c)
        p, q = self.nu, nu_c
        return float(np.sum(lz) - np.sum(np.log(np.diag(self.L)))
                     + 0.5 * p @ self.Sigma @ p - 0.5 * d @ p ** 2
                     + 0.5 * q @ ((self.tau / tau_c * q - 2 * p) * d)
                     + 0.5 * np.sum(np.log1p(self.tau / tau_c)))

    def predict(self, kstar: np.ndarray, kss: np.ndarray) -> np.ndarray:
        """Alg. 3.6: Φ(f̄* / sqrt(1 + V*)) for the test points (columns of kstar)."""
        sw = np.sqrt(self.tau)
        z = sw * scipy.linalg.cho_solve((self.L, True), sw * (self.K @ self.nu))
        fbar = kstar.T @ (self.nu - z)
        v = scipy.linalg.solve_triangular(self.L, sw[:, None] * kstar, lower=True)
        var = np.maximum(kss - np.einsum("ij,ij->j", v, v), 0.0)
        return np.clip(ndtr(fbar / np.sqrt(1.0 + var)), 0.0, 1.0)


class ExpectationPropagation(Method):
    """Sequential EP with the probit likelihood (an approximation, labelled so)."""

    name = "ep"
    summary = ("expectation propagation, probit likelihood (Rasmussen & Williams Algs "
               "3.5–3.6): an APPROXIMATION, deterministic")
    budget_unit = "sweeps (maximum)"
    tags = Tags(exact=False, stochastic=False, handles_orthant=False)
    checks = CheckSettings(test_budget=100)
    constraints = {"tol": Number(low=0, low_open=True)}
    setting_help = {"tol": "stop when log Z_EP changes by less than this between sweeps"}

    def __init__(self, tol: float = 1e-9):
        self.tol = tol

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """K is the problem's; each recompute builds B, its factor, V, VᵀV and the new Σ while
        the previous Σ and factor are alive (7 N x N), plus the test cross-covariances."""
        return MemoryEstimate(held={"test rows": dense(n_train, n_test)},
                              work={"EP work matrices (7 x N x N)": 7 * dense(n_train),
                                    "test solves": 2 * dense(n_train, n_test)})

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        y = problem.y_train.astype(float)
        state = EPState(problem.K, y)
        old = -np.inf
        converged = False
        sweeps = 0
        change = math.inf
        for sweeps in range(1, budget + 1):  # noqa: B007
            check_deadline()
            state.sweep(np.arange(state.n))
            state.recompute()
            lz = state.log_z()
            change = abs(lz - old)
            old = lz
            if change < self.tol:
                converged = True
                break
        if not np.isfinite(old):
            return Estimate.failed("EP did not produce a finite log Z", sweeps=sweeps)
        probs = (state.predict(y[:, None] * problem.test_cross, problem.test_variance - 1.0)
                 if problem.n_test else np.empty(0))
        return Estimate(min(old, 0.0), probs, diagnostics={
            "approximation": "EP", "converged": int(converged), "sweeps": sweeps,
            "last_change": float(change)})
