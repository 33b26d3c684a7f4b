"""Row and column copies of resampled particle arrays against numpy's indexing."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.rowops import copy_rows, gather_columns, gather_rows
from harness.core.threads import compute_threads


def test_copy_and_gather_rows_are_numpys():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((50, 7))
    dst, src = np.array([1, 4, 9]), np.array([0, 0, 30])
    expected = A.copy()
    expected[dst] = A[src]
    copy_rows(A, dst, src)
    assert np.array_equal(A, expected)
    idx = rng.integers(0, 50, 50)
    out = np.zeros_like(A)
    gather_rows(A, idx, 5, out)
    assert np.array_equal(out[:, :5], A[idx, :5]) and np.all(out[:, 5:] == 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_gather_columns_is_take_along_the_particles(threads):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((1100, 300))      # more rows than a thread's block
    idx = rng.integers(0, 300, 300)
    out = np.empty_like(A)
    with compute_threads(threads):
        gather_columns(A, idx, out)
    assert np.array_equal(out, np.take(A, idx, axis=1))


def test_gather_columns_of_some_rows_leaves_the_others():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((40, 25))
    idx = rng.integers(0, 25, 25)
    rows = np.array([0, 3, 4, 39])
    out = np.zeros_like(A)
    gather_columns(A, idx, out, rows)
    assert np.array_equal(out[rows], A[rows][:, idx])
    assert np.all(np.delete(out, rows, axis=0) == 0)
