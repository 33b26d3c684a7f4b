"""A sweep file's problems and methods expanded into grids: lists of values make one problem or
method instance per combination (first key outermost), each checked and built on the client
before any job runs (harness.sweep.spec reads the file)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.errors import InputError
from harness.model.settings import Where, budget, check_keys, did_you_mean, integer, short, typed
from harness.plugins.specs import canonical_problem, split_spec

RANGE_KEYS = ("start", "stop", "num")
PROBLEM_KINDS = ("family", "preset", "file", "spec")
RESERVED_METHOD_KEYS = ("budgets",)
MAX_GRID = 1_000   # problems, and method instances, of one sweep (bundled sweeps: at most 54)


@dataclass(frozen=True)
class MethodInstance:
    """One method with one full set of settings (a point of a settings grid)."""

    name: str                  # registry name
    label: str                 # instance name, e.g. 'rejection-bootstrap[count=hard]'
    settings: dict[str, Any]   # every setting, defaults included (part of the job key)
    budgets: tuple[int, ...]
    budget_unit: str
    file: dict[str, str] | None = None   # a method from a file: MethodFile.spec() (its source)
    stochastic: bool = True    # False: deterministic, one replicate (replicate 0) is enough


@dataclass(frozen=True)
class ProblemEntry:
    """One problem of the sweep, built once on the client to validate it."""

    spec: str                  # canonical spec: what workers build (the key's: see key)
    name: str                  # Problem.name (what records and the report call it)
    where: str                 # its place in the sweep file, for messages
    n_train: int
    n_test: int
    summary: dict[str, Any]    # Problem.summary(), truth arrays included (for the store)
    identity: str = ""         # a user file's Problem.identity: the key's problem instead of
                               # the spec (its content and options, not its path)

    @property
    def key(self) -> str:
        """The problem as job keys hold it: the spec, or a user file's content identity."""
        return self.identity or self.spec


def grid(w: Where, where: str, table: dict[str, Any], have: int, noun: str
          ) -> list[dict[str, Any]]:
    """{'a': [1, 2], 'b': 3} -> [{'a': 1, 'b': 3}, {'a': 2, 'b': 3}] (first key outermost).

    `have` {noun}s are already listed; more than MAX_GRID in all is refused before the grid is
    built (each problem is built on the client to check it, each method instance made)."""
    keys = list(table)
    axes = [table[k] if isinstance(table[k], list) else [table[k]] for k in keys]
    size = math.prod(len(a) for a in axes)
    if have + size > MAX_GRID:
        raise w.error(where, f"makes {have + size:,} {noun}s with those before it, more than "
                      f"a sweep checks and runs ({MAX_GRID:,})",
                      "use shorter lists, or split the sweep into several files")
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*axes)]


# ---- budgets ----------------------------------------------------------------------------------
def parse_budgets(w: Where, key: str, value: Any) -> tuple[int, ...]:
    """A list of positive integers, or {start, stop, num}: num log-spaced integers."""
    if isinstance(value, list):
        if not value:
            raise w.error(key, "is empty", "give at least one budget, e.g. budgets = [10000]")
        budgets = [budget(w, f"{key}[{i}]", v) for i, v in enumerate(value)]
    elif isinstance(value, dict):
        check_keys(w, key, value, RANGE_KEYS)
        missing = [k for k in RANGE_KEYS if k not in value]
        if missing:
            raise w.error(key, f"a range needs {', '.join(missing)}",
                          f"write {key} = {{ start = 1e3, stop = 1e5, num = 5 }}")
        start = budget(w, f"{key}.start", value["start"])
        stop = budget(w, f"{key}.stop", value["stop"])
        num = integer(w, f"{key}.num", value["num"], minimum=1, maximum=1000)
        if stop < start:
            raise w.error(key, f"stop ({stop}) is smaller than start ({start})")
        budgets = [start] if num == 1 else [int(round(b)) for b in np.geomspace(start, stop, num)]
    else:
        raise w.error(key, f"must be a list of integers or a range table, got {short(value)}",
                      "write budgets = [1000, 10000] or "
                      "budgets = { start = 1e3, stop = 1e5, num = 3 }")
    return tuple(sorted(set(budgets)))


# ---- problems ---------------------------------------------------------------------------------


