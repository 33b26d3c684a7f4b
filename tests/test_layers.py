"""The package's import contract: layers import only downwards, and nothing imports in a circle.

Every import statement counts, at the top of a module or inside a function (a lazy import is
still a dependency). Imports of third-party packages are not checked. The layers, lowest first,
are the folders of harness/ (README "Layout"); the plugin folders methods/ and datasets/ are
installed as harness.methods and harness.datasets and sit in the plugins layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# lowest first; a module may import from its own layer and the layers before it
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("harness.core",)),
    ("model", ("harness.model",)),
    ("plugins", ("harness.plugins", "harness.methods", "harness.datasets")),
    ("execution", ("harness.execution",)),
    ("references", ("harness.references",)),
    ("tuning", ("harness.tuning",)),
    ("sweep", ("harness.sweep",)),
    ("analysis", ("harness.analysis",)),
    ("report", ("harness.report",)),
    ("interface", ("harness.cli", "harness.api", "harness.__main__", "harness")),
]


def package_modules() -> dict[str, Path]:
    """Every module of the installed package, by dotted name (harness.methods <- methods/)."""
    modules = {}
    for folder, package in (("harness", "harness"), ("methods", "harness.methods"),
                            ("datasets", "harness.datasets")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules `name` imports (`from P import m` of a submodule m counts as P.m)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: None if is_package else -1]
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                found.add(sub if sub in modules else source)
    return {m for m in found if m in modules and m != name}


def layer_of(name: str) -> int:
    """The index of the layer holding module `name` (the longest matching prefix)."""
    best, index = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, index = len(prefix), i
    assert index is not None, f"{name} is in no layer: add it to LAYERS"
    return index


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_every_module_is_in_a_layer(graph):
    for name in graph:
        layer_of(name)


def test_no_module_imports_a_higher_layer(graph):
    upward = sorted(f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
                    for a, targets in graph.items() for b in targets
                    if layer_of(b) > layer_of(a))
    assert not upward, "upward imports:\n" + "\n".join(upward)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle(graph):
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_function_level_imports():
    modules = package_modules()
    # harness.cli.run imports the run pipeline inside its command function only
    assert "harness.execution.single" in imports_of(
        "harness.cli.run", modules["harness.cli.run"], modules)


def test_command_modules_never_import_the_command_line_root(graph):
    """harness.cli.main lists the commands; a command module imports only shared helpers
    (harness.cli.args, harness.cli.progress) and the layers below, never main (nor another
    command)."""
    shared = {"harness.cli.args", "harness.cli.progress"}
    commands = [m for m in graph if m.startswith("harness.cli.") and m != "harness.cli.main"
                and m not in shared]
    assert "harness.cli.run" in commands
    for command in commands:
        siblings = {m for m in graph[command] if m.startswith("harness.cli")}
        assert siblings <= shared, f"{command} imports {sorted(siblings)}"
