"""Values given by a user, checked once: budgets, integers, seconds, numeric settings.

Every entry point (method settings, problem parameters, sweep files, command-line options,
the notebook API) coerces and bounds its values here, so a value means the same and is
refused with the same message wherever it is given.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

from harness.core.errors import InputError

# The largest budget a job may ask for: at ~10^6-10^7 units per CPU second (SOV at N = 10, the
# cheapest work any method does per unit) 10^9 is already minutes to hours of CPU, and a
# budget beyond it cannot finish (`--budget 9223372036854775807` would run for millennia).
MAX_BUDGET = 10**9
# The largest magnitude of a number given as a setting or a problem parameter: 2^53, beyond
# which a double no longer holds every integer (a value like 9223372036854775807 would be
# silently rounded) and sizes, chunk sizes or scales overflow the arithmetic that uses them.
MAX_MAGNITUDE = 2**53



def check_budget(field: str, budget: int) -> int:
    """`budget` if it is a positive integer a job can run (at most MAX_BUDGET), else an
    InputError naming the limit."""
    if budget <= 0:
        raise InputError(field, f"must be a positive integer, got {budget}")
    if budget > MAX_BUDGET:
        raise InputError(field, f"{_shown(budget)} is more than the largest budget a job can run, "
                         "1e9", "split the work into replicates of a smaller budget")
    return budget


def _shown(number: int | float) -> str:
    """Three significant figures, also for an int too large for a float (10**400)."""
    if isinstance(number, int) and abs(number) >= 10**300:
        return f"{'-' * (number < 0)}{str(abs(number))[0]}e+{len(str(abs(number))) - 1}"
    return f"{number:.3g}"


def check_work(field: str, units: int, what: str, fix: str) -> None:
    """An InputError when a job's work (`units` of `what`, e.g. sampler transitions: the budget
    times what settings multiply it by) is beyond what a job can run, MAX_BUDGET."""
    if units > MAX_BUDGET:
        raise InputError(field, f"{_shown(units)} {what} are more than a job can run, 1e9", fix)


def check_number(field: str, value: int | float) -> int | float:
    """`value` if it is finite with magnitude at most MAX_MAGNITUDE, else an InputError: no
    setting or problem parameter means anything at inf, NaN or beyond 2^53."""
    if not isinstance(value, int) and not math.isfinite(value):   # (an int may be > 1e308)
        raise InputError(field, f"must be a finite number, got {value!r}",
                         "leave it out for the default")
    if abs(value) > MAX_MAGNITUDE:
        raise InputError(field, f"{_shown(value)} is out of range (|value| at most 2^53 = "
                         f"{MAX_MAGNITUDE:.3g})")
    return value


def coerce_setting(field: str, value: Any, default: Any) -> Any:
    """Coerce a (possibly string) setting value to the type of its default; numbers are
    checked by check_number."""
    if not isinstance(value, str) or isinstance(default, str) or default is None:
        if isinstance(default, bool) and not isinstance(value, bool):
            raise InputError(field, f"must be true or false, got {value!r}")
        if isinstance(default, int | float) and not isinstance(default, bool):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(field, f"must be a number, got {value!r}")
            check_number(field, value)
            return type(default)(value) if isinstance(default, float) else value
        return value
    text = value.strip()
    if isinstance(default, bool):
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise InputError(field, f"must be true or false, got {value!r}")
    if not isinstance(default, int | float):
        return text
    try:
        number = float(text)
    except ValueError:
        raise InputError(field, f"must be a number, got {value!r}") from None
    check_number(field, number)
    if isinstance(default, float):
        return number
    if not number.is_integer():
        raise InputError(field, f"must be an integer, got {value!r}")
    try:
        exact = int(text)   # exact where float(text) may round
    except ValueError:   # '1e3'
        exact = int(number)
    return check_number(field, exact)


def parse_int(field: str, text: str, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """An integer written as '100000', '1e5' or ' 7 '; exact (no rounding through a float)."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise InputError(field, f"must be an integer, got {text!r}") from None
        if not math.isfinite(number) or not number.is_integer():
            raise InputError(field, f"must be an integer, got {text!r}") from None
        value = int(number)
    if minimum is not None and value < minimum:
        raise InputError(field, f"must be >= {minimum}, got {text.strip()}")
    if maximum is not None and value > maximum:
        raise InputError(field, f"must be <= {maximum}, got {text.strip()}")
    return value


