"""Drive the command line in this process with a hard time bound (the fuzz suite's harness)."""

from __future__ import annotations

import contextlib
import io
import signal

import pytest

from harness.cli.main import main

CASE_SECONDS = 20        # hard bound per case (a hang fails the test, naming the case)


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so no `except Exception` in the harness keeps it."""


def _alarm(signum, frame):
    raise Hang


def cli(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `python -m harness ARGV`, run in this process; a case
    still running after CASE_SECONDS fails the test."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:   # argparse's --help
                code = exc.code
    except Hang:
        pytest.fail(f"no answer within {CASE_SECONDS} s: {argv}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def assert_clean(argv, code: int, out: str, err: str) -> None:
    """Exit 0, or exit 2 with one `error: ...` line; never a traceback."""
    assert "Traceback" not in err + out, f"{argv}\n{err}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{argv}\n{err}"
    else:
        assert code == 0, f"{argv}: exit {code}\n{out}\n{err}"


def refused(*argv: str) -> str:
    """The one error line of a command that must be refused (exit 2)."""
    code, out, err = cli(*argv)
    assert_clean(argv, code, out, err)
    assert code == 2, (argv, out)
    return err.strip()
