"""Comparison reports: a results store -> one self-contained HTML file and a PDF.

    from harness.report import build_report
    paths = build_report("results/quick.sqlite", "reports/quick")   # {"html": ..., "pdf": ...}

or `python -m harness report [--store PATH] [--out DIR]`. The heavy imports (pandas,
matplotlib) happen only when a report is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

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


def write_sweep_report(store_path: Path, out_dir: Path, out: TextIO) -> dict[str, str]:
    """The report at the end of a sweep (the `write_report` that harness.api.run_sweep and the
    `sweep` command hand to harness.sweep.driver.run_sweep): build it, say where it is on
    `out`, return its files by kind."""
    paths = build_report(store_path, out_dir)
    print(f"report: {', '.join(str(p) for p in paths.values()) or out_dir}", file=out)
    return {kind: str(path) for kind, path in paths.items()}


__all__ = ["build_report", "default_out_dir", "write_sweep_report"]
