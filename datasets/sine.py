"""The sine regression data of the PRML chapter-6 example (a regression set, not a GPC family).

t = sin(2πx) + ε, ε ~ N(0, noise_sd²), x uniform on [low, high]. The worked example (PRML
chapter 6 in NumPy, `create_toy_data(func, high=0.7, std=0.1)`) draws n = 10 points on [0, 0.7]
with noise sd 0.1 (noise precision β = 100), so the band widens over (0.7, 1] where there are no
data; these are the defaults.
"""

from __future__ import annotations

import math

import numpy as np

from harness.core.errors import InputError

PRML_RANGE = (0.0, 0.7)   # the example's x range


def sine(x) -> np.ndarray:
    """The true function sin(2πx)."""
    return np.sin(2.0 * np.pi * np.asarray(x, dtype=float))


def sine_data(n: int = 10, noise_sd: float = 0.1, seed: int = 0, low: float = PRML_RANGE[0],
              high: float = PRML_RANGE[1]) -> tuple[np.ndarray, np.ndarray]:
    """(X of shape (n, 1), t of shape (n,)), deterministic by seed."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise InputError("sine_data.n", f"must be an integer >= 1, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError("sine_data.seed", f"must be an integer >= 0, got {seed!r}")
    if not (isinstance(noise_sd, int | float) and math.isfinite(noise_sd) and noise_sd >= 0):
        raise InputError("sine_data.noise_sd", f"must be a finite number >= 0, got {noise_sd!r}")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise InputError("sine_data.low", f"need finite low < high, got [{low}, {high}]")
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, n)
    return x[:, None], sine(x) + rng.normal(0.0, noise_sd, n)
