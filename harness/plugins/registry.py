"""Plugin discovery: methods and problem families, built in or from other packages.

Third-party packages register plugins as entry points, exactly like the built-in ones:

    [project.entry-points."gpc_harness.methods"]
    my-method = "my_package.module:MyMethod"          # a harness.Method subclass
    [project.entry-points."gpc_harness.problems"]
    my-family = "my_package.module:FAMILY"            # a harness.model.family.ProblemFamily

A plugin is checked when it is loaded (docs/writing-a-method.md lists the contract): one that
cannot be imported or breaks the contract is skipped by `methods()` / `problem_families()`
with a one-line PluginWarning, and asking for it by name is an InputError saying what is wrong.
A peer whose optional packages are not installed (`pip install -e ".[peers]"`: PEERS, EXTRAS) is
left out of `methods()` without a warning, and asking for it by name says which command installs it.
"""

from __future__ import annotations

import importlib
import warnings
from functools import cache
from importlib.metadata import entry_points

from harness.core.errors import InputError
from harness.model.family import ProblemFamily
from harness.model.method import Method
from harness.model.settings import did_you_mean
from harness.plugins.contract import contract_violations

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
    "vecchia-sov": "harness.methods.vecchia_sov:VecchiaSov",
    "vecchia-tilting": "harness.methods.vecchia_tilting:VecchiaTilting",
    "vecchia-sir": "harness.methods.vecchia_sir:VecchiaSir",
}
# Peers: other tools' inference as methods, importable only with an optional extra of the
# harness (pyproject.toml [project.optional-dependencies]); registered as entry points too.
PEERS = {
    "pymc-nuts": "harness.methods.pymc_gp:PymcNuts",
    "pymc-smc": "harness.methods.pymc_gp:PymcSmc",
    "gpytorch-vgp": "harness.methods.gpytorch_vgp:GpytorchVgp",
}
EXTRAS = {"pymc": "peers", "pytensor": "peers", "arviz": "peers", "torch": "peers",
          "gpytorch": "peers", "linear_operator": "peers"}   # optional package -> its extra
_BUILTIN_PROBLEMS = {
    "onefactor": "harness.datasets.onefactor:FAMILY",
    "linear1d": "harness.datasets.linear1d:FAMILY",
    "linear-lowrank": "harness.datasets.linear_lowrank:FAMILY",
    "gauss2class": "harness.datasets.gauss2class:FAMILY",
    "realdata": "harness.datasets.realdata:FAMILY",
    "markov1d": "harness.datasets.markov1d:FAMILY",
}


class PluginWarning(UserWarning):
    """A registered plugin cannot be used: it is skipped, and the message says why."""

    one_line = True   # the CLI prints it as one line (harness.cli)


def _load(target: str):
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _describe(kind: str, name: str, target) -> str:
    """'method plugin 'x' (entry point pkg.mod:Cls of my-dist)', for messages."""
    where = target if isinstance(target, str) else target.value
    dist = getattr(target, "dist", None)
    source = f" of {dist.name}" if dist is not None and getattr(dist, "name", None) else ""
    return f"{kind} plugin {name!r} (entry point {where}{source})"


def _check_family(name: str, fam) -> list[str]:
    if not isinstance(fam, ProblemFamily):
        return [f"{fam!r} is not a harness.model.family.ProblemFamily"]
    if fam.name != name:
        return [f"its name is {fam.name!r}, but it is registered as {name!r}"]
    return []


def _targets(group: str, builtin: dict[str, str]) -> dict[str, object]:
    """name -> import target (built-ins) or entry point (third-party), without importing."""
    found: dict[str, object] = dict(builtin)
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def _resolve(target) -> object:
    return _load(target) if isinstance(target, str) else target.load()


class MissingExtra(InputError):
    """A peer whose optional packages are not installed (not a broken plugin)."""


