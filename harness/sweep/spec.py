"""Sweep files (TOML): parsing, complete validation and expansion into problems × methods.

A sweep file (see sweeps/quick.toml)::

    name = "quick"                        # default: the file name without .toml
    description = "..."
    seed = 0                              # the sweep seed (part of every job's key)
    replicates = 3                        # independent runs per problem × method × budget
    time_limit = 60                       # CPU seconds per job, hard (harness.limits); optional
    memory_limit = "8GB"                  # a worker's memory, each job's limit; optional
                                          # (default: the cluster's)
    no_workers_timeout = 300              # seconds without any worker before the sweep gives up
    worker_ttl = 120                      # seconds: a silent worker of the local cluster is
                                          # restarted and its jobs move (harness.sweep.cluster)
    parts = "auto"                        # split each job of a method that can into parts run
    #                                       as separate tasks (harness.split); default 1: no
    budgets = [1000, 10000]               # or a log-spaced range:
    # budgets = { start = 1e3, stop = 1e5, num = 5 }
    every_method = true                   # also run every registered method not listed below
    problems = [
        "onefactor:n=50",                 # family:key=value,...
        "linear1d-p1",                    # a preset (optionally preset:key=value,...)
        "data/my.npz",                    # a file (relative to this file), opened by the workers
        { family = "onefactor", n = [50, 200], seed = [0, 1] },   # tables: lists make a grid
    ]

    [output]                              # optional; relative to this file's folder
    store = "results/quick.sqlite"        # default results/<name>.sqlite (working directory)
    report = "reports/quick"              # default reports/<name> (working directory)

    [methods.rejection-bootstrap]         # a registered method; a list of values is a grid
    count = ["soft", "hard"]              # -> rejection-bootstrap, rejection-bootstrap[count=hard]
    # budgets = [...]                     # this method's own budgets (instead of the sweep's)

    [methods."plugins/mine.py:Mine"]      # a method from a file (path relative to this file):
    budgets = [1000]                      # job keys hold its content hash (harness.plugin_file)

Paths written in the file (problem files, [output] store and report, method files) are
relative to the sweep file's folder, so the same file finds the same store from any working
directory; a problem file's spec (in its jobs' keys) is its absolute path. A method whose class
says `stochastic = False` (the same answer for every seed) runs replicate 0 only.

A method may also be given as an array of tables (`[[methods.NAME]]`), one grid each.
`parts` (an integer, or "auto": from the method, budget and N, harness.split.resolve_parts)
splits the estimate of every job whose method can split (Method.split_budget: the SOV family,
rejection-bootstrap) into independent parts, run as separate Dask tasks and each committed to
the store as it finishes, so a killed client or worker loses at most the parts in flight; the
job's key then holds "parts" (parts = 1, the default, leaves every key and result as before).
`kind = "tune"` with a [tune] table makes every job a hyperparameter-tuning job instead of one
estimate (harness.sweep.tune describes the table); `kind = "reference"` with a [reference] table
computes one reference record per problem instead (harness.sweep.reference_kind).
Everything is checked here, before any job runs: a problem in the file is an InputError that
names the file, the key and the fix (the command line exits with code 2).
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.seeding import MAX_SEED
from harness.spec import names_file, split_spec
from harness.sweep.tune import check_tune, parse_tune

TOP_KEYS = ("name", "description", "seed", "replicates", "time_limit", "memory_limit", "budgets",
            "every_method", "problems", "methods", "output", "kind", "tune", "reference",
            "no_workers_timeout", "worker_ttl", "parts")
OUTPUT_KEYS = ("store", "report", "references")
RANGE_KEYS = ("start", "stop", "num")
PROBLEM_KINDS = ("family", "preset", "file", "spec")
RESERVED_METHOD_KEYS = ("budgets",)
MAX_JOBS = 1_000_000
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

    spec: str                  # canonical spec: the job key's problem and what workers build
    name: str                  # Problem.name (what records and the report call it)
    where: str                 # its place in the sweep file, for messages
    n_train: int
    n_test: int
    summary: dict[str, Any]    # Problem.summary(), truth arrays included (for the store)


@dataclass(frozen=True)
class Sweep:
    """A validated, fully expanded sweep."""

    name: str
    path: str
    text: str
    description: str
    seed: int
    replicates: int
    time_limit: float | None
    problems: tuple[ProblemEntry, ...]
    methods: tuple[MethodInstance, ...]
    store: Path
    report: Path
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    kind: str = "estimate"     # or "tune" (harness.sweep.tune)
    tune: Any = None           # harness.sweep.tune.TuneSettings when kind == "tune"
    memory_limit: int | None = None   # bytes per worker (the file's memory_limit), if given
    no_workers_timeout: float | None = None   # seconds; None: the default (harness.sweep.cluster)
    worker_ttl: float | None = None   # seconds; None: the default (harness.sweep.cluster)
    parts: int | str = 1       # "auto" or a number: split estimates into parts (harness.split)
    reference: Any = None      # harness.sweep.reference_kind.ReferenceSettings (kind "reference")
    references: Path | None = None   # [output] references: folder of exported reference files

    def describe(self) -> dict[str, Any]:
        """Plain summary of the sweep (for the store's metadata)."""
        return {
            "name": self.name, "path": self.path, "description": self.description,
            "seed": self.seed, "replicates": self.replicates, "time_limit": self.time_limit,
            "problems": [{"spec": p.spec, "name": p.name} for p in self.problems],
            "methods": [{"name": m.name, "label": m.label, "settings": m.settings,
                         "budgets": list(m.budgets), "budget_unit": m.budget_unit,
                         **({"file": m.file} if m.file else {})}
                        for m in self.methods],
            "kind": self.kind, **({"tune": self.tune.describe()} if self.tune else {}),
            **({"parts": self.parts} if self.parts != 1 else {}),
        }

    def replicates_of(self, method: MethodInstance) -> int:
        """Replicates of a method's jobs: one for a deterministic method (tuning keeps all)."""
        return self.replicates if method.stochastic or self.tune else 1

    @property
    def deterministic(self) -> list[str]:
        """Labels of the methods that run one replicate only (when replicates > 1)."""
        return [m.label for m in self.methods if self.replicates_of(m) < self.replicates]

    @property
    def n_jobs(self) -> int:
        """Jobs of the file before pairs are left out (incompatible or too large)."""
        per_job = len(self.tune.strategies) if self.tune else 1
        return (len(self.problems) * per_job
                * sum(len(m.budgets) * self.replicates_of(m) for m in self.methods))


# ---- helpers ----------------------------------------------------------------------------------
class _Where:
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


def _unknown_key_fix(key: str, valid, noun: str = "keys") -> str:
    close = difflib.get_close_matches(key, list(valid), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}valid {noun}: {', '.join(valid)}"


def _check_keys(w: _Where, prefix: str, table: dict, valid) -> None:
    for key in table:
        if key not in valid:
            where = f"{prefix}.{key}" if prefix else key
            raise w.error(where, "unknown key", _unknown_key_fix(key, valid))


def _int(w: _Where, key: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not (math.isfinite(value) and value.is_integer())):
        raise w.error(key, f"must be an integer, got {_short(value)}",
                      f"write e.g. {key.split('.')[-1]} = {max(minimum, 0)}")
    if value < minimum:
        raise w.error(key, f"must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise w.error(key, f"must be <= {maximum}, got {value!r}")
    return int(value)


def _seconds(w: _Where, key: str, value: Any, what: str = "seconds",
             example: int = 60) -> float | None:
    """An optional positive, finite number of seconds (None if the key is absent)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise w.error(key, f"must be a positive number of {what}, got {value!r}",
                      f"write e.g. {key} = {example}, or leave it out")
    return float(value)


def _short(value: Any, limit: int = 60) -> str:
    """repr(value), cut to `limit` characters (a message stays one readable line)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _budget(w: _Where, key: str, value: Any) -> int:
    """One budget: a positive integer of at most MAX_BUDGET."""
    from harness.method import check_budget

    try:
        return check_budget(key, _int(w, key, value, minimum=1))
    except InputError as exc:
        raise w.own(key, exc) from None


def _typed(w: _Where, key: str, value: Any, default: Any) -> Any:
    """A TOML value checked against the type of the setting's default."""
    if isinstance(value, dict | list):
        raise w.error(key, f"must be a single value, got {_short(value)}")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise w.error(key, f"must be true or false, got {value!r}")
        return value
    if isinstance(default, int | float):
        from harness.method import check_number

        if isinstance(default, int):
            value = _int(w, key, value, minimum=-(2**63))
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise w.error(key, f"must be a number, got {_short(value)}")
        try:
            return type(default)(check_number(key, value))
        except InputError as exc:
            raise w.own(key, exc) from None
    if isinstance(default, str) and not isinstance(value, str):
        raise w.error(key, f"must be a string, got {value!r}",
                      f'write {key.split(".")[-1]} = "..."')
    return value


def _grid(w: _Where, where: str, table: dict[str, Any], have: int, noun: str
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


def beside(base: Path | None, text: str) -> Path:
    """A path written in a sweep file: relative to the file's folder `base` (None: as given,
    relative to the working directory), normalised (`sweeps/../results` -> `results`)."""
    path = Path(text).expanduser()
    if base is None or path.is_absolute():
        return path
    return Path(os.path.normpath(base / path))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---- budgets ----------------------------------------------------------------------------------
def parse_budgets(w: _Where, key: str, value: Any) -> tuple[int, ...]:
    """A list of positive integers, or {start, stop, num}: num log-spaced integers."""
    if isinstance(value, list):
        if not value:
            raise w.error(key, "is empty", "give at least one budget, e.g. budgets = [10000]")
        budgets = [_budget(w, f"{key}[{i}]", v) for i, v in enumerate(value)]
    elif isinstance(value, dict):
        _check_keys(w, key, value, RANGE_KEYS)
        missing = [k for k in RANGE_KEYS if k not in value]
        if missing:
            raise w.error(key, f"a range needs {', '.join(missing)}",
                          f"write {key} = {{ start = 1e3, stop = 1e5, num = 5 }}")
        start = _budget(w, f"{key}.start", value["start"])
        stop = _budget(w, f"{key}.stop", value["stop"])
        num = _int(w, f"{key}.num", value["num"], minimum=1, maximum=1000)
        if stop < start:
            raise w.error(key, f"stop ({stop}) is smaller than start ({start})")
        budgets = [start] if num == 1 else [int(round(b)) for b in np.geomspace(start, stop, num)]
    else:
        raise w.error(key, f"must be a list of integers or a range table, got {_short(value)}",
                      "write budgets = [1000, 10000] or "
                      "budgets = { start = 1e3, stop = 1e5, num = 3 }")
    return tuple(sorted(set(budgets)))


# ---- problems ---------------------------------------------------------------------------------
def canonical_problem(w: _Where, where: str, head: str, options: dict[str, Any],
                      base: Path | None = None) -> str:
    """The canonical spec string of a problem: head[:k=v,...] with typed, sorted options; a
    file's path made absolute from `base` (the sweep file's folder)."""
    from harness.registry import presets, problem_families

    for k, v in options.items():
        text = _text(v)
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
    typed = {}
    if family is not None:
        defaults = family.defaults()
        defaults.pop("name", None)
        for k, v in options.items():
            if k not in defaults:
                raise w.error(f"{where}.{k}",
                              f"is not a parameter of problem family {family.name!r}",
                              _unknown_key_fix(k, sorted(defaults)))
            if isinstance(v, str):
                from harness.method import coerce_setting
                try:
                    v = coerce_setting(f"{where}.{k}", v, defaults[k])
                except InputError as exc:
                    raise w.rewrap(f"{where}.{k}", exc) from None
            typed[k] = _typed(w, f"{where}.{k}", v, defaults[k])
    else:
        typed = dict(options)
    if not typed:
        return head
    return f"{head}:" + ",".join(f"{k}={_text(typed[k])}" for k in sorted(typed))


def expand_problems(w: _Where, value: Any, base: Path | None = None) -> list[tuple[str, str]]:
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
                from harness.registry import problem_families
                if head not in problem_families():
                    raise w.error(f"{where}.family", f"unknown problem family {head!r}",
                                  _unknown_key_fix(head, list(problem_families())))
            elif kind == "preset":
                from harness.registry import presets
                if head not in presets():
                    raise w.error(f"{where}.preset", f"unknown preset {head!r}",
                                  _unknown_key_fix(head, list(presets())))
            for k, v in params.items():
                if isinstance(v, list) and not v:
                    raise w.error(f"{where}.{k}", "is an empty list", "give at least one value")
                if isinstance(v, dict) or (isinstance(v, list)
                                           and any(isinstance(x, dict | list) for x in v)):
                    raise w.error(f"{where}.{k}", "must be a value or a list of values")
            for combo in _grid(w, where, params, len(out), "problem"):
                out.append((canonical_problem(w, where, head.strip(), combo, base), where))
        else:
            raise w.error(where, f"must be a spec string or a table, got {item!r}",
                          'write "onefactor:n=50" or { family = "onefactor", n = 50 }')
    return out


def incompatible(problem: ProblemEntry, method: MethodInstance) -> str | None:
    """Why this method cannot run on this problem at all (then no job is planned), or None."""
    from harness.registry import get_method

    is_orthant = problem.summary.get("kernel") is None and "kernel" in problem.summary
    if is_orthant and not get_method(method.name).handles_orthant:
        return f"{method.label} needs data and a kernel; {problem.name} is a pure orthant problem"
    return None


def too_large_budgets(problem: ProblemEntry, method: MethodInstance, limit: int | None
                      ) -> dict[int, Any]:
    """{budget: MemoryEstimate} of this pair's jobs that cannot fit `limit` bytes (a worker's
    memory); from the problem's summary (n_train, n_test) only, nothing is built."""
    from harness.footprint import too_large
    from harness.registry import get_method

    if limit is None or "n_train" not in problem.summary:
        return {}
    instance = get_method(method.name)(**method.settings)
    over = {b: too_large(problem.summary, instance, b, limit) for b in method.budgets}
    return {b: est for b, est in over.items() if est is not None}


def memory_refusal(problem: ProblemEntry, method: MethodInstance, limit: int | None) -> str | None:
    """Why some of this pair's jobs are not planned for lack of memory (one line), or None."""
    from harness.footprint import TooLarge

    over = too_large_budgets(problem, method, limit)
    if not over:
        return None
    budgets = sorted(over)
    at = (f"budget {budgets[0]}" if len(budgets) == 1 else
          f"budgets {', '.join(map(str, budgets))}")
    if len(budgets) == len(method.budgets) and len(budgets) > 1:
        at = f"every budget ({budgets[0]} ...)"
    what = f"{method.label} on {problem.name} (N = {problem.n_train:,}) at {at}"
    return str(TooLarge(what, over[budgets[0]], limit, "the workers have {}"))


def check_jobs(w: _Where, problems, methods) -> None:
    """Refuse settings that cannot run some budget on some problem (Method.check_job), now."""
    from harness.registry import get_method

    for m in methods:
        method = get_method(m.name)(**m.settings)
        for p in problems:
            if incompatible(p, m):
                continue  # not planned
            for budget in m.budgets:
                try:
                    method.check_job(budget, p.n_train)
                except InputError as exc:
                    raise w.rewrap(f"methods.{m.name} (budget {budget}, problem {p.name})",
                                   exc) from None


def build_problems(w: _Where, specs: list[tuple[str, str]]) -> tuple[ProblemEntry, ...]:
    """Build every problem once (catching bad values now, not in a worker)."""
    from harness.spec import make_problem

    entries: list[ProblemEntry] = []
    seen_spec: dict[str, str] = {}
    seen_name: dict[str, str] = {}
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
        entries.append(ProblemEntry(spec, problem.name, where, problem.n_train, problem.n_test,
                                    problem.summary()))
    return tuple(entries)


# ---- methods ----------------------------------------------------------------------------------
def _file_method(w: _Where, ref: str, base: Path | None, known) -> tuple[str, type, dict]:
    """A `[methods."path.py:Class"]` table's method: (id, class, MethodFile.spec())."""
    from harness.plugin_file import read_method_file

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


def expand_methods(w: _Where, value: Any, budgets: tuple[int, ...] | None,
                   every_method: bool, base: Path | None = None) -> tuple[MethodInstance, ...]:
    """The methods table -> method instances; a key `path.py:Class` is a method file, its
    path relative to `base` (the sweep file's folder)."""
    from harness.plugin_file import is_file_ref
    from harness.registry import methods

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
            name, classes[name], files[name] = _file_method(w, name, base, known)
        elif name not in known:
            raise w.error(f"methods.{name}", "unknown method", _unknown_key_fix(name, list(known)))
        if isinstance(body, dict):
            tables.append((name, f"methods.{name}", body))
        elif isinstance(body, list) and body and all(isinstance(b, dict) for b in body):
            tables.extend((name, f"methods.{name}[{i}]", b) for i, b in enumerate(body))
        else:
            raise w.error(f"methods.{name}", "must be a table of settings (or an array of tables)",
                          f"write [methods.{name}] and its settings on the lines below")
    if every_method:
        tables.extend((name, f"methods.{name} (every_method)", {})
                      for name in known if name not in value)
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
                              _unknown_key_fix(key, sorted(defaults) + list(RESERVED_METHOD_KEYS)))
            else:
                if isinstance(v, list) and not v:
                    raise w.error(f"{where}.{key}", "is an empty list", "give at least one value")
                values = v if isinstance(v, list) else [v]
                settings_table[key] = [_typed(w, f"{where}.{key}", x, defaults[key])
                                       for x in values]
        if own_budgets is None:
            raise w.error("budgets", "missing", "write budgets = [1000, 10000] (or per method)")
        for combo in _grid(w, where, settings_table, len(instances), "method instance"):
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
                                            cls.stochastic))
    return tuple(instances)


