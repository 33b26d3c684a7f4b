"""Helpers of the store tests (test_store.py, test_store_integrity.py)."""

from __future__ import annotations


def one_line(capsys) -> str:
    """The command's stderr, which must be one line and no traceback."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err
