"""`python -m harness export`: a results store's jobs as one CSV or Parquet table."""

from __future__ import annotations

import sys

from harness.cli.args import DEFAULT_STORE


def setup(p):
    """Write a results store's jobs to a CSV or Parquet file."""
    p.description = "Export every job of a results store as one table (CSV or Parquet)."
    p.add_argument("--store", default=DEFAULT_STORE, help=f"results store; default {DEFAULT_STORE}"
                   " (a damaged store: the jobs still readable, exit 1)")
    p.add_argument("--out", required=True, help="output file: FILE.csv or FILE.parquet "
                   "(Parquet needs pyarrow: pip install 'gpc-harness[parquet]')")


def run(args) -> int:
    """Exit 0; 1 when the store is damaged and only the jobs still readable were written."""
    from harness.analysis.export import export
    from harness.execution.store import StoreDamaged

    try:
        n = export(args.store, args.out)
    except StoreDamaged as exc:
        n = export(args.store, args.out, salvage=True)
        print(f"wrote {n} jobs to {args.out}: those still readable from the damaged store "
              f"{exc.path} ({exc.why}); the rest could not be read", file=sys.stderr)
        return 1
    print(f"wrote {n} jobs to {args.out}")
    return 0
