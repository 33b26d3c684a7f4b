"""`python -m harness check`: the generic checks of a method plugin."""

from __future__ import annotations


def setup(p):
    """Run the generic checks (harness.plugins.checks.check_method) on a method plugin."""
    p.description = setup.__doc__ + (
        " Exit 0 if every check passes or is skipped with a declared reason, 1 otherwise.")
    p.add_argument("method", help="method name (see `list`), or path/to/file.py:ClassName")
    p.add_argument("--quick", action="store_true",
                   help="only the checks on small problems (no N = 200 accuracy, no N <= 3 "
                        "closed forms)")


def run(args) -> int:
    from harness.plugins.checks import run_checks
    from harness.plugins.method_files import resolve_method

    report = run_checks(resolve_method(args.method, "method"), quick=args.quick)
    print(report)
    return 1 if report.failed else 0
