"""What the store's integrity check costs at open (issue 17): `PRAGMA quick_check` on a store
of --jobs jobs (records shaped like a sweep's: copies of real run_job records of small jobs
with job ids of their own), against what every opener already does in the same run: reading
the job ids (a sweep's resume), and reading and parsing every record (report, export).
Best of --repeats, page cache warm (a first, cold read of the file costs the disk's time for
its size in every case).

    python benchmarks/bench_store.py [--jobs 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SWEEP = """\
name = "bench"
seed = 7
replicates = 2
budgets = [200]
problems = ["linear1d:n_train=10,n_test=20", "onefactor:n=30"]
[methods.rejection-bootstrap]
[methods.sov]
"""


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from harness.execution.store import ResultStore, damage
    from harness.sweep.execute import run_job
    from harness.sweep.plan import plan
    from harness.sweep.spec import parse_sweep

    records = [run_job(job.spec()) for job in plan(parse_sweep(SWEEP, "bench.toml"))]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite"
        with ResultStore(path) as store:
            for i in range(args.jobs):
                store.add_record({**records[i % len(records)], "job_id": f"{i:012x}"})
        size = path.stat().st_size / 1e6

        def ids():
            with ResultStore(path, read_only=True) as s:
                s.job_ids()

        def read_all():
            with ResultStore(path, read_only=True) as s:
                s.records()

        check = best(lambda: damage(path), args.repeats)
        t_ids = best(ids, args.repeats)            # includes its own check
        t_all = best(read_all, args.repeats)       # includes its own check
    print(f"store: {args.jobs} jobs, {size:.1f} MB")
    print(f"integrity check (header, quick_check, tables): {check:.3f} s")
    print(f"open read-only + job ids:  {t_ids:.3f} s (check = {check / t_ids:.0%} of it)")
    print(f"open read-only + records:  {t_all:.3f} s (check = {check / t_all:.0%} of it)")


if __name__ == "__main__":
    main()
