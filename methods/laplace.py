"""Laplace approximation for probit GPC, "laplace" (Rasmussen & Williams §3.4, Algs 3.1–3.2).

An APPROXIMATION (exact = False): the posterior is replaced by N(f̂, (K⁻¹ + W)⁻¹) at its mode
f̂, with, for the probit (z_i = y_i f_i, ρ_i = φ(z_i)/Φ(z_i) computed from log_ndtr),

  ∇ log p(y|f) = y ρ,   W = −∇∇ log p(y|f) = diag(ρ (z + ρ)).

Mode (Alg. 3.1): Newton in the form that never inverts K (K may be singular):
  B = I + W^½ K W^½ = L Lᵀ,  b = W f + ∇ log p,  a = b − W^½ L⁻ᵀ L⁻¹ W^½ K b,  f = K a,
with step halving on the direction a − a_old whenever Ψ(f) = −½ aᵀf + Σ log Φ(y f) would
decrease; the budget is the maximum number of Newton steps, and the iteration stops when Ψ
changes by less than `tol` (diagnostic `converged`).
  log q(y|X) = −½ aᵀ f̂ + Σ log Φ(y_i f̂_i) − Σ log L_ii           (R&W 3.32)
Predictions (Alg. 3.2): f̄* = k*ᵀ ∇ log p(y|f̂), V* = k** − |L⁻¹ W^½ k*|², J* = Φ(f̄*/sqrt(1 + V*)).
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


def probit_derivatives(y: np.ndarray, f: np.ndarray):
    """Σ log Φ(y f), its gradient y ρ and W = ρ (z + ρ)."""
    z = y * f
    lc = log_ndtr(z)
    rho = np.exp(-0.5 * z * z - LOG_SQRT_2PI - lc)
    return float(lc.sum()), y * rho, rho * (z + rho)


class LaplaceApproximation(Method):
    """Laplace's method with the probit likelihood (an approximation, labelled so)."""

    name = "laplace"
    summary = ("Laplace approximation, probit likelihood (Rasmussen & Williams Algs 3.1–3.2): "
               "an APPROXIMATION, deterministic")
    budget_unit = "Newton steps (maximum)"
    tags = Tags(exact=False, stochastic=False, handles_orthant=False)
    checks = CheckSettings(test_budget=100)
    constraints = {"tol": Number(low=0, low_open=True)}
    setting_help = {"tol": "stop when the Newton objective changes by less than this"}

    def __init__(self, tol: float = 1e-10):
        self.tol = tol

    def memory_estimate(self, n_train: int, n_test: int, budget: int) -> MemoryEstimate:
        """K is the problem's; each Newton step builds the outer product, B and its factor
        while the previous factor is alive (4 N x N), plus the test solves."""
        return MemoryEstimate(held={"test rows": dense(n_train, n_test)},
                              work={"Newton work matrices (4 x N x N)": 4 * dense(n_train),
                                    "test solves": 2 * dense(n_train, n_test)})

    def _estimate(self, problem: Problem, budget: int, rng: np.random.Generator) -> Estimate:
        K = problem.K
        n = len(K)
        y = problem.y_train.astype(float)

        def psi(a):
            f = K @ a
            return -0.5 * a @ f + probit_derivatives(y, f)[0], f

        a = np.zeros(n)
        obj, f = psi(a)
        converged = False
        steps = 0
        for steps in range(1, budget + 1):  # noqa: B007
            check_deadline()
            _, grad, W = probit_derivatives(y, f)
            sw = np.sqrt(W)
            B = np.outer(sw, sw) * K
            B[np.diag_indices(n)] += 1.0
            L = scipy.linalg.cholesky(B, lower=True, check_finite=False)
            b = W * f + grad
            a_new = b - sw * scipy.linalg.cho_solve((L, True), sw * (K @ b))
            direction = a_new - a
            step = 1.0
            while True:
                cand = a + step * direction
                obj_new, f_new = psi(cand)
                if obj_new >= obj - 1e-12 * abs(obj) or step < 1e-10:
                    break
                step *= 0.5
            change = obj_new - obj
            a, f, obj = cand, f_new, obj_new
            if abs(change) < self.tol:
                converged = True
                break
        ll, grad, W = probit_derivatives(y, f)
        sw = np.sqrt(W)
        B = np.outer(sw, sw) * K
        B[np.diag_indices(n)] += 1.0
        L = scipy.linalg.cholesky(B, lower=True, check_finite=False)
        log_z = -0.5 * a @ f + ll - float(np.sum(np.log(np.diag(L))))
        if not math.isfinite(log_z):
            return Estimate.failed("Laplace's method did not produce a finite log Z",
                                   steps=steps)
        if problem.n_test:
            kstar = y[:, None] * problem.test_cross
            fbar = kstar.T @ grad
            v = scipy.linalg.solve_triangular(L, sw[:, None] * kstar, lower=True)
            var = np.maximum(problem.test_variance - 1.0 - np.einsum("ij,ij->j", v, v), 0.0)
            probs = np.clip(ndtr(fbar / np.sqrt(1.0 + var)), 0.0, 1.0)
        else:
            probs = np.empty(0)
        return Estimate(min(log_z, 0.0), probs, diagnostics={
            "approximation": "Laplace", "converged": int(converged), "newton_steps": steps})
