"""harness.core.partdata: log-sums survive a strict JSON round trip exactly, -inf as None."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.core.partdata import decode_log, decode_logs, encode_log, encode_logs, plain


def test_log_sums_round_trip_exactly_through_strict_json():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 3)) * 1e3
    a[1, 2] = a[3, 0] = -np.inf
    text = json.dumps(encode_logs(a), allow_nan=False)
    assert "null" in text
    back = decode_logs(json.loads(text))
    np.testing.assert_array_equal(back, a)
    assert decode_logs(encode_logs(np.empty((5, 0)))).shape == (5, 0)
    assert encode_log(-np.inf) is None and decode_log(None) == -np.inf
    x = -1234.5678901234567
    assert decode_log(json.loads(json.dumps(encode_log(x)))) == x


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_plus_inf_are_refused(bad):
    with pytest.raises(ValueError, match="NaN or \\+inf"):
        encode_logs([0.0, bad])


def test_plain_diagnostics_are_strict_json():
    d = plain({"a": np.int64(3), "b": np.float64(0.5), "c": float("nan"), "d": np.bool_(True),
               "e": (1, np.inf), "f": "text"})
    assert d == {"a": 3, "b": 0.5, "c": None, "d": True, "e": [1, None], "f": "text"}
    assert type(d["a"]) is int and type(d["d"]) is bool
    json.dumps(d, allow_nan=False)