def expand_problems(w: Where, value: Any, base: Path | None = None) -> list[tuple[str, str]]:
    """The `problems` list -> [(canonical spec, where)], grids expanded; file paths relative
    to `base`."""
    if not isinstance(value, list) or not value:
        raise w.error("problems", "must be a non-empty list",
                      'write problems = ["onefactor:n=50", "linear1d-p1"]')
    if len(value) > MAX_GRID:
        raise w.error("problems", f"lists {len(value):,} problems, more than a sweep checks and "
                      f"runs ({MAX_GRID:,})", "split the sweep into several files")
    out: list[tuple[str, str]] = []
    for i, item in enumerate(value):
        where = f"problems[{i}]"
        if isinstance(item, str):
            try:
                head, options = split_spec(item)
            except InputError as exc:
                raise w.rewrap(where, exc) from None
            out.append((canonical_problem(w, where, head, options, base), where))
        elif isinstance(item, dict):
            kinds = [k for k in PROBLEM_KINDS if k in item]
            if len(kinds) != 1:
                raise w.error(where, "a problem table needs exactly one of "
                              + ", ".join(PROBLEM_KINDS),
                              'e.g. { family = "onefactor", n = [50, 200] }')
            kind = kinds[0]
            head = item[kind]
            if not isinstance(head, str) or not head.strip():
                raise w.error(f"{where}.{kind}", f"must be a non-empty string, got {head!r}")
            params = {k: v for k, v in item.items() if k != kind}
            if kind == "spec":
                if params:
                    raise w.error(f"{where}.{sorted(params)[0]}",
                                  "a problem given by 'spec' takes no other keys",
                                  "put the parameters in the spec, or use family = ...")
                try:
                    head, params = split_spec(head)
                except InputError as exc:
                    raise w.rewrap(f"{where}.spec", exc) from None
            elif kind == "family":
                from harness.plugins.registry import problem_families
                if head not in problem_families():
                    raise w.error(f"{where}.family", f"unknown problem family {head!r}",
                                  did_you_mean(head, list(problem_families())))
            elif kind == "preset":
                from harness.plugins.registry import presets
                if head not in presets():
                    raise w.error(f"{where}.preset", f"unknown preset {head!r}",
                                  did_you_mean(head, list(presets())))
            for k, v in params.items():
                if isinstance(v, list) and not v:
                    raise w.error(f"{where}.{k}", "is an empty list", "give at least one value")
                if isinstance(v, dict) or (isinstance(v, list)
                                           and any(isinstance(x, dict | list) for x in v)):
                    raise w.error(f"{where}.{k}", "must be a value or a list of values")
            for combo in grid(w, where, params, len(out), "problem"):
                out.append((canonical_problem(w, where, head.strip(), combo, base), where))
        else:
            raise w.error(where, f"must be a spec string or a table, got {item!r}",
                          'write "onefactor:n=50" or { family = "onefactor", n = 50 }')
    return out


def build_problems(w: Where, specs: list[tuple[str, str]]) -> tuple[ProblemEntry, ...]:
    """Build every problem once (catching bad values now, not in a worker)."""
    from harness.plugins.specs import make_problem

    entries: list[ProblemEntry] = []
    seen_spec: dict[str, str] = {}
    seen_name: dict[str, str] = {}
    seen_identity: dict[str, str] = {}
    for spec, where in specs:
        if spec in seen_spec:
            raise w.error(where, f"problem {spec!r} is listed twice (also at {seen_spec[spec]})",
                          "remove one of them")
        seen_spec[spec] = where
        try:
            problem = make_problem(spec)
        except InputError as exc:
            raise w.rewrap(where, exc) from None
        if problem.name in seen_name:
            raise w.error(where, f"problem {spec!r} has the same name {problem.name!r} as the "
                          f"problem at {seen_name[problem.name]}",
                          "give each problem of a sweep a distinct name")
        seen_name[problem.name] = where
        if problem.identity in seen_identity:
            raise w.error(where, f"problem {spec!r} is the same file content with the same "
                          f"options as the problem at {seen_identity[problem.identity]}, so "
                          "their jobs would be the same", "remove one of them")
        if problem.identity:
            seen_identity[problem.identity] = where
        entries.append(ProblemEntry(keyed_spec(spec, problem), problem.name, where,
                                    problem.n_train, problem.n_test, problem.summary(),
                                    problem.identity))
    return tuple(entries)


def keyed_spec(spec: str, problem) -> str:
    """The spec a job key holds: a user file standardised by default (harness.datasets.files)
    says so, `standardize=true`, so that its jobs never share ids with those stored before the
    default changed (which were of the unstandardised problem); every other spec unchanged."""
    from harness.plugins.specs import split_spec

    if problem.family != "file" or problem.params.get("standardize") is not True:
        return spec
    head, options = split_spec(spec)
    if "standardize" in options:
        return spec
    options["standardize"] = "true"
    return f"{head}:" + ",".join(f"{k}={options[k]}" for k in sorted(options))


