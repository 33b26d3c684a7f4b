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
