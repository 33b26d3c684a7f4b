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
    "ess": "harness.methods.ess:EllipticalSlice",
    "hmc": "harness.methods.hmc:HamiltonianMC",
    "emcee": "harness.methods.emcee_baseline:EmceeEnsemble",
    "ep": "harness.methods.ep:ExpectationPropagation",
    "laplace": "harness.methods.laplace:LaplaceApproximation",
    "sov": "harness.methods.sov:Sov",
    "sov-tlr": "harness.methods.sov_tlr:SovTlr",
    "scipy-genz": "harness.methods.scipy_genz:ScipyGenz",
    "sir": "harness.methods.sir:Sir",
    "vb-meanfield": "harness.methods.vb_meanfield:VbMeanfield",
    "minimax-tilting": "harness.methods.minimax_tilting:MinimaxTilting",
}
_BUILTIN_PROBLEMS = {
    "onefactor": "harness.datasets.onefactor:FAMILY",
    "linear1d": "harness.datasets.linear1d:FAMILY",
    "linear-lowrank": "harness.datasets.linear_lowrank:FAMILY",
    "gauss2class": "harness.datasets.gauss2class:FAMILY",
    "realdata": "harness.datasets.realdata:FAMILY",
}


def _load(target: str):
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _check_method(name: str, cls) -> type[Method]:
    if not (isinstance(cls, type) and issubclass(cls, Method)) or cls.name != name:
        raise TypeError(f"entry point {name!r} of {METHOD_GROUP} is not a Method named so")
    return cls


def _check_family(name: str, fam) -> ProblemFamily:
    if not isinstance(fam, ProblemFamily) or fam.name != name:
        raise TypeError(f"entry point {name!r} of {PROBLEM_GROUP} is not a ProblemFamily")
    return fam


def _targets(group: str, builtin: dict[str, str]) -> dict[str, object]:
    """name -> import target (built-ins) or entry point (third-party), without importing."""
    found: dict[str, object] = dict(builtin)
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def _resolve(target) -> object:
    return _load(target) if isinstance(target, str) else target.load()


@cache
def methods() -> dict[str, type[Method]]:
    """Every registered method class by name (imports them all: use get_method for one)."""
    return {name: get_method(name) for name in sorted(_targets(METHOD_GROUP, _BUILTIN_METHODS))}


@cache
def problem_families() -> dict[str, ProblemFamily]:
    """Every registered problem family by name."""
    return {name: get_family(name) for name in sorted(_targets(PROBLEM_GROUP, _BUILTIN_PROBLEMS))}


@cache
def get_method(name: str) -> type[Method]:
    """The method class registered as `name` (imports only that plugin), or loaded from a
    method file in this process under its id (harness.plugin_file)."""
    known = _targets(METHOD_GROUP, _BUILTIN_METHODS)
    if name not in known:
        from harness.plugin_file import loaded
        if (from_file := loaded(name)) is not None:   # a method file's id (Class@hash)
            return from_file
        raise InputError("method", f"unknown method {name!r}",
                         f"known methods: {', '.join(sorted(known))}")
    return _check_method(name, _resolve(known[name]))


@cache
def get_family(name: str) -> ProblemFamily:
    known = _targets(PROBLEM_GROUP, _BUILTIN_PROBLEMS)
    if name not in known:
        raise InputError("problem", f"unknown problem family {name!r}",
                         f"known families: {', '.join(sorted(known))}; "
                         "or a path to a .npz/.csv file")
    return _check_family(name, _resolve(known[name]))


def clear_cache() -> None:
    """Forget what was discovered (after installing or removing plugins at run time)."""
    for fn in (methods, problem_families, get_method, get_family):
        fn.cache_clear()


def presets() -> dict[str, tuple[ProblemFamily, dict]]:
    """Preset name -> (family, parameters)."""
    return {
        preset: (fam, dict(params))
        for fam in problem_families().values()
        for preset, params in fam.presets.items()
    }
