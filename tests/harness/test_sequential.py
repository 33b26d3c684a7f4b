"""The blocked Cholesky walk against a naive one-variable-at-a-time implementation."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.sequential import CholeskyWalk, Resample


def _random_chol(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    return np.linalg.cholesky(A @ A.T / n + np.eye(n))


class RecordingStep:
    """Draws normals; resamples sparsely (dst <- src), fully, or never; records every t."""

    def __init__(self, n, mode, seed):
        self.n, self.mode, self.rng, self.ts = n, mode, np.random.default_rng(seed), []

    def __call__(self, j, t):
        self.ts.append(t.copy())
        z = self.rng.standard_normal(self.n)
        if self.mode == "none":
            return z, None
        if self.mode == "full":
            return z, Resample(src=self.rng.integers(0, self.n, self.n))
        bad = np.flatnonzero(z + t < 0)
        good = np.flatnonzero(z + t >= 0)
        if len(bad) == 0 or len(good) == 0:
            return z, None
        return z, Resample(src=good[self.rng.integers(0, len(good), len(bad))], dst=bad)


class LookingStep(RecordingStep):
    """A RecordingStep that asks for the next offset's dependence on its draw."""

    looks_ahead = True

    def __init__(self, n, mode, seed):
        super().__init__(n, mode, seed)
        self.aheads, self.zs = [], []

    def __call__(self, j, t, ahead):
        z, resample = super().__call__(j, t)
        self.aheads.append(ahead)
        self.zs.append(z.copy() if resample is None else None)
        return z, resample


def naive_walk(L, n, step):
    N = len(L)
    Z = np.zeros((n, N))
    lineage = np.arange(n)
    for j in range(N):
        t = (Z[:, :j] @ L[j, :j]) / L[j, j]
        z, rs = step(j, t)
        Z[:, j] = z
        if rs is not None:
            if rs.dst is None:
                Z = Z[rs.src].copy()
                lineage = lineage[rs.src]
            else:
                Z[rs.dst] = Z[rs.src]
                lineage[rs.dst] = lineage[rs.src]
    return Z, lineage


@pytest.mark.parametrize("looking", [False, True])
@pytest.mark.parametrize("mode", ["none", "sparse", "full"])
@pytest.mark.parametrize("block", [1, 3, 7, 50])
def test_blocked_walk_matches_naive(mode, block, looking):
    """Also for a looking step, whose walk finishes each mean from the one it computed a step
    earlier (rows resampled with the particles)."""
    L = _random_chol(23, 1)
    n = 40
    fast_step = (LookingStep if looking else RecordingStep)(n, mode, 7)
    slow_step = RecordingStep(n, mode, 7)
    result = CholeskyWalk(L, block_size=block).run(n, fast_step)
    Z, lineage = naive_walk(L, n, slow_step)
    for a, b in zip(fast_step.ts, slow_step.ts, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(result.Z, Z, rtol=0, atol=0)
    np.testing.assert_array_equal(result.lineage, lineage)


def test_walk_without_resampling_samples_the_gaussian():
    """v = Z L^T has covariance R = L L^T (no truncation, no resampling)."""
    L = _random_chol(6, 2)
    step = RecordingStep(200_000, "none", 3)
    Z = CholeskyWalk(L, block_size=4).run(200_000, step).Z
    cov = np.cov((Z @ L.T).T)
    np.testing.assert_allclose(cov, L @ L.T, atol=0.03)


@pytest.mark.parametrize("block", [1, 4, 7])
def test_a_looking_step_is_told_the_next_offset_as_a_line_in_its_draw(block):
    """t_{j+1} = a + b z_j for every variable but a block's last (ahead None there): the
    look-ahead twist's input (docs/math.md §7b)."""
    L = _random_chol(20, 3)
    step = LookingStep(30, "none", 1)
    CholeskyWalk(L, block_size=block).run(30, step)
    told = 0
    for j in range(19):
        ahead = step.aheads[j]
        if (j + 1) % block == 0:
            assert ahead is None
            continue
        a, b = ahead
        np.testing.assert_allclose(a + b * step.zs[j], step.ts[j + 1], rtol=1e-10, atol=1e-12)
        assert b == pytest.approx(L[j + 1, j] / L[j + 1, j + 1])
        told += 1
    assert step.aheads[19] is None and told == 19 - 19 // block
