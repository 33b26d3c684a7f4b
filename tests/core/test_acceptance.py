"""The rejection step's one-pass count against numpy's masks."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.acceptance import split_accepted
from harness.core.special import ndtr


@pytest.mark.parametrize("soft", [False, True])
@pytest.mark.parametrize("centre", [-3.0, 0.0, 2.0, 40.0, -40.0])
def test_split_is_numpys(soft, centre):
    rng = np.random.default_rng(abs(int(centre * 10)) + int(soft))
    t = rng.normal(centre, 1.0, 5000)
    eps = rng.standard_normal(t.size)
    eps[:50] = -t[:50]                       # ties: eps = -t exactly is accepted
    phi = np.full(t.size, -1.0)
    acc, rej = split_accepted(t, eps, soft, phi)
    assert np.array_equal(acc, np.flatnonzero(eps >= -t))
    assert np.array_equal(rej, np.flatnonzero(eps < -t))
    if soft:
        assert np.array_equal(phi, ndtr(t))
    else:
        assert np.all(phi == -1.0)           # untouched by the hard count


def test_empty_and_whole():
    t = np.full(10, 50.0)
    acc, rej = split_accepted(t, np.zeros(10), False, np.empty(10))
    assert len(acc) == 10 and len(rej) == 0
    acc, rej = split_accepted(-t, np.zeros(10), False, np.empty(10))
    assert len(acc) == 0 and len(rej) == 10
