"""The README's notebook example runs as written (harness.api)."""

from __future__ import annotations

import re
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
    exec(compile(notebook_example(), "README.md", "exec"), namespace)  # noqa: S102
    out = capsys.readouterr().out
    assert "log Z" in out and "(exact " in out
    r, table = namespace["r"], namespace["table"]
    assert r.status == "ok" and namespace["hard"].settings["count"] == "hard"
    assert len(table) == 12 and (table["status"] == "ok").all() and table["mae"].notna().all()
    assert (tmp_path / "linear1d-p1-mae.png").stat().st_size > 10_000
