"""Error measures against truth (docs/math.md §10)."""

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


# ---- predictive quality against held-out labels (docs/math.md §10) --------------------------
PREDICTIVE = ("accuracy", "log_loss", "brier")
LOG_LOSS_FLOOR = 1e-15   # a probability 0 of the observed label costs -log(1e-15) = 34.5 nats


def predictive_scores(p, y) -> dict[str, float]:
    """Accuracy, log-loss and Brier score of test probabilities p_i = P(y*_i = +1) against the
    held-out labels y_i (±1), n points:

    accuracy = (1/n) Σ 1{sign(p_i − ½) = y_i}, a p_i of exactly ½ counting one half;
    log-loss = −(1/n) Σ log q_i with q_i = p_i if y_i = +1 else 1 − p_i, each q_i at least
    LOG_LOSS_FLOOR (so one confident miss costs 34.5 nats, not infinity);
    Brier = (1/n) Σ (p_i − 1{y_i = +1})².
    """
    p = np.asarray(p, float)
    positive = np.asarray(y) > 0
    hit = np.where(p == 0.5, 0.5, (p > 0.5) == positive)
    q = np.where(positive, p, 1.0 - p)
    return {"accuracy": float(np.mean(hit)),
            "log_loss": float(-np.mean(np.log(np.maximum(q, LOG_LOSS_FLOOR)))),
            "brier": float(np.mean((p - positive) ** 2))}


# ---- summaries over replicates and the consensus of methods (used by the reports) ----------
def standard_error(values) -> float:
    """Standard error of the mean, sd (ddof=1) / sqrt(n); NaN with fewer than two values."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return float("nan")
    # shifted by the first value: equal values give exactly 0, not a rounding residue
    return float(np.std(v - v[0], ddof=1) / np.sqrt(len(v)))


def median_consensus(estimates) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-point median of several runs (rows), its spread and its standard error.

    Returns (median, iqr, se): the inter-quartile range across runs at each point and the
    standard error of the median, ≈ 1.2533 σ̂ / √n with σ̂ = IQR / 1.349 (normal theory;
    NaN with fewer than two runs). MAE-MED (docs/math.md §10) is the MAE against this median.
    """
    a = np.atleast_2d(np.asarray(estimates, float))
    n = a.shape[0]
    median = np.median(a, axis=0)
    q25, q75 = np.percentile(a, [25, 75], axis=0)
    iqr = q75 - q25
    se = (np.full_like(median, np.nan) if n < 2
          else 1.2533 * (iqr / 1.349) / np.sqrt(n))
    return median, iqr, se


def at_reference_precision(error: float, reference_se: float | None, factor: float = 2.0) -> bool:
    """True when an error is below `factor` times the reference's own standard error."""
    if reference_se is None or not np.isfinite(reference_se) or reference_se <= 0:
        return False
    return bool(error < factor * reference_se)