# ---- methods ----------------------------------------------------------------------------------
def file_method(w: Where, ref: str, base: Path | None, known) -> tuple[str, type, dict]:
    """A `[methods."path.py:Class"]` table's method: (id, class, MethodFile.spec())."""
    from harness.plugins.method_files import read_method_file

    where = f'methods."{ref}"'
    try:
        file = read_method_file(ref, base)
        cls = file.load()
    except InputError as exc:
        raise w.error(where, str(exc).partition(": ")[2]) from None
    if cls.name in known:
        raise w.error(where, f"its name {cls.name!r} is the name of a registered method",
                      "give the class a `name` of its own (the report tells methods apart by "
                      "name)")
    return file.method_id, cls, file.spec()


def expand_methods(w: Where, value: Any, budgets: tuple[int, ...] | None,
                   every_method: bool, base: Path | None = None) -> tuple[MethodInstance, ...]:
    """The methods table -> method instances; a key `path.py:Class` is a method file, its
    path relative to `base` (the sweep file's folder)."""
    from harness.plugins.method_files import is_file_ref
    from harness.plugins.registry import PEERS, get_method, methods

    known = methods()
    classes: dict[str, type] = dict(known)
    files: dict[str, dict] = {}
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise w.error("methods", "must be a table of methods",
                      "write [methods.rejection-bootstrap] with its settings below")
    if not value and not every_method:
        raise w.error("methods", "no methods given",
                      "add a [methods.NAME] table or every_method = true; "
                      f"registered methods: {', '.join(known)}")
    instances: list[MethodInstance] = []
    seen: dict[str, str] = {}
    tables: list[tuple[str, str, dict]] = []
    for name, body in value.items():
        if is_file_ref(name):
            name, classes[name], files[name] = file_method(w, name, base, known)
        elif name not in known:
            if name in PEERS:   # a peer whose optional packages are missing: how to add them
                try:
                    get_method(name)
                except InputError as exc:
                    raise w.own(f"methods.{name}", exc) from None
            raise w.error(f"methods.{name}", "unknown method", did_you_mean(name, list(known)))
        if isinstance(body, dict):
            tables.append((name, f"methods.{name}", body))
        elif isinstance(body, list) and body and all(isinstance(b, dict) for b in body):
            tables.extend((name, f"methods.{name}[{i}]", b) for i, b in enumerate(body))
        else:
            raise w.error(f"methods.{name}", "must be a table of settings (or an array of tables)",
                          f"write [methods.{name}] and its settings on the lines below")
    if every_method:   # the harness's own methods; a peer (PyMC, GPyTorch) only when named
        tables.extend((name, f"methods.{name} (every_method)", {})
                      for name in known if name not in value and name not in PEERS)
    for name, where, body in tables:
        cls = classes[name]
        defaults = cls.setting_defaults()
        own_budgets = budgets
        settings_table = {}
        for key, v in body.items():
            if key in RESERVED_METHOD_KEYS:
                own_budgets = parse_budgets(w, f"{where}.{key}", v)
            elif key not in defaults:
                raise w.error(f"{where}.{key}", f"is not a setting of method {name!r}",
                              did_you_mean(key, sorted(defaults) + list(RESERVED_METHOD_KEYS)))
            else:
                if isinstance(v, list) and not v:
                    raise w.error(f"{where}.{key}", "is an empty list", "give at least one value")
                values = v if isinstance(v, list) else [v]
                settings_table[key] = [typed(w, f"{where}.{key}", x, defaults[key])
                                       for x in values]
        if own_budgets is None:
            raise w.error("budgets", "missing", "write budgets = [1000, 10000] (or per method)")
        for combo in grid(w, where, settings_table, len(instances), "method instance"):
            try:
                method = cls.from_settings(combo)
            except InputError as exc:
                raise w.rewrap(where, exc) from None
            label = method.label()
            if label in seen:
                raise w.error(where, f"method instance {label!r} appears twice "
                              f"(also from {seen[label]})", "remove the duplicate values")
            seen[label] = where
            instances.append(MethodInstance(name, label, method.get_settings(), own_budgets,
                                            cls.budget_unit, files.get(name),
                                            cls.tags.stochastic))
    return tuple(instances)
