"""`python -m harness run`: one method on one problem at one budget, compared with the truth."""

from __future__ import annotations

import json

from harness.cli.args import (
    VERBOSE,
    add_cluster_options,
    add_file_help,
    add_named,
    add_strict,
    named,
    settings_option,
    strict_exit,
    workers_option,
)
from harness.cli.progress_bars import progress_bars
from harness.core.errors import InputError
from harness.core.progress import phase
from harness.core.threads import available_cores, compute_threads
from harness.model.settings import parse_int


def setup(p):
    """Run one method on one problem and compare it with the exact truth."""
    p.description = setup.__doc__
    p.epilog = ("exit status (docs/design.md, \"Exit codes\"): 0 the run finished, whatever "
                "its status (printed with its reason); 1 with --strict, its status is not ok; "
                "2 bad input (one line naming the field); 3 the Dask cluster of --workers or "
                "--scheduler was lost")
    add_named(p, "problem", "family:key=value,..., a preset name, or a path to a .npz/.csv file")
    add_named(p, "method", "method name (see `list`), or path/to/file.py:ClassName")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a method setting (repeatable)")
    p.add_argument("--budget", help="Monte Carlo budget (e.g. 100000 or 1e5); required")
    p.add_argument("--seed", default="0", help="run seed (an integer)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_strict(p, "the run's status")
    p.add_argument("--memory-limit", metavar="BYTES",
                   help="refuse a job whose estimated peak memory is larger (e.g. 8GB, 512MiB); "
                   "default: the memory available now (MemAvailable of /proc/meminfo)")
    p.add_argument("--threads", metavar="N",
                   help="threads of the estimate (the compiled kernels and the walks' matrix "
                   "products; BLAS and the set-up stay on one); its CPU time "
                   "counts all of them; default: the cores this process may use "
                   f"({available_cores()} here); a sweep runs one per worker")
    p.add_argument("--raise", dest="raise_errors", action="store_true",
                   help="re-raise an exception of the method with its full traceback "
                        "(default: status error, the reason naming the file and line)")
    add_cluster_options(
        p, "split the estimate into parts and run them on a local Dask cluster of this many "
        "worker processes (one thread each)",
        "split the estimate into parts and run them on an existing Dask cluster: "
        "tcp://HOST:PORT or a scheduler file")
    p.add_argument("--parts", help="split the estimate into this many independent parts, or "
                   "auto (from the method, budget and N; never from the workers); default auto "
                   "with --workers/--scheduler; without them the parts run in this process")
    add_file_help(p)


def run(args) -> int:
    from harness.execution.formatting import format_record
    from harness.execution.single import build_problem, run_numbers, run_single
    from harness.model.footprint import memory_limit
    from harness.plugins.method_files import resolve_method

    missing = [f"--{n}" for n in ("problem", "method") if named(args, n, required=False) is None]
    missing += ["--budget"] if args.budget is None else []
    if missing:
        raise InputError("python -m harness run", "the following arguments are required: "
                         + ", ".join(missing), "PROBLEM and METHOD may also come first, "
                         "positionally; see --help")
    args.problem, args.method = named(args, "problem"), named(args, "method")
    budget, seed = run_numbers(args.budget, args.seed, "--budget", "--seed")
    method = resolve_method(args.method, "--method").from_settings(settings_option(args.settings))
    split = args.parts is not None or args.workers is not None or args.scheduler is not None
    if split:
        from harness.execution.cluster import check_options

        workers = workers_option(args)
        check_options(args.scheduler, workers, None)
        parts = "auto" if args.parts in (None, "auto") else parse_int("--parts", args.parts, 1)
    limit, where = memory_limit(args.memory_limit, "--memory-limit")
    n_threads = None if args.threads is None else parse_int("--threads", args.threads, 1)
    with progress_bars(args), compute_threads(n_threads):
        with phase("building the problem"):
            problem = build_problem(args.problem, "--problem", limit, where)
        record = run_single(
            problem, method, budget, seed, limit, where, name=args.problem,
            raise_errors=args.raise_errors,
            split=(lambda key: run_split_cli(args, problem, method, budget, key, parts, workers,
                                             seed=seed)) if split else None)
    if args.json:
        print(json.dumps(record, allow_nan=False))
    else:
        print(format_record(record, verbose=args.verbosity >= VERBOSE))
    return strict_exit([record["status"]], args.strict)


def run_split_cli(args, problem, method, budget: int, key: dict, parts, workers: int | None,
                  **identity) -> dict:
    """`run --workers/--scheduler/--parts`: the estimate split into parts (harness.execution.parts),
    on a local cluster, an existing one, or (--parts alone) in this process. The random stream's
    key holds the number of parts asked for, so a split run is its own replicate."""
    from contextlib import nullcontext

    from harness.execution.cluster import connect
    from harness.execution.parts import part_budgets, resolve_parts, run_split
    from harness.plugins.method_files import is_file_ref, read_method_file

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
