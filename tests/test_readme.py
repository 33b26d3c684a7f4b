"""The README is short and right: at most 200 lines, the two commands as CI runs them, links that
resolve, no measured counts or timings, and its Python lines run. The notebook example that
moved from it into the manual (docs/guide/python-api.md) runs as written."""

from __future__ import annotations

import re
import socket
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PYTHON_GUIDE = ROOT / "docs" / "guide" / "python-api.md"
MARKER = "<!-- this block is run by tests/test_readme.py"
MAIN_COMMAND = "python -m pip install -e . && python -m harness sweep"
TEST_COMMAND = 'python -m pip install -e ".[test]" && python -m pytest'
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?\s*\)")
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
# a number with a unit of time, or a count of results: what goes stale with every change
MEASURED = re.compile(r"\b\d[\d,.]*\s*(?:s|ms|sec|seconds?|min|minutes?|h|hours?|CPU s)\b"
                      r"|\b\d[\d,]*\s+(?:ok|jobs|passed|tests|unreliable|failed)\b")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading (lower case, punctuation dropped, spaces to dashes)."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,6}\s+(.+)$", FENCE.sub("", markdown), re.M)}


def broken_links(page: Path) -> list[str]:
    """The relative links of a Markdown page that point at no file (or no heading)."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path) if path else page
        if not dest.exists():
            broken.append(f"{target}: no file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(
                dest.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading #{anchor}")
    return broken


def python_block(text: str, after: str = "") -> str:
    found = re.search(r"```python\n(.*?)```", text[text.index(after):] if after else text,
                      re.DOTALL)
    assert found, "no python block"
    return found.group(1)


def test_readme_is_short():
    lines = readme().count("\n")
    assert lines <= 200, f"README.md has {lines} lines; the manual (docs/) holds the rest"


def test_readme_has_the_two_commands():
    text = readme()
    assert MAIN_COMMAND in text and TEST_COMMAND in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci, ".ci/run runs the README's test command"


def test_readme_says_how_to_build_the_manual():
    text = readme()
    assert 'python -m pip install -e ".[docs]"' in text
    assert re.search(r"python -m sphinx -W --keep-going -b html docs \S+", text)


def test_readme_links_resolve():
    assert not broken_links(README), broken_links(README)


def test_readme_names_every_guide():
    text = readme()
    for page in ("docs/getting-started.md", "docs/guide/own-data.md", "docs/writing-a-method.md",
                 "docs/guide/cluster.md", "docs/guide/references.md", "docs/guide/tuning.md",
                 "docs/reference/cli.md", "docs/reference/sweeps.md", "docs/reference/api.md",
                 "docs/math.md", "docs/studies.md"):
        assert f"]({page})" in text, f"the README does not link {page}"


def test_readme_has_no_measured_counts_or_timings():
    prose = FENCE.sub("", readme())
    found = [m.group(0) for m in MEASURED.finditer(prose)]
    assert not found, f"measured numbers go stale; put them in docs/studies.md: {found}"


def test_measured_pattern():
    assert MEASURED.search("ran 303 jobs in 3m25s (303 ok)")
    assert MEASURED.search("under 5.5 minutes") and MEASURED.search("took 12 s")
    assert not MEASURED.search("a five-minute tour, Python ≥ 3.11, docs/math.md §2")


def test_slugs():
    assert slug("Development") == "development"
    assert slug("A five-minute tour: your own data to a verdict") == (
        "a-five-minute-tour-your-own-data-to-a-verdict")
    assert slug("What `run` prints") == "what-run-prints"


@pytest.mark.usefixtures("one_blas_thread")
def test_readme_python_lines_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(python_block(readme()), "README.md", "exec"), {"__name__": "__readme__"})  # noqa: S102
    log_z, se, exact = map(float, capsys.readouterr().out.split())
    assert log_z < 0 and se > 0 and abs(log_z - exact) < 5 * se


@pytest.mark.usefixtures("one_blas_thread")
def test_python_guide_notebook_example_runs(tmp_path, monkeypatch, capsys):
    import matplotlib
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    text = PYTHON_GUIDE.read_text(encoding="utf-8")
    assert MARKER in text, "docs/guide/python-api.md lost its tested notebook example"
    namespace: dict = {"__name__": "__readme__"}
    with socket.socket() as busy, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:   # Dask's default dashboard port taken, as by any other cluster running
            busy.bind(("127.0.0.1", 8787))
            busy.listen()
        except OSError:
            pass   # taken already
        exec(compile(python_block(text, MARKER), str(PYTHON_GUIDE), "exec"), namespace)  # noqa: S102
    said = [str(w.message) for w in caught if "already in use" in str(w.message)]
    assert not said, said   # the snippet asks for a free port: no "Port 8787 is already in use"
    out = capsys.readouterr().out
    assert "log Z" in out and "(exact " in out
    r, table = namespace["r"], namespace["table"]
    assert r.status == "ok" and namespace["hard"].settings["count"] == "hard"
    assert len(table) == 12 and (table["status"] == "ok").all() and table["mae"].notna().all()
    assert (tmp_path / "linear1d-p1-mae.png").stat().st_size > 10_000
