"""The compiled block step (harness.engine.sov_block) against the per-variable walk."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, ndtri_exp

from harness.core.sequential import CholeskyWalk
from harness.core.threads import compute_threads
from harness.engine.sov_block import sov_block
from harness.engine.sov_step import SovStep
from harness.engine.tilted_step import TiltStep


def _factor(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 3, n))
    R = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2) + 1e-6 * np.eye(n)
    return np.linalg.cholesky(R)


def _walk(L, E, block, fused: bool, mu=None):
    step = SovStep(E) if mu is None else TiltStep(E, mu)
    if not fused:
        step.fused_block = None
    result = CholeskyWalk(L, block).run(E.shape[1], step)
    return result.Z, step.log_weights()


@pytest.mark.parametrize("block", [1, 7, 16, 45, 128])
@pytest.mark.parametrize("shifted", [False, True])
def test_the_block_step_is_the_per_variable_walk(block, shifted):
    """Draws and log weights of the compiled block step equal the walk's per-variable step
    (numpy products and scipy-style calls) to rounding, for blocks that are and are not
    multiples of the four-row groups, with and without the tilted step's shifts."""
    n, particles = 150, 700
    L = _factor(n, 1)
    rng = np.random.default_rng(2)
    E = np.log1p(-rng.random((n, particles)))
    mu = rng.normal(0.3, 0.5, n) if shifted else None
    Z1, w1 = _walk(L, E, block, True, mu)
    Z0, w0 = _walk(L, E, block, False, mu)
    assert np.all(np.isfinite(Z1)) and np.all(np.isfinite(w1))
    np.testing.assert_allclose(Z1, Z0, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(w1, w0, rtol=1e-11, atol=1e-9)


def test_block_size_changes_only_rounding():
    n, particles = 300, 513
    L = _factor(n, 3)
    E = np.log1p(-np.random.default_rng(4).random((n, particles)))
    ref = _walk(L, E, 300, True)[1]
    for block in (5, 32, 128):
        np.testing.assert_allclose(_walk(L, E, block, True)[1], ref, rtol=1e-11)


@pytest.mark.parametrize("shift", [0.0, 1.5, -2.0])
def test_one_variable_against_scipy_in_the_far_tail(shift):
    """Offsets down to -60 (log Φ below -745: the far branch of Φ⁻¹): z and the weight
    against scipy's log_ndtr and ndtri_exp, Botev's weight with a shift."""
    t = np.concatenate([np.linspace(-60.0, 5.0, 300), [-38.5, -39.0]])
    log_u = np.log1p(-np.random.default_rng(5).random(t.size))
    W = t[:, None].copy()                       # one variable, pivot 1: c = t
    logw = np.zeros(t.size)
    sov_block(W, np.ones((1, 1)), np.ones(1), log_u[None, :].copy(), logw,
              None if shift == 0.0 else np.array([shift]))
    ts = t + shift
    lp = log_ndtr(ts)
    y = -ndtri_exp(log_u + lp)
    np.testing.assert_allclose(W[:, 0], y + shift, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(logw, lp - 0.5 * shift**2 - shift * y, rtol=1e-12)
    assert np.all(W[:, 0] + t >= 0)             # every draw meets its constraint


def test_threads_give_the_same_numbers():
    n, particles = 200, 3000
    L = _factor(n, 6)
    E = np.log1p(-np.random.default_rng(7).random((n, particles)))
    one = _walk(L, E, 64, True)
    with compute_threads(2):
        two = _walk(L, E, 64, True)
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])
