"""The per-job results table: one row per job, the same columns everywhere.

`harness.load_results(store)` (a DataFrame), `python -m harness export` (CSV or Parquet) and
the report's `jobs.csv` all come from `job_rows`: each job's plain record flattened
(settings.count, diagnostics.chunks, ...), with the errors the report measures
(harness.analysis.aggregate: against the truth, the Bayes posterior or the consensus of the
exact methods, docs/math.md §10) in place of the runner's, and the scores against held-out
labels (accuracy, log_loss, brier) where the problem has them. Field names are those of `run
--json` (log_marginal_likelihood, test_probabilities, abs_log_error, mae, ...), plus the
report's mae_post, mae_med, med_abs_log_error and med_mape_percent. `approximation` (beside
`status`) is true for a method whose estimand is not the model's exact quantity (Laplace, EP,
VB, the Vecchia methods), with its estimated approximation_error where it states one.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from harness.analysis.aggregate import METRICS, PREDICTIVE, ReportData, load

# the report's column -> the record's (and run --json's) name
RENAMED = {"log_z": "log_marginal_likelihood", "log_z_se": "log_marginal_likelihood_se",
           "probabilities": "test_probabilities"}
FIRST = ("job_id", "sweep", "problem", "problem_spec", "family", "method", "method_name",
         "exact_method", "budget", "budget_unit", "replicate", "seed", "status", "approximation",
         "reason", "log_marginal_likelihood", "log_marginal_likelihood_se",
         "approximation_error", "truth_kind",
         "true_log_marginal_likelihood", *METRICS, *PREDICTIVE, "cpu_seconds",
         "process_cpu_seconds", "wall_seconds", "threads", "job_wall_seconds", "setup_cpu_seconds",
         "setup_wall_seconds", "setup_cached", "peak_memory_mb", "n_train", "n_test",
         "time_limit", "worker", "finished_at")
LAST = ("test_probabilities",)


def flatten(record: dict[str, Any]) -> dict[str, Any]:
    """A record as one flat row: nested tables become dotted columns (settings.count)."""
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


def _truth(summary: dict[str, Any]) -> dict[str, Any]:
    """The truth a job's errors are measured against (its problem's, from the store)."""
    if not summary.get("truth_kind"):
        return {}
    return {"truth_kind": summary["truth_kind"],
            "true_log_marginal_likelihood": summary.get("true_log_marginal_likelihood")}


def job_rows(data: ReportData, tune_records: bool = False
             ) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows): every estimate job of `data` (and its tuning jobs, if asked)."""
    rows = []
    for record, job in zip(data.records, data.jobs.to_dict("records"), strict=True):
        row = flatten(record)
        row.update(_truth(data.problems.get(job["problem"], {})))
        row.update({RENAMED.get(k, k): v for k, v in job.items()})
        if "exact_method" in row:   # records stored before the field existed too
            row["approximation"] = not row["exact_method"]
        rows.append(row)
    if tune_records:
        rows += [flatten(r) for r in data.tune_records]
    seen = {k for r in rows for k in r}
    middle = sorted(seen - set(FIRST) - set(LAST))
    columns = [k for k in FIRST if k in seen] + middle + [k for k in LAST if k in seen]
    return columns, rows


def load_table(store_path: str | Path):
    """One row per estimate job of the store, as a pandas DataFrame (harness.load_results)."""
    import pandas as pd

    columns, rows = job_rows(load(store_path))
    table = pd.DataFrame(rows, columns=columns)
    table.attrs["store"] = str(store_path)
    return table


def _cell(value: Any) -> Any:
    """A CSV cell: lists and tables as JSON, missing values (None, NaN) empty."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | dict):
        return json.dumps(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value


def write_csv(path: str | Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})
