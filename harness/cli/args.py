"""What every command shares: one-line parse errors, the exit code of bad input, defaults."""

from __future__ import annotations

import argparse
import os

from harness.core.errors import InputError

EXIT_BAD_INPUT = 2
DEFAULT_STORE = "results/quick.sqlite"   # the default sweep's store (sweeps: results/<name>.sqlite)


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
