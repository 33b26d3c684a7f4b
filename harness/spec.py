"""Problem specifications: `family:key=value,...`, a preset name, or a path to a problem file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from harness.errors import InputError
from harness.problem import Problem
from harness.registry import get_family, presets

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

    The build may use at most the memory available now (harness.limits.data_ceiling): a
    problem too large for the machine (e.g. onefactor:n=1e9) is an InputError naming the spec
    and the memory, not a process killed by the kernel once it overcommitted.
    """
    from harness.footprint import available_memory
    from harness.limits import data_ceiling, memory_reason

    with data_ceiling(available_memory()):
        try:
            return _build_problem(spec)
        except MemoryError as exc:
            reason = memory_reason(exc).removeprefix("memory: ")
    raise InputError(f"problem {spec}", f"is too large to build: {reason}")


def _build_problem(spec: str) -> Problem:
    from harness.datasets.files import load_problem_file

    head, options = split_spec(spec)
    if names_file(head):
        return load_problem_file(head, options)
    known_presets = presets()
    if head in known_presets:
        family, params = known_presets[head]
        params.update(options)
        name = head if not options else f"{head}:" + ",".join(
            f"{k}={v}" for k, v in sorted(options.items()))
        return family.make(params, name=name)
    return get_family(head).make(options)
