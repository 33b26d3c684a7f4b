"""`python -m harness export`: a results store's jobs as one CSV or Parquet table."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.cli.args import DEFAULT_STORE, LAST_STORE, out_file, store_option


def setup(p):
    """Write a results store's jobs to a CSV or Parquet file."""
    p.description = "Export every job of a results store as one table (CSV or Parquet)."
    p.add_argument("--store", default=None, help="results store (default: the last sweep's, "
                   f"remembered in {LAST_STORE}, else {DEFAULT_STORE}); a damaged store: the "
                   "jobs still readable, exit 1")
    p.add_argument("--out", required=True, help="output file FILE.csv or FILE.parquet, or a "
                   "folder (it receives <store name>.csv); Parquet needs pyarrow: pip install "
                   "'gpc-harness[parquet]'")


def run(args) -> int:
    """Exit 0; 1 when the store is damaged and only the jobs still readable were written."""
    from harness.analysis.export import export
    from harness.execution.store import StoreDamaged

    store = store_option(args)
    out = out_file(args.out, (".csv", ".parquet"), f"{Path(store).stem}.csv")
    try:
        n = export(store, out)
    except StoreDamaged as exc:
        n = export(store, out, salvage=True)
        print(f"wrote {n} jobs to {out}: those still readable from the damaged store "
              f"{exc.path} ({exc.why}); the rest could not be read", file=sys.stderr)
        return 1
    print(f"wrote {n} jobs to {out}")
    return 0
