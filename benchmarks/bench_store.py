"""What the store's integrity check costs at open (docs/studies.md, "Store integrity check").

The whole check (`damage`: file, write-ahead log, `PRAGMA integrity_check`, schema, every row's
checksum) and its parts, on a store of --jobs jobs (records shaped like a sweep's: copies of
real run_job records of small jobs with job ids of their own, inserted in one transaction and
sealed as a writer seals them), against what every opener already does in the same run:
reading the job ids (a sweep's resume), and reading and parsing every record (report, export);
and the check of the same store made before checksums (every row's JSON parsed instead). Best
of --repeats, page cache warm (a first, cold read of the file costs the disk's time for its
size in every case).

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
    from contextlib import closing

    from harness.execution.store import _COLUMNS, ResultStore, _check, _row_damage, damage
    from harness.execution.store import read_only_connection as ro
    from harness.sweep.execute import run_job
    from harness.sweep.plan import plan
    from harness.sweep.spec import parse_sweep

    records = [run_job(job.spec()) for job in plan(parse_sweep(SWEEP, "bench.toml"))]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite"
        with ResultStore(path) as store:
            store.add_record(records[0])
            row = store._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM jobs").fetchone()
            rows = [(f"{i:012x}", *row[1:14], row[14].replace(records[0]["job_id"], f"{i:012x}"),
                     row[15]) for i in range(args.jobs)]
            with store._db:
                store._db.execute("DELETE FROM jobs")
                store._db.executemany(f"INSERT INTO jobs ({', '.join(_COLUMNS)}) VALUES "
                                      f"({', '.join('?' * len(_COLUMNS))})", rows)
                store._seal_unsealed()       # as a writer seals each row it stores
        size = path.stat().st_size / 1e6
        assert damage(path) is None

        def ids():
            with ResultStore(path, read_only=True) as s:
                s.job_ids()

        def read_all():
            with ResultStore(path, read_only=True) as s:
                s.records()

        def integrity_check():
            with closing(ro(path)) as db:
                db.execute("PRAGMA integrity_check(3)").fetchall()

        def rows_check():
            with closing(ro(path)) as db:
                assert _row_damage(db) is None

        check = best(lambda: damage(path), args.repeats)
        t_quick = best(integrity_check, args.repeats)
        t_rows = best(rows_check, args.repeats)
        t_ids = best(ids, args.repeats)            # includes its own check
        t_all = best(read_all, args.repeats)       # includes its own check
        with closing(__import__("sqlite3").connect(path)) as db:   # as made before checksums
            db.execute("UPDATE jobs SET checksum = NULL")
            db.commit()
        legacy = best(lambda: _check(path), args.repeats)
    print(f"store: {args.jobs} jobs, {size:.1f} MB")
    print(f"integrity check at open (damage): {check:.3f} s "
          f"(integrity_check {t_quick:.3f} s, row checksums {t_rows:.3f} s)")
    print(f"open read-only + job ids:  {t_ids:.3f} s (check = {check / t_ids:.0%} of it)")
    print(f"open read-only + records:  {t_all:.3f} s (check = {check / t_all:.0%} of it)")
    print(f"check of the same store made before checksums (JSON parsed): {legacy:.3f} s")


if __name__ == "__main__":
    main()
