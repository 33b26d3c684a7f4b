"""Plugin discovery: methods and problem families, built in or from other packages.

Third-party packages register plugins as entry points, exactly like the built-in ones:

    [project.entry-points."gpc_harness.methods"]
    my-method = "my_package.module:MyMethod"          # a harness.Method subclass
    [project.entry-points."gpc_harness.problems"]
    my-family = "my_package.module:FAMILY"            # a harness.family.ProblemFamily
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points

from harness.errors import InputError
from harness.family import ProblemFamily
from harness.method import Method

METHOD_GROUP = "gpc_harness.methods"
PROBLEM_GROUP = "gpc_harness.problems"

# The built-in plugins, so that the harness works from a source tree whose package
# metadata is not installed; installed entry points add to (and may not replace) these.
_BUILTIN_METHODS = {
    "rejection-bootstrap": "harness.methods.rejection_bootstrap:RejectionBootstrap",
}
_BUILTIN_PROBLEMS = {
    "onefactor": "harness.datasets.onefactor:FAMILY",
    "linear1d": "harness.datasets.linear1d:FAMILY",
    "linear-lowrank": "harness.datasets.linear_lowrank:FAMILY",
}


def _load(target: str):
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _discover(group: str, builtin: dict[str, str]) -> dict[str, object]:
    found = {name: _load(target) for name, target in builtin.items()}
    for ep in entry_points(group=group):
        if ep.name in builtin:
            continue
        found[ep.name] = ep.load()
    return found


@cache
def methods() -> dict[str, type[Method]]:
    """Every registered method class by name."""
    found = _discover(METHOD_GROUP, _BUILTIN_METHODS)
    for name, cls in found.items():
        if not (isinstance(cls, type) and issubclass(cls, Method)) or cls.name != name:
            raise TypeError(f"entry point {name!r} of {METHOD_GROUP} is not a Method named so")
    return dict(sorted(found.items()))


@cache
def problem_families() -> dict[str, ProblemFamily]:
    """Every registered problem family by name."""
    found = _discover(PROBLEM_GROUP, _BUILTIN_PROBLEMS)
    for name, fam in found.items():
        if not isinstance(fam, ProblemFamily) or fam.name != name:
            raise TypeError(f"entry point {name!r} of {PROBLEM_GROUP} is not a ProblemFamily")
    return dict(sorted(found.items()))


def get_method(name: str) -> type[Method]:
    known = methods()
    if name not in known:
        raise InputError("method", f"unknown method {name!r}",
                         f"known methods: {', '.join(known)}")
    return known[name]


def get_family(name: str) -> ProblemFamily:
    known = problem_families()
    if name not in known:
        raise InputError("problem", f"unknown problem family {name!r}",
                         f"known families: {', '.join(known)}; or a path to a .npz/.csv file")
    return known[name]


def presets() -> dict[str, tuple[ProblemFamily, dict]]:
    """Preset name -> (family, parameters)."""
    return {
        preset: (fam, dict(params))
        for fam in problem_families().values()
        for preset, params in fam.presets.items()
    }
