"""Latent-space quantities shared by the MCMC and approximate methods (docs/math.md §1, §9).

Latent-space methods (ess, hmc, emcee, ep, laplace) work with f ~ N(0, K) and the probit
likelihood ℓ(f) = Σ_i log Φ(y_i f_i); they need classification data and a kernel, so pure
orthant problems are refused by Method.estimate (tags.handles_orthant False).

The samplers keep their chains in *signed* coordinates g = y ⊙ f (C = diag(y)), so that
ℓ = Σ_i log Φ(g_i) needs no multiplication; the prior of g is N(0, C K C).

Prior quantities, built once per problem (and jitter) and cached on the Problem object's
identity (`latent_prior`):

    K_j  = K + s² I,   s² = jitter · mean(diag K)      GPML's default jitter 10⁻⁶ (docs/math.md §9)
    L    = chol(K_j)                                    prior draws f = L z, whitening f = L u
    W    = L⁻¹ k*           (N × n_test)                μ*(f) = k*ᵀ K_j⁻¹ f = Wᵀ u = Aᵀ g
    A    = C K_j⁻¹ k* = C L⁻ᵀ W                         signed predictive weights
    σ*²  = k(x*, x*) − k*ᵀ K_j⁻¹ k* = k** − |W|²        latent predictive variance given f

The jitter makes K_j positive definite when K is singular (the linear kernel on one feature
has rank 1) and perturbs the model: the samplers target N(0, K_j) ℓ(f). For the one-feature
linear kernel the perturbed model is again a one-factor integral with slopes a_i / sqrt(1 + s²)
(each f_i gets independent N(0, s²) noise that the probit absorbs), so its effect can be
computed exactly (`jitter_effect_linear1d`): at GPML's 10⁻⁶ it is far below any Monte Carlo
error (docs/studies.md, "Jitter of the latent prior"). Sampling in the kernel's feature space,
f = X w, would avoid the jitter for the linear kernel; it is not needed at these sizes.
All solves use the cached factor; no explicit inverse is formed.

The compiled samplers take log Φ from harness.core.special (`log_ndtr_`, a kernel numba
inlines) and the inverse Mills ratio below from it.
"""

from __future__ import annotations

import math
import weakref
from functools import cached_property

import numpy as np
import scipy.linalg
from numba import njit
from scipy.special import ndtr

from harness.model.problem import Problem

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
GPML_JITTER = 1e-6  # GPML infMCMC: st = 0.001 sqrt(mean(diag K)), K + st² I


# ---- the inverse Mills ratio for compiled loops -------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def inv_mills(x, logcdf):
    """φ(x)/Φ(x) given logcdf = log Φ(x) (→ −x in the lower tail, → 0 in the upper)."""
    return math.exp(-0.5 * x * x - LOG_SQRT_2PI - logcdf)


class SingularPrior(Exception):
    """K + jitter is not positive definite."""


# ---- the cached prior quantities ----------------------------------------------------------
class LatentPrior:
    """Prior quantities of one problem for one jitter (see the module docstring)."""

    def __init__(self, problem: Problem, jitter: float):
        K = problem.K
        n = len(K)
        self.n = n
        self.jitter = float(jitter)
        self.jitter_variance = float(jitter) * float(np.mean(np.diag(K)))
        self.y = problem.y_train.astype(float)
        K_j = K.copy()
        K_j[np.diag_indices(n)] += self.jitter_variance
        try:
            self.L = np.ascontiguousarray(
                scipy.linalg.cholesky(K_j, lower=True, check_finite=False))
        except np.linalg.LinAlgError:
            raise SingularPrior(
                f"the kernel matrix plus jitter {jitter:g}·mean(diag K) is not positive "
                "definite: increase the method's 'jitter' setting") from None
        self.K_j = K_j
        if problem.n_test:
            kstar = self.y[:, None] * problem.test_cross            # K(X_train, X_test)
            self.W = scipy.linalg.solve_triangular(self.L, kstar, lower=True)
            self.A = self.y[:, None] * scipy.linalg.solve_triangular(
                self.L, self.W, lower=True, trans="T")
            kss = problem.test_variance - 1.0
            self.sigma2 = np.maximum(kss - np.einsum("ij,ij->j", self.W, self.W), 0.0)
            self.B = np.ascontiguousarray(problem.test_cross)      # C k*, for α-samples
        else:
            self.W = self.A = self.B = np.empty((n, 0))
            self.sigma2 = np.empty(0)

    @cached_property
    def Kc(self) -> np.ndarray:
        """C K_j C (the prior covariance of the signed latents), C-contiguous."""
        return np.ascontiguousarray(self.K_j * np.outer(self.y, self.y))

    def signed_draws(self, Z: np.ndarray) -> np.ndarray:
        """Signed prior draws y ⊙ (L z) for the rows z of Z (one GEMM)."""
        return (Z @ self.L.T) * self.y

    def whiten(self, G: np.ndarray) -> np.ndarray:
        """u = L⁻¹ f for the rows g of G (signed latents)."""
        return scipy.linalg.solve_triangular(self.L, (G * self.y).T, lower=True).T


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def latent_prior_memory(n_train: int, n_test: int) -> tuple[dict[str, int], dict[str, int]]:
    """(held, set-up) bytes of a LatentPrior (harness.model.footprint): K_j and its factor L, the
    test arrays W, A and B; building L makes one transient N x N copy."""
    from harness.model.footprint import dense

    return ({"latent prior K + jitter": dense(n_train), "latent factor": dense(n_train),
             "latent test weights": 4 * dense(n_train, n_test)},
            {"latent factor copy": dense(n_train)})


