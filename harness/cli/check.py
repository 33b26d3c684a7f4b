"""`python -m harness check`: the generic checks of a method plugin."""

from __future__ import annotations

import json

from harness.cli.args import add_named, named
from harness.cli.progress_bars import progress_bars


def setup(p):
    """Run the generic checks (harness.plugins.check_suite.check_method) on a method plugin."""
    p.description = setup.__doc__ + (
        " Exit 0 if every check passes or is skipped with a declared reason, 1 otherwise.")
    add_named(p, "method", "method name (see `list`), or path/to/file.py:ClassName")
    p.add_argument("--quick", action="store_true",
                   help="only the checks on small problems (no N = 200 accuracy, no N <= 3 "
                        "closed forms)")
    p.add_argument("--json", action="store_true",
                   help="print the report as one JSON object (method, counts, every check)")


def run(args) -> int:
    from harness.plugins.check_suite import run_checks
    from harness.plugins.method_files import resolve_method

    method = named(args, "method")
    cls = resolve_method(method, "method")
    with progress_bars(args):
        report = run_checks(cls, quick=args.quick)
    print(json.dumps(report.to_json(), allow_nan=False) if args.json else report)
    return 1 if report.failed else 0
