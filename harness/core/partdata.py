"""JSON-safe encodings of the statistics a part of a split estimate ships
(SplitsEstimates.estimate_part).

Parts travel as plain JSON (the store, Dask): numbers, lists, strings and None, never NaN or
inf. Log-sums are -inf when a sum is zero; they are encoded as None and decoded back, so that a
part that went through json.dumps(..., allow_nan=False) and json.loads combines to the same
Estimate, bit for bit, as the part itself (Python's JSON writes floats exactly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def encode_logs(values) -> Any:
    """An array of log-values (any shape) as nested lists, -inf as None; NaN and +inf raise."""
    a = np.asarray(values, dtype=float)
    if np.any(np.isnan(a) | (a == np.inf)):
        raise ValueError("a log-sum is NaN or +inf: the part's statistics are broken")
    obj = np.where(a == -np.inf, None, a).astype(object)
    return [_plain_nested(x) for x in obj] if a.ndim else _plain(obj.item())


def decode_logs(data) -> np.ndarray:
    """encode_logs undone: a float array with -inf for None."""
    a = np.array(data, dtype=float)   # None -> NaN
    a[np.isnan(a)] = -np.inf
    return a


def encode_log(value: float) -> float | None:
    """One log-value (-inf as None)."""
    return encode_logs(value)


def decode_log(value: float | None) -> float:
    return -np.inf if value is None else float(value)


def plain(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Diagnostics as JSON-safe data: numpy scalars as Python numbers, non-finite floats as
    None (so that a part's set-up diagnostics survive a strict JSON round trip unchanged)."""
    return {str(k): _plain(v) for k, v in mapping.items()}


def _plain_nested(x):
    if isinstance(x, np.ndarray):
        return [_plain_nested(y) for y in x]
    return _plain(x)


def _plain(v):
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return float(v) if np.isfinite(v) else None
    if isinstance(v, Mapping):
        return plain(v)
    if isinstance(v, list | tuple | np.ndarray):
        return [_plain(x) for x in v]
    return v