def parse_seconds(field: str, text: str) -> float:
    """A positive, finite number of seconds from the command line."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise InputError(field, f"must be a positive number of seconds, got {text!r}",
                         f"e.g. {field} 300")
    return value


# ---- values in files (sweep files, problem specs): errors that name the file and the key ----
class Where:
    """Builds InputErrors that name the file and the key."""

    def __init__(self, path: str):
        self.path = path

    def error(self, key: str, problem: str, fix: str = "") -> InputError:
        return InputError(f"{self.path}: {key}" if key else self.path, problem, fix)

    def rewrap(self, key: str, exc: InputError) -> InputError:
        """An InputError from the harness (field: message (fix)) re-attributed to a key."""
        return InputError(f"{self.path}: {key}", str(exc))

    def own(self, key: str, exc: InputError) -> InputError:
        """An InputError raised for `key` (its field) re-attributed to the file's `key`."""
        return InputError(f"{self.path}: {key}", str(exc).removeprefix(f"{exc.field}: "))


def did_you_mean(key: str, valid, noun: str = "keys") -> str:
    """The fix of an unknown name: the closest valid one, and every valid one."""
    close = difflib.get_close_matches(key, list(valid), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}valid {noun}: {', '.join(valid)}"


def check_known(keys, valid, owner: str, what: str, of: str) -> None:
    """An InputError naming the first of `keys` that is not in `valid`, with the closest valid
    one: e.g. "method sov: setting 'randomisatons': is not a setting of this method (did you
    mean 'randomisations'? valid settings: ...)". Used by Method.from_settings and
    ProblemFamily.make, so a method's settings and a family's parameters are refused alike."""
    valid = sorted(valid)
    for key in keys:
        if key not in valid:
            raise InputError(f"{owner}: {what} {key!r}", f"is not a {what} of this {of}",
                             did_you_mean(key, valid, f"{what}s") if valid
                             else f"valid {what}s: none")


def check_keys(w: Where, prefix: str, table: dict, valid) -> None:
    """An InputError naming the first key of `table` that is not in `valid`."""
    for key in table:
        if key not in valid:
            where = f"{prefix}.{key}" if prefix else key
            raise w.error(where, "unknown key", did_you_mean(key, valid))


def integer(w: Where, key: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """A file's integer value (an int, or a float that is one) within the bounds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not (math.isfinite(value) and value.is_integer())):
        raise w.error(key, f"must be an integer, got {short(value)}",
                      f"write e.g. {key.split('.')[-1]} = {max(minimum, 0)}")
    if value < minimum:
        raise w.error(key, f"must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise w.error(key, f"must be <= {maximum}, got {value!r}")
    return int(value)


def seconds(w: Where, key: str, value: Any, what: str = "seconds",
             example: int = 60) -> float | None:
    """An optional positive, finite number of seconds (None if the key is absent)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise w.error(key, f"must be a positive number of {what}, got {value!r}",
                      f"write e.g. {key} = {example}, or leave it out")
    return float(value)


def short(value: Any, limit: int = 60) -> str:
    """repr(value), cut to `limit` characters (a message stays one readable line)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def budget(w: Where, key: str, value: Any) -> int:
    """One budget: a positive integer of at most MAX_BUDGET."""
    try:
        return check_budget(key, integer(w, key, value, minimum=1))
    except InputError as exc:
        raise w.own(key, exc) from None


def typed(w: Where, key: str, value: Any, default: Any) -> Any:
    """A TOML value checked against the type of the setting's default."""
    if isinstance(value, dict | list):
        raise w.error(key, f"must be a single value, got {short(value)}")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise w.error(key, f"must be true or false, got {value!r}")
        return value
    if isinstance(default, int | float):
        if isinstance(default, int):
            value = integer(w, key, value, minimum=-(2**63))
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise w.error(key, f"must be a number, got {short(value)}")
        try:
            return type(default)(check_number(key, value))
        except InputError as exc:
            raise w.own(key, exc) from None
    if isinstance(default, str) and not isinstance(value, str):
        raise w.error(key, f"must be a string, got {value!r}",
                      f'write {key.split(".")[-1]} = "..."')
    return value


def as_text(value: Any) -> str:
    """A value as a problem spec writes it (booleans lower-case, like TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
