"""The PRML sine regression data (datasets/sine.py)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.datasets.sine import sine, sine_data


def test_sine_data_shape_range_and_determinism():
    X, t = sine_data()
    assert X.shape == (10, 1) and t.shape == (10,)                      # the example: n = 10
    assert np.all((X >= 0) & (X <= 0.7))                                  # on [0, 0.7]
    X2, t2 = sine_data(seed=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(t, t2)
    assert not np.array_equal(sine_data(seed=1)[0], X)
    Xn, tn = sine_data(n=5, noise_sd=0.0, low=-1.0, high=2.0)
    np.testing.assert_allclose(tn, np.sin(2 * np.pi * Xn[:, 0]), rtol=0, atol=0)
    assert sine(0.25) == pytest.approx(1.0, abs=1e-15)


def test_sine_noise_has_the_requested_sd():
    # residuals of n = 4000 points: sample sd within 5 standard errors (sd / sqrt(2n))
    X, t = sine_data(n=4000, noise_sd=0.3, seed=2)
    residual = t - sine(X[:, 0])
    assert abs(residual.std(ddof=1) - 0.3) < 5 * 0.3 / np.sqrt(2 * 4000)
    assert abs(residual.mean()) < 5 * 0.3 / np.sqrt(4000)


@pytest.mark.parametrize("kwargs,field", [
    ({"n": 0}, "sine_data.n"), ({"n": 2.5}, "sine_data.n"), ({"seed": -1}, "sine_data.seed"),
    ({"noise_sd": -0.1}, "sine_data.noise_sd"), ({"noise_sd": float("nan")}, "sine_data.noise_sd"),
    ({"low": 1.0, "high": 0.0}, "sine_data.low"),
])
def test_sine_data_errors(kwargs, field):
    with pytest.raises(InputError) as exc:
        sine_data(**kwargs)
    assert exc.value.field == field
