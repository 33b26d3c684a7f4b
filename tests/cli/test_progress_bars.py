"""Progress bars of the command line (harness.cli.progress_bars): on a terminal, `run` shows its
phases with the elapsed time and an ETA while it works; with -q, or when stderr is not a
terminal, nothing."""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from harness.cli.args import NORMAL, QUIET
from harness.cli.main import main
from harness.cli.progress_bars import Bars, progress_bars
from harness.core.progress import advance, phase

ETA = re.compile(r"ETA \d\d:\d\d")


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self):
        return True


def test_run_on_a_pseudo_terminal_shows_its_phases_with_an_eta():
    """The reported case in small (an 8,000-point CSV is measured by hand): the tile-low-rank
    factorisation and the sampling draw a bar with an ETA on stderr, before the result."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "onefactor:n=400", "sov-tlr", "--set",
         "factorisation=tlr", "--budget", "10000"],
        stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    seen, deadline = b"", time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:   # the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out = proc.communicate(timeout=60)[0].decode()
    os.close(master)
    err = seen.decode(errors="replace")
    assert proc.returncode == 0, err + out
    assert "log Z estimate" in out and "ETA" not in out   # the result alone on stdout
    for shown in ("building the problem", "set-up › tile-low-rank factorisation",
                  "estimate › sampling", "elapsed"):
        assert shown in err, err
    assert ETA.search(err), err


def test_quiet_or_not_a_terminal_draws_nothing(capsys):
    args = SimpleNamespace(verbosity=QUIET)
    with progress_bars(args, Terminal()) as bars:
        assert bars is None
    with progress_bars(SimpleNamespace(verbosity=NORMAL), io.StringIO()) as bars:
        assert bars is None
    code = main(["run", "linear1d:n_train=10,n_test=3", "laplace", "--budget", "1"])   # no tty
    out, err = capsys.readouterr()
    assert code == 0 and "log Z estimate" in out and err == ""


def test_bars_show_the_open_phases_and_the_eta_of_the_outermost_with_a_total():
    stream = Terminal()
    bars = Bars(stream, tick=60)
    try:
        bars.begin("set-up", None)
        bars.begin("factorisation", 4)
        for _ in range(4):
            time.sleep(0.25)
            bars.advance(1)
            bars.bar.refresh()
        shown = stream.getvalue()
        bars.end("factorisation")
        bars.write("warning: a line above the bar")
        bars.end("set-up")
    finally:
        bars.close()
    assert "set-up › factorisation" in shown and ETA.search(shown), shown
    assert "warning: a line above the bar\n" in stream.getvalue()


def test_a_warning_during_the_bars_is_written_above_them():
    import warnings

    stream = Terminal()
    with progress_bars(SimpleNamespace(verbosity=NORMAL), stream):
        with phase("work", total=2):
            advance()
            warnings.warn("a one-line warning", UserWarning, stacklevel=1)
            advance()
    assert "a one-line warning" in stream.getvalue()


@pytest.mark.parametrize("argv", [["check", "sov", "--quick"], ["list"]])
def test_every_subcommand_takes_quiet_and_verbose(capsys, argv):
    assert main([*argv, "-q"]) == 0
    quiet = capsys.readouterr()
    assert main([*argv, "-v"]) == 0
    assert quiet.err == "" and capsys.readouterr().out
