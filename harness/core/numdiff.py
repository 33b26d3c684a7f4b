"""Central finite differences, the check of every analytic gradient (kernels, docs/math.md §12)."""

from __future__ import annotations

import numpy as np


def central_difference(f, theta, h: float = 1e-5) -> np.ndarray:
    """(f(θ + h e_j) − f(θ − h e_j)) / 2h for every j, stacked on a new first axis.

    f maps a vector θ to an array (or a float); the truncation error is (h²/6) |f'''|, the
    rounding error about ε |f| / h (2e-11 |f'''| and 2e-11 |f| at h = 1e-5).
    """
    theta = np.asarray(theta, dtype=float)
    steps = h * np.eye(len(theta))
    return np.stack([(np.asarray(f(theta + e)) - np.asarray(f(theta - e))) / (2 * h)
                     for e in steps])
