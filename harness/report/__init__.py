"""Comparison reports: a results store -> one self-contained HTML file and a PDF.

    from harness.report import build_report
    paths = build_report("results/quick.sqlite", "reports/quick")   # {"html": ..., "pdf": ...}

or `python -m harness report [--store PATH] [--out DIR]`. The heavy imports (pandas,
matplotlib) happen only when a report is built.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_REPORTS = "reports"              # reports go to reports/<store name> by default


def default_out_dir(store_path: str | Path) -> Path:
    """reports/<store file name without suffix>, matching the sweep's reports/<sweep name>."""
    return Path(DEFAULT_REPORTS) / Path(store_path).stem


def build_report(store_path: str | Path, out_dir: str | Path | None = None,
                 **options) -> dict[str, Path]:
    """Write report.html, report.pdf (and cells.csv, jobs.csv) for a store; returns the paths."""
    from harness.report.build import build_report as _build

    return _build(store_path, default_out_dir(store_path) if out_dir is None else out_dir,
                  **options)


__all__ = ["build_report", "default_out_dir"]
