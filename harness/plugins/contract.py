"""The method plugin contract: what a class must declare to be loaded as a method plugin.

Checked without running anything when a plugin is loaded (harness.plugins.registry, method
files, harness.api) and as the first generic check (harness.plugins.check_suite): a concrete
Method subclass with a name, a summary and a budget unit, its capabilities in one `tags`
(harness.model.tags.Tags) and its check settings in one `checks` (CheckSettings), settings
that are keyword arguments of __init__ with defaults, and constraints and one-line help
(`setting_help`) on declared settings only. A class written for the older flat surface
(`exact = False`, `test_budget = 100`, `z_unbiased`) is refused with the line to write
instead, never silently run with defaults.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import numpy as np

from harness.model.constraints import Constraint
from harness.model.method import Method
from harness.model.tags import CheckSettings, Tags

# The flat class attributes of the older surface, and where each one lives now.
_FLAT_TAGS = tuple(f.name for f in fields(Tags))
_FLAT_CHECKS = {"test_budget": "test_budget", "smoke_budget": "smoke_budget",
                "skip_checks": "skip"}


def contract_violations(cls: Any, name: str | None = None) -> list[str]:
    """What `cls` lacks to be a method plugin registered as `name` (empty list: nothing),
    one line each (docs/writing-a-method.md)."""
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        return [f"{cls!r} is not a subclass of harness.model.method.Method"]
    found: list[str] = []
    own = getattr(cls, "name", None)
    if not isinstance(own, str) or not own:
        found.append("no `name` class attribute (a non-empty string)")
    elif name is not None and own != name:
        found.append(f"its `name` is {own!r}, but it is registered as {name!r}")
    for attr in ("summary", "budget_unit"):
        value = getattr(cls, attr, None)
        if not isinstance(value, str) or not value.strip():
            found.append(f"an empty `{attr}` (one line saying what it "
                         f"{'is' if attr == 'summary' else 'counts'})")
    found.extend(_flat_attributes(cls))
    found.extend(_tags_violations(cls.tags))
    found.extend(_checks_violations(cls.checks))
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        found.append(f"abstract methods not implemented: {missing}")
    found.extend(_settings_violations(cls))
    if not found:
        found.extend(_constraints_violations(cls))
        found.extend(_setting_help_violations(cls))
        unknown = [k for k in cls.tags.closer_with if k not in (cls.constraints or {})]
        if unknown:
            found.append(f"`tags.closer_with` names {', '.join(unknown)}, not settings of the "
                         "method (its `constraints`)")
    return found


def _setting_help_violations(cls: type) -> list[str]:
    """The class's own `setting_help` names its settings only, one line of text each (a base
    class's lines may name settings a subclass left out)."""
    lines = vars(cls).get("setting_help", {})
    if not isinstance(lines, Mapping):
        return [f"`setting_help` is {lines!r}, not a mapping of setting -> one line"]
    defaults = cls.setting_defaults()
    return [f"`setting_help` names {key!r}, which is not a setting (an __init__ argument)"
            for key in lines if key not in defaults] + [
        f"`setting_help[{key!r}]` is {line!r}, not one line of text"
        for key, line in lines.items()
        if not isinstance(line, str) or not line.strip() or "\n" in line]


def _constraints_violations(cls: type) -> list[str]:
    """Constraints name declared settings only, and every default is allowed."""
    constraints = cls.constraints
    if not isinstance(constraints, Mapping):
        return [f"`constraints` is {constraints!r}, not a mapping of setting -> Constraint"]
    defaults = cls.setting_defaults()
    found = [f"`constraints` names {key!r}, which is not a setting (an __init__ argument)"
             for key in constraints if key not in defaults]
    for key, constraint in constraints.items():
        if not isinstance(constraint, Constraint):
            found.append(f"`constraints[{key!r}]` is {constraint!r}, not a "
                         "harness.model.constraints.Constraint")
        elif key in defaults and constraint.problem(defaults[key]) is not None:
            found.append(f"the default of setting {key!r} breaks its constraint: "
                         f"{constraint.problem(defaults[key])}")
    return found


def positive_int(value: Any) -> bool:
    """An int (numpy's included, bool not) above zero."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value > 0


def _own_attributes(cls: type):
    """(class, attribute, value) of what the plugin's own classes define (the harness's base
    classes and mixins left out)."""
    for klass in cls.__mro__:
        if klass.__module__.startswith(("harness.model.", "harness.engine.")) or klass is object:
            continue
        for attr, value in vars(klass).items():
            yield klass, attr, value


def _flat_attributes(cls: type) -> list[str]:
    """The older surface's flat declarations, each with the line that replaces it."""
    found = []
    for _klass, attr, value in _own_attributes(cls):
        if attr in _FLAT_TAGS and not callable(value):
            found.append(f"`{attr} = {value!r}` is no longer read: write "
                         f"`tags = Tags({attr}={value!r})` (harness.model.tags.Tags)")
        elif attr in _FLAT_CHECKS:
            found.append(f"`{attr} = {value!r}` is no longer read: write `checks = "
                         f"CheckSettings({_FLAT_CHECKS[attr]}={value!r})` "
                         "(harness.model.tags.CheckSettings)")
        elif attr == "z_unbiased":
            found.append("`z_unbiased` is no longer called: rename the method to "
                         "`unbiased_z` (Method.unbiased_z)")
    return found


def _tags_violations(tags: Any) -> list[str]:
    if not isinstance(tags, Tags):
        return [f"`tags` is {tags!r}, not a harness.model.tags.Tags"]
    found = [f"`tags.{f.name}` is {getattr(tags, f.name)!r}, not True or False"
             for f in fields(tags)
             if f.name != "closer_with" and not isinstance(getattr(tags, f.name), bool)]
    closer = tags.closer_with
    if not (isinstance(closer, tuple) and all(isinstance(k, str) and k for k in closer)):
        found.append(f"`tags.closer_with` is {closer!r}, not a tuple of setting names")
    elif closer and tags.exact:
        found.append("`tags.closer_with` names settings of an exact method: it is for "
                     "approximations (tags.exact False)")
    return found


def _checks_violations(checks: Any) -> list[str]:
    if not isinstance(checks, CheckSettings):
        return [f"`checks` is {checks!r}, not a harness.model.tags.CheckSettings"]
    found = [f"`checks.{attr}` is {getattr(checks, attr)!r}, not a positive integer"
             for attr in ("smoke_budget", "test_budget")
             if not positive_int(getattr(checks, attr))]
    skip = checks.skip
    if not isinstance(skip, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in skip.items()):
        found.append("`checks.skip` must map check names to non-empty reasons")
    return found


def _settings_violations(cls: type) -> list[str]:
    """Settings are named keyword arguments of __init__, each with a default."""
    if cls.__init__ is object.__init__:
        return []  # no settings
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):  # pragma: no cover - a builtin __init__
        return []
    found = []
    no_default = [p.name for p in params if p.default is inspect.Parameter.empty
                  and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if no_default:
        found.append(f"settings without defaults: {', '.join(no_default)} (every argument of "
                     "__init__ is a setting and needs a default)")
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        found.append("__init__ takes *args or **kwargs: list each setting as a keyword "
                     "argument with a default")
    return found
