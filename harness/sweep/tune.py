"""The `tune` job kind of sweep files: the [tune] table, its checks, and each job's settings.

    kind = "tune"
    [tune]
    parameters = { scale = { start = 0.1, stop = 100, num = 13 } }   # a log grid per parameter
    strategies = ["grid", "explore-exploit", "pseudo-marginal"]      # default: the first two
    explore_budget = 1000      # explore-exploit: budget of the coarse pass (default budget // 10)
    top_k = 3                  # explore-exploit: candidates re-estimated at the full budget
    walkers = 8                # pseudo-marginal (emcee over the log-parameters)
    steps = 200
    burn = 100                 # pseudo-marginal: steps dropped at the start (default steps // 2)

Every problem × method instance × budget × replicate becomes one job per strategy; the job
runs harness.tuning.job.run_tune_job (docs/math.md §12). Checked before any job runs, like the rest
of harness.sweep.spec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from harness.core.errors import InputError
from harness.model.settings import check_keys, did_you_mean, integer

KINDS = ("estimate", "tune", "reference")
STRATEGIES = ("grid", "explore-exploit", "pseudo-marginal")
DEFAULT_STRATEGIES = ("grid", "explore-exploit")
TUNE_KEYS = ("parameters", "strategies", "explore_budget", "top_k", "walkers", "steps", "burn")
AXIS_KEYS = ("start", "stop", "num")
DEFAULTS = {"top_k": 3, "walkers": 8, "steps": 200}
# the settings that change a strategy's result (and so belong in its job key)
STRATEGY_SETTINGS = {
    "grid": (),
    "explore-exploit": ("explore_budget", "top_k"),
    "pseudo-marginal": ("explore_budget", "walkers", "steps", "burn"),
}


@dataclass(frozen=True)
class TuneSettings:
    """A validated [tune] table."""
    space: dict[str, list]          # {name: [low, high, num]} (TuneSpace.to_dict form)
    strategies: tuple[str, ...]
    explore_budget: int | None      # None: budget // 10 of each job
    top_k: int
    walkers: int
    steps: int
    burn: int | None = None         # None: harness.tuning's default (steps // 2)

    def explore_for(self, budget: int) -> int:
        return self.explore_budget if self.explore_budget is not None else max(1, budget // 10)

    def job_tune(self, strategy: str, budget: int) -> dict[str, Any]:
        """The job spec's "tune" field (the shared contract of harness.tuning.job)."""
        return {"space": {k: list(v) for k, v in self.space.items()}, "strategy": strategy,
                "explore_budget": self.explore_for(budget), "top_k": self.top_k,
                "walkers": self.walkers, "steps": self.steps,
                **({"burn": self.burn} if self.burn is not None else {})}

    def key_part(self, strategy: str, budget: int) -> dict[str, Any]:
        """What of the tuning determines this strategy's result (part of the job key)."""
        full = self.job_tune(strategy, budget)
        return {"strategy": strategy, "space": full["space"],
                **{k: full[k] for k in STRATEGY_SETTINGS[strategy] if k in full}}

    def describe(self) -> dict[str, Any]:
        return {"space": self.space, "strategies": list(self.strategies),
                "explore_budget": self.explore_budget, "top_k": self.top_k,
                "walkers": self.walkers, "steps": self.steps, "burn": self.burn}

    @property
    def n_points(self) -> int:
        return math.prod(int(v[2]) for v in self.space.values())


