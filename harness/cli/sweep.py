"""`python -m harness sweep`: every job of a sweep file on a Dask cluster, then the report."""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path

from harness.cli.args import (
    add_cluster_options,
    add_file_help,
    add_strict,
    max_local_workers,
    remember_store,
    settings_option,
    strict_exit,
    workers_option,
)
from harness.model.settings import parse_seconds

DEFAULT_SWEEP = "sweeps/quick.toml"


class MethodOption(argparse.Action):
    """--method NAME: a new [name, [KEY=VALUE, ...]] entry that later --set options fill."""

    def __call__(self, parser, namespace, value, option_string=None):
        getattr(namespace, self.dest).append((value, []))


class SetOption(argparse.Action):
    """--set KEY=VALUE: a setting of the --method given last."""

    def __call__(self, parser, namespace, value, option_string=None):
        methods = getattr(namespace, self.dest)
        if not methods:
            parser.error(f"--set {value}: give --method NAME before the --set options of it")
        methods[-1][1].append(value)


def default_sweep_file(path: str) -> str:
    """The default sweep from the current directory, else from the source tree."""
    if path != DEFAULT_SWEEP or Path(path).exists():
        return path
    bundled = Path(__file__).resolve().parents[2] / DEFAULT_SWEEP
    return str(bundled) if bundled.exists() else path


def setup(p):
    """Run every job of a sweep file on a Dask cluster and keep every result."""
    p.description = (
        "Run every problem × method × budget × replicate job of a sweep file on a Dask cluster, "
        "storing each result as it finishes. Re-running the same sweep resumes it: jobs already "
        "in the store are skipped.")
    p.epilog = (
        "exit status (docs/design.md, \"Exit codes\"): 0 every job of the sweep is stored, "
        "whatever its status (the summary counts those unreliable, failed, error or timeout, "
        "with their reasons; --rerun-failed reruns them); 1 with --strict, some job of the "
        "sweep is stored with a status other than ok; 2 bad input (one line naming the "
        "field), or the store cannot be written (a full disk, an unwritable write-ahead log); "
        "3 the cluster could not finish (no worker for no_workers_timeout seconds, the "
        "scheduler lost, the local cluster did not start or its workers kept dying); "
        "finished jobs stay stored: run the same command again; 130 interrupted (Ctrl-C)")
    p.add_argument("sweep_file", nargs="?", default=None,
                   help=f"the sweep (TOML); default {DEFAULT_SWEEP}, or none when --problem "
                   "and --method define the sweep")
    filters = p.add_argument_group(
        "filters", "without a sweep file, --problem, --method and --budget define a sweep "
        "(named cli: results/cli.sqlite, reports/cli/); with one, they run only the matching "
        "part of its grid (the same job ids, so the store resumes across both)")
    filters.add_argument("--problem", action="append", default=[], metavar="SPEC",
                         help="a problem (family:key=value,..., a preset or a file; a bare "
                         "family, preset or file selects every problem of the file it heads); "
                         "repeatable")
    filters.add_argument("--method", dest="methods", action=MethodOption, default=[],
                         metavar="NAME", help="a method (a name, an instance label such as "
                         "rejection-bootstrap[count=hard], or path/to/file.py:Class); "
                         "repeatable")
    filters.add_argument("--set", dest="methods", action=SetOption, metavar="KEY=VALUE",
                         help="a setting of the --method before it (repeatable): the value it "
                         "runs with, or, with a sweep file, the value its instances must have")
    filters.add_argument("--budget", action="append", default=[], metavar="LIST",
                         help="budgets: a list 1000,1e4 or a log-spaced range START:STOP:NUM "
                         "(1e3:1e5:3 is 1000, 10000, 100000); repeatable")
    filters.add_argument("--replicates", metavar="N",
                         help="replicates per problem x method x budget (without a file, "
                         "default 1; with one, replicates 0 ... N-1)")
    p.add_argument("--store", help="results store (SQLite), relative to the working directory; "
                   "default: the file's [output] store (relative to the sweep file), else "
                   "results/<sweep name>.sqlite")
    add_cluster_options(
        p, "worker processes of the local cluster (one thread each); default: one per core",
        "use an existing cluster: tcp://HOST:PORT, tls://HOST:PORT or the scheduler file of "
        "`dask scheduler --scheduler-file`")
    p.add_argument("--tls-ca-file", help="CA certificate for a tls:// scheduler "
                   "(default: Dask's config distributed.comm.tls.ca-file)")
    p.add_argument("--tls-cert", help="client certificate for TLS")
    p.add_argument("--tls-key", help="client private key for TLS")
    p.add_argument("--no-workers-timeout", metavar="SECONDS",
                   help="give up (exit 3) when the cluster has had no worker this long; "
                   "default: the file's no_workers_timeout, else 300")
    add_strict(p, "a job of the sweep (stored by this run or an earlier one)")
    p.add_argument("--rerun-failed", action="store_true",
                   help="also rerun the stored jobs whose status is not ok "
                   "(unreliable, failed, error, timeout)")
    p.add_argument("--no-report", action="store_true",
                   help="do not write the report at the end (default: the file's [output] "
                   "report, else reports/<sweep name>/)")
    p.add_argument("--no-reference", action="store_true",
                   help="do not compute the reference of a problem without truth (by "
                   "default a sweep computes one after its jobs, on its cluster, so the "
                   "report's verdict can judge every target: docs/design.md 'References "
                   "inside a sweep')")
    p.add_argument("--check", action="store_true",
                   help="validate the sweep file and print the plan a run would follow (jobs, "
                   "not planned pairs, how many are already in the store); run nothing and "
                   "write nothing")
    add_file_help(p)


