"""docs/writing-a-method.md, route 1: the example class from the page, saved as one file, is
named `PATH:CLASS` in `run`, `sweep` (command-line filters and a quoted sweep-file key) and the
Python API, as the page says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli.main import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "writing-a-method.md"


@pytest.fixture
def prior_is(tmp_path, monkeypatch):
    """The page's complete example written to prior_is.py in a fresh working directory."""
    code = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1)
    assert "class PriorIS" in code
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "prior_is.py").write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_single_file_route_of_the_docs_works(prior_is, capsys):
    import harness

    text = DOC.read_text(encoding="utf-8")
    assert "### Route 1: a single file" in text
    assert '[methods."plugins/prior_is.py:PriorIS"]' in text
    assert main(["run", "--problem", "linear1d-p1", "--method", "plugins/prior_is.py:PriorIS",
                 "--set", "chunk=100", "--budget", "300"]) == 0
    assert "log Z" in capsys.readouterr().out
    result = harness.estimate("linear1d-p1", "plugins/prior_is.py:PriorIS", 300)
    assert result.status == "ok" and result.method_name == "prior-is"
    sweep = prior_is / "mine.toml"
    sweep.write_text('name = "mine"\nbudgets = [300]\nproblems = ["linear1d-p1"]\n\n'
                     '[methods."plugins/prior_is.py:PriorIS"]\nchunk = 100\n', encoding="utf-8")
    assert main(["sweep", str(sweep), "--check"]) == 0
    assert "mine.toml: valid" in capsys.readouterr().out
    assert main(["sweep", "--problem", "linear1d-p1", "--method", "plugins/prior_is.py:PriorIS",
                 "--method", "sov", "--budget", "1e3,1e4", "--check"]) == 0
