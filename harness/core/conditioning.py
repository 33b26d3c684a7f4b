"""A build-time warning for covariances too ill-conditioned for double precision.

Rounding perturbs R by about eps·|R| (eps = 2.2e-16) in a Cholesky factorisation (backward
stability), so the smallest eigenvalue of R, λmin = λmax / cond(R), is known only to a
relative accuracy of about eps·cond(R). The orthant probability depends on exactly those
directions: the conditional variances L_jj² along the SOV walk (docs/math.md §4, §6) can be as small
as λmin, and the weights Φ(c_j / L_jj) turn on their digits. From COND_WARN = 1e12 on fewer than
4 significant digits of λmin survive (at ~4.5e15 = 1 / eps none do and R is numerically
singular). The threshold and the SE floor are justified in docs/studies.md, "Conditioning".
Besides the warning, the SOV family's SE of log Ẑ is at least eps·cond(R) (Problem.condition;
methods.sov).

The estimate is cheap and never builds an N x N matrix a problem does not already hold:
  dense (user `cov`)   LAPACK's dpocon from the Cholesky factor the build computes anyway
                       (an estimate of the 1-norm condition number, O(N²));
  low rank + identity  R = C(K + I)C has eigenvalues 1 + eig(K) >= 1, so cond = 1 + λmax(K),
                       λmax(scale·X Xᵀ) = scale·λmax(Xᵀ X) exactly from the d x d Gram, O(N d²);
  other kernels        cond <= 1 + trace(K) = 1 + Σ k(x_i, x_i), O(N) (an upper bound, within a
                       factor N: λmax(K) >= max k(x_i, x_i));
  one-factor           D + d dᵀ, D = diag(1 - d²): cond <= (max D + Σ d²) / min D, O(N).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import lapack

from harness.core.covariance import (
    Covariance,
    DenseCovariance,
    KernelCovariance,
    LowRankCovariance,
    OneFactorCovariance,
)

COND_WARN = 1e12
EPS = float(np.finfo(float).eps)


class IllConditionedWarning(UserWarning):
    """A problem's covariance is too ill-conditioned for double precision (one line in the
    CLI)."""

    one_line = True


def condition_estimate(cov: np.ndarray | Covariance, chol: np.ndarray | None = None
                       ) -> tuple[float, str] | None:
    """An estimate of cond(R), or an upper bound, at the cost the module doc gives.

    Parameters
    ----------
    cov : ndarray or Covariance
        R, dense or as a representation (harness.core.covariance).
    chol : ndarray, optional
        The lower Cholesky factor of a dense R, when already computed.

    Returns
    -------
    (float, str) or None
        The estimate and how it was obtained; None for a representation without a cheap
        estimate.
    """
    if isinstance(cov, DenseCovariance):
        cov = cov.R
    if isinstance(cov, np.ndarray):
        if chol is None:
            return None
        anorm = float(np.abs(cov).sum(axis=0).max())
        rcond, info = lapack.dpocon(chol, anorm, uplo="L")
        if info != 0:
            return None
        return (np.inf if rcond <= 0 else 1.0 / rcond), "LAPACK's 1-norm estimate"
    if isinstance(cov, LowRankCovariance):
        gram = cov.X.T @ cov.X
        lam = float(np.linalg.eigvalsh(gram)[-1]) * cov.kernel.scale if gram.size else 0.0
        return 1.0 + lam, "1 + the largest eigenvalue of the linear kernel matrix"
    if isinstance(cov, KernelCovariance):
        return 1.0 + float(np.sum(cov.kernel.diag(cov.X))), "at most 1 + trace(K)"
    if isinstance(cov, OneFactorCovariance):
        D = 1.0 - cov.d**2
        return float((D.max() + np.sum(cov.d**2)) / D.min()), "at most, from the loadings"
    return None


def warn_if_ill_conditioned(name: str, cov: np.ndarray | Covariance,
                            chol: np.ndarray | None = None, stacklevel: int = 3) -> float | None:
    """Warn (IllConditionedWarning) when the condition estimate of `cov` is >= COND_WARN;
    returns the estimate (None without one)."""
    found = condition_estimate(cov, chol)
    if found is None:
        return None
    cond, how = found
    if cond >= COND_WARN:
        digits = max(0.0, -np.log10(EPS * cond)) if np.isfinite(cond) else 0.0
        warnings.warn(
            f"problem {name}: the covariance's condition number is {cond:.1e} ({how}); "
            f"double precision keeps about {digits:.0f} significant digits of its smallest "
            f"eigenvalue (none from {1 / EPS:.1e} on), on which the orthant probability "
            "depends: estimates may be degenerate (status 'unreliable') or wrong; rescale the "
            "inputs or regularise the matrix",
            IllConditionedWarning, stacklevel=stacklevel)
    return cond


# ---- a kernel matrix that carries no information (user files: harness.datasets.files) ---------
DEGENERATE_TOL = 1e-6
DEGENERATE_SAMPLE = 2000


class DegenerateKernelWarning(UserWarning):
    """A problem's kernel matrix is numerically the identity or numerically rank one (one line
    in the CLI)."""

    one_line = True


def kernel_degeneracy(kernel, X: np.ndarray, rng_seed: int = 0) -> str | None:
    """'identity' when every off-diagonal |K_ij| is below DEGENERATE_TOL times the largest
    diagonal entry (the points are too far apart for the kernel: Z = 2^-N whatever the labels),
    'rank one' when every entry is within DEGENERATE_TOL (relative) of the diagonal (the points
    are indistinguishable to it), else None. Computed on at most DEGENERATE_SAMPLE points (a
    seeded sample), so never more than a 2000 x 2000 block."""
    X = np.asarray(X, float)
    n = len(X)
    if n < 2:
        return None
    if n > DEGENERATE_SAMPLE:
        X = X[np.sort(np.random.default_rng(rng_seed).choice(n, DEGENERATE_SAMPLE,
                                                             replace=False))]
    K = np.asarray(kernel(X, X), float)
    diag = np.diag(K).copy()
    scale = float(np.max(np.abs(diag)))
    if not np.isfinite(scale) or scale <= 0:
        return None
    off = K[~np.eye(len(K), dtype=bool)]
    if float(np.max(np.abs(off))) < DEGENERATE_TOL * scale:
        return "identity"
    spread = np.maximum(np.abs(K - diag[:, None]), np.abs(K - diag[None, :]))
    if float(np.max(spread)) <= DEGENERATE_TOL * scale:
        return "rank one"
    return None


def warn_if_degenerate_kernel(name: str, kernel, X: np.ndarray, stacklevel: int = 3
                              ) -> str | None:
    """Warn (DegenerateKernelWarning) when kernel_degeneracy finds K numerically the identity
    or rank one; returns what it found."""
    found = kernel_degeneracy(kernel, X)
    if found == "identity":
        warnings.warn(f"problem {name}: the kernel matrix is numerically the identity (every "
                      f"off-diagonal entry below {DEGENERATE_TOL:g} of the diagonal): the points "
                      "are too far apart for the kernel's length scale, so log Z = N log 1/2 "
                      "whatever the labels; standardise the features or enlarge alpha",
                      DegenerateKernelWarning, stacklevel=stacklevel)
    elif found == "rank one":
        warnings.warn(f"problem {name}: the kernel matrix is numerically rank one (every entry "
                      f"within {DEGENERATE_TOL:g} of the diagonal): the kernel cannot tell the "
                      "points apart; standardise the features or shrink alpha",
                      DegenerateKernelWarning, stacklevel=stacklevel)
    return found
