"""The `reference` job kind of sweep files: one reference record per problem
(harness.references.compute).

    kind = "reference"
    problems = ["gauss-p1", "crabs"]
    seed = 0
    [reference]                 # the options of `python -m harness reference`
    method = "minimax-tilting"  # an unbiased method (default minimax-tilting)
    settings = {}               # its settings
    budget = 1e9                # largest total budget (default 1e7)
    round_budget = 8e4          # the first round's budget (default budget / 16)
    parts_per_round = 8
    target_se = 0.01            # log Z SE target, nats
    target_test_se = 1e-4       # every test probability's SE target
    max_cpu = 150               # CPU seconds of the reference method (optional)
    check_method = "auto"       # "auto", a method name, or "none"
    check_settings = {}         # its settings, e.g. { proposal = "tilted" } for sir
    [reference.problems.gauss-p6]   # per-problem overrides of the keys above
    max_cpu = 700
    [output]
    store = "references.sqlite"
    references = "references/"  # one exported JSON file per problem

Each problem's reference is computed on the sweep's cluster, stored in the store's references
table as soon as it is done and exported; a problem whose stored reference has the same key
(problem, method, settings, part budget, seed), targets, parts per round and check method (with
its settings) is skipped, so a rerun after a kill computes only what is missing. Each reference
has a status (harness.references.compute.reference_status: unreliable when a check failed,
timeout when a target was not reached); the last line counts those not ok, with their reasons,
and `sweep --strict` exits 1 for them (the records are stored either way).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core.errors import InputError
from harness.model.settings import budget, check_keys

REFERENCE_KEYS = ("method", "settings", "budget", "round_budget", "parts_per_round",
                  "target_se", "target_test_se", "max_cpu", "check_method", "check_settings",
                  "problems")
# keys of an estimate sweep that mean nothing to a reference sweep
NOT_FOR_REFERENCE = ("methods", "budgets", "replicates", "every_method", "time_limit", "tune")


@dataclass(frozen=True)
class ReferenceSettings:
    """A validated [reference] table (one problem's view of it: overrides applied)."""
    method: str = "minimax-tilting"
    settings: dict[str, Any] = field(default_factory=dict)
    budget: int = 10**7
    round_budget: int | None = None
    parts_per_round: int = 8
    target_se: float = 0.01
    target_test_se: float = 1e-4
    max_cpu: float | None = None
    check_method: str | None = "auto"
    check_settings: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)

    def for_problem(self, spec: str) -> ReferenceSettings:
        return replace(self, **self.overrides.get(spec, {}))

    def arguments(self) -> dict[str, Any]:
        """compute_reference's keyword arguments (bar the problem, client and seed)."""
        return {"method": self.method, "settings": dict(self.settings),
                "max_budget": self.budget, "budget_per_round": self.round_budget,
                "parts_per_round": self.parts_per_round, "target_se": self.target_se,
                "target_test_se": self.target_test_se, "max_cpu_seconds": self.max_cpu,
                "check_method": self.check_method, "check_settings": dict(self.check_settings)}

    def describe(self) -> dict[str, Any]:
        return {**self.arguments(), "overrides": self.overrides}


