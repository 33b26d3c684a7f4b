"""What every command shares: one-line parse errors, --strict, defaults."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path

from harness.core.errors import EXIT_FLAGGED, EXIT_OK, InputError

DEFAULT_STORE = "results/quick.sqlite"   # the default sweep's store (sweeps: results/<name>.sqlite)


QUIET, NORMAL, VERBOSE = 0, 1, 2   # args.verbosity


def add_verbosity(p: argparse.ArgumentParser) -> None:
    """-q/--quiet and -v/--verbose (every subcommand has them: harness.cli.main)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=QUIET,
                       default=NORMAL, help="print only the results and errors: no progress "
                       "bars, no notes on stderr")
    group.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=VERBOSE,
                       help="also print the details (e.g. run: every diagnostic at full "
                       "precision)")


def note(args: argparse.Namespace, text: str) -> None:
    """A note for people on stderr (which store was read, ...), unless -q."""
    from harness.cli.progress_bars import write_line

    if getattr(args, "verbosity", NORMAL) > QUIET:
        write_line(text)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit code 2)."""

    def error(self, message):
        raise InputError(self.prog, message, "see --help")


def max_local_workers() -> int:
    """Worker processes a local cluster may have: 4 per core (more only share the cores and
    divide the memory further; use --scheduler for a larger cluster)."""
    return 4 * (os.cpu_count() or 1)


def add_cluster_options(p: argparse.ArgumentParser, workers_help: str,
                        scheduler_help: str) -> None:
    """--workers N (a local Dask cluster) and --scheduler ADDRESS (an existing one)."""
    p.add_argument("--workers", help=workers_help)
    p.add_argument("--scheduler", metavar="ADDRESS", help=scheduler_help)


def workers_option(args: argparse.Namespace, maximum: int | None = None) -> int | None:
    """--workers as an integer >= 1 (at most `maximum`), or None when it is not given."""
    from harness.model.settings import parse_int

    if args.workers is None:
        return None
    workers = parse_int("--workers", args.workers, minimum=1)
    if maximum is not None and workers > maximum:
        raise InputError("--workers", f"must be <= {maximum}, got {workers}: a local cluster "
                         f"has at most 4 worker processes per core ({os.cpu_count() or 1} "
                         "here), more only share the cores and divide the memory",
                         "use --scheduler for a larger cluster")
    return workers


NOT_OK = ("unreliable, failed, error or timeout (an approximation such as laplace counts by "
          "its status alone, not for being one)")


def add_strict(p: argparse.ArgumentParser, results: str, not_ok: str = NOT_OK) -> None:
    """--strict: exit 1 when one of `results` is `not_ok` (`strict_exit`)."""
    p.add_argument("--strict", action="store_true",
                   help=f"exit 1 when {results} is {not_ok}; without it the exit status is 0 "
                   "once the work is done, whatever the statuses")


def strict_exit(statuses: Iterable[str], strict: bool) -> int:
    """The exit status of work that finished: 0, or with --strict 1 when a status is not ok."""
    return EXIT_FLAGGED if strict and any(s != "ok" for s in statuses) else EXIT_OK


def add_file_help(p: argparse.ArgumentParser) -> None:
    """A `--help` section on problem files (.csv, .npz) and their options: what each means and
    its default (harness.datasets.files.FILE_HELP), so none is a silent default."""
    from harness.datasets.files import FILE_HELP

    p.add_argument_group("problem files (.csv, .npz) and their options", FILE_HELP)


def add_named(p: argparse.ArgumentParser, name: str, help: str, *, many: bool = False) -> None:
    """The problem or method a command works on, given positionally or as --NAME (both
    spellings on every command: `run PROBLEM METHOD` = `run --problem P --method M`,
    `check METHOD` = `check --method M`); many=True takes several (reference). Read it with
    named(args, name)."""
    p.add_argument(name, nargs="*" if many else "?", default=None, metavar=name.upper(),
                   help=f"{help} (or --{name})")
    p.add_argument(f"--{name}", dest=f"{name}_option", metavar=name.upper(),
                   action="append" if many else "store", help=f"the same as {name.upper()}"
                   + (" (repeatable)" if many else ""))


def named(args: argparse.Namespace, name: str, *, required: bool = True):
    """The value of add_named's `name` (a list when many): positional or --NAME, not both
    differently; missing and required is an InputError naming both spellings."""
    given = [v for v in (getattr(args, name), getattr(args, f"{name}_option")) if v]
    if len(given) == 2 and given[0] != given[1]:
        raise InputError(f"--{name}", f"given twice ({given[0]!r} positionally and "
                         f"{given[1]!r} as --{name})", "give it once")
    if not given and required:
        raise InputError(f"--{name}", "is required", f"give {name.upper()} or --{name} "
                         f"{name.upper()}")
    return given[0] if given else None


# ---- where commands read and write ------------------------------------------------------------
LAST_STORE = Path("results") / ".last-store"   # the last sweep's store, for report and export
FILE_SUFFIXES = (".html", ".pdf", ".csv", ".parquet", ".json", ".png", ".svg", ".txt")


def remember_store(store: str | Path) -> None:
    """Note the store a sweep writes (results/.last-store, relative to the working directory),
    so that `report` and `export` read it by default; a convenience, so never an error. Called
    once the sweep has opened the store (harness.sweep.driver.run_sweep's `opened`): a store
    the sweep refused (damaged, not a file, another sweep's) is never noted."""
    try:
        LAST_STORE.parent.mkdir(parents=True, exist_ok=True)
        LAST_STORE.write_text(f"{os.path.abspath(store)}\n", encoding="utf-8")   # no resolve:
        # a store path that is a symlink loop is the store's own check to refuse
    except OSError:
        pass


def store_option(args: argparse.Namespace) -> str:
    """--store, else the last sweep's store (results/.last-store) if it still exists, else
    DEFAULT_STORE; a note on stderr says which was taken when it was not given."""
    if args.store is not None:
        return args.store
    try:
        last = LAST_STORE.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        last = ""
    if last and Path(last).is_file():
        note(args, f"store: {last} (the last sweep's, from {LAST_STORE}; --store for another)")
        return last
    note(args, f"store: {DEFAULT_STORE} (the default: no sweep run from this folder is "
               f"remembered in {LAST_STORE}; --store for another)")
    return DEFAULT_STORE


def out_folder(out: str, command: str, writes: str) -> Path:
    """--out of a command that writes several files (report, gpr): a folder. A path ending in a
    file suffix is refused in one line, naming what the folder receives."""
    path = Path(out)
    if path.suffix.lower() in FILE_SUFFIXES:
        raise InputError("--out", f"is a folder for {command} (it writes {writes} into it), got "
                         f"the file name {out!r}", f"give the folder, e.g. --out {path.parent}")
    return path


def out_file(out: str, suffixes: tuple[str, ...], name: str) -> Path:
    """--out of a command that writes one file (export; reference of one problem): that file
    when it ends in one of `suffixes`, else a folder that receives `name` (a name with another
    suffix, x.xlsx, is refused in one line unless it is an existing folder)."""
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix in suffixes:
        return path
    if suffix in FILE_SUFFIXES or (suffix and not path.is_dir()):
        raise InputError("--out", f"unknown format {path.suffix!r}",
                         f"give a file name ending in {' or '.join(suffixes)}, or a folder")
    return path / name


def settings_option(items: list[str], field: str = "--set") -> dict[str, str]:
    """--set KEY=VALUE options (each may hold several pairs, a=1,b=2) as one dict; a key
    given twice is refused rather than the last one silently kept."""
    from harness.plugins.specs import parse_pairs

    settings: dict[str, str] = {}
    for item in items:
        for key, value in parse_pairs(item, field).items():
            if key in settings:
                raise InputError(field, f"setting {key!r} given twice ({settings[key]!r} and "
                                 f"{value!r})", "give each setting once")
            settings[key] = value
    return settings
