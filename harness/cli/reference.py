"""`python -m harness reference`: compute, store, export and import reference values.

    python -m harness reference PROBLEM [PROBLEM ...] --method M --budget B [--target-se S]
        [--target-test-se S] [--max-cpu SECONDS] [--workers N | --scheduler ADDRESS]
        [--json] [--store PATH] [--out FILE.json | DIR]
    python -m harness reference --import FILE.json [...] --store PATH
    python -m harness reference --export DIR --store PATH

The JSON printed (--json) and written (--out) is the reference record (harness.references.compute),
with the value fields of `run --json`. Each problem's reference has a status
(harness.references.compute.reference_status: unreliable when a check failed, timeout when it
stopped before its targets, failed when none could be computed; the others are stored and
written all the same); a line on stderr counts those not ok, with their reasons. Exit 0 once
every problem was tried; with --strict, 1 when a reference is not ok.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

from harness.cli.args import (
    add_cluster_options,
    add_named,
    add_strict,
    named,
    note,
    out_file,
    strict_exit,
    workers_option,
)
from harness.cli.progress_bars import progress_bars
from harness.core.errors import InputError
from harness.model.settings import parse_int


def setup(p):
    """Compute a problem's reference values (log Z, test probabilities) with stated SEs."""
    from harness.references.compute import DEFAULT_PARTS_PER_ROUND

    p.description = (
        "Run an unbiased estimator (default minimax-tilting) in rounds of independent parts, "
        "each round combined exactly with all parts so far, until the log Z standard error "
        "and every test probability's are below their targets or the budget or CPU time is "
        "spent; then check it against a second unbiased method and its weight diagnostics. "
        "Parts run in this process, or on a Dask cluster (--workers / --scheduler).")
    add_named(p, "problem", "family:key=value,..., a preset name, or a .npz/.csv file",
              many=True)
    p.add_argument("--method", default="minimax-tilting",
                   help="an unbiased method (default minimax-tilting; sov, sir, "
                        "rejection-bootstrap with --set count=hard)")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the method (repeatable)")
    p.add_argument("--budget", default="1e7", help="largest total budget (default 1e7)")
    p.add_argument("--round-budget", default=None,
                   help="the first round's budget (default: --budget / 16); later rounds add "
                        "parts of the same size")
    p.add_argument("--parts-per-round", default=str(DEFAULT_PARTS_PER_ROUND),
                   help=f"parts of the first round (default {DEFAULT_PARTS_PER_ROUND})")
    p.add_argument("--target-se", type=float, default=0.01,
                   help="target standard error of log Z in nats (default 0.01)")
    p.add_argument("--target-test-se", type=float, default=1e-4,
                   help="target standard error of every test probability (default 1e-4)")
    p.add_argument("--max-cpu", type=float, default=None, metavar="SECONDS",
                   help="stop adding rounds when the reference has used this much CPU time "
                        "(the check method gets a quarter of what it used)")
    p.add_argument("--check-method", default="auto",
                   help="second unbiased method for the agreement check (default: sir for "
                        "minimax-tilting, else minimax-tilting; 'none' skips the check)")
    p.add_argument("--check-set", dest="check_settings", action="append", default=[],
                   metavar="KEY=VALUE",
                   help="a setting of the check method (repeatable), e.g. proposal=tilted "
                        "for sir on a short-range problem at large N")
    p.add_argument("--seed", default="0", help="seed of the parts' random streams")
    add_cluster_options(
        p, "run the parts on a local Dask cluster of this many worker processes",
        "run the parts on an existing Dask cluster (tcp://HOST:PORT or a scheduler file)")
    p.add_argument("--json", action="store_true", help="print the record(s) as JSON")
    add_strict(p, "a reference of this command",
               "not ok: unreliable (its method says so, or a check failed), timeout (it "
               "stopped before its SE targets) or failed (none computed)")
    p.add_argument("--store", default=None, help="results store to add the reference(s) to")
    p.add_argument("--out", default=None,
                   help="write the reference as FILE.json (one problem) or into folder DIR as "
                        "DIR/<problem>.json")
    p.add_argument("--import", dest="import_files", action="append", default=[],
                   metavar="FILE.json", help="add reference file(s) to --store (no computing)")
    p.add_argument("--export", default=None, metavar="DIR",
                   help="write every reference of --store into DIR, one JSON file each")


def _out_path(out: str, problem: str, several: bool) -> Path:
    """--out: FILE.json for one problem, else a folder receiving <problem>.json each."""
    from harness.model.reference_values import file_name

    if several or Path(out).is_dir() or out.endswith(("/", "\\")):
        return Path(out) / file_name(problem)
    return out_file(out, (".json",), file_name(problem))