def run(args) -> int:
    from harness.core.errors import EXIT_INTERRUPTED
    from harness.execution.cluster import TLSOptions
    from harness.sweep.driver import run_sweep
    from harness.sweep.filters import command_line_sweep, restrict
    from harness.sweep.spec import load_sweep

    workers = workers_option(args, maximum=max_local_workers())
    timeout = None if args.no_workers_timeout is None else \
        parse_seconds("--no-workers-timeout", args.no_workers_timeout)
    selection = selection_of(args)
    if args.sweep_file is None and selection.defines_sweep:
        sweep = command_line_sweep(selection)
    else:
        sweep = restrict(load_sweep(default_sweep_file(args.sweep_file or DEFAULT_SWEEP)),
                         selection)
    tls = TLSOptions(args.tls_ca_file, args.tls_cert, args.tls_key)
    if sweep.kind == "reference":
        return _reference_sweep(sweep, args, workers, tls)
    if args.check:
        return _check(sweep, args, workers)
    try:   # report and export read the store by default, once it opened (a refused one: not)
        outcome = run_sweep(sweep, store=args.store, workers=workers, scheduler=args.scheduler,
                            tls=tls, rerun_failed=args.rerun_failed, report=not args.no_report,
                            no_workers_timeout=timeout, write_report=sweep_writer(args),
                            opened=remember_store, references=not args.no_reference)
    except KeyboardInterrupt:   # run_sweep said how far it got
        return EXIT_INTERRUPTED
    return outcome.exit_code or strict_exit(
        [*outcome.in_store, *(status for status, _ in outcome.references)], args.strict)


def selection_of(args):
    """The filter options as a harness.sweep.filters.Selection (checked values)."""
    from harness.model.settings import parse_int
    from harness.sweep.filters import MethodChoice, Selection, parse_budget_option

    methods = [MethodChoice(name, settings_option(items, f"--set (of --method {name})"))
               for name, items in args.methods]
    return Selection(tuple(args.problem), tuple(methods),
                     parse_budget_option(args.budget) if args.budget else None,
                     None if args.replicates is None
                     else parse_int("--replicates", args.replicates, minimum=1))


