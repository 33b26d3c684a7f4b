"""Sweep harness overhead and scaling on the local Dask cluster.

1. Per-job overhead: a sweep of trivial jobs (a 2-variable orthant problem, budget 1), run on
   a local cluster of W workers. Overhead per job = (W × execution time − Σ method CPU time)
   / jobs: the worker-seconds each job costs beyond the method's own thread CPU time
   (scheduling, transfer, problem lookup, the memory measurement, the store's transaction, ...).
   Cluster start-up and shutdown are reported separately.
2. With --quick: the speed-up of sweeps/quick.toml with 2 workers over 1 (execution time,
   from the first submission to the last stored result, and the whole command).

    python benchmarks/bench_sweep_overhead.py                 # overhead, 200 jobs, W = 1, 2
    python benchmarks/bench_sweep_overhead.py --quick         # + the quick sweep's speed-up
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

from harness.execution.store import ResultStore
from harness.sweep.driver import run_sweep
from harness.sweep.spec import load_sweep, parse_sweep

TRIVIAL = """\
name = "trivial"
seed = 0
replicates = {replicates}
budgets = [1]
problems = ["onefactor:n=2"]
[methods.rejection-bootstrap]
count = ["soft", "hard"]
"""


def timed_sweep(sweep, workers: int, tmp: Path) -> dict:
    store = tmp / f"{sweep.name}-{workers}.sqlite"
    t0 = time.perf_counter()
    outcome = run_sweep(sweep, store=store, workers=workers, report=False, out=io.StringIO(),
                        err=io.StringIO())
    total = time.perf_counter() - t0
    assert outcome.complete, outcome
    with ResultStore(store) as db:
        records = db.records()
    cpu = sum(r["cpu_seconds"] or 0 for r in records)
    job_wall = sum(r.get("job_wall_seconds") or 0 for r in records)
    return {"jobs": len(records), "total": total, "elapsed": outcome.elapsed, "cpu": cpu,
            "job_wall": job_wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--quick", action="store_true", help="also time sweeps/quick.toml")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sweep = parse_sweep(TRIVIAL.format(replicates=max(1, args.jobs // 2)), "trivial.toml")
        print(f"per-job overhead, {sweep.n_jobs} trivial jobs:")
        for w in args.workers:
            r = timed_sweep(sweep, w, tmp)
            overhead = (w * r["elapsed"] - r["cpu"]) / r["jobs"]
            print(f"  {w} worker(s): execution {r['elapsed']:.2f} s "
                  f"({r['jobs'] / r['elapsed']:.0f} jobs/s), method CPU {r['cpu']:.3f} s, "
                  f"in-worker wall {r['job_wall']:.2f} s; overhead {overhead * 1e3:.1f} "
                  f"worker-ms/job; start-up + shutdown {r['total'] - r['elapsed']:.1f} s")
        if args.quick:
            quick = load_sweep(Path(__file__).resolve().parents[1] / "sweeps" / "quick.toml")
            print(f"quick sweep ({quick.n_jobs} jobs):")
            runs = {w: timed_sweep(quick, w, tmp) for w in (1, 2)}
            for w, r in runs.items():
                print(f"  {w} worker(s): execution {r['elapsed']:.1f} s, whole command "
                      f"{r['total']:.1f} s, method CPU {r['cpu']:.1f} s")
            print(f"  speed-up 2 over 1: execution {runs[1]['elapsed'] / runs[2]['elapsed']:.2f}x,"
                  f" whole command {runs[1]['total'] / runs[2]['total']:.2f}x")


if __name__ == "__main__":
    main()