def run(args) -> int:
    args.problems = named(args, "problem", required=False) or []
    if args.import_files or args.export:
        return _import_export(args)
    if not args.problems:
        raise InputError("PROBLEM", "give at least one problem (or --import / --export)")
    return _compute_each(args)


def _import_export(args) -> int:
    """--import FILE.json ... and --export DIR: between a store and files, nothing computed."""
    from harness.execution.store import ResultStore
    from harness.model.reference_values import export_reference, file_name, import_references

    if args.problems:
        raise InputError("--import/--export", "cannot be combined with PROBLEM arguments",
                         "import/export and compute in separate commands")
    if not args.store:
        raise InputError("--store", "is required with --import and --export")
    with ResultStore(args.store) as store:
        for f in args.import_files:
            for record in import_references(f):
                store.add_reference(record)
                print(f"imported the reference of {record['problem']} from {f}")
        if args.export:
            for name, record in store.references().items():
                path = export_reference(record, Path(args.export) / file_name(name))
                print(f"exported the reference of {name} to {path}")
    return 0


def _compute_each(args) -> int:
    """Each problem's reference, stored (--store) and written (--out) as soon as it is done,
    then printed; the exit status (module doc)."""
    from harness.execution.formatting import format_reference
    from harness.execution.store import ResultStore
    from harness.model.reference_values import export_reference
    from harness.model.status_summary import not_ok_summary
    from harness.references.compute import reference_status

    several = len(args.problems) > 1
    records: list[dict] = []

    def keep(record: dict) -> None:   # stored and written at once: nothing later can lose it
        records.append(record)
        if args.store:
            with ResultStore(args.store) as store:
                store.add_reference(record)
        if args.out:
            export_reference(record, _out_path(args.out, record["problem"], several))

    with progress_bars(args):
        failures = _compute(args, keep)
    for failure in failures:
        print(f"reference failed: {failure}", file=sys.stderr)
    if args.json:
        if records or several:
            print(json.dumps(records if several else records[0], allow_nan=False))
    else:
        for record in records:
            print(format_reference(record))
    computed = [reference_status(r) for r in records]
    results = computed + [("failed", f.reason) for f in failures]   # failed: none to store
    if summary := not_ok_summary(results):
        if args.store and any(status != "ok" for status, _ in computed):
            summary += "; those computed stored all the same" if failures else \
                "; stored all the same"
        print(f"not ok: {summary}", file=sys.stderr)
    return strict_exit([status for status, _ in results], args.strict)


def _compute(args, keep: Callable[[dict], None]) -> list:
    """Compute the reference of each problem, handing each record to `keep` as soon as it is
    done; the ReferenceFailed of each problem that failed (it does not stop the next)."""
    from contextlib import ExitStack

    from harness.execution.cluster import check_options, connect
    from harness.plugins.specs import parse_pairs
    from harness.references.compute import ReferenceFailed, compute_reference

    budget = parse_int("--budget", args.budget, minimum=1)
    round_budget = (None if args.round_budget is None
                    else parse_int("--round-budget", args.round_budget, minimum=1))
    parts = parse_int("--parts-per-round", args.parts_per_round, minimum=1)
    seed = parse_int("--seed", args.seed, minimum=0)
    workers = workers_option(args)
    for name, value in (("--target-se", args.target_se),
                        ("--target-test-se", args.target_test_se),
                        ("--max-cpu", args.max_cpu)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(name, f"must be a positive number, got {value}")
    settings: dict[str, str] = {}
    for item in args.settings:
        settings.update(parse_pairs(item, "--set"))
    check = None if args.check_method == "none" else args.check_method
    check_settings: dict[str, str] = {}
    for item in args.check_settings:
        check_settings.update(parse_pairs(item, "--check-set"))
    if check is None and check_settings:
        raise InputError("--check-set", "there is no check method (--check-method none)",
                         "drop --check-set, or name a --check-method")
    check_options(args.scheduler, workers, None)
    failures = []
    with ExitStack() as stack:
        client = None
        if args.scheduler is not None or workers is not None:
            client = stack.enter_context(connect(args.scheduler, workers)).client
        for problem in args.problems:
            try:
                record = compute_reference(
                    problem, args.method, settings, max_budget=budget,
                    budget_per_round=round_budget, parts_per_round=parts,
                    target_se=args.target_se, target_test_se=args.target_test_se,
                    max_cpu_seconds=args.max_cpu, client=client, check_method=check,
                    check_settings=check_settings, seed=seed,
                    out=lambda text: note(args, text))
            except ReferenceFailed as exc:
                failures.append(exc)
                continue
            keep(record)
    return failures
