"""Separation-of-variables benchmarks, every ratio measured within this one run.

1. floor:     `sov` CPU time per particle-dimension against the floor (one uniform, one
              log_ndtr, one ndtri_exp per particle-dimension plus the M N^2 matrix product),
              at N = 1000 and 2000 (target <= 2).
2. scipy:     `sov` against `scipy-genz` at equal CPU time on onefactor n = 200 and 500: the
              RMSE of log Z over seeds, and their ratio.
3. crossover: `sov-tlr` against `sov` per estimate (after `prepare`) as N grows, on one-factor
              problems (rank-1 tiles, the best case) and on 2-D RBF problems in k-d tree order;
              the crossover N is the first N from which sov-tlr is faster.

    python benchmarks/bench_sov.py [--parts floor,scipy,crossover] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, cpu_time, floor_seconds, reexec_without_coretype


def part_floor(args):
    from harness.datasets.onefactor import onefactor
    from harness.methods.sov import Sov

    M = int(args.points)
    print(f"\n== 1. sov against the floor (M = {M} points) ==")
    for N in (1000, 2000):
        problem = onefactor(n=N, seed=0)
        floor = floor_seconds(M, N, uniforms=True, ndtri=True)
        print(f"N = {N}: floor {floor['total']:.2f} s ("
              + ", ".join(f"{k} {v:.2f}" for k, v in floor.items() if k != "total") + ")")
        for points in ("sobol", "lattice", "random"):
            method = Sov(points=points)
            method.prepare(problem)
            est, sec = cpu_time(method.estimate, problem, M, np.random.default_rng(1))
            ns = sec / (M * N) * 1e9
            err = est.log_marginal_likelihood - problem.truth.log_marginal_likelihood
            print(f"  sov[{points:>7}]: {sec:.2f} s CPU, {ns:.0f} ns per particle-dimension, "
                  f"ratio to floor {sec / floor['total']:.2f}  (log error {err:+.4f}, "
                  f"se {est.log_marginal_likelihood_se:.4f})")


def _calibrated_budget(method, problem, seconds, pilot):
    """The budget at which `method` takes about `seconds` of CPU (linear in the budget)."""
    _, t = cpu_time(method.estimate, problem, pilot, np.random.default_rng(999))
    return max(100, int(pilot * seconds / max(t, 1e-3)))


def part_scipy(args):
    from harness.datasets.onefactor import onefactor
    from harness.methods.scipy_genz import ScipyGenz
    from harness.methods.sov import Sov

    seeds = range(args.seeds)
    print(f"\n== 2. sov against scipy-genz at equal CPU time ({len(seeds)} seeds each) ==")
    for n in (200, 500):
        problem = onefactor(n=n, seed=1)
        truth = problem.truth.log_marginal_likelihood
        scipy_m, sov_m = ScipyGenz(), Sov()
        sov_m.prepare(problem)
        errs_s, times_s, used = [], [], []
        for s in seeds:
            est, t = cpu_time(scipy_m.estimate, problem, args.scipy_budget,
                              np.random.default_rng(s))
            errs_s.append(est.log_marginal_likelihood - truth)
            times_s.append(t)
            used.append(est.diagnostics["points_used"])
        t_target = float(np.mean(times_s))
        budget = _calibrated_budget(sov_m, problem, t_target, 4000)
        errs_v, times_v = [], []
        for s in seeds:
            est, t = cpu_time(sov_m.estimate, problem, budget, np.random.default_rng(100 + s))
            errs_v.append(est.log_marginal_likelihood - truth)
            times_v.append(t)
        rmse_s = float(np.sqrt(np.mean(np.square(errs_s))))
        rmse_v = float(np.sqrt(np.mean(np.square(errs_v))))
        print(f"n = {n} (log Z = {truth:.2f}):")
        print(f"  scipy-genz maxpts {args.scipy_budget} ({int(np.mean(used))} points): "
              f"{t_target:.2f} s, RMSE(log Z) {rmse_s:.4f}")
        print(f"  sov {budget} points: {np.mean(times_v):.2f} s, RMSE(log Z) {rmse_v:.4f}")
        print(f"  error ratio scipy / sov at equal CPU time: {rmse_s / rmse_v:.1f}  "
              f"(CPU ratio sov / scipy {np.mean(times_v) / t_target:.2f})")


def part_crossover(args):
    from harness.datasets.gauss2class import gauss2class
    from harness.datasets.onefactor import onefactor
    from harness.methods.sov import Sov
    from harness.methods.sov_tlr import SovTlr

    M = int(args.tlr_points)
    big = [] if args.quick else [4000]
    families = {
        "onefactor": (lambda N: onefactor(n=N, seed=N), {}, [50, 100, 250, 500, 1000, 2000]),
        "rbf d=2 alpha=5": (lambda N: gauss2class(n_train=N, n_test=0, d=2, alpha=5.0, seed=N),
                            {"reorder": "kdtree"}, [500, 1000, 2000]),
    }

    def timed(method, problem):   # the best of 3 for short runs (a loaded machine)
        est, t = cpu_time(method.estimate, problem, M, np.random.default_rng(1))
        for _ in range(2 if t < 1.0 else 0):
            t = min(t, cpu_time(method.estimate, problem, M, np.random.default_rng(1))[1])
        return est, t

    print(f"\n== 3. sov-tlr against sov per estimate (M = {M} points, after prepare) ==")
    for label, (make, tlr_settings, sizes) in families.items():
        sizes = sizes + big
        print(f"{label} (sov-tlr {tlr_settings or 'defaults'}; log Z difference: same points "
              f"{'but another variable order' if tlr_settings else 'and order'}):")
        crossover = None
        for N in sizes:
            problem = make(N)
            dense, tlr = Sov(), SovTlr(**tlr_settings)
            _, prep_d = cpu_time(dense.prepare, problem)
            _, prep_t = cpu_time(tlr.prepare, problem)
            a, t_d = timed(dense, problem)
            b, t_t = timed(tlr, problem)
            d = b.diagnostics
            diff = b.log_marginal_likelihood - a.log_marginal_likelihood
            print(f"  N = {N:5d}: sov {t_d:6.2f} s, sov-tlr {t_t:6.2f} s, ratio tlr/sov "
                  f"{t_t / t_d:5.2f}; tile {d['tile_size']}, mean rank {d['rank_mean']:.1f}, "
                  f"stored {d['stored_fraction']:.2f}, prepare {prep_t:.2f} s (sov "
                  f"{prep_d:.2f} s); log Z difference {diff:+.1e}")
            if t_t < t_d and crossover is None:
                crossover = N
            elif t_t >= t_d:
                crossover = None
        print(f"  crossover: sov-tlr faster from N = {crossover} on (of {sizes})"
              if crossover else f"  crossover: not reached up to N = {sizes[-1]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="floor,scipy,crossover")
    parser.add_argument("--points", type=float, default=1e4, help="M for the floor part")
    parser.add_argument("--scipy-budget", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tlr-points", type=float, default=4000)
    parser.add_argument("--quick", action="store_true", help="crossover up to N = 2000 only")
    args = parser.parse_args()
    reexec_without_coretype()
    print(f"BLAS: {blas_description()} (one thread)")
    parts = {"floor": part_floor, "scipy": part_scipy, "crossover": part_crossover}
    for name in args.parts.split(","):
        parts[name](args)


if __name__ == "__main__":
    main()
