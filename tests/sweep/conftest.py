"""Fixtures of the sweep tests: real Dask clusters (see sweep_helpers), cleaned up afterwards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sweep_helpers import DaskProcesses, make_certificates, spawn, stop


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A scheduler and two single-threaded workers, shared by one test module."""
    cluster = DaskProcesses(tmp_path_factory.mktemp("dask"), n_workers=2)
    try:
        yield cluster.start()
    finally:
        cluster.close()


@pytest.fixture
def own_dask_cluster(tmp_path):
    """A scheduler and two workers for one test (e.g. one that kills a worker)."""
    cluster = DaskProcesses(tmp_path / "dask", n_workers=2)
    try:
        yield cluster.start()
    finally:
        cluster.close()


@pytest.fixture
def tls_dask_cluster(tmp_path):
    """A scheduler and one worker that speak TLS only, with a throw-away CA."""
    tls = make_certificates(tmp_path / "certs")
    cluster = DaskProcesses(tmp_path / "dask", n_workers=1, tls=tls)
    try:
        yield cluster.start()
    finally:
        cluster.close()


@pytest.fixture
def sweep_process(tmp_path):
    """Start `python -m harness sweep ...` as a subprocess; killed at teardown if still alive."""
    started: list[subprocess.Popen] = []

    def start(*args: str, log: str = "sweep.log") -> subprocess.Popen:
        proc = spawn([sys.executable, "-m", "harness", "sweep", *args], tmp_path / log,
                     Path.cwd())
        started.append(proc)
        return proc

    yield start
    for proc in started:
        stop(proc)
