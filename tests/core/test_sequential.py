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


class EnteringStep(RecordingStep):
    """A RecordingStep that is told of every block: records (i0, i1, a copy of the block's
    means, D) and, at each variable, the block's draws so far as the walk holds them."""

    def __init__(self, n, mode, seed):
        super().__init__(n, mode, seed)
        self.blocks, self.seen, self.steps = [], [], []

    def enter_block(self, i0, i1, W, D):
        self.blocks.append((i0, i1, W.copy(), D.copy()))
        self.W = W

    def __call__(self, j, t):
        i0 = self.blocks[-1][0]
        self.seen.append(self.W[:, : j - i0].copy())
        z, resample = super().__call__(j, t)
        self.steps.append((z.copy(), resample))
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


@pytest.mark.parametrize("entering", [False, True])
@pytest.mark.parametrize("mode", ["none", "sparse", "full"])
@pytest.mark.parametrize("block", [1, 3, 7, 50])
def test_blocked_walk_matches_naive(mode, block, entering):
    """Also for a step that is told of every block (enter_block)."""
    L = _random_chol(23, 1)
    n = 40
    fast_step = (EnteringStep if entering else RecordingStep)(n, mode, 7)
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


@pytest.mark.parametrize("mode", ["none", "full"])
@pytest.mark.parametrize("block", [1, 4, 7])
def test_a_step_is_told_each_block_with_its_means_and_diagonal_block(block, mode):
    """enter_block(i0, i1, W, D) before each block's first variable: W the block's conditional
    means given the earlier blocks, D = L[i0:i1, i0:i1]; at each variable W's first columns
    hold the block's draws so far, rows resampled with the particles (the Gaussian look-ahead's
    input, docs/math.md §7b)."""
    L = _random_chol(20, 3)
    n = 30
    step = EnteringStep(n, mode, 1)
    result = CholeskyWalk(L, block_size=block).run(n, step)
    starts = list(range(0, 20, block))
    assert [b[0] for b in step.blocks] == starts
    assert [b[1] for b in step.blocks] == [min(i + block, 20) for i in starts]
    for i0, i1, W, D in step.blocks:
        np.testing.assert_array_equal(D, L[i0:i1, i0:i1])
        if mode == "none":   # the history never changes: the final Z is the walk's
            np.testing.assert_allclose(W, result.Z[:, :i0] @ L[i0:i1, :i0].T, atol=1e-12)
    for j in range(20):
        i0 = j - j % block
        assert step.seen[j].shape == (n, j - i0)
        if j + 1 < min(i0 + block, 20):   # next variable, same block: this draw appended
            z, resample = step.steps[j]
            held = np.column_stack([step.seen[j], z])
            if resample is not None:
                held = held[resample.src]
            np.testing.assert_array_equal(step.seen[j + 1], held)