def _reference_sweep(sweep, args, workers, tls) -> int:
    """A kind = "reference" sweep (harness.sweep.reference_kind): --check prints the plan;
    else each missing reference is computed on the cluster (local workers, default one per
    core, or --scheduler), stored and exported."""
    from harness.execution.cluster import check_options, connect, default_workers
    from harness.sweep.driver import check_writable
    from harness.sweep.reference_kind import plan_lines, run_reference_sweep

    store = Path(args.store) if args.store else sweep.store
    check_writable(store, "store")
    if sweep.references is not None:
        check_writable(sweep.references, "references", directory=True)
    if args.check:
        print(f"{sweep.path}: valid")
        print("\n".join(plan_lines(sweep, store)))
        return 0
    check_options(args.scheduler, workers, tls)
    if args.scheduler is None and workers is None:
        workers = default_workers()
    with connect(args.scheduler, workers, tls) as conn:
        statuses = run_reference_sweep(sweep, store, conn.client)
    return strict_exit(statuses, args.strict)


def _check(sweep, args, workers) -> int:
    """`sweep --check`: the run's plan, what the store already holds; nothing written."""
    from pathlib import Path

    from harness.sweep.driver import check_writable, plan_lines, stored_job_ids
    from harness.sweep.missing_references import missing, plan_line
    from harness.sweep.plan import former_keys_line, keep_stored_keys, plan
    from harness.sweep.reference_kind import stored_references

    store = Path(args.store) if args.store else sweep.store
    check_writable(store, "store")
    if not args.no_report:
        check_writable(sweep.report, "report", directory=True)
    limit = _check_memory(sweep, args, workers)
    jobs, kept = keep_stored_keys(plan(sweep, limit), stored_job_ids(store) or set())
    print(f"{sweep.path}: valid")
    print("\n".join(plan_lines(sweep, jobs, limit, store)))
    done = stored_job_ids(store, args.rerun_failed)
    n_done = 0 if done is None else sum(j.job_id in done for j in jobs)
    print(f"{n_done} done, {len(jobs) - n_done} to run"
          + (" (no store there yet)" if done is None else ""))
    if kept:
        print(former_keys_line(kept))
    need = [] if args.no_reference or sweep.kind != "estimate" else \
        missing(sweep.problems, stored_references(store), sweep.seed)
    if need:
        print(plan_line(need))
    for p in sweep.problems:
        print(f"  problem {p.spec}  (N={p.n_train}, {p.n_test} test points)")
    for m in sweep.methods:
        print(f"  method  {m.label}  budgets {', '.join(map(str, m.budgets))} "
              f"{m.budget_unit}")
    print(f"  {sweep.replicates} replicates, seed {sweep.seed}, time limit "
          f"{'none' if sweep.time_limit is None else f'{sweep.time_limit:g} CPU s'}")
    if sweep.tune is not None:
        t = sweep.tune
        print(f"  tuning: {', '.join(t.strategies)} over "
              + ", ".join(f"{k} {lo:g}..{hi:g} ({n} points)"
                          for k, (lo, hi, n) in t.space.items()))
    print(f"  report {sweep.report}" + (" (not written: --no-report)" if args.no_report else ""))
    return 0


def _check_memory(sweep, args, workers) -> int | None:
    """A worker's memory for `sweep --check`, the same as a run's (with --scheduler, the
    connected workers' smallest memory_limit)."""
    from harness.execution.cluster import TLSOptions, check_options, connect
    from harness.sweep.driver import worker_memory

    tls = TLSOptions(args.tls_ca_file, args.tls_cert, args.tls_key)
    check_options(args.scheduler, workers, tls)
    with ExitStack() as stack:
        def connected():
            return stack.enter_context(connect(args.scheduler, workers, tls))

        return worker_memory(sweep, args.scheduler, workers, None, connected)


def sweep_writer(args):
    """The report writer for the end of a sweep (harness.sweep.driver.run_sweep's
    `write_report`): harness.report.write_sweep_report with the same progress bars as
    `report` (which section, figure n of m) on stderr."""
    def write(store_path, out_dir, out):
        from harness.cli.progress_bars import progress_bars
        from harness.report import write_sweep_report

        with progress_bars(args):
            return write_sweep_report(store_path, out_dir, out)
    return write
