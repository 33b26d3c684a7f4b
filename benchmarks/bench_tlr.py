"""The tile-low-rank Cholesky of sov-tlr at large N, every ratio within this one run.

Each job runs in its own process (so the peak resident memory, VmHWM, is the job's):
  one-factor N = 4096, 8192, 16384 (and 32768, 65536 with --large), sov-tlr with
  factorisation=tlr straight from OneFactorCovariance(d) (no dense matrix anywhere): set-up CPU
  and wall, estimate CPU at --points QMC points, peak memory, log Z against the exact truth
  (one_factor_integral) in reported standard errors (Sobol' points; lattice points above
  N = 21201, where Sobol' direction numbers end);
  one-factor N = 16384 on the dense path (dense R, LAPACK Cholesky, compression: the
  baseline), with the ratios;
  with --rbf, a 2-D RBF orthant problem (uniform points in the unit square, alpha = 0.02,
  beta = 1, R = K + I, k-d tree order) at N = 16384 (no exact truth).

    nice python benchmarks/bench_tlr.py [--large] [--rbf] [--points 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, reexec_without_coretype


def _hwm_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_job(spec: dict) -> dict:
    """One job in this process: build, set up, estimate; times, peak memory, error."""
    from threadpoolctl import threadpool_limits

    from harness.core.kernels import RBF
    from harness.methods.sov_tlr import SovTlr

    N, fac = spec["n"], spec["factorisation"]
    w0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(1):
        if spec["family"] == "onefactor":
            from harness.datasets.onefactor import onefactor

            problem = onefactor(n=N, seed=1)   # OneFactorCovariance: nothing dense until asked
            truth = problem.truth.log_marginal_likelihood
            # default points: Sobol' up to dimension 21201, the lattice above (methods/sov.py)
            method = SovTlr(factorisation=fac)
        else:
            from harness.model.problem import Problem

            X = np.random.default_rng(1).uniform(size=(N, 2))
            # all labels +1: R = K + I (built directly: no class reordering to apply)
            problem = Problem(name=f"rbf-{N}", X_train=X, y_train=np.ones(N, dtype=np.int8),
                              X_test=np.empty((0, 2)), kernel=RBF(alpha=0.02, beta=1.0))
            truth = None
            method = SovTlr(factorisation=fac, reorder="kdtree")
        build_wall, build_cpu = time.perf_counter() - w0, time.process_time() - c0
        w1, c1 = time.perf_counter(), time.process_time()
        method.prepare(problem)
        setup_wall, setup_cpu = time.perf_counter() - w1, time.process_time() - c1
        c2 = time.process_time()
        est = method.estimate(problem, spec["points"], np.random.default_rng(1))
        est_cpu = time.process_time() - c2
    d = est.diagnostics
    return {
        **spec, "build_wall": build_wall, "build_cpu": build_cpu, "setup_wall": setup_wall,
        "setup_cpu": setup_cpu, "estimate_cpu": est_cpu,
        "total_wall": time.perf_counter() - w0, "peak_mb": _hwm_mb(),
        "log_z": est.log_marginal_likelihood, "se": est.log_marginal_likelihood_se,
        "truth": truth, "rank_mean": d.get("rank_mean"), "rank_max": d.get("rank_max"),
        "stored_fraction": d.get("stored_fraction"), "workspace_mb": d.get("workspace_bytes", 0)
        / 2**20, "ess": d.get("ess"),
    }


def spawn(spec: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--job", json.dumps(spec)],
                         capture_output=True, text=True, check=False)
    if out.returncode:
        return {**spec, "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def show(r: dict) -> None:
    if "error" in r:
        print(f"{r['family']:>9} N={r['n']:>6} {r['factorisation']:>5}: FAILED {r['error']}",
              flush=True)
        return
    err = "" if r["truth"] is None else (
        f" error {r['log_z'] - r['truth']:+.3f} = {(r['log_z'] - r['truth']) / r['se']:+.1f} SE")
    print(f"{r['family']:>9} N={r['n']:>6} {r['factorisation']:>5}: build {r['build_wall']:6.1f}"
          f" s, set-up {r['setup_cpu']:6.1f} s CPU / {r['setup_wall']:6.1f} s wall, estimate "
          f"{r['estimate_cpu']:6.1f} s CPU, total {r['total_wall']:6.1f} s wall, peak "
          f"{r['peak_mb']:7.0f} MB, ranks {r['rank_mean']:.1f}/{r['rank_max']}, stored "
          f"{r['stored_fraction']:.4f}, work space {r['workspace_mb']:.0f} MB; log Z "
          f"{r['log_z']:.3f} ± {r['se']:.3f}{err}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--job")
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--rbf", action="store_true")
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument("--points", type=int, default=10_000)
    args = ap.parse_args()
    if args.job:
        print(json.dumps(run_job(json.loads(args.job))))
        return
    reexec_without_coretype()
    print(f"BLAS: {blas_description()}; one BLAS thread; {args.points} QMC points")
    sizes = [4096, 8192, 16384]
    results = {}

    def onefactor(N):
        results[N] = spawn({"family": "onefactor", "n": N, "factorisation": "tlr",
                            "points": args.points})
        show(results[N])

    for N in sizes:
        onefactor(N)
    if not args.no_dense:
        dense = spawn({"family": "onefactor", "n": 16384, "factorisation": "dense",
                       "points": args.points})
        show(dense)
        tlr = results[16384]
        if "error" not in dense and "error" not in tlr:
            def setup(r):
                return r["setup_cpu"] + r["build_cpu"]

            print(f"N = 16384 dense / tlr: total wall {dense['total_wall'] / tlr['total_wall']:.1f}"
                  f"x, build + set-up CPU {setup(dense) / setup(tlr):.1f}x, "
                  f"peak memory {dense['peak_mb'] / tlr['peak_mb']:.1f}x", flush=True)
    if args.rbf:
        show(spawn({"family": "rbf", "n": 16384, "factorisation": "tlr", "points": args.points}))
    for N in [32768, 65536] if args.large else []:   # the largest last
        sizes.append(N)
        onefactor(N)
    ok = [N for N in sizes if "error" not in results[N]]
    if len(ok) >= 2:
        x = np.log([float(N) for N in ok])
        for key in ("setup_cpu", "estimate_cpu"):
            y = np.log([max(results[N][key], 1e-3) for N in ok])
            print(f"fitted exponent of {key} against N: {np.polyfit(x, y, 1)[0]:.2f}")

if __name__ == "__main__":
    main()
