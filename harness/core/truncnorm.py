"""Standard-normal draws truncated to one side, in log space (docs/math.md §6; shared by SOV, SIR,
minimax tilting and the mean-field variational method).

`draw_above(t, log_u)` draws z ~ N(0, 1) truncated to z >= -t from log_u = log(1 - w) < 0 (w
uniform) by inversion, z = -ndtri_exp(log_u + log Φ(t)), and returns (z, log Φ(t)): log Φ(t)
is the mass of the kept side (an importance weight for SOV/SIR, the normaliser of a tilted
proposal for minimax tilting). No probability is formed by subtraction, so t far in either
tail (log Φ(t) ~ -1000) is fine.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, ndtri_exp

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def draw_above(t: np.ndarray, log_u: np.ndarray, overwrite: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """(z >= -t drawn by inversion from log_u = log(1 - w), log Φ(t)).

    With overwrite=True, t is reused for the draw (the caller hands over a fresh array).
    """
    lp = log_ndtr(t)
    a = np.add(log_u, lp, out=t if overwrite else None)   # log((1 - w) Φ(t)) < 0
    ndtri_exp(a, out=a)
    return np.negative(a, out=a), lp


def inverse_mills(t: np.ndarray) -> np.ndarray:
    """φ(t) / Φ(t), accurate far in the left tail (log space)."""
    t = np.asarray(t, float)
    return np.exp(-0.5 * t * t - _LOG_SQRT_2PI - log_ndtr(t))