def prepare_latent_prior(problem: Problem, jitter: float) -> None:
    """Build the cached LatentPrior in a method's prepare (a singular prior is reported by
    the estimate itself, as a failed Estimate)."""
    if not problem.is_orthant:
        try:
            latent_prior(problem, jitter)
        except SingularPrior:
            pass


def latent_prior(problem: Problem, jitter: float = GPML_JITTER) -> LatentPrior:
    """The cached LatentPrior of a problem (built once per problem object and jitter)."""
    per_problem = _CACHE.setdefault(problem, {})
    key = float(jitter)
    if key not in per_problem:
        per_problem[key] = LatentPrior(problem, key)
    return per_problem[key]


# ---- predictions from latent samples (docs/math.md §9) ------------------------------------------
def predict_from_means(mu: np.ndarray, sigma2: np.ndarray, *, gpml_compat: bool = False
                       ) -> np.ndarray:
    """Test probabilities J*_j = mean_s Φ(μ_sj / sqrt(1 + σ*²_j)) from latent samples
    (docs/math.md §9).

    Parameters
    ----------
    mu : ndarray, shape (S, n_test)
        The predictive latent means μ*(f) of the S samples.
    sigma2 : ndarray, shape (n_test,)
        The latent predictive variances σ*² given f.
    gpml_compat : bool
        Add the spread of the sample means to the variance, Φ(μ_sj / sqrt(1 + σ*²_j +
        Var_s μ_sj)), as GPML's gp.m does, although averaging over the samples already
        accounts for it (the spread is counted twice; it shrinks the probabilities towards 1/2).

    Returns
    -------
    ndarray, shape (n_test,)
        The probabilities, clipped to [0, 1].
    """
    if mu.shape[1] == 0:
        return np.empty(0)
    var = sigma2 + (mu.var(axis=0) if gpml_compat else 0.0)
    return np.clip(ndtr(mu / np.sqrt(1.0 + var)).mean(axis=0), 0.0, 1.0)


def jitter_effect_linear1d(problem: Problem, jitter: float = GPML_JITTER) -> dict[str, float]:
    """Exact effect of the jitter on a one-feature linear-kernel problem.

    With K = scale·x xᵀ and K_j = K + s² I, f = sqrt(scale) x u + e, e ~ N(0, s² I): the probit
    absorbs e, so Z_j = ∫ φ(u) ∏ Φ(a_i u / sqrt(1 + s²)) du (a_i = sqrt(scale) y_i x_i) and
    the test latent f* = sqrt(scale) x* u is unchanged (docs/math.md §3b).

    Parameters
    ----------
    problem : Problem
        A problem with a linear kernel on one feature.
    jitter : float
        The relative jitter: s² = jitter · mean(diag K).

    Returns
    -------
    dict
        `delta_log_z` (log Z_j - log Z) and `mae` (the mean absolute change of the test
        probabilities).
    """
    from harness.core.oracles import one_factor_integral

    scale = problem.kernel.params()["scale"]
    x, xs = problem.X_train[:, 0], problem.X_test[:, 0]
    s2 = jitter * float(np.mean(np.diag(problem.K)))
    a = np.sqrt(scale) * problem.y_train * x
    exact = one_factor_integral(a, np.sqrt(scale) * xs)
    jit = one_factor_integral(a / np.sqrt(1.0 + s2), np.sqrt(scale) * xs)
    return {"delta_log_z": jit.log_integral - exact.log_integral,
            "mae": float(np.mean(np.abs(jit.test_probabilities - exact.test_probabilities)))}
