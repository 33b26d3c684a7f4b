"""Problem families: named, parameterised builders of Problems (the 'datasets' plugins)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.model.problem import Problem
from harness.model.settings import check_known, coerce_setting


@dataclass(frozen=True)
class ProblemFamily:
    """A family of problems: build(**params) -> Problem.

    truth: 'exact' (an oracle), 'posterior' (a generating model), or 'none'.
    presets: named parameter sets, e.g. the paper's problems ('linear1d-p3').
    title: optional, a problem's short readable title from its full parameters, for the
    report's headings ('one-factor, N = 100, hard (|d| ∈ [0.95, 0.999], random signs)'); without
    it the report names the family, the size and the parameters that differ from the defaults.
    """

    name: str
    build: Callable[..., Problem]
    summary: str
    truth: str = "none"
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    title: Callable[[Mapping[str, Any]], str] | None = None

    def defaults(self) -> dict[str, Any]:
        # `name` is the problem's display name, set by make(): not a user parameter
        return {
            p.name: p.default
            for p in inspect.signature(self.build).parameters.values()
            if p.default is not inspect.Parameter.empty and p.name != "name"
        }

    def make(self, params: Mapping[str, Any], name: str | None = None) -> Problem:
        """Build a problem from user parameters (strings coerced to the defaults' types)."""
        defaults = self.defaults()
        check_known(params, defaults, f"problem {self.name}", "parameter", "family")
        kwargs = {key: coerce_setting(f"problem {self.name}: parameter {key!r}", value,
                                      defaults[key])
                  for key, value in params.items()}
        return self.build(**kwargs, name=name or canonical_name(self.name, kwargs))


def canonical_name(family: str, params: Mapping[str, Any]) -> str:
    if not params:
        return family
    return f"{family}:" + ",".join(f"{k}={params[k]}" for k in sorted(params))
