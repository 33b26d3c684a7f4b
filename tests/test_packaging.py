"""Packaging: every package is installed, under the harness namespace only."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_listed_and_mapped_into_harness():
    cfg = _config()
    listed, dirs = set(cfg["packages"]), cfg["package-dir"]
    assert all(name == "harness" or name.startswith("harness.") for name in listed)
    for top, package in (("harness", "harness"), ("methods", "harness.methods"),
                         ("datasets", "harness.datasets")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            name = ".".join([package, *rel.parts])
            assert name in listed, f"{init.parent} is not installed: add {name!r} to packages"
    assert dirs["harness.methods"] == "methods" and dirs["harness.datasets"] == "datasets"


def test_builtin_plugins_are_entry_points():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    from harness.plugins import registry

    assert set(registry._BUILTIN_METHODS) | set(registry.PEERS) == set(meta["gpc_harness.methods"])
    for name, target in registry.PEERS.items():   # the optional peers: the same targets
        assert meta["gpc_harness.methods"][name] == target
    assert set(registry._BUILTIN_PROBLEMS) == set(meta["gpc_harness.problems"])
