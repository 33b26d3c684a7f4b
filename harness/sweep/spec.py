"""Sweep files (TOML): parsing, complete validation and expansion into problems × methods.

Every key of a sweep file (see sweeps/quick.toml)::

    name = "quick"               # default: the file name without .toml
    description = "..."
    seed = 0                     # the sweep seed (part of every job's key)
    replicates = 3               # independent runs per problem × method × budget
    time_limit = 60              # optional: CPU seconds per job, hard (harness.model.limits)
    memory_limit = "8GB"         # optional: a worker's memory, each job's limit
    no_workers_timeout = 300     # seconds without any worker before the sweep gives up
    worker_ttl = 120             # seconds before a silent local worker is restarted
    parts = "auto"               # or N: split jobs into parts (default 1: no; below)
    budgets = [1000, 10000]      # or a log-spaced range { start = 1e3, stop = 1e5, num = 5 }
    every_method = true          # also every registered method not listed below (not the peers)
    kind = "tune"                # optional: "tune" with a [tune] table (harness.sweep.tune),
    #                              or "reference" with [reference] (harness.sweep.reference_kind)
    problems = [
        "onefactor:n=50",        # family:key=value,...; a preset (preset:key=value,...)
        "data/my.npz",           # a file (relative to this file), opened by the workers
        { family = "onefactor", n = [50, 200], seed = [0, 1] },   # lists make a grid
    ]
    [output]                     # optional; paths relative to this file's folder
    store = "results/quick.sqlite"   # default results/<name>.sqlite (working directory)
    report = "reports/quick"     # default reports/<name> (working directory)
    [methods.rejection-bootstrap]    # a registered method; a list of values is a grid,
    count = ["soft", "hard"]     #   here rejection-bootstrap, rejection-bootstrap[count=hard]
    budgets = [1000]             # optional: this method's own budgets
    [methods."plugins/mine.py:Mine"] # a file: keys hold its hash (harness.plugins.method_files)

A method may also be given as an array of tables (`[[methods.NAME]]`), one grid each. Paths
written in the file are relative to its folder; a problem file's spec (in its jobs' keys) is
its absolute path. A method with `Tags(stochastic=False)` runs replicate 0 only. `parts` (an
integer, or "auto": harness.execution.parts.resolve_parts) splits the estimate of every job
whose method can split (SplitsEstimates) into independent parts, run as separate Dask tasks
and each stored as it finishes, so a killed client or worker loses at most the parts in
flight; the job's key then holds "parts" (parts = 1 leaves every key as it was).
Everything is checked here, before any job runs: a problem in the file is an InputError that
names the file, the key and the fix (the command line exits with code 2).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import InputError
from harness.core.seeding import MAX_SEED
from harness.model.settings import Where, check_keys, integer, seconds, short
from harness.plugins.specs import beside
from harness.sweep.feasibility import check_jobs
from harness.sweep.grid import (
    MethodInstance,
    ProblemEntry,
    build_problems,
    expand_methods,
    expand_problems,
    parse_budgets,
)
from harness.sweep.tune import check_tune, parse_tune

TOP_KEYS = ("name", "description", "seed", "replicates", "time_limit", "memory_limit", "budgets",
            "every_method", "problems", "methods", "output", "kind", "tune", "reference",
            "no_workers_timeout", "worker_ttl", "parts")
OUTPUT_KEYS = ("store", "report", "references")
MAX_JOBS = 1_000_000
MAX_NESTING = 16   # arrays and tables in arrays and tables: far more than any sweep file needs


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
    # seconds; None: the default (harness.execution.cluster)
    no_workers_timeout: float | None = None
    worker_ttl: float | None = None   # seconds; None: the default (harness.execution.cluster)
    # "auto" or a number: split estimates into parts (harness.execution.parts)
    parts: int | str = 1
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


def parse_parts(w: Where, raw: dict[str, Any], kind: str) -> int | str:
    """The `parts` key: "auto" or an integer >= 1 (default 1: estimates are not split)."""
    parts = raw.get("parts", 1)
    fix = 'write parts = "auto", or a number of parts such as parts = 8 (1: not split)'
    if parts == "auto":
        pass
    elif isinstance(parts, str):
        raise w.error("parts", f'must be "auto" or an integer >= 1, got {parts!r}', fix)
    else:
        parts = integer(w, "parts", parts, minimum=1)
    if parts != 1 and kind != "estimate":
        raise w.error("parts", f"applies to estimate jobs, not to kind = {kind!r}",
                      "remove parts from the file")
    return parts


# ---- the whole file ---------------------------------------------------------------------------
def load_sweep(path: str | Path, *, build: bool = True) -> Sweep:
    """Read, validate and expand a sweep file (module doc).

    Parameters
    ----------
    path : str or Path
        The sweep file (TOML).
    build : bool
        Build every problem and check every job against it (False: check the file alone,
        without building its problems).

    Returns
    -------
    Sweep
        The sweep, its problems and method instances expanded.

    Raises
    ------
    InputError
        For any problem in the file, naming the file, the key and the fix.
    """
    path = Path(path)
    w = Where(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise w.error("", "sweep file not found", "give the path of a .toml sweep file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise w.error("", f"cannot be read ({exc})") from None
    return parse_sweep(text, str(path), build=build)


def nesting(value: Any) -> int:
    """How deeply arrays and tables nest in a parsed TOML value (a scalar: 0), without
    recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth + 1)
            todo.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict)
                                                 else item))
    return deepest


def parse_sweep(text: str, path: str = "<sweep>", *, build: bool = True) -> Sweep:
    """`load_sweep` of a sweep file's text; `path` names it in errors and anchors its
    relative paths ("<sweep>": the working directory)."""
    w = Where(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise w.error("", f"is not valid TOML ({exc})", "fix the syntax at that line") from None
    except RecursionError:   # tomllib parses nested arrays and tables recursively
        raise w.error("", "nests arrays or tables too deeply to be read",
                      "a sweep file needs at most two levels (a list of tables)") from None
    if nesting(raw) > MAX_NESTING:   # whatever the recursion limit (pymc raises it to 10,000)
        raise w.error("", "nests arrays or tables too deeply to be read",
                      "a sweep file needs at most two levels (a list of tables)")
    check_keys(w, "", raw, TOP_KEYS)
    default_name = Path(path).stem if path != "<sweep>" else "sweep"
    name = raw.get("name", default_name)
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "/\\\0"):
        raise w.error("name", f"must be a non-empty string without slashes, got {short(name)}")
    if len(name) > 100:   # the default store and report are named after it
        raise w.error("name", f"has {len(name)} characters, more than 100",
                      "use a shorter name (files are named after it)")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise w.error("description", "must be a string")
    seed = integer(w, "seed", raw.get("seed", 0), minimum=0, maximum=MAX_SEED)
    replicates = integer(w, "replicates", raw.get("replicates", 1), minimum=1)
    time_limit = seconds(w, "time_limit", raw.get("time_limit"), "CPU seconds")
    no_workers_timeout = seconds(w, "no_workers_timeout", raw.get("no_workers_timeout"),
                                  example=300)
    worker_ttl = seconds(w, "worker_ttl", raw.get("worker_ttl"), example=120)
    memory_limit = raw.get("memory_limit")
    if memory_limit is not None:
        from harness.model.footprint import parse_bytes

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
    check_keys(w, "output", output, OUTPUT_KEYS)
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
