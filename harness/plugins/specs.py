"""Problem specifications: `family:key=value,...`, a preset name, or a path to a problem file."""

from __future__ import annotations

import difflib
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.core.errors import InputError
from harness.model.problem import Problem
from harness.model.settings import Where, as_text, coerce_setting, did_you_mean, typed
from harness.plugins.registry import get_family, presets, problem_families

FILE_SUFFIXES = (".npz", ".csv")


def parse_pairs(text: str, field: str) -> dict[str, str]:
    """'a=1,b=x' -> {'a': '1', 'b': 'x'} with a clear error for malformed pairs."""
    pairs: dict[str, str] = {}
    if not text:
        return pairs
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise InputError(field, f"malformed item {item!r}", "write key=value,key=value")
        if key in pairs:
            raise InputError(field, f"key {key!r} given twice")
        pairs[key] = value
    return pairs


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """'head:k=v,...' -> (head, {k: v}); a bare 'head' has no options."""
    spec = spec.strip()
    if not spec:
        raise InputError("problem", "empty problem spec",
                         "give family:key=value,..., a preset name, or a file path")
    head, _, rest = spec.partition(":")
    return head.strip(), parse_pairs(rest, f"problem {spec!r}")


def names_file(head: str) -> bool:
    """Whether a spec's head is a problem file path rather than a family or preset name."""
    return head.endswith(FILE_SUFFIXES) or bool(Path(head).suffix) or "/" in head


@lru_cache(maxsize=8)
def make_problem(spec: str) -> Problem:
    """Build (and cache, per process) the problem a spec names.

    The build may use at most the memory available now (harness.model.limits.data_ceiling): a
    problem too large for the machine (e.g. onefactor:n=1e9) is an InputError naming the spec
    and the memory, not a process killed by the kernel once it overcommitted. A problem
    without truth gets its reference, when one matches (harness.model.reference_values: beside a
    problem file, or shipped with the package), as a truth of kind 'reference'.
    """
    from harness.model.footprint import available_memory
    from harness.model.limits import data_ceiling, memory_reason

    with data_ceiling(available_memory()):
        try:
            return _build_problem(spec)
        except MemoryError as exc:
            reason = memory_reason(exc).removeprefix("memory: ")
    raise InputError(f"problem {spec}", f"is too large to build: {reason}")


def _build_problem(spec: str) -> Problem:
    from harness.datasets.files import load_problem_file
    from harness.model.reference_values import with_reference

    head, options = split_spec(spec)
    if names_file(head):
        return with_reference(load_problem_file(head, options), head)
    known_presets = presets()
    if head in known_presets:
        family, params = known_presets[head]
        params.update(options)
        name = head if not options else f"{head}:" + ",".join(
            f"{k}={v}" for k, v in sorted(options.items()))
        return with_reference(family.make(params, name=name))
    return with_reference(get_family(head).make(options))


def beside(base: Path | None, text: str) -> Path:
    """A path written in a sweep file: relative to the file's folder `base` (None: as given,
    relative to the working directory), normalised (`sweeps/../results` -> `results`)."""
    path = Path(text).expanduser()
    if base is None or path.is_absolute():
        return path
    return Path(os.path.normpath(base / path))


def canonical_problem(w: Where, where: str, head: str, options: dict[str, Any],
                      base: Path | None = None) -> str:
    """The canonical spec string of a problem: head[:k=v,...] with typed, sorted options; a
    file's path made absolute from `base` (the sweep file's folder)."""
    for k, v in options.items():
        text = as_text(v)
        if any(c in text for c in ",=") or not text.strip():
            raise w.error(f"{where}.{k}", f"value {text!r} cannot be used in a problem spec",
                          "values may not be empty or contain ',' or '='")
    if names_file(head):
        family = None
        if base is not None:
            head = str(beside(base, head).resolve())
    elif head in presets():
        family = presets()[head][0]
    elif head in problem_families():
        family = problem_families()[head]
    else:
        known = list(problem_families()) + list(presets())
        close = difflib.get_close_matches(head, known, n=1)
        raise w.error(where, f"unknown problem family or preset {head!r}",
                      (f"did you mean {close[0]!r}? " if close else "")
                      + f"known: {', '.join(known)}; or a path to a .npz/.csv file")
    values = {}
    if family is not None:
        defaults = family.defaults()
        defaults.pop("name", None)
        for k, v in options.items():
            if k not in defaults:
                raise w.error(f"{where}.{k}",
                              f"is not a parameter of problem family {family.name!r}",
                              did_you_mean(k, sorted(defaults)))
            if isinstance(v, str):
                try:
                    v = coerce_setting(f"{where}.{k}", v, defaults[k])
                except InputError as exc:
                    raise w.own(f"{where}.{k}", exc) from None
            values[k] = typed(w, f"{where}.{k}", v, defaults[k])
    else:
        values = dict(options)
    if not values:
        return head
    return f"{head}:" + ",".join(f"{k}={as_text(values[k])}" for k in sorted(values))
