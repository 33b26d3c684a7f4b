"""Sphinx configuration of the gpc-harness manual.

Build (README, "Development"): `python -m pip install -e ".[docs]"`, then
`python -m sphinx -W --keep-going -b html docs OUTDIR` with OUTDIR outside the checkout.
Nothing here reaches the internet: no intersphinx, the theme's assets are installed with it.
The gallery's scripts (docs/examples/) run at build time; sphinx-gallery writes their pages into
docs/auto_examples/, which .gitignore keeps out of the repository.
"""

from __future__ import annotations

import os

from harness import __version__  # installed: `pip install -e ".[docs]"`

project = "gpc-harness"
author = "the gpc-harness developers"
copyright = "the gpc-harness developers, BSD-3-Clause"   # noqa: A001
release = version = __version__

extensions = [
    "myst_parser",             # the pages are Markdown (docs/*.md)
    "sphinx.ext.autodoc",      # the API reference from the docstrings
    "sphinx.ext.napoleon",     # ... which use numpy-style sections
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",           # the CLI reference from harness.cli.main.build_parser
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/GALLERY_HEADER.rst", "examples/*.py"]
suppress_warnings = [
    "config.cache",    # sphinx-gallery's settings hold a function
    "myst.header",     # reproduction.md's generated tables are #### under ## (as on GitHub)
]

# MyST: GitHub-style anchors, so `design.md#exit-codes` resolves as it does on GitHub
myst_heading_anchors = 4
myst_enable_extensions = ["deflist"]

# autodoc: only the objects the API page names, in source order, no inherited noise
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": False}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
default_role = "code"          # the docstrings write `name` for code, as Markdown does

# The gallery: small scripts, each a few seconds, executed at every build.
os.environ.setdefault("MPLBACKEND", "Agg")
sphinx_gallery_conf = {
    "examples_dirs": ["examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "write_computation_times": False,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
}

html_theme = "furo"
html_title = f"gpc-harness {release}"
html_static_path: list[str] = []
html_show_sourcelink = False


# ---- docstrings: the code writes them as plain text with Markdown habits -------------------
# ("field: text" with a hanging indent, a list right after its sentence, an indented example
# after a colon); these become reStructuredText before napoleon reads the numpy sections.
def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _section_start(lines: list[str]) -> int:
    """Index of the first numpy section (a title underlined with dashes), or len(lines)."""
    for i in range(len(lines) - 1):
        underline = lines[i + 1].strip()
        if lines[i].strip() and len(underline) >= 3 and set(underline) == {"-"}:
            return i
    return len(lines)


def plain_to_rst(lines: list[str]) -> list[str]:
    out: list[str] = []
    in_list = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            out.append(line)
            in_list = False
            i += 1
            continue
        bullet = line.startswith("- ")
        if _indent(line) == 0 and not bullet:
            if in_list and out and out[-1].strip():
                out.append("")
            in_list = False
            j = i + 1
            block = []
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > 0):
                block.append(lines[j])
                j += 1
            while block and not block[-1].strip():
                block.pop()
                j -= 1
            if block:
                if line.rstrip().endswith(":"):        # an example: a literal block
                    head = line.rstrip()
                    out += [head if head.endswith("::") else head + ":", "", *block, ""]
                else:                                   # "field: text" with a hanging indent
                    if out and out[-1].strip() and not in_list:
                        out.append("")
                    out += ["- " + line, *("  " + b.strip() for b in block)]
                    in_list = True
                i = j
                continue
            out.append(line)
        elif bullet:
            if out and out[-1].strip() and not in_list:
                out.append("")
            out.append(line)
            in_list = True
        else:
            out.append(line)
        i += 1
    return out


def _docstring_to_rst(app, what, name, obj, options, lines):
    end = _section_start(lines)
    lines[:end] = plain_to_rst(lines[:end])


def setup(app):
    app.connect("autodoc-process-docstring", _docstring_to_rst, priority=400)
