"""The special functions and the SOV-family methods against the scipy floor, in one run.

1. special: harness.core.special's log_ndtr, ndtr, ndtri_exp and the fused truncated-normal
            draw against scipy.special's (the draw: scipy's log_ndtr, an add and ndtri_exp),
            ns an element on one thread over several input distributions, and the speed-up.
2. methods: each SOV-family method's CPU time per point against the scipy floor of the same
            shape (one uniform, one scipy log_ndtr and one scipy ndtri_exp per particle and
            variable, plus the M N²/2 product: benchmarks.common.floor_seconds) at N = 1,000
            (one-factor; rejection-bootstrap too) and N = 16,384 (a 2-D Matérn problem: dense,
            tile-low-rank and Vecchia factors), on one thread.
3. threads: the same estimates with 1 and 2 threads (harness.core.threads), CPU and wall
            seconds, the wall-time speed-up, and whether the numbers are identical.

The figure that counts is the ratio, not an absolute time: both sides are measured in this run.
OPENBLAS_CORETYPE is unset for this process (benchmarks.common.reexec_without_coretype).

    python benchmarks/bench_floor.py [--parts special,methods,threads] [--sizes 1000,16384]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, floor_seconds, reexec_without_coretype

CASES = {   # N: (problem, [(method, settings, budget)])
    1000: ("onefactor:n=1000,seed=0", [
        ("sov", {}, 10_000), ("sir", {}, 10_000), ("minimax-tilting", {}, 10_000),
        ("sov-tlr", {}, 10_000), ("rejection-bootstrap", {}, 100_000)]),
    16384: ("gauss2class:n_train=16384,n_test=50,kernel=matern32,alpha=0.3", [
        ("sov", {}, 500), ("sov-tlr", {"reorder": "kdtree"}, 1000),
        ("minimax-tilting", {}, 1000), ("sir", {"proposal": "tilted"}, 1000),
        ("vecchia-sov", {}, 2000), ("vecchia-tilting", {}, 2000), ("vecchia-sir", {}, 2000)]),
}


def best_ns(fn, x, repeats: int = 15) -> float:
    """The fastest of `repeats` calls, in ns an element."""
    fn(x)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return min(times) / x.size * 1e9


def part_special(n: int = 1_000_000) -> None:
    import scipy.special as sc

    from harness.core import special

    rng = np.random.default_rng(0)
    t = rng.normal(1.0, 2.0, n)
    log_u = np.log1p(-rng.random(n))
    walk = log_u + sc.log_ndtr(t)          # what the SOV step hands Φ⁻¹
    inputs = {
        "log_ndtr": [("N(0, 1)", rng.normal(0, 1, n)), ("N(0, 3)", rng.normal(0, 3, n)),
                     ("U(-40, 40)", rng.uniform(-40, 40, n))],
        "ndtr": [("N(0, 3)", rng.normal(0, 3, n))],
        "ndtri_exp": [("log U", np.log(rng.random(n))), ("log U(0.1, 0.9)",
                      np.log(rng.uniform(0.1, 0.9, n))), ("the walk's", walk)],
    }
    print("\n== 1. special functions, one thread: ns an element ==")
    print(f"{'function':<12} {'input':<18} {'own':>7} {'scipy':>7} {'speed-up':>9}")
    for name, cases in inputs.items():
        for label, x in cases:
            own = best_ns(getattr(special, name), x)
            ref = best_ns(getattr(sc, name), x)
            print(f"{name:<12} {label:<18} {own:7.2f} {ref:7.2f} {ref / own:8.2f}x")

    def fused(tt):
        special.draw_above(tt.copy(), log_u)

    def composed(tt):
        lp = sc.log_ndtr(tt)
        a = log_u + lp
        sc.ndtri_exp(a, out=a)
        np.negative(a, out=a)

    own, ref = best_ns(fused, t), best_ns(composed, t)
    print(f"{'draw_above':<12} {'N(1, 2)':<18} {own:7.2f} {ref:7.2f} {ref / own:8.2f}x   "
          "(one compiled call, against scipy's log_ndtr + add + ndtri_exp + negate)")


def _estimate(problem, method, budget: int, threads: int = 1, repeats: int = 3):
    """(estimate, CPU seconds of the process, wall seconds) with `threads` threads: the
    fastest of `repeats` runs (the same seed: the same estimate), after an untimed one that
    loads the kernels and compiles the parallel loops of this thread count."""
    from harness.core.threads import compute_threads

    with compute_threads(threads):
        method.estimate(problem, min(budget, 4096), np.random.default_rng(0))
        cpu, wall = [], []
        for _ in range(repeats):
            c0, w0 = time.process_time(), time.perf_counter()
            est = method.estimate(problem, budget, np.random.default_rng(1))
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        return est, min(cpu), min(wall)


def _cases(sizes):
    from harness.api import as_method, as_problem

    for N in sizes:
        spec, methods = CASES[N]
        problem = as_problem(spec)
        for name, settings, budget in methods:
            method = as_method(name, settings)
            method.prepare(problem)
            yield N, problem, method, budget
            del method
            gc.collect()


def part_methods(sizes) -> None:
    print("\n== 2. cost per point against the scipy floor, one thread (fastest of 3) ==")
    print(f"{'N':>6} {'method':<34} {'budget':>7} {'CPU s':>8} {'floor s':>8} {'ratio':>6} "
          f"{'us/point':>9} {'log Z':>12} {'SE':>8} status")
    floors: dict[tuple[int, int], float] = {}
    for N, problem, method, budget in _cases(sizes):
        est, cpu, _ = _estimate(problem, method, budget)
        key = (budget, N)
        if key not in floors:     # the fastest of three, like the estimates
            floors[key] = min(floor_seconds(budget, N, uniforms=True, ndtri=True, seed=s)["total"]
                              for s in range(3))
        floor = floors[key]
        print(f"{N:>6} {method.label():<34} {budget:>7} {cpu:8.2f} {floor:8.2f} "
              f"{cpu / floor:6.2f} {cpu / budget * 1e6:9.1f} "
              f"{est.log_marginal_likelihood:12.4f} {est.log_marginal_likelihood_se:8.4f} "
              f"{est.status}", flush=True)


def part_threads(sizes) -> None:
    print("\n== 3. one and two threads (CPU of the process, wall, identical numbers) ==")
    print(f"{'N':>6} {'method':<34} {'CPU 1':>7} {'wall 1':>7} {'CPU 2':>7} {'wall 2':>7} "
          f"{'speed-up':>9} identical")
    for N, problem, method, budget in _cases(sizes):
        one, c1, w1 = _estimate(problem, method, budget, 1)
        two, c2, w2 = _estimate(problem, method, budget, 2)
        same = (one.log_marginal_likelihood == two.log_marginal_likelihood
                and np.array_equal(one.test_probabilities, two.test_probabilities))
        print(f"{N:>6} {method.label():<34} {c1:7.2f} {w1:7.2f} {c2:7.2f} {w2:7.2f} "
              f"{w1 / w2:8.2f}x {same}", flush=True)


def main() -> None:
    reexec_without_coretype()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="special,methods,threads")
    parser.add_argument("--sizes", default="1000,16384",
                        help=f"N of part 2 and 3, from {sorted(CASES)}")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"BLAS: {blas_description()}; {os.cpu_count()} cores")
    parts = args.parts.split(",")
    if "special" in parts:
        part_special()
    if "methods" in parts:
        part_methods(sizes)
    if "threads" in parts:
        part_threads(sizes)


if __name__ == "__main__":
    main()