def _positive(w, key: str, value: Any, integer: bool) -> float | int:
    if integer:
        return budget(w, key, value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise w.error(key, f"must be a positive number, got {value!r}",
                      f"write e.g. {key.split('.')[-1]} = 0.01")
    return float(value)


def _values(w, where: str, table: dict[str, Any], allowed) -> dict[str, Any]:
    """The [reference] keys of `table` (typed, checked), by ReferenceSettings field."""
    check_keys(w, where, table, allowed)
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{where}.{key}"
        if key == "problems":
            continue
        if key in ("method", "check_method"):
            if not isinstance(value, str) or not value.strip():
                raise w.error(name, f"must be a method name, got {value!r}",
                              f'write e.g. {key} = "sir"')
            out[key] = None if value == "none" else value
        elif key in ("settings", "check_settings"):
            if not isinstance(value, dict):
                raise w.error(name, "must be a table", f'write {key} = {{ count = "hard" }}')
            out[key] = dict(value)
        elif key in ("budget", "round_budget", "parts_per_round"):
            out[key] = _positive(w, name, value, integer=True)
        else:
            out[key] = _positive(w, name, value, integer=False)
    return out


def parse_reference(w, raw: dict[str, Any], problem_specs: list[str]) -> ReferenceSettings:
    """The [reference] table of a kind = "reference" sweep; every mistake names its key."""
    from harness.references.compute import resolved_check_method, unbiased_method

    for key in NOT_FOR_REFERENCE:
        if key in raw:
            raise w.error(key, 'does not apply to kind = "reference"',
                          "put the method and budget in the [reference] table")
    table = raw.get("reference")
    if table is None:
        raise w.error("reference", 'kind = "reference" needs a [reference] table',
                      'add [reference] with method = "minimax-tilting" and budget = 1e7')
    if not isinstance(table, dict):
        raise w.error("reference", "must be a table", "write [reference] and its keys below it")
    base = _values(w, "reference", table, REFERENCE_KEYS)
    per_problem = table.get("problems", {})
    if not isinstance(per_problem, dict):
        raise w.error("reference.problems", "must be a table of per-problem overrides",
                      "write [reference.problems.NAME] and e.g. max_cpu = 700 below it")
    overrides = {}
    for spec, sub in per_problem.items():
        where = f"reference.problems.{spec}"
        if spec not in problem_specs:
            raise w.error(where, f"names no problem of the sweep ({', '.join(problem_specs)})",
                          "use a problem as written in `problems`")
        if not isinstance(sub, dict):
            raise w.error(where, "must be a table", "write e.g. max_cpu = 700 below it")
        overrides[spec] = _values(w, where, sub, REFERENCE_KEYS[:-1])
    settings = ReferenceSettings(**base, overrides=overrides)
    for spec in [None, *overrides]:
        s = settings if spec is None else settings.for_problem(spec)
        where = "reference" if spec is None else f"reference.problems.{spec}"
        try:
            ref = unbiased_method(s.method, s.settings, f"{where}.method")
        except InputError as exc:   # naming the method or a setting
            raise w.own(f"{where}.method", exc) from None
        check = resolved_check_method(ref.name, s.check_method)
        if check is None and s.check_settings:
            raise w.error(f"{where}.check_settings", "there is no check method "
                          '(check_method = "none")', "drop check_settings, or name a method")
        if check is not None:
            try:
                unbiased_method(check, s.check_settings, f"{where}.check_method")
            except InputError as exc:
                raise w.own(f"{where}.check_settings", exc) from None
    return settings


def expected_record(spec: str, s: ReferenceSettings, seed: int) -> dict[str, Any]:
    """What a stored record must hold to be this problem's reference (without computing)."""
    from harness.references.compute import (
        canonical_spec,
        first_round_budget,
        part_budget_for,
        reference_key,
        resolved_check_method,
        unbiased_method,
    )

    ref = unbiased_method(s.method, s.settings)
    part = part_budget_for(ref, first_round_budget(s.budget, s.parts_per_round, s.round_budget),
                           s.parts_per_round)
    check = resolved_check_method(ref.name, s.check_method)
    return {"key": reference_key(canonical_spec(spec), ref, part, seed),
            "targets": {"log_marginal_likelihood_se": s.target_se,
                        "test_probabilities_se": s.target_test_se,
                        "max_budget": int(s.budget), "max_cpu_seconds": s.max_cpu},
            "parts_per_round": s.parts_per_round, "check": check,
            "check_settings": (None if check is None
                               else unbiased_method(check, s.check_settings).get_settings())}


def is_stored(record: dict[str, Any] | None, expected: dict[str, Any]) -> bool:
    if record is None:
        return False
    run = record.get("check_run") or {}
    return (record.get("key") == expected["key"] and record.get("targets") == expected["targets"]
            and record.get("parts_per_round") == expected["parts_per_round"]
            and run.get("method_name") == expected["check"]
            and (expected["check"] is None or run.get("settings") == expected["check_settings"]))


def stored_references(store_path: Path) -> dict[str, dict[str, Any]]:
    """The references stored at `store_path`, read-only ({} when there is no store yet)."""
    from harness.execution.store import ResultStore, store_file

    if store_file(store_path) is None:
        return {}
    with ResultStore(store_path, read_only=True) as st:
        return st.references()


def plan_lines(sweep, store: Path) -> list[str]:
    """`sweep --check` of a reference sweep: each problem's settings and whether it is done."""
    stored = stored_references(store)
    lines = []
    for p in sweep.problems:
        s = sweep.reference.for_problem(p.spec)
        done = is_stored(stored.get(p.name), expected_record(p.spec, s, sweep.seed))
        cpu = "" if s.max_cpu is None else f", max CPU {s.max_cpu:g} s"
        check = s.check_method or "no"
        lines.append(f"  {'done' if done else 'to run'}  {p.spec} (N={p.n_train}, {p.n_test} "
                     f"test points): {s.method} budget {s.budget:,}, targets SE "
                     f"{s.target_se:g} / {s.target_test_se:g}{cpu}, {check} check")
    n_done = sum(line.startswith("  done") for line in lines)
    return [f"{len(lines)} reference(s): {n_done} done, {len(lines) - n_done} to run"
            + ("" if store.exists() else " (no store there yet)"), *lines,
            f"  store {store}"
            + (f", references exported to {sweep.references}" if sweep.references else "")]


def run_reference_sweep(sweep, store: Path, client=None, out=print) -> list[str]:
    """Compute, store and export every missing reference of the sweep (module doc); the
    status of each problem's reference (reference_status; failed: none computed)."""
    from harness.execution.store import ResultStore
    from harness.model.status_summary import not_ok_summary

    with ResultStore(store) as st:
        results = compute_into(st, sweep.problems, sweep.reference.for_problem, sweep.seed,
                               client, sweep.references, out)
    summary = not_ok_summary(results)
    out(f"{len(results)} reference(s): {len(results) - sum(s != 'ok' for s, _ in results)} ok"
        + (f"; not ok: {summary}" if summary else ""))
    return [status for status, _ in results]


def compute_into(st, problems, settings_for, seed: int, client=None,
                 export_to: Path | None = None, out=print,
                 rounds=lambda text: print(text, file=sys.stderr, flush=True)
                 ) -> list[tuple[str, str]]:
    """Each problem's reference in the open store `st`: kept when a stored record has the same
    settings (`is_stored`), else computed with `settings_for(spec)` on `client` and stored at
    once; exported to `export_to` when given. One line per problem on `out`, each round's on
    `rounds`. Returns each problem's (status, reason) (harness.references.compute
    .reference_status; ("failed", reason) when none could be computed)."""
    from harness.execution.formatting import format_reference
    from harness.model.reference_values import export_reference, file_name
    from harness.references.compute import (
        ReferenceFailed,
        compute_reference,
        reference_status,
    )

    results: list[tuple[str, str]] = []
    stored = st.references()
    for p in problems:
        s = settings_for(p.spec)
        record = stored.get(p.name)
        if is_stored(record, expected_record(p.spec, s, seed)):
            verb = "already stored"
        else:
            try:
                record = compute_reference(p.spec, **s.arguments(), client=client, seed=seed,
                                           out=rounds)
            except ReferenceFailed as exc:
                out(f"{p.name}: reference FAILED: {exc}")
                results.append(("failed", exc.reason))
                continue
            st.add_reference(record)
            verb = "computed"
        if export_to is not None:
            export_reference(record, export_to / file_name(p.name))
        results.append(reference_status(record))
        status, reason = results[-1]
        out(f"{p.name}: {verb}, log Z {record['log_marginal_likelihood']:.6f} ± "
            f"{record['log_marginal_likelihood_se']:.2g}, {record['stopped']}"
            + ("" if status == "ok" else f" — {status}: {reason}"))
        if verb == "computed":
            rounds(format_reference(record))
    return results
