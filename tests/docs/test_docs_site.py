"""The manual's source is whole, without building it (CI builds it: `.ci/run`, with -W).

- every page the table of contents (docs/index.md) names exists, and every page under docs/
  is in it (Sphinx warns about either);
- the relative links of the pages in docs/'s subfolders resolve (tests/docs/test_citations.py
  checks docs/*.md and README.md);
- the gallery's scripts have the title sphinx-gallery needs;
- `pip install -e ".[docs]"` installs the build's packages, `.ci/run` builds with warnings as
  errors outside the checkout, and git ignores what the gallery generates.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from test_readme import broken_links

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GALLERY = DOCS / "examples"
GENERATED = ("auto_examples", "_build")
TOCTREE = re.compile(r"^```\{toctree\}\n(.*?)^```", re.M | re.S)


def toctree_entries(index: Path = DOCS / "index.md") -> list[str]:
    entries = []
    for body in TOCTREE.findall(index.read_text(encoding="utf-8")):
        entries += [line.strip() for line in body.splitlines()
                    if line.strip() and not line.strip().startswith(":")]
    return entries


def source_of(entry: str) -> Path | None:
    """The file a toctree entry is built from (the gallery's index from its header)."""
    if entry == "auto_examples/index":
        return GALLERY / "GALLERY_HEADER.rst"
    for suffix in (".md", ".rst"):
        if (DOCS / (entry + suffix)).is_file():
            return DOCS / (entry + suffix)
    return None


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md")
                  if not set(p.relative_to(DOCS).parts) & set(GENERATED))


def test_toctree_entries():
    entries = toctree_entries()
    assert "getting-started" in entries and "math" in entries and "reference/api" in entries
    assert len(entries) == len(set(entries)), "a page listed twice"


@pytest.mark.parametrize("entry", toctree_entries())
def test_toctree_page_exists(entry):
    assert source_of(entry) is not None, f"docs/index.md lists {entry}, which has no source"


def test_every_page_is_in_the_toctree():
    listed = {source_of(e) for e in toctree_entries()} | {DOCS / "index.md"}
    left_out = [p.relative_to(ROOT).as_posix() for p in pages() if p not in listed]
    assert not left_out, f"pages in no toctree (add them to docs/index.md): {left_out}"


@pytest.mark.parametrize("page", [p.relative_to(DOCS).as_posix() for p in pages()
                                  if p.parent != DOCS])
def test_links_of_the_pages_in_subfolders_resolve(page):
    assert not broken_links(DOCS / page)


def test_gallery_scripts_have_a_title():
    scripts = sorted(GALLERY.glob("plot_*.py"))
    assert len(scripts) >= 3
    for script in scripts:
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
        lines = (doc or "").splitlines()
        assert len(lines) >= 2 and set(lines[1]) == {"="} and len(lines[1]) >= len(lines[0]), (
            f"{script.name}: sphinx-gallery needs a docstring opening with an underlined title")


def test_docs_extra_and_ci():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~\[ ]", req, maxsplit=1)[0] for req in extras["docs"]}
    assert {"sphinx", "myst-parser", "sphinx-gallery", "sphinx-argparse", "furo"} <= names
    assert all(">=" in req for req in extras["docs"]), "every docs requirement has a lower bound"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -e ".[docs]"' in ci or "pip install -e '.[docs]'" in ci
    build = re.search(r"python -m sphinx (.*)", ci)
    assert build and "-W" in build.group(1) and "docs" in build.group(1).split()
    assert "mktemp -d" in ci, "the manual is built outside the checkout"


def test_generated_folders_are_ignored():
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    for folder in GENERATED:
        assert f"docs/{folder}/" in ignored
