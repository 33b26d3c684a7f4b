"""`sweep` filters on the command line (like benchopt's `run -s SOLVER -d DATASET`).

Without a sweep file, --problem SPEC (repeatable), --method NAME (repeatable, each followed
by its own --set KEY=VALUE) and --budget define a sweep (`command_line_sweep`): it is written
as the TOML file a user would write, named `cli` (store results/cli.sqlite, report
reports/cli/, unless --store), and read by harness.sweep.spec.parse_sweep, so it is checked
like a file and its text is kept in the store like a file's.

With a sweep file, the same flags keep only the matching part of its grid (`restrict`): the
problems whose canonical spec or name a --problem gives (a bare family, preset or file path
matches every problem it heads), the method instances whose name or label a --method gives and
whose settings equal every --set given after it, the budgets --budget lists; --replicates N
runs replicates 0 ... N-1. A job's key does not change: it has the same id whether the whole
file or a part of it is run, so the store resumes across filtered and unfiltered runs.

--budget takes a list (`1000,1e4`) or a log-spaced range `START:STOP:NUM` (harness.sweep.grid
.parse_budgets); several --budget options add up.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.model.settings import Where, coerce_setting, did_you_mean
from harness.plugins.specs import canonical_problem, split_spec
from harness.sweep.grid import MethodInstance, ProblemEntry, parse_budgets
from harness.sweep.spec import MAX_JOBS, Sweep, parse_sweep

COMMAND_LINE = "command line"      # the sweep's path in messages and in the store
NAME = "cli"                       # the sweep's name: results/cli.sqlite, reports/cli/
WHERE = Where(COMMAND_LINE)


@dataclass(frozen=True)
class MethodChoice:
    """One --method with the --set options that follow it (values as typed)."""

    name: str
    settings: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name + (f" with --set {', '.join(f'{k}={v}' for k, v in self.settings.items())}"
                            if self.settings else "")


@dataclass(frozen=True)
class Selection:
    """The filter options of `sweep` (empty: the whole file)."""

    problems: tuple[str, ...] = ()
    methods: tuple[MethodChoice, ...] = ()
    budgets: tuple[int, ...] | None = None
    replicates: int | None = None

    @property
    def defines_sweep(self) -> bool:
        """Without a file, --problem or --method make a sweep of their own."""
        return bool(self.problems or self.methods)

    def __bool__(self) -> bool:
        return self.defines_sweep or self.budgets is not None or self.replicates is not None


# ---- --budget ---------------------------------------------------------------------------------
def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise WHERE.error("--budget", f"{text.strip()!r} is not a number",
                              "write e.g. --budget 1000,1e4 or --budget 1e3:1e5:3") from None


def parse_budget_option(texts: list[str]) -> tuple[int, ...]:
    """The budgets of --budget options: lists `1000,1e4` and ranges `START:STOP:NUM` (NUM
    log-spaced budgets), checked by harness.sweep.grid.parse_budgets; sorted, each once."""
    budgets: set[int] = set()
    for text in texts:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise WHERE.error("--budget", f"a range is START:STOP:NUM, got {text!r}",
                                  "e.g. --budget 1e3:1e5:3 for 1000, 10000, 100000")
            value: Any = dict(zip(("start", "stop", "num"), map(_number, parts), strict=True))
        else:
            value = [_number(t) for t in text.split(",") if t.strip()]
        budgets.update(parse_budgets(WHERE, "--budget", value))
    return tuple(sorted(budgets))


# ---- a sweep of the command line alone --------------------------------------------------------
def _toml(value: Any) -> str:
    """A TOML value: booleans, numbers, strings (JSON's string syntax is TOML's basic
    string, DEL escaped), lists of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")


def _typed_settings(choice: MethodChoice) -> dict[str, Any]:
    """--set values typed like the method's defaults; an unknown key names --set."""
    from harness.plugins.method_files import resolve_method

    cls = resolve_method(choice.name, f"{COMMAND_LINE}: --method")
    defaults = cls.setting_defaults()
    out = {}
    for key, value in choice.settings.items():
        if key not in defaults:
            raise WHERE.error(f"--set {key}", f"is not a setting of method {cls.name!r}",
                              did_you_mean(key, sorted(defaults), "settings"))
        out[key] = coerce_setting(f"{COMMAND_LINE}: --set {key}", value, defaults[key])
    return out


def command_line_text(selection: Selection) -> str:
    """The TOML sweep file the options stand for (checked, then kept in the store)."""
    missing = [flag for flag, given in (("--problem", selection.problems),
                                        ("--method", selection.methods),
                                        ("--budget", selection.budgets)) if not given]
    if missing:
        raise WHERE.error(missing[0], "is needed for a sweep without a sweep file",
                          "give --problem SPEC, --method NAME and --budget LIST (each "
                          "repeatable), or a sweep file to run part of it")
    for text in selection.problems:   # errors that name --problem, before the file's own
        head, options = split_spec(text)
        canonical_problem(WHERE, "--problem", head, options, Path.cwd())
    lines = ["# the sweep of a command line (python -m harness sweep --problem ... --method ...)",
             f"name = {_toml(NAME)}", f"replicates = {selection.replicates or 1}",
             f"budgets = {_toml(list(selection.budgets))}",
             f"problems = {_toml(list(selection.problems))}"]
    for choice in selection.methods:   # a method given twice: an array of tables
        twice = sum(c.name == choice.name for c in selection.methods) > 1
        table = f"methods.{_toml(choice.name)}"
        lines += ["", f"[[{table}]]" if twice else f"[{table}]"]
        lines += [f"{_toml(k)} = {_toml(v)}" for k, v in _typed_settings(choice).items()]
    return "\n".join(lines) + "\n"


