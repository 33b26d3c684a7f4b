"""`python -m harness report`: turn a results store into report.html and report.pdf."""

from __future__ import annotations

from harness.cli.args import DEFAULT_STORE, LAST_STORE, out_folder, store_option
from harness.cli.progress_bars import progress_bars
from harness.report import build_report, default_out_dir


def setup(p):
    """Write the comparison report (HTML and PDF) of a results store."""
    p.description = ("Turn a results store into one self-contained HTML file, a summary PDF "
                     "(verdict, leaderboard, calibration, one figure per problem) and its "
                     "appendix (report-appendix.pdf: per-problem tables and figures, failed "
                     "jobs, environment). Progress is shown on stderr on a terminal.")
    p.add_argument("--store", default=None,
                   help=f"results store written by `sweep` (default: the last sweep's, "
                   f"remembered in {LAST_STORE}, else {DEFAULT_STORE})")
    p.add_argument("--out", default=None,
                   help="output folder (default reports/<store name>, like the sweep's)")
    p.add_argument("--no-pdf", action="store_true",
                   help="write the HTML only (no report.pdf, no report-appendix.pdf)")


def run(args) -> int:
    store = store_option(args)
    out = (out_folder(args.out, "report", "report.html, report.pdf, report-appendix.pdf, "
                      "cells.csv and jobs.csv")
           if args.out is not None else default_out_dir(store))
    with progress_bars(args):
        paths = build_report(store, out, pdf_file=not args.no_pdf)
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0

