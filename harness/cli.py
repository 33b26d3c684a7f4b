"""Command line: python -m harness {list, run, ...}.

Bad input ends with exit code 2 and one line on stderr naming the field; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence

from harness.errors import InputError

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit code 2)."""

    def error(self, message):
        raise InputError(self.prog, message, "see --help")


COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int]]] = {}


def command(name: str, setup: Callable[[argparse.ArgumentParser], None]):
    """Register a subcommand: setup(parser) adds its arguments; the decorated function runs it."""
    def register(run: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = (setup, run)
        return run
    return register


# ---- list ---------------------------------------------------------------------------------
def _setup_list(p):
    """List the registered methods, problem families and presets."""
    p.description = _setup_list.__doc__


@command("list", _setup_list)
def cmd_list(args) -> int:
    from harness.registry import methods, presets, problem_families

    print("methods:")
    for name, cls in methods().items():
        kind = "exact" if cls.exact else "approximate"
        print(f"  {name:<24} {kind:<12} {cls.summary}")
    print("problem families:")
    for name, fam in problem_families().items():
        print(f"  {name:<24} truth={fam.truth:<9} {fam.summary}")
    print("presets:")
    for name, (fam, params) in presets().items():
        spec = ",".join(f"{k}={v}" for k, v in params.items())
        print(f"  {name:<24} {fam.name}:{spec}")
    print("files: any .npz (cov, or X_train/y_train/X_test/kernel/alpha/beta) or .csv "
          "(label column y, optional split column)")
    return 0


# ---- run ----------------------------------------------------------------------------------
def _setup_run(p):
    """Run one method on one problem and compare it with the exact truth."""
    p.description = _setup_run.__doc__
    p.add_argument("--problem", required=True,
                   help="family:key=value,..., a preset name, or a path to a .npz/.csv file")
    p.add_argument("--method", required=True,
                   help="method name (see `list`), or path/to/file.py:ClassName")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a method setting (repeatable)")
    p.add_argument("--budget", required=True, help="Monte Carlo budget (e.g. 100000 or 1e5)")
    p.add_argument("--seed", default="0", help="run seed (an integer)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--memory-limit", metavar="BYTES",
                   help="refuse a job whose estimated peak memory is larger (e.g. 8GB, 512MiB); "
                   "default: the memory available now (MemAvailable of /proc/meminfo)")
    p.add_argument("--raise", dest="raise_errors", action="store_true",
                   help="re-raise an exception of the method with its full traceback "
                        "(default: status error, the reason naming the file and line)")
    p.add_argument("--workers", help="split the estimate into parts and run them on a local "
                   "Dask cluster of this many worker processes (one thread each)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="split the estimate into parts and run them on an existing Dask "
                   "cluster: tcp://HOST:PORT or a scheduler file")
    p.add_argument("--parts", help="split the estimate into this many independent parts, or "
                   "auto (from the method, budget and N; never from the workers); default auto "
                   "with --workers/--scheduler; without them the parts run in this process")


def parse_int(field: str, text: str, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """An integer written as '100000', '1e5' or ' 7 '; exact (no rounding through a float)."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise InputError(field, f"must be an integer, got {text!r}") from None
        if not math.isfinite(number) or not number.is_integer():
            raise InputError(field, f"must be an integer, got {text!r}") from None
        value = int(number)
    if minimum is not None and value < minimum:
        raise InputError(field, f"must be >= {minimum}, got {text.strip()}")
    if maximum is not None and value > maximum:
        raise InputError(field, f"must be <= {maximum}, got {text.strip()}")
    return value


@command("run", _setup_run)
def cmd_run(args) -> int:
    from harness.api import run_key
    from harness.footprint import format_bytes, memory_limit, refuse_too_large
    from harness.method import check_budget
    from harness.plugin_file import resolve_method
    from harness.runner import point_truth, run_one
    from harness.seeding import MAX_SEED, rng_for
    from harness.spec import make_problem, parse_pairs

    budget = check_budget("--budget", parse_int("--budget", args.budget))
    seed = parse_int("--seed", args.seed, minimum=0, maximum=MAX_SEED)
    settings: dict[str, str] = {}
    for item in args.settings:
        settings.update(parse_pairs(item, "--set"))
    method = resolve_method(args.method, "--method").from_settings(settings)
    split = args.parts is not None or args.workers is not None or args.scheduler is not None
    if split:
        from harness.sweep.cluster import check_options

        workers = None if args.workers is None else parse_int("--workers", args.workers, 1)
        check_options(args.scheduler, workers, None)
        parts = "auto" if args.parts in (None, "auto") else parse_int("--parts", args.parts, 1)
    limit, where = memory_limit(args.memory_limit, "--memory-limit")
    try:
        problem = make_problem(args.problem)
    except MemoryError as exc:   # numpy's _ArrayMemoryError: a dense problem too large to build
        raise InputError("--problem", f"building {args.problem} ran out of memory ({exc})",
                         where.format(format_bytes(limit)) if limit else "") from None
    refuse_too_large(f"{method.label()} on {args.problem}", problem.summary(), method, budget,
                     limit, where)
    key = run_key(problem, method, budget, seed)
    if split:
        record = run_split_cli(args, problem, method, budget, key, parts, workers, seed=seed)
    else:
        record = run_one(problem, method, budget, rng_for(key), seed=seed,
                         raise_errors=args.raise_errors)
    record.update(point_truth(problem, record))
    if args.json:
        print(json.dumps(record, allow_nan=False))
    else:
        print(format_record(record))
    return 0 if record["status"] == "ok" else 1


def run_split_cli(args, problem, method, budget: int, key: dict, parts, workers: int | None,
                  **identity) -> dict:
    """`run --workers/--scheduler/--parts`: the estimate split into parts (harness.split), on
    a local cluster, an existing one, or (--parts alone) in this process. The random stream's
    key holds the number of parts asked for, so a split run is its own replicate."""
    from contextlib import nullcontext

    from harness.plugin_file import is_file_ref, read_method_file
    from harness.split import part_budgets, resolve_parts, run_split
    from harness.sweep.cluster import connect

    n = resolve_parts(method, budget, problem.n_train, parts, "--parts")
    part_budgets(method, budget, n, "--parts")   # a method that cannot split: exit 2, now
    name, file = method.name, None
    if is_file_ref(args.method):
        file = read_method_file(args.method, field="--method")
        name = file.method_id
    cluster = (connect(args.scheduler, workers) if workers is not None or args.scheduler
               else nullcontext(None))
    with cluster as conn:
        return run_split(args.problem, name, method.get_settings(), budget,
                         {**key, "parts": n}, n, conn.client if conn else None,
                         method_file=file.spec() if file else None, **identity)


def format_record(r: dict) -> str:
    from harness.problem import describe_kernel

    lines = [f"{r['method']} on {r['problem']} (N={r['n_train']}, {r['n_test']} test points), "
             f"budget {r['budget']} {r['budget_unit']}, seed {r['seed']}"]
    if r.get("kernel"):
        lines.append(f"  kernel: {describe_kernel(r['kernel'])}")
    if r["status"] != "ok":
        lines.append(f"  status: {r['status']}: {r['reason']}")
    if r.get("log_marginal_likelihood") is not None:
        se = r.get("log_marginal_likelihood_se")
        lines.append(f"  log Z estimate: {r['log_marginal_likelihood']:.6f}"
                     + (f" ± {se:.2g}" if se is not None else ""))
    if "true_log_marginal_likelihood" in r:
        lines.append(f"  log Z truth ({r['truth_kind']}): {r['true_log_marginal_likelihood']:.6f}")
    if r.get("true_log_marginal_likelihood_se"):
        lines[-1] += f" ± {r['true_log_marginal_likelihood_se']:.2g}"
    if "abs_log_error" in r:
        lines.append(f"  |error| {r['abs_log_error']:.3g} nats, MAPE {r['mape_percent']:.3g} %"
                     + (" (at reference precision)" if r.get("at_reference_precision") else ""))
    if "mae" in r:
        lines.append(f"  test probabilities: MAE {r['mae']:.3g}")
    lines.append(f"  CPU {r['cpu_seconds']:.2f} s, wall {r['wall_seconds']:.2f} s, "
                 f"peak memory {r['peak_memory_mb']:.0f} MB")
    if r.get("setup_cpu_seconds") is not None:
        lines.append(f"  set-up (prepare) CPU {r['setup_cpu_seconds']:.2f} s, wall "
                     f"{r['setup_wall_seconds']:.2f} s"
                     + (" (cached: built by an earlier job)" if r["setup_cached"] else ""))
    if r.get("parts"):
        elapsed = r["diagnostics"].get("elapsed_seconds")
        lines.append(f"  split into {r['parts']} parts, run by {r['workers']} worker"
                     + ("s" if r["workers"] != 1 else "")
                     + (f", {elapsed:.2f} s elapsed" if elapsed is not None else ""))
    if r.get("diagnostics"):
        lines.append("  diagnostics: " + ", ".join(f"{k}={v}" for k, v in r["diagnostics"].items()))
    return "\n".join(lines)


# ---- check --------------------------------------------------------------------------------
def _setup_check(p):
    """Run the generic checks (harness.testing.check_method) on a registered method."""
    p.description = _setup_check.__doc__ + (
        " Exit 0 if every check passes or is skipped with a declared reason, 1 otherwise.")
    p.add_argument("method", help="method name (see `list`)")
    p.add_argument("--quick", action="store_true",
                   help="only the checks on small problems (no N = 200 accuracy, no N <= 3 "
                        "closed forms)")


@command("check", _setup_check)
def cmd_check(args) -> int:
    from harness.registry import get_method
    from harness.testing import run_checks

    report = run_checks(get_method(args.method), quick=args.quick)
    print(report)
    return 1 if report.failed else 0


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


# ---- entry point --------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    import harness.gpr_cli  # noqa: F401 - registers `gpr`
    import harness.reference_cli  # noqa: F401 - registers `reference`
    import harness.report.cli  # noqa: F401 - registers `report`
    import harness.sweep.cli  # noqa: F401 - registers `sweep` and `export`

    parser = _Parser(prog="python -m harness",
                     description="Benchmark exact inference methods for GP classification.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (setup, run) in COMMANDS.items():
        p = sub.add_parser(name, help=(setup.__doc__ or "").strip() or None)
        p.prog = f"python -m harness {name}"
        setup(p)
        p.set_defaults(func=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    _one_line_plugin_warnings()
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except InputError as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)   # one line
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