def parse_parts(w: _Where, raw: dict[str, Any], kind: str) -> int | str:
    """The `parts` key: "auto" or an integer >= 1 (default 1: estimates are not split)."""
    parts = raw.get("parts", 1)
    fix = 'write parts = "auto", or a number of parts such as parts = 8 (1: not split)'
    if parts == "auto":
        pass
    elif isinstance(parts, str):
        raise w.error("parts", f'must be "auto" or an integer >= 1, got {parts!r}', fix)
    else:
        parts = _int(w, "parts", parts, minimum=1)
    if parts != 1 and kind != "estimate":
        raise w.error("parts", f"applies to estimate jobs, not to kind = {kind!r}",
                      "remove parts from the file")
    return parts


# ---- the whole file ---------------------------------------------------------------------------
def load_sweep(path: str | Path, *, build: bool = True) -> Sweep:
    """Read, validate and expand a sweep file; any problem raises an InputError."""
    path = Path(path)
    w = _Where(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise w.error("", "sweep file not found", "give the path of a .toml sweep file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise w.error("", f"cannot be read ({exc})") from None
    return parse_sweep(text, str(path), build=build)


def parse_sweep(text: str, path: str = "<sweep>", *, build: bool = True) -> Sweep:
    w = _Where(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise w.error("", f"is not valid TOML ({exc})", "fix the syntax at that line") from None
    except RecursionError:   # tomllib parses nested arrays and tables recursively
        raise w.error("", "nests arrays or tables too deeply to be read",
                      "a sweep file needs at most two levels (a list of tables)") from None
    _check_keys(w, "", raw, TOP_KEYS)
    default_name = Path(path).stem if path != "<sweep>" else "sweep"
    name = raw.get("name", default_name)
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "/\\\0"):
        raise w.error("name", f"must be a non-empty string without slashes, got {_short(name)}")
    if len(name) > 100:   # the default store and report are named after it
        raise w.error("name", f"has {len(name)} characters, more than 100",
                      "use a shorter name (files are named after it)")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise w.error("description", "must be a string")
    seed = _int(w, "seed", raw.get("seed", 0), minimum=0, maximum=MAX_SEED)
    replicates = _int(w, "replicates", raw.get("replicates", 1), minimum=1)
    time_limit = _seconds(w, "time_limit", raw.get("time_limit"), "CPU seconds")
    no_workers_timeout = _seconds(w, "no_workers_timeout", raw.get("no_workers_timeout"),
                                  example=300)
    worker_ttl = _seconds(w, "worker_ttl", raw.get("worker_ttl"), example=120)
    memory_limit = raw.get("memory_limit")
    if memory_limit is not None:
        from harness.footprint import parse_bytes

        try:
            memory_limit = parse_bytes("memory_limit", memory_limit)
        except InputError as exc:
            raise w.rewrap("memory_limit", exc) from None
    every_method = raw.get("every_method", False)
    if not isinstance(every_method, bool):
        raise w.error("every_method", f"must be true or false, got {every_method!r}")
    budgets = parse_budgets(w, "budgets", raw["budgets"]) if "budgets" in raw else None
    output = raw.get("output", {})
    if not isinstance(output, dict):
        raise w.error("output", "must be a table", 'write [output] and store = "..." below it')
    _check_keys(w, "output", output, OUTPUT_KEYS)
    for key in OUTPUT_KEYS:
        if key in output and (not isinstance(output[key], str) or not output[key].strip()):
            raise w.error(f"output.{key}", f"must be a path, got {output[key]!r}")
    base = None if path == "<sweep>" else Path(path).parent
    store = beside(base, output["store"]) if "store" in output else \
        Path(f"results/{name}.sqlite")
    report = beside(base, output["report"]) if "report" in output else Path(f"reports/{name}")
    if "problems" not in raw:
        raise w.error("problems", "missing", 'write problems = ["onefactor:n=50"]')
    specs = expand_problems(w, raw["problems"], base)
    kind, tune = parse_tune(w, raw)
    reference = None
    if kind == "reference":
        from harness.sweep.reference_kind import parse_reference

        reference = parse_reference(w, raw, [s for s, _ in specs])
    elif "reference" in raw or "references" in output:
        raise w.error("reference", 'a [reference] table and [output] references need '
                      'kind = "reference"', 'add kind = "reference" at the top of the file')
    methods = () if reference else expand_methods(w, raw.get("methods"), budgets, every_method,
                                                  base)
    parts = parse_parts(w, raw, kind)
    if build:
        problems = build_problems(w, specs)
    else:
        problems = tuple(ProblemEntry(s, s, where, 0, 0, {}) for s, where in specs)
    sweep = Sweep(name, path, text, description, seed, replicates, time_limit, problems,
                  methods, store, report, raw, kind, tune, memory_limit, no_workers_timeout,
                  worker_ttl, parts=parts, reference=reference,
                  references=beside(base, output["references"]) if "references" in output
                  else None)
    if build:
        check_jobs(w, problems, methods)
        if tune is not None:
            check_tune(w, tune, problems, methods)
    if sweep.n_jobs > MAX_JOBS:
        raise w.error("", f"expands to {sweep.n_jobs} jobs (more than {MAX_JOBS})",
                      "use fewer problems, settings, budgets or replicates")
    return sweep
