"""Dense linear algebra with clear errors (the Cholesky factor every sequential method shares)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from harness.core.errors import InputError


def float_array(value, field: str) -> np.ndarray:
    """`value` as a float64 array, or an InputError naming `field` if it holds anything but
    real numbers (text, bytes, objects or complex numbers, e.g. from a user's .npz file)."""
    a = np.asarray(value)
    if a.dtype.kind not in "biuf":
        raise InputError(field, f"must hold real numbers, got an array of {a.dtype}",
                         "save it as a float array")
    return a.astype(float)


def check_covariance(R: np.ndarray, field: str = "cov") -> np.ndarray:
    """Return R as a float64 array after checking it is square, finite and symmetric."""
    R = float_array(R, field)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] == 0:
        raise InputError(field, f"must be a non-empty square matrix, got shape {R.shape}")
    if not np.all(np.isfinite(R)):
        raise InputError(field, "contains NaN or infinite values", "remove or impute them")
    scale = max(float(np.max(np.abs(R))), 1e-300)
    if np.max(np.abs(R - R.T)) > 1e-10 * scale:
        raise InputError(field, "is not symmetric", "pass (R + R.T) / 2 if that is what you mean")
    return R


def cholesky_lower(R: np.ndarray, field: str = "cov") -> np.ndarray:
    """Lower Cholesky factor L (R = L L^T), or an InputError naming the field if R is not PD."""
    try:
        return scipy.linalg.cholesky(R, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        eig_min = float(scipy.linalg.eigvalsh(R, subset_by_index=[0, 0])[0])
        raise InputError(
            field,
            f"is not positive definite (smallest eigenvalue {eig_min:.3g})",
            "check the kernel parameters or add a small diagonal term",
        ) from None