def _missing_extra(exc: Exception) -> str | None:
    """The extra that provides the package an import failed on, if it is an optional one."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return EXTRAS.get(exc.name.partition(".")[0])
    return None


def _validated(kind: str, name: str, target, check):
    """The plugin object, or InputError naming the plugin and everything wrong with it."""
    try:
        obj = _resolve(target)
    except Exception as exc:  # noqa: BLE001 - any failure to import is the plugin's
        extra = _missing_extra(exc)
        if extra is not None:
            raise MissingExtra(_describe(kind, name, target),
                               f"needs the optional package {exc.name.partition('.')[0]!r}, "
                               "which is not installed",
                               f'pip install -e ".[{extra}]"') from None
        problems = [f"cannot be imported: {type(exc).__name__}: {exc}"]
    else:
        problems = check(name, obj)
        if not problems:
            return obj
    raise InputError(_describe(kind, name, target), "; ".join(problems),
                     "see docs/writing-a-method.md" if kind == "method" else "")


def _every(kind: str, group: str, builtin: dict[str, str], get) -> dict:
    """Every usable plugin by name; each unusable one is skipped with a PluginWarning."""
    found = {}
    for name in sorted(_targets(group, builtin)):
        try:
            found[name] = get(name)
        except MissingExtra:
            continue   # an optional peer not installed: `run` names the command
        except InputError as exc:
            warnings.warn(f"skipped {exc}", PluginWarning, stacklevel=3)
    return found


@cache
def methods() -> dict[str, type[Method]]:
    """Every usable method class by name (imports them all: use get_method for one).

    A plugin that cannot be imported or breaks the contract
    (harness.plugins.contract.contract_violations) is left out with a one-line PluginWarning
    naming it and what is wrong.
    """
    return _every("method", METHOD_GROUP, {**_BUILTIN_METHODS, **PEERS}, get_method)


@cache
def problem_families() -> dict[str, ProblemFamily]:
    """Every usable problem family by name (unusable ones: as in methods())."""
    return _every("problem family", PROBLEM_GROUP, _BUILTIN_PROBLEMS, get_family)


_FROM_FILES: dict[str, type[Method]] = {}   # method id (Class@hash) -> class, this process


def register_file_method(method_id: str, cls: type[Method]) -> None:
    """Make a class loaded from a method file (harness.plugins.method_files) known by its id."""
    _FROM_FILES[method_id] = cls


def file_method(method_id: str) -> type[Method] | None:
    """The class a method id names, if a method file defined it in this process."""
    return _FROM_FILES.get(method_id)


@cache
def get_method(name: str) -> type[Method]:
    """The method class registered as `name` (imports only that plugin), or loaded from a
    method file in this process under its id (harness.plugins.method_files); InputError if there is
    none or it is unusable."""
    known = _targets(METHOD_GROUP, {**_BUILTIN_METHODS, **PEERS})
    if name not in known:
        if (from_file := file_method(name)) is not None:   # a method file's id (Class@hash)
            return from_file
        raise InputError("method", f"unknown method {name!r}",
                         did_you_mean(name, sorted(known), "methods").replace(
                             "valid methods", "known methods"))
    return _validated("method", name, known[name],
                      lambda n, cls: contract_violations(cls, n))


@cache
def get_family(name: str) -> ProblemFamily:
    known = _targets(PROBLEM_GROUP, _BUILTIN_PROBLEMS)
    if name not in known:
        raise InputError("problem", f"unknown problem family or preset {name!r}",
                         did_you_mean(name, sorted(known) + sorted(_preset_names()),
                                      "families and presets").replace("valid", "known")
                         + "; or a path to a .npz/.csv file")
    return _validated("problem family", name, known[name], _check_family)


def clear_cache() -> None:
    """Forget what was discovered (after installing or removing plugins at run time)."""
    for fn in (methods, problem_families, get_method, get_family):
        fn.cache_clear()


def _preset_names() -> list[str]:
    """Every preset's name, for the hint of an unknown family (families that import)."""
    return [preset for fam in problem_families().values() for preset in fam.presets]


def presets() -> dict[str, tuple[ProblemFamily, dict]]:
    """Preset name -> (family, parameters)."""
    return {
        preset: (fam, dict(params))
        for fam in problem_families().values()
        for preset, params in fam.presets.items()
    }
