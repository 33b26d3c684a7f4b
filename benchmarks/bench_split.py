"""One `sov` estimate split into parts (harness.execution.parts) on a local cluster of 1, then 2
workers.

The target: a ~60-second estimate runs >= 1.7x faster in wall time on 2 workers than on
1, with identical numbers. The wall time is that of harness.execution.parts.run_split (first
submission to the last part, each worker's set-up included; the cluster's start-up is not), measured
in the same run for both cluster sizes; the numbers (log Ẑ, its SE, every test probability and
its SE) must be bit-identical. The speed-up needs two otherwise idle cores: on a shared machine
the load average and how busy the workers were (part CPU / (wall x workers)) say how far that
held.

    python benchmarks/bench_split.py                       # gauss-p2 (N = 200), ~80 s of sov

Measured (2 cores, load average 1.4): 1 worker 87.95 s wall, 2 workers 49.30 s: 1.78x, numbers
identical (16 parts, 82-84 s CPU); at load averages 6-12 (other work on the machine) the ratio
ranged 1.08x-3.71x, the workers busy 12-57 %.
    python benchmarks/bench_split.py --budget 2e5 --workers 1,2,4
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import blas_description, reexec_without_coretype  # noqa: E402

NUMBERS = ("log_marginal_likelihood", "log_marginal_likelihood_se", "test_probabilities",
           "test_probabilities_se")


def one_run(problem: str, method: str, budget: int, parts: str | int, workers: int) -> dict:
    from harness.execution.cluster import connect
    from harness.execution.parts import run_split

    key = {"benchmark": "bench_split", "problem": problem, "method": method, "budget": budget}
    t0 = time.perf_counter()
    with connect(workers=workers) as conn:
        started = time.perf_counter() - t0
        record = run_split(problem, method, {}, budget, key, parts, conn.client)
    record["cluster_seconds"] = started
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", default="gauss-p2")
    parser.add_argument("--method", default="sov")
    parser.add_argument("--budget", default="1.6e6", help="QMC points (default: ~80 s of sov "
                        "on gauss-p2 on one core)")
    parser.add_argument("--parts", default="auto")
    parser.add_argument("--workers", default="1,2", help="cluster sizes, comma-separated")
    args = parser.parse_args()
    budget = int(float(args.budget))
    parts = args.parts if args.parts == "auto" else int(args.parts)
    sizes = [int(w) for w in args.workers.split(",")]
    print(f"{args.method} on {args.problem}, budget {budget}, parts {parts}; BLAS "
          f"{blas_description()}; {os.cpu_count()} cores")
    runs = {}
    for w in sizes:
        load = os.getloadavg()[0]
        r = runs[w] = one_run(args.problem, args.method, budget, parts, w)
        wall = r["diagnostics"]["elapsed_seconds"]
        busy = r["cpu_seconds"] / (wall * w)   # < 1: the workers waited (overhead, other load)
        print(f"  {w} worker{'s' if w > 1 else ' '}: wall {wall:7.2f} s, workers busy "
              f"{busy:.0%}  (CPU "
              f"{r['cpu_seconds']:.2f} s in {r['parts']} parts on {r['workers']} workers; "
              f"cluster start {r['cluster_seconds']:.1f} s; load average before "
              f"{load:.1f})  log Z {r['log_marginal_likelihood']:.6f} ± "
              f"{r['log_marginal_likelihood_se']:.2g}", flush=True)
    base = runs[sizes[0]]
    for w in sizes[1:]:
        r = runs[w]
        ratio = base["diagnostics"]["elapsed_seconds"] / r["diagnostics"]["elapsed_seconds"]
        same = all(r[k] == base[k] for k in NUMBERS)
        print(f"speed-up {sizes[0]} -> {w} workers: {ratio:.2f}x (target on 2 workers: >= 1.7x); "
              f"numbers identical: {same}")


if __name__ == "__main__":
    reexec_without_coretype()
    main()
