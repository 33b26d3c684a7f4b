"""Shared helpers for the benchmarks: single-threaded BLAS, CPU timing, the 'floor'."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from scipy.special import log_ndtr
from threadpoolctl import threadpool_info, threadpool_limits


def reexec_without_coretype() -> None:
    """Re-run this process without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (benchmarks only).

    The environment may pin an old OpenBLAS kernel for safety; that slows a current numpy.
    Tests and CI never do this.
    """
    if any(k in os.environ for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
        print("note: re-running without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE for this benchmark",
              flush=True)
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def blas_description() -> str:
    info = threadpool_info()
    return ", ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
                     for i in info if i.get("user_api") == "blas")


def cpu_time(fn, *args, **kwargs):
    """(result, thread CPU seconds) of fn with BLAS limited to one thread."""
    with threadpool_limits(1):
        t0 = time.thread_time()
        out = fn(*args, **kwargs)
        return out, time.thread_time() - t0


def floor_seconds(M: int, N: int, *, uniforms: bool = False, ndtri: bool = False,
                  chunk_elements: int = 1 << 23, seed: int = 0) -> dict[str, float]:
    """CPU time of the irreducible work of a sequential estimator at M particles, N variables.

    One normal draw (or uniform) and one log_ndtr per particle-dimension (optionally one
    ndtri_exp too), each vectorised over chunks, plus a float64 matrix product of M*N^2 flops
    ((M x N) @ (N x N/2)). Returns the parts and their total.
    """
    from scipy.special import ndtri_exp

    rng = np.random.default_rng(seed)
    total_elements = M * N
    parts = {"draws": 0.0, "log_ndtr": 0.0, "ndtri_exp": 0.0, "gemm": 0.0}
    with threadpool_limits(1):
        done = 0
        while done < total_elements:
            k = min(chunk_elements, total_elements - done)
            t0 = time.thread_time()
            x = rng.random(k) if uniforms else rng.standard_normal(k)
            t1 = time.thread_time()
            y = log_ndtr(x)
            t2 = time.thread_time()
            if ndtri:
                ndtri_exp(np.minimum(y, -1e-300))
            t3 = time.thread_time()
            parts["draws"] += t1 - t0
            parts["log_ndtr"] += t2 - t1
            parts["ndtri_exp"] += t3 - t2
            done += k
        B = rng.standard_normal((N, max(1, N // 2)))
        rows = max(1, chunk_elements // N)
        A = rng.standard_normal((rows, N))
        done = 0
        while done < M:
            r = min(rows, M - done)
            t0 = time.thread_time()
            A[:r] @ B
            parts["gemm"] += time.thread_time() - t0
            done += r
    parts["total"] = sum(parts.values())
    return parts


def run_measured(argv: list[str], *, timeout: float, env: dict | None = None,
                 data_limit_gb: float | None = None) -> dict:
    """Run a command in its own process group; its CPU seconds, wall seconds and peak memory.

    os.wait4 gives the child's own resource usage (user + system CPU, resident high-water
    mark), so each command's peak is its own, not the largest of all children so far
    (RUSAGE_CHILDREN's ru_maxrss). With data_limit_gb the child's data segment is capped
    (RLIMIT_DATA: its allocations beyond fail, rather than the machine running out). A command
    still running after `timeout` wall seconds is killed with its group: {"timeout": True}.
    Returns rc, timeout, cpu, wall, peak_gb, stdout, stderr.
    """
    import resource
    import signal
    import subprocess
    import tempfile

    def limit():
        if data_limit_gb is not None:
            hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
            cap = int(data_limit_gb * 1e9)
            resource.setrlimit(resource.RLIMIT_DATA, (cap if hard == resource.RLIM_INFINITY
                                                      else min(cap, hard), hard))

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, start_new_session=True,
                                preexec_fn=limit)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout and not timed_out:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return {"rc": proc.returncode, "timeout": timed_out,
                "cpu": usage.ru_utime + usage.ru_stime, "wall": time.perf_counter() - t0,
                "peak_gb": usage.ru_maxrss * 1024 / 1e9, "stdout": out.read(),
                "stderr": err.read()}