def _number(w, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise w.error(key, f"must be a finite number, got {value!r}", "write e.g. start = 0.1")
    return float(value)


def _at_least(w, key: str, value: Any, minimum: int, fix: str) -> int:
    """An integer setting >= minimum; the error says what to write instead."""
    number = integer(w, key, value, minimum=-(2**63))
    if number < minimum:
        raise w.error(key, f"must be >= {minimum}, got {number}", fix)
    return number


def parse_axis(w, key: str, value: Any) -> list:
    """{start, stop, num} -> [start, stop, num]: a log grid with 0 < start < stop, num >= 2."""
    if not isinstance(value, dict):
        raise w.error(key, f"must be a table {{ start, stop, num }}, got {value!r}",
                      f"write {key.split('.')[-1]} = {{ start = 0.1, stop = 10, num = 9 }}")
    check_keys(w, key, value, AXIS_KEYS)
    missing = [k for k in AXIS_KEYS if k not in value]
    if missing:
        raise w.error(key, f"needs {', '.join(missing)}",
                      f"write {key.split('.')[-1]} = {{ start = 0.1, stop = 10, num = 9 }}")
    start = _number(w, f"{key}.start", value["start"])
    stop = _number(w, f"{key}.stop", value["stop"])
    num = _at_least(w, f"{key}.num", value["num"], 2, "a grid needs both ends: num = 2 or more")
    if not 0 < start < stop:
        raise w.error(key, f"needs 0 < start < stop, got start = {start:g}, stop = {stop:g}",
                      "the grid is log-spaced: give a positive range, smaller value first")
    return [start, stop, num]


def parse_tune(w, raw: dict[str, Any]) -> tuple[str, TuneSettings | None]:
    """The sweep's kind and its [tune] table (None for kind = "estimate")."""
    kind = raw.get("kind", "estimate")
    if kind not in KINDS:
        raise w.error("kind", f"unknown job kind {kind!r}",
                      did_you_mean(str(kind), KINDS, "kinds"))
    table = raw.get("tune")
    if kind == "reference":     # harness.sweep.reference_kind parses its [reference] table
        return kind, None
    if kind == "estimate":
        if table is not None:
            raise w.error("tune", 'a [tune] table needs kind = "tune"',
                          'add kind = "tune" at the top of the file, or remove [tune]')
        return kind, None
    if table is None:
        raise w.error("tune", 'kind = "tune" needs a [tune] table',
                      "add [tune] with parameters = { scale = { start = 0.1, stop = 100, "
                      "num = 13 } }")
    if not isinstance(table, dict):
        raise w.error("tune", "must be a table", "write [tune] and its settings below it")
    check_keys(w, "tune", table, TUNE_KEYS)
    params = table.get("parameters")
    if not isinstance(params, dict) or not params:
        raise w.error("tune.parameters", "missing or empty" if not params else "must be a table",
                      "write parameters = { scale = { start = 0.1, stop = 100, num = 13 } }")
    space = {name: parse_axis(w, f"tune.parameters.{name}", v) for name, v in params.items()}
    strategies = table.get("strategies", list(DEFAULT_STRATEGIES))
    if not isinstance(strategies, list) or not strategies:
        raise w.error("tune.strategies", f"must be a non-empty list, got {strategies!r}",
                      f"write strategies = {list(DEFAULT_STRATEGIES)}".replace("'", '"'))
    for i, s in enumerate(strategies):
        if s not in STRATEGIES:
            raise w.error(f"tune.strategies[{i}]", f"unknown strategy {s!r}",
                          did_you_mean(str(s), STRATEGIES, "strategies"))
    if len(set(strategies)) != len(strategies):
        raise w.error("tune.strategies", "lists a strategy twice", "remove the duplicate")
    explore = table.get("explore_budget")
    if explore is not None:
        explore = _at_least(w, "tune.explore_budget", explore, 1,
                            "a positive budget, or leave it out for budget // 10")
    d = 2 * len(space)      # emcee's minimum (and harness.tuning.job's)
    settings = TuneSettings(
        space=space, strategies=tuple(strategies), explore_budget=explore,
        top_k=_at_least(w, "tune.top_k", table.get("top_k", DEFAULTS["top_k"]), 1,
                        "re-estimate at least the best point: top_k = 1 or more"),
        walkers=_at_least(w, "tune.walkers", table.get("walkers", DEFAULTS["walkers"]), d,
                          f"emcee needs twice as many walkers as parameters: {d}"),
        steps=_at_least(w, "tune.steps", table.get("steps", DEFAULTS["steps"]), 2,
                        "write e.g. steps = 200"))
    if "burn" in table:
        burn = _at_least(w, "tune.burn", table["burn"], 0, "write e.g. burn = 100")
        if burn >= settings.steps:
            raise w.error("tune.burn", f"is {burn}, not less than steps ({settings.steps})",
                          "keep some steps after the burn-in, e.g. burn = steps // 2")
        settings = replace(settings, burn=burn)
    if "explore-exploit" in settings.strategies:
        if settings.top_k > settings.n_points:
            raise w.error("tune.top_k", f"is {settings.top_k} but the grid has only "
                          f"{settings.n_points} points", f"use top_k <= {settings.n_points}")
    return kind, settings


def check_tune(w, tune: TuneSettings, problems, methods) -> None:
    """Checks that need the built problems and methods: every parameter is tunable on every
    problem; pseudo-marginal needs an unbiased Ẑ; each explore budget can run (check_job)."""
    from harness.plugins.registry import get_method
    from harness.sweep.feasibility import incompatible
    from harness.tuning.space import TuneSpace, check_space

    space = TuneSpace.from_dict(tune.space)
    for p in problems:
        try:
            check_space(p.spec, space)
        except InputError as exc:   # names tune.parameters.<name>, the problem and the fix
            raise InputError(w.path, str(exc)) from None
    for m in methods:
        method = get_method(m.name)(**m.settings)
        if "pseudo-marginal" in tune.strategies and not method.unbiased_z():
            raise w.error("tune.strategies", f"pseudo-marginal needs an unbiased estimate of Z, "
                          f"which method {m.label!r} does not give (Method.unbiased_z)",
                          "remove that method, change its settings, or drop pseudo-marginal")
        if not {"explore-exploit", "pseudo-marginal"} & set(tune.strategies):
            continue   # only these run the explore pass (pseudo-marginal: to start its chain)
        for budget in m.budgets:
            explore = tune.explore_for(budget)
            if explore > budget:
                raise w.error("tune.explore_budget", f"is {explore}, more than the budget "
                              f"{budget} of {m.label}",
                              "the explore pass must be cheaper than the exploit pass")
            for p in problems:
                if incompatible(p, m):
                    continue
                try:
                    method.check_job(explore, p.n_train)
                except InputError as exc:
                    raise w.rewrap(f"tune.explore_budget (method {m.label}, budget {explore}, "
                                   f"problem {p.name})", exc) from None
