"""The Pareto k̂ of importance weights: how heavy their right tail is (docs/math.md §6, §13).

Pareto smoothed importance sampling (Vehtari, Simpson, Gelman, Yao & Gabry 2015/2024) fits a
generalised Pareto distribution (GPD) to the M largest of S weights, M = ceil(min(S/5, 3√S)),
as exceedances over the (M+1)-th largest, and reads its shape k̂: with k̂ < 1/2 the weights
have a finite variance and the estimate converges at the usual rate; 1/2 to 0.7 slowly; above
0.7 the estimate is not to be trusted at any practical S (the mean of the weights is dominated
by draws it has not yet seen).

The fit is Zhang & Stephens' (2009) empirical-Bayes estimator exactly as in PSIS (the
`gpdfit` of the loo / ArviZ packages): a posterior mean of θ = -k/σ over a grid of
30 + √M quantile-based values, then k̂ = mean log(1 - θ x) shrunk towards 1/2 by a weakly
informative prior worth 10 observations, k̂ = (M k + 5) / (M + 10). scipy.stats.genpareto.fit
is a plain maximum-likelihood fit without the prior: noisier for M of a few dozen (S ~ 10³
gives M = 95), slower (a numerical optimisation per call) and not the estimator PSIS's
0.5 / 0.7 thresholds were calibrated on, so it is not used.

Everything is in log space: log weights in, their maximum subtracted; exceedances
exp(x - max) - exp(x_(M+1) - max) are formed relative to the largest weight, so weights of
any magnitude (log Z ~ -1e3) are fine. As in PSIS, tail points below the smallest positive
double relative to the largest are dropped, and with 4 or fewer tail points left k̂ = inf
(the weights have collapsed). The fit depends only on the M + 1 largest log weights, which is
what a part of a split estimate ships (`top_count`).
"""

from __future__ import annotations

import math

import numpy as np

PRIOR_K = 10.0      # the weakly informative prior's weight (observations), centred at 1/2
PRIOR_BS = 3.0      # the quantile scaling of the θ grid (Zhang & Stephens)
_LOG_TINY = math.log(np.finfo(float).tiny)


def tail_size(S: int) -> int:
    """M, the number of largest weights the GPD is fitted to: ceil(min(S/5, 3√S))."""
    return int(math.ceil(min(0.2 * S, 3.0 * math.sqrt(S))))


def top_count(S: int) -> int:
    """How many of the largest log weights determine k̂ for S draws (M plus the threshold)."""
    return min(S, tail_size(S) + 1)


def gpd_fit(x: np.ndarray) -> tuple[float, float]:
    """Zhang–Stephens GPD fit with the PSIS prior to exceedances x > 0 sorted ascending:
    (k̂, σ̂). Vectorised over the θ grid."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    m = 30 + int(math.sqrt(n))
    b = 1.0 - np.sqrt(m / (np.arange(1, m + 1) - 0.5))
    b /= PRIOR_BS * x[int(n / 4 + 0.5) - 1]
    b += 1.0 / x[-1]
    k = np.log1p(-b[:, None] * x).mean(axis=1)
    log_lik = n * (np.log(-b / k) - k - 1.0)
    with np.errstate(over="ignore"):      # far-off grid points: weight 1/inf = 0
        w = 1.0 / np.exp(log_lik - log_lik[:, None]).sum(axis=1)
    keep = w >= 10 * np.finfo(float).eps
    w, b = w[keep], b[keep]
    w /= w.sum()
    b_post = float(np.sum(b * w))
    k_post = float(np.log1p(-b_post * x).mean())
    sigma = -k_post / b_post
    k_post = (n * k_post + PRIOR_K * 0.5) / (n + PRIOR_K)
    return k_post, sigma


def pareto_k(log_w: np.ndarray, S: int | None = None) -> float:
    """Pareto k̂ of the weights exp(log_w) (PSIS). `log_w` may be all S log weights or just
    their top_count(S) largest (any order; then pass S, the number of draws). NaN for fewer
    than 5 draws; inf when fewer than 5 tail points are left (collapse)."""
    log_w = np.asarray(log_w, dtype=float).ravel()
    S = len(log_w) if S is None else int(S)
    if S < 5:
        return float("nan")
    need = top_count(S)
    if len(log_w) < need:
        raise ValueError(f"k̂ of {S} draws needs their {need} largest log weights, "
                         f"got {len(log_w)}")
    top = np.sort(np.partition(log_w, len(log_w) - need)[len(log_w) - need:])   # ascending
    if not np.isfinite(top[-1]):
        return float("nan")
    x = top - top[-1]
    if -x[0] <= 64 * np.finfo(float).eps * max(1.0, abs(top[-1])):
        return float("inf")               # equal up to rounding: ties, as below
    cut = max(x[0], _LOG_TINY)            # the (M+1)-th largest: the threshold
    tail = x[1:][x[1:] > cut]
    if len(tail) <= 4:
        return float("inf")
    exceed = np.exp(tail) - math.exp(cut)
    if not exceed[0] > 0:                 # ties at the threshold: drop them
        exceed = exceed[exceed > 0]
        if len(exceed) <= 4:
            return float("inf")
    return gpd_fit(exceed)[0]
