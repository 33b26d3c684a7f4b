"""Export a results store's jobs as one flat table: CSV (standard library) or Parquet (pyarrow).

One row per job; nested fields are flattened (settings.count, diagnostics.chunks, ...);
lists (the test probabilities) are JSON text in CSV and lists in Parquet.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.store import ResultStore

FIRST = ("job_id", "sweep", "problem", "problem_spec", "method", "method_name", "budget",
         "budget_unit", "replicate", "seed", "status", "reason", "log_marginal_likelihood",
         "log_marginal_likelihood_se", "true_log_marginal_likelihood", "abs_log_error",
         "mape_percent", "mae", "cpu_seconds", "process_cpu_seconds", "wall_seconds",
         "job_wall_seconds", "setup_cpu_seconds", "setup_wall_seconds", "setup_cached",
         "peak_memory_mb", "n_train", "n_test", "time_limit", "worker",
         "finished_at")


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key, value in record.items():
        if key == "job_key":
            continue   # its parts are columns already
        if isinstance(value, dict):
            for k, v in value.items():
                row[f"{key}.{k}"] = v
        else:
            row[key] = value
    return row


def rows(store_path: str | Path) -> tuple[list[str], list[dict[str, Any]]]:
    path = Path(store_path)
    if not path.is_file():
        raise InputError("--store", f"{path} does not exist", "give the store of a sweep")
    with ResultStore(path) as store:
        flat = [flatten(r) for r in store.records()]
    seen = {k for r in flat for k in r}
    columns = [k for k in FIRST if k in seen] + sorted(seen - set(FIRST))
    return columns, flat


def export(store_path: str | Path, out: str | Path) -> int:
    """Write the store's jobs to out (.csv or .parquet); returns the number of rows."""
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
    columns, table = rows(store_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        with open(out, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=columns, restval="")
            writer.writeheader()
            for row in table:
                writer.writerow({k: (json.dumps(v) if isinstance(v, list | dict)
                                     else "" if v is None else v) for k, v in row.items()})
    else:
        data = {c: [r.get(c) for r in table] for c in columns}
        for c, values in data.items():   # mixed types (rare) become text
            kinds = {type(v) for v in values if v is not None}
            if len(kinds - {int, float}) > 0 and len(kinds) > 1:
                data[c] = [None if v is None else json.dumps(v) if isinstance(v, list | dict)
                           else str(v) for v in values]
        pq.write_table(pa.table(data), out)
    return len(table)
