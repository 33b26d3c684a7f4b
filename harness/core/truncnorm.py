"""Standard-normal draws truncated to one side, in log space (docs/math.md §6 and §6b; shared by
SOV, SIR, minimax tilting and the mean-field variational method).

`draw_above(t, log_u)` draws z ~ N(0, 1) truncated to z >= -t from log_u = log(1 - w) < 0 (w
uniform) by inversion, z = -Φ⁻¹(e^(log_u + log Φ(t))), and returns (z, log Φ(t)): log Φ(t)
is the mass of the kept side (an importance weight for SOV/SIR, the normaliser of a tilted
proposal for minimax tilting). No probability is formed by subtraction, so t far in either
tail (log Φ(t) ~ -1000) is fine. Both are computed in one compiled call over the block
(harness.core.special.draw_above).
"""

from __future__ import annotations

import numpy as np

from harness.core import special

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def draw_above(t: np.ndarray, log_u: np.ndarray, overwrite: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """(z >= -t drawn by inversion from log_u = log(1 - w), log Φ(t)).

    Parameters
    ----------
    t : ndarray
        The truncation points (float64); z >= -t.
    log_u : ndarray
        log(1 - w) of the uniforms, broadcastable to t's shape.
    overwrite : bool
        Reuse t for the draw (the caller hands over a fresh array); a t that is not a
        C-contiguous float64 array is copied all the same.

    Returns
    -------
    z, log_phi : ndarray
        The draws and log Φ(t), t's shape.
    """
    fresh = (overwrite and isinstance(t, np.ndarray) and t.dtype == np.float64
             and t.flags.c_contiguous and t.flags.writeable)
    z = t if fresh else np.array(t, dtype=np.float64, order="C")
    return z, special.draw_above(z, log_u)


def inverse_mills(t: np.ndarray) -> np.ndarray:
    """φ(t) / Φ(t), accurate far in the left tail (log space)."""
    t = np.asarray(t, float)
    return np.exp(-0.5 * t * t - _LOG_SQRT_2PI - special.log_ndtr(t))
