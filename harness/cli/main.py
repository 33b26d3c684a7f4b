"""Command line: python -m harness {list, run, check, sweep, export, compare, report, reference,
gpr}.

The commands are modules of this package, each with `setup(parser)` (its arguments) and
`run(args)` (exit code). The exit codes mean the same for every command (harness.core.errors,
docs/design.md "Exit codes"): bad input ends with exit code 2 and one line on stderr naming the
field, a cluster that cannot go on (harness.execution.cluster.ClusterLost) with exit code 3
and one line; never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from harness.cli import check, compare, export, gpr, reference, report, run, sweep
from harness.cli import list as list_
from harness.cli.args import Parser, add_verbosity
from harness.core.errors import EXIT_BAD_INPUT, EXIT_CLUSTER, EXIT_INTERRUPTED, InputError
from harness.core.version import __version__
from harness.execution.cluster import ClusterLost

# name -> (setup(parser), run(args) -> exit code), in the order `--help` lists them
COMMANDS = {
    "list": (list_.setup, list_.run),
    "run": (run.setup, run.run),
    "check": (check.setup, check.run),
    "gpr": (gpr.setup, gpr.run),
    "reference": (reference.setup, reference.run),
    "report": (report.setup, report.run),
    "sweep": (sweep.setup, sweep.run),
    "export": (export.setup, export.run),
    "compare": (compare.setup, compare.run),
}

EXIT_CODES = (
    "exit status, the same for every command (docs/design.md, \"Exit codes\"): 0 the work is "
    "done and every result stored, whatever its status; 1 sweep, run, reference with --strict: "
    "a result is unreliable, failed, error or timeout; check, compare: something is flagged; "
    "export: the store is damaged (the jobs still readable written); 2 bad input (one line "
    "naming it) or a store that cannot be written; 3 the Dask cluster could not finish "
    "(finished results stay stored); 130 interrupted (Ctrl-C)")


def _one_line_plugin_warnings() -> None:
    """A skipped plugin, an ill-conditioned problem (warning classes with `one_line = True`)
    are one line on stderr ("warning: skipped method plugin ...")."""
    import warnings

    base = warnings.formatwarning
    if getattr(base, "one_line_plugins", False):
        return

    def formatwarning(message, category, *args, **kwargs):
        if getattr(category, "one_line", False):
            return f"warning: {message}\n"
        return base(message, category, *args, **kwargs)

    formatwarning.one_line_plugins = True
    warnings.formatwarning = formatwarning


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m harness",
                    description="Benchmark exact inference methods for GP classification.",
                    epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"gpc-harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (setup_command, run_command) in COMMANDS.items():
        p = sub.add_parser(name, help=(setup_command.__doc__ or "").strip() or None)
        p.prog = f"python -m harness {name}"
        setup_command(p)
        add_verbosity(p)
        p.set_defaults(func=run_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    _one_line_plugin_warnings()
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except InputError as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)   # one line
        return EXIT_BAD_INPUT
    except ClusterLost as exc:   # a cluster lost outside a sweep's jobs (sweeps say it there)
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return EXIT_CLUSTER
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
