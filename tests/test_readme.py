"""The README's notebook example runs as written (harness.api)."""

from __future__ import annotations

import re
import socket
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- this block is run by tests/test_readme.py"


def notebook_example() -> str:
    text = README.read_text(encoding="utf-8")
    assert MARKER in text, "the README lost its tested notebook example"
    found = re.search(r"```python\n(.*?)```", text[text.index(MARKER):], re.DOTALL)
    assert found, "no python block after the marker"
    return found.group(1)


@pytest.mark.usefixtures("one_blas_thread")
def test_readme_notebook_example_runs(tmp_path, monkeypatch, capsys):
    import matplotlib
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    with socket.socket() as busy, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:   # Dask's default dashboard port taken, as by any other cluster running
            busy.bind(("127.0.0.1", 8787))
            busy.listen()
        except OSError:
            pass   # taken already
        exec(compile(notebook_example(), "README.md", "exec"), namespace)  # noqa: S102
    said = [str(w.message) for w in caught if "already in use" in str(w.message)]
    assert not said, said   # the snippet asks for a free port: no "Port 8787 is already in use"
    out = capsys.readouterr().out
    assert "log Z" in out and "(exact " in out
    r, table = namespace["r"], namespace["table"]
    assert r.status == "ok" and namespace["hard"].settings["count"] == "hard"
    assert len(table) == 12 and (table["status"] == "ok").all() and table["mae"].notna().all()
    assert (tmp_path / "linear1d-p1-mae.png").stat().st_size > 10_000
