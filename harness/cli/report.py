"""`python -m harness report`: turn a results store into report.html and report.pdf."""

from __future__ import annotations

from harness.cli.args import DEFAULT_STORE
from harness.report import build_report, default_out_dir


def setup(p):
    """Write the comparison report (HTML and PDF) of a results store."""
    p.description = ("Turn a results store into one self-contained HTML file and a PDF: errors "
                     "against truth or consensus, time-error curves, tables, failed jobs.")
    p.add_argument("--store", default=DEFAULT_STORE,
                   help=f"results store written by `sweep` (default {DEFAULT_STORE})")
    p.add_argument("--out", default=None,
                   help="output folder (default reports/<store name>, like the sweep's)")
    p.add_argument("--no-pdf", action="store_true", help="write the HTML only")


def run(args) -> int:
    out = args.out if args.out is not None else default_out_dir(args.store)
    paths = build_report(args.store, out, pdf_file=not args.no_pdf)
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0
