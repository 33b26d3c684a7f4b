"""Rules of the code base that a reviewer would otherwise check by hand: method plugins are thin
(at most four classes in a chain, no method module used as a library by another module), module
docstrings explain in at most 40 lines, and no issue number stands in the code (the issue
tracker is not part of the repository, so the number resolves to nothing for a reader)."""

from __future__ import annotations

import ast
import re
from abc import ABC
from pathlib import Path

import pytest
from test_layers import ROOT, imports_of, package_modules

from harness.engine.orthant_method import OrthantMethod
from harness.model.method import Method
from harness.plugins.registry import methods

MAX_CHAIN = 4              # the method, Method and at most two small mixins
MAX_DOCSTRING_LINES = 40
ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+|#\d{1,3}\b(?!\w)", re.IGNORECASE)
CODE_FOLDERS = ("harness", "methods", "datasets", "benchmarks", "tests", "tools")


def python_files(folders=CODE_FOLDERS) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("name", sorted(methods()))
def test_no_method_class_inherits_through_more_than_four_classes(name):
    cls = methods()[name]
    chain = [c for c in cls.__mro__ if c not in (object, ABC)]
    assert len(chain) <= MAX_CHAIN, f"{name}: {[c.__name__ for c in chain]}"
    for base in chain[1:]:   # the rest is the harness's: Method and its mixins
        assert base is Method or base.__module__.startswith(("harness.model.",
                                                              "harness.engine.")), \
            f"{name} inherits {base.__module__}.{base.__qualname__}, a class of a plugin"


def test_every_sov_family_method_is_an_orthant_sampler():
    """The SOV family's methods only pick a combination (harness.engine)."""
    family = {"sov", "sov-tlr", "sir", "minimax-tilting", "vecchia-sov", "vecchia-tilting",
              "vecchia-sir"}
    assert family <= {n for n, c in methods().items() if issubclass(c, OrthantMethod)}


def test_no_method_module_is_imported_by_another_module():
    modules = package_modules()
    used = sorted(f"{name} imports {target}"
                  for name, path in modules.items()
                  for target in imports_of(name, path, modules)
                  if target.startswith("harness.methods.") and target != name)
    assert not used, "method modules used as libraries:\n" + "\n".join(used)


def docstring_lines(path: Path) -> int:
    """Lines of the file the module docstring spans (0 without one)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return 0
    return body[0].end_lineno - body[0].lineno + 1


def test_module_docstrings_are_at_most_40_lines():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in python_files(("harness", "methods",
                                                                        "datasets"))
            if (n := docstring_lines(p)) > MAX_DOCSTRING_LINES]
    assert not long, "module docstrings over 40 lines (studies go to docs/studies.md):\n" \
        + "\n".join(long)


def test_no_issue_numbers_in_the_code():
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()[:90]}"
             for p in python_files()
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if ISSUE_NUMBER.search(line)]
    assert not found, "issue numbers in the code (say what is meant):\n" + "\n".join(found)


def test_the_rules_see_what_they_forbid(tmp_path):
    number, hash_ = "17", "#"      # built, so this file passes its own rule
    assert ISSUE_NUMBER.search("the check of issue " + number)
    assert ISSUE_NUMBER.search("(Issue " + number + ")")
    assert ISSUE_NUMBER.search("see " + hash_ + number)
    assert not ISSUE_NUMBER.search("an issue with 3 parts")
    long = tmp_path / "long.py"
    long.write_text('"""' + "\n" * 41 + '"""\nx = 1\n')
    assert docstring_lines(long) == 42
