"""Shared fixtures."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture
def one_blas_thread():
    """Run a test with single-threaded BLAS: the machines running the suite are shared and
    small, and threaded BLAS on small matrices only adds contention (use it with
    `pytestmark = pytest.mark.usefixtures("one_blas_thread")`)."""
    with threadpool_limits(1):
        yield
