"""The search space of a tuning job: log-spaced grids over problem parameters (docs/math.md §12).

A tuning job varies parameters of a problem family (alpha, beta of an RBF problem; the scale
of the linear kernel) on a log scale. `Axis` is one log-spaced grid, `TuneSpace` their tensor
product; `with_params` rewrites a problem spec with other parameter values and `check_space`
refuses, before any work, parameters the problem's family does not have.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

from harness.core.errors import InputError
from harness.model.family import ProblemFamily
from harness.plugins.registry import get_family, presets

FIELD = "tune.parameters"
SPACE_FORM = "write {name: [low, high, num]}, e.g. {beta: [0.1, 100, 13]}"


def _number(field: str, value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise InputError(field, f"{what} must be a number, got {value!r}", SPACE_FORM)
    return float(value)


@dataclass(frozen=True)
class Axis:
    """A log-spaced grid of one parameter: np.geomspace(low, high, num), endpoints included."""

    name: str
    low: float
    high: float
    num: int

    def __post_init__(self):
        field = f"{FIELD}.{self.name}"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise InputError(FIELD, f"parameter name {self.name!r} is not a name", SPACE_FORM)
        low = _number(field, self.low, "low")
        high = _number(field, self.high, "high")
        if not (math.isfinite(low) and math.isfinite(high) and 0 < low < high):
            raise InputError(field, f"needs 0 < low < high (finite), got [{low!r}, {high!r}]",
                             "the grid is log-spaced: both ends must be positive")
        if isinstance(self.num, bool) or not isinstance(self.num, int | np.integer) \
                or self.num < 2:
            raise InputError(field, f"num must be an integer >= 2, got {self.num!r}",
                             "the number of grid points, endpoints included")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "num", int(self.num))

    def grid(self) -> np.ndarray:
        return np.geomspace(self.low, self.high, self.num)

    @property
    def log_step(self) -> float:
        """The grid's spacing in log units (the resolution of a grid search)."""
        return math.log(self.high / self.low) / (self.num - 1)


@dataclass(frozen=True)
class TuneSpace:
    """The tensor product of log-spaced axes (first axis slowest)."""

    axes: tuple[Axis, ...]

    def __post_init__(self):
        axes = tuple(self.axes)
        if not axes or not all(isinstance(a, Axis) for a in axes):
            raise InputError(FIELD, "needs at least one parameter", SPACE_FORM)
        names = [a.name for a in axes]
        if len(set(names)) != len(names):
            raise InputError(FIELD, f"a parameter is given twice: {names}")
        object.__setattr__(self, "axes", axes)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def size(self) -> int:
        return math.prod(a.num for a in self.axes)

    def points(self) -> list[dict[str, float]]:
        """Every grid point as {name: value}, first axis slowest."""
        return [dict(zip(self.names, (float(v) for v in values), strict=True))
                for values in product(*(a.grid() for a in self.axes))]

    def log_bounds(self) -> np.ndarray:
        """(d, 2) array of [log low, log high] per axis: the box of the log-parameters."""
        return np.log([[a.low, a.high] for a in self.axes])

    def to_params(self, log_values: Sequence[float]) -> dict[str, float]:
        """{name: exp(log value)} for a point of the log box."""
        return {a.name: float(np.exp(v)) for a, v in zip(self.axes, log_values, strict=True)}

    def to_log(self, params: Mapping[str, float]) -> np.ndarray:
        return np.log([params[name] for name in self.names])

    @classmethod
    def from_dict(cls, space: Mapping[str, Sequence]) -> TuneSpace:
        """From the plain form {name: [low, high, num], ...} of sweep files and records."""
        if not isinstance(space, Mapping) or not space:
            raise InputError(FIELD, f"must be a non-empty mapping, got {space!r}", SPACE_FORM)
        axes = []
        for name, triple in space.items():
            if isinstance(triple, str) or not isinstance(triple, Sequence) or len(triple) != 3:
                raise InputError(f"{FIELD}.{name}", f"must be [low, high, num], got {triple!r}",
                                 SPACE_FORM)
            axes.append(Axis(str(name), *triple))
        return cls(tuple(axes))

    def to_dict(self) -> dict[str, list]:
        return {a.name: [a.low, a.high, a.num] for a in self.axes}


def _tunable(spec: str) -> tuple[str, ProblemFamily, dict[str, str]]:
    """(head, family, options) of a family or preset spec; files are refused."""
    from harness.plugins.specs import names_file, split_spec

    head, options = split_spec(spec)
    if names_file(head):
        raise InputError("tune", f"problem {spec!r} is a file, which has no tunable family "
                         "parameters", "tune a family or preset spec, e.g. gauss2class:...")
    known = presets()
    family = known[head][0] if head in known else get_family(head)
    return head, family, options


def with_params(spec: str, params: Mapping[str, float]) -> str:
    """The spec with these parameters set (replacing existing ones), keys sorted."""
    head, _, options = _tunable(spec)
    options.update({k: repr(float(v)) for k, v in params.items()})
    if not options:
        return head
    return f"{head}:" + ",".join(f"{k}={options[k]}" for k in sorted(options))


def check_space(spec: str, space: TuneSpace) -> None:
    """InputError when the problem's family has no parameter of this name."""
    _, family, _ = _tunable(spec)
    valid = family.defaults()
    for name in space.names:
        if name not in valid:
            raise InputError(f"{FIELD}.{name}",
                             f"problem {spec!r} (family {family.name}) has no parameter "
                             f"{name!r}", f"its parameters: {', '.join(sorted(valid))}")
        if isinstance(valid[name], bool) or not isinstance(valid[name], float):
            raise InputError(f"{FIELD}.{name}",
                             f"parameter {name!r} of family {family.name} is not continuous "
                             f"(default {valid[name]!r})",
                             "tune positive real parameters such as a kernel's scale")
