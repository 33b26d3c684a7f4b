"""Error measures against truth (MATH.md §10)."""

from __future__ import annotations

import numpy as np


def abs_log_error(log_z_hat: float, log_z: float) -> float:
    """|log Ẑ - log Z| (nats)."""
    return float(abs(log_z_hat - log_z))


def mape_percent(log_z_hat, log_z) -> float:
    """A.64: 100 / N_R · Σ |log I - log Î| / |log I|, over runs (a scalar pair is one run)."""
    log_z_hat, log_z = np.atleast_1d(log_z_hat), np.atleast_1d(log_z)
    return float(100.0 * np.mean(np.abs(log_z - log_z_hat) / np.abs(log_z)))


def mae(p_hat, p) -> float:
    """A.67: (1 / N_test) Σ_j |J*_j - Ĵ*_j|."""
    return float(np.mean(np.abs(np.asarray(p_hat) - np.asarray(p))))