def command_line_sweep(selection: Selection) -> Sweep:
    """The sweep that --problem, --method (--set), --budget and --replicates define."""
    return parse_sweep(command_line_text(selection), COMMAND_LINE)


# ---- the matching part of a sweep file --------------------------------------------------------
def _problem_matches(text: str, entry: ProblemEntry) -> bool:
    """Whether --problem `text` (a file path relative to the working directory) names the
    file's problem `entry`: its name, its canonical spec (a file's default standardize=true,
    harness.sweep.grid.keyed_spec, left out or given), or a bare family, preset or file that
    heads it."""
    head, options = split_spec(text)
    spec = canonical_problem(WHERE, "--problem", head, options, Path.cwd())
    if text.strip() == entry.name or spec == entry.spec:
        return True
    entry_head, entry_options = split_spec(entry.spec)
    if not options:
        return head == entry.summary.get("family") or spec == entry_head
    if "standardize" in options or entry_options.pop("standardize", None) is None:
        return False
    return spec == f"{entry_head}:" + ",".join(f"{k}={entry_options[k]}"
                                                 for k in sorted(entry_options))


def _method_matches(choice: MethodChoice, method: MethodInstance) -> bool:
    """Whether --method `choice` (a name, a label, or path.py:Class) with its --set values
    names the file's method instance."""
    from harness.plugins.method_files import is_file_ref, read_method_file
    from harness.plugins.registry import get_method

    if is_file_ref(choice.name):
        field = f"{COMMAND_LINE}: --method"
        named = read_method_file(choice.name, None, field).method_id == method.name
    else:
        named = choice.name in (method.name, method.label, method.label.split("[")[0])
    if not named:
        return False
    defaults = get_method(method.name).setting_defaults()
    for key, value in choice.settings.items():
        if key not in defaults:
            raise WHERE.error(f"--set {key}", f"is not a setting of method {choice.name!r}",
                              did_you_mean(key, sorted(defaults), "settings"))
        if coerce_setting(f"{COMMAND_LINE}: --set {key}", value, defaults[key]) \
                != method.settings.get(key):
            return False
    return True


def restrict(sweep: Sweep, selection: Selection) -> Sweep:
    """The part of a sweep file's grid that the filters select (module doc); a filter that
    selects nothing is an InputError naming it, with what the file has."""
    if not selection:
        return sweep
    if sweep.kind == "reference":
        raise WHERE.error("--problem/--method/--budget/--replicates",
                          f"filters apply to estimate and tuning sweeps, not to {sweep.path} "
                          "(kind = \"reference\")", "run the whole file")
    problems = sweep.problems
    if selection.problems:
        for text in selection.problems:
            if not any(_problem_matches(text, p) for p in sweep.problems):
                raise WHERE.error("--problem", f"{text!r} is not a problem of {sweep.path}",
                                  did_you_mean(text, [p.spec for p in sweep.problems],
                                               "problems"))
        problems = tuple(p for p in sweep.problems
                         if any(_problem_matches(t, p) for t in selection.problems))
    methods = sweep.methods
    if selection.methods:
        for choice in selection.methods:
            if not any(_method_matches(choice, m) for m in sweep.methods):
                raise WHERE.error("--method", f"{str(choice)!r} is not a method of {sweep.path}",
                                  did_you_mean(choice.name, [m.label for m in sweep.methods],
                                               "method instances"))
        methods = tuple(m for m in sweep.methods
                        if any(_method_matches(c, m) for c in selection.methods))
    if selection.budgets is not None:
        have = sorted({b for m in methods for b in m.budgets})
        for b in selection.budgets:
            if b not in have:
                raise WHERE.error("--budget", f"{b} is not a budget of the selected methods of "
                                  f"{sweep.path}", f"their budgets: {', '.join(map(str, have))}")
        methods = tuple(dataclasses.replace(m, budgets=tuple(b for b in m.budgets
                                                             if b in selection.budgets))
                        for m in methods)
        methods = tuple(m for m in methods if m.budgets)
    replicates = sweep.replicates if selection.replicates is None else selection.replicates
    part = dataclasses.replace(sweep, problems=problems, methods=methods, replicates=replicates)
    if part.n_jobs > MAX_JOBS:
        raise WHERE.error("--replicates", f"makes {part.n_jobs:,} jobs (more than {MAX_JOBS:,})",
                          "use fewer replicates")
    return part
