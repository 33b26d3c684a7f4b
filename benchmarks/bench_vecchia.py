"""Vecchia estimators: error against the truth as m grows (the measurement behind
harness.engine.vecchia_factor.DEFAULT_M and the orderings).

For each problem and m, `vecchia-sov` and `vecchia-tilting` at --budget points over --seeds seeds:
the mean error of log Ẑ against the truth (exact, or the shipped reference for gauss-p6), the
mean reported SE, the RMS of error / SE, the worst test-probability error, the statuses and the
CPU seconds of the set-up (ordering, neighbours, conditionals, saddle point) and of one estimate.
The exact estimators on the dense factor (`sov`, `minimax-tilting`, no reordering) give the
m = N - 1 row ("dense"), which the Vecchia estimators equal to rounding (tests/methods).

    python benchmarks/bench_vecchia.py [--m 1,2,5,10,20,30,60] [--budget 4000] [--seeds 2]
    python benchmarks/bench_vecchia.py --large 262144 --budget 4000 --m 60   # tilting only

Measured (shared 2-core machine, one BLAS thread): the table behind
harness.engine.vecchia_factor.DEFAULT_M. --large 262144 --budget 4000 --m 60, with the
sequential walk (docs/math.md §7a):
exact truth 8.9 s; set-up 57 s CPU (ordering, neighbours, conditionals, saddle point),
estimate 610 s CPU, wall 7:58 for the whole process, peak RSS 0.89 GB; log Ẑ 0.056 low
(SE 0.053, ok), worst test probability 0.012 off. Botev's importance weights before it
(`walk=importance`): 46 + 208 s, 1.27 GB, 301 nats low (SE 11.8, `unreliable`: Pareto k̂ > 1),
worst test probability 0.24 off.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROBLEMS = ("onefactor:n=1000", "linear1d-p3", "markov1d:n_train=2000,n_test=100,rho=0.9",
            "gauss-p6")


def truth(problem, budget: int):
    """(log Z, test probabilities, its SE, where from): the exact truth, the shipped reference,
    or else `minimax-tilting` (univariate reordering) at 4 x the budget."""
    if problem.truth is not None and problem.truth.kind == "exact":
        return (problem.truth.log_marginal_likelihood, problem.truth.test_probabilities, 0.0,
                "exact")
    import harness
    from harness.methods.minimax_tilting import MinimaxTilting

    shipped = os.path.join(os.path.dirname(harness.__file__), "data", "references",
                           f"{problem.name}.json")
    if os.path.exists(shipped):
        with open(shipped) as f:
            ref = json.load(f)
        return (ref["log_marginal_likelihood"], np.asarray(ref["test_probabilities"]),
                ref["log_marginal_likelihood_se"], "shipped reference")
    est = MinimaxTilting().estimate(problem, 4 * budget, np.random.default_rng(99))
    return (est.log_marginal_likelihood, est.test_probabilities,
            est.log_marginal_likelihood_se, f"minimax-tilting at {4 * budget} points")


def run(problem, method, budget: int, seeds: int, z, probs, ref_se) -> str:
    t0 = time.process_time()
    method.prepare(problem)
    setup = time.process_time() - t0
    err, se, worst, status, cpu = [], [], 0.0, [], []
    for s in range(seeds):
        t0 = time.process_time()
        e = method.estimate(problem, budget, np.random.default_rng(s))
        cpu.append(time.process_time() - t0)
        status.append(e.status)
        if e.log_marginal_likelihood is None:
            continue
        err.append(e.log_marginal_likelihood - z)
        se.append(np.hypot(e.log_marginal_likelihood_se or 0.0, ref_se))
        if probs is not None and len(probs):
            worst = max(worst, float(np.max(np.abs(e.test_probabilities - probs))))
    err, se = np.array(err), np.array(se)
    z_score = float(np.sqrt(np.mean((err / se) ** 2))) if len(err) else np.nan
    return (f"{np.mean(err):+10.4f} {np.mean(se):8.4f} {z_score:8.1f} {worst:8.4f} "
            f"{setup:7.2f} {np.mean(cpu):7.2f}  {','.join(sorted(set(status)))}")


def table(specs, ms, budget: int, seeds: int) -> None:
    from harness.methods.minimax_tilting import MinimaxTilting
    from harness.methods.sov import Sov
    from harness.methods.vecchia_sov import VecchiaSov
    from harness.methods.vecchia_tilting import VecchiaTilting
    from harness.plugins.specs import make_problem

    print(f"budget {budget} points, {seeds} seeds; err = mean(log Ẑ - truth), se = mean "
          "reported SE (with the reference's), |z| = RMS err/se, J* = worst test error")
    for spec in specs:
        problem = make_problem(spec)
        z, probs, ref_se, source = truth(problem, budget)
        print(f"\n{spec} (N = {problem.n_train}, log Z = {z:.4f} ± {ref_se:.4f}, {source})")
        print(f"{'method':16} {'m':>5} {'err':>10} {'se':>8} {'|z|':>8} {'J*':>8} "
              f"{'setup':>7} {'cpu':>7}  status")
        for m in ms:
            for cls in (VecchiaSov, VecchiaTilting):
                line = run(problem, cls(m=m), budget, seeds, z, probs, ref_se)
                print(f"{cls.name:16} {m:5d} {line}", flush=True)
        for method in (Sov(), MinimaxTilting(reorder="none")):
            line = run(problem, method, budget, seeds, z, probs, ref_se)
            print(f"{method.name:16} {'dense':>5} {line}", flush=True)


def large(n: int, budget: int, m: int) -> None:
    from harness.methods.vecchia_tilting import VecchiaTilting
    from harness.plugins.specs import make_problem

    t0 = time.process_time()
    problem = make_problem(f"markov1d:n_train={n},n_test=100,rho=0.9")
    print(f"markov1d N = {n}: problem and exact truth {time.process_time() - t0:.1f} s CPU, "
          f"log Z = {problem.truth.log_marginal_likelihood:.4f}")
    print(f"{'method':16} {'m':>5} {'err':>10} {'se':>8} {'|z|':>8} {'J*':>8} "
          f"{'setup':>7} {'cpu':>7}  status")
    line = run(problem, VecchiaTilting(m=m), budget, 1, problem.truth.log_marginal_likelihood,
               problem.truth.test_probabilities, 0.0)
    print(f"{'vecchia-tilting':16} {m:5d} {line}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", default="1,2,5,10,20,30,60")
    ap.add_argument("--budget", type=int, default=4000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--problems", default=";".join(PROBLEMS), help="';'-separated specs")
    ap.add_argument("--large", type=int, default=0, help="markov1d at this N, tilting only")
    args = ap.parse_args()
    ms = [int(x) for x in args.m.split(",")]
    with threadpool_limits(1):
        if args.large:
            large(args.large, args.budget, ms[0])
        else:
            table(args.problems.split(";"), ms, args.budget, args.seeds)


if __name__ == "__main__":
    main()
