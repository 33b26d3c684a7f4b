"""What values a method's settings may take, declared once per class (scikit-learn's
`_parameter_constraints` convention: `__init__` only assigns, the class declares the rules).

    class Mine(Method):
        constraints = {"chunk": Integer(minimum=1), "points": OneOf("sobol", "lattice")}

Method.check_settings applies them (after from_settings builds an instance, and again before
every estimate, so a directly constructed instance with a bad value fails early with the same
message). The error's field names the method and the setting, e.g. "method sov: setting
'randomisations': must be an integer >= 1, got 0 (use >= 2 for a standard error)". Rules that
need the budget or the problem size belong in Method.check_job instead.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np


class Constraint(ABC):
    """The allowed values of one setting. `fix` is the hint printed after the problem."""

    fix: str = ""

    @abstractmethod
    def allows(self, value: Any) -> bool:
        """Whether `value` is allowed."""

    @abstractmethod
    def wanted(self) -> str:
        """What the value must be, as the start of an error message ("must be ...")."""

    def problem(self, value: Any) -> str | None:
        """None if `value` is allowed, else the message: what is wanted and what was given."""
        return None if self.allows(value) else f"{self.wanted()}, got {value!r}"

    def allowed(self) -> str:
        """The allowed values as a phrase of their own ("an integer >= 0"), for listings of
        the settings (`list -v`): `wanted` from its "must be" on, without it."""
        before, must, after = self.wanted().partition("must be ")
        return after if must else before


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (numpy's included, bool not) of at least `minimum` (and at most `maximum`),
    or one of the special values `also` (e.g. 0 meaning "automatic"). `says` replaces the
    generated "must be ..." text when the setting's meaning helps the reader."""

    minimum: int | None = None
    maximum: int | None = None
    also: tuple[int, ...] = ()
    says: str = ""
    fix: str = ""

    def allows(self, value: Any) -> bool:
        if not _is_int(value):
            return False
        return value in self.also or ((self.minimum is None or value >= self.minimum)
                                      and (self.maximum is None or value <= self.maximum))

    def wanted(self) -> str:
        if self.says:
            return self.says
        if self.minimum == 1 and self.maximum is None:
            return "must be a positive integer"
        if self.minimum is not None and self.maximum is not None:
            return f"must be an integer in [{self.minimum}, {self.maximum}]"
        if self.minimum is not None:
            return f"must be an integer >= {self.minimum}"
        return "must be an integer" + (f" <= {self.maximum}" if self.maximum is not None else "")


@dataclass(frozen=True)
class Number(Constraint):
    """A finite int or float (bool not) between `low` and `high`; either bound may be left
    out, and `low_open` / `high_open` exclude the bound itself."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    says: str = ""
    fix: str = ""

    def allows(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
                or not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def wanted(self) -> str:
        if self.says:
            return self.says
        if self.high is None and self.low == 0:
            return "must be a positive number" if self.low_open else "must be a number >= 0"
        if self.high is None and self.low is not None:
            return f"must be a number {'>' if self.low_open else '>='} {self.low}"
        if self.low is None and self.high is not None:
            return f"must be a number {'<' if self.high_open else '<='} {self.high}"
        if self.low is None:
            return "must be a finite number"
        return (f"must be a number in {'(' if self.low_open else '['}{self.low}, {self.high}"
                f"{')' if self.high_open else ']'}")


class OneOf(Constraint):
    """One of a fixed set of values (e.g. the names of the point sets)."""

    def __init__(self, *choices: Any, fix: str = ""):
        self.choices = tuple(choices)
        self.fix = fix

    def allows(self, value: Any) -> bool:
        return any(value == c and type(value) is type(c) for c in self.choices)

    def wanted(self) -> str:
        return f"must be one of {self.choices}"

    def allowed(self) -> str:
        return "one of " + ", ".join(c if isinstance(c, str) else repr(c) for c in self.choices)

    def __repr__(self) -> str:
        return f"OneOf{self.choices!r}"


class Boolean(Constraint):
    """True or False (not 1, 0 or "yes")."""

    def allows(self, value: Any) -> bool:
        return isinstance(value, bool | np.bool_)

    def wanted(self) -> str:
        return "must be true or false"

    def __repr__(self) -> str:
        return "Boolean()"
