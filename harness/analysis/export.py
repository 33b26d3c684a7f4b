"""Export a results store's jobs as one flat table: CSV (standard library) or Parquet (pyarrow).

One row per job, with the columns of harness.analysis.results (the same as `harness.load_results`
and the report's jobs.csv): the record flattened (settings.count, diagnostics.chunks, ...) and the
report's errors; lists (the test probabilities) are JSON text in CSV and lists in Parquet.
Tuning jobs are exported too (their own columns, empty elsewhere).

A damaged store (harness.execution.store.StoreDamaged) is exported with `salvage=True`: the rows
that can still be read (harness.execution.store.salvage), read-only; the command does that by
itself, says so and exits 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.analysis.aggregate import load
from harness.analysis.results import job_rows, write_csv
from harness.core.errors import InputError


def rows(store_path: str | Path, salvage: bool = False
         ) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of every job of the store (harness.analysis.results.job_rows); `salvage`: of
    every job that can still be read from a damaged store."""
    return job_rows(load(store_path, salvage), tune_records=True)


def export(store_path: str | Path, out: str | Path, salvage: bool = False) -> int:
    """Write the store's jobs to out (.csv or .parquet); returns the number of rows.
    `salvage`: the jobs still readable from a damaged store (none: InputError)."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise InputError("--out", f"unknown format {out.suffix or out.name!r}",
                         "give a file name ending in .csv or .parquet")
    if suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError("--out", "Parquet needs pyarrow, which is not installed",
                             'pip install "gpc-harness[parquet]" (or pyarrow), or write .csv') \
                from None
    columns, table = rows(store_path, salvage)
    if salvage and not table:
        raise InputError("store", f"no job can be read from {store_path}",
                         "restore it from a backup, or start a new store with --store")
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        write_csv(out, columns, table)
    else:
        data = {c: [_plain(r.get(c)) for r in table] for c in columns}
        for c, values in data.items():   # mixed types (rare) become text
            kinds = {type(v) for v in values if v is not None}
            if len(kinds - {int, float}) > 0 and len(kinds) > 1:
                data[c] = [None if v is None else json.dumps(v) if isinstance(v, list | dict)
                           else str(v) for v in values]
        pq.write_table(pa.table(data), out)
    return len(table)


def _plain(value: Any) -> Any:
    """A Parquet value: arrays as lists, NaN (a missing error) as null."""
    if hasattr(value, "tolist") and not isinstance(value, str):
        return value.tolist()
    if isinstance(value, float) and value != value:
        return None
    return value
