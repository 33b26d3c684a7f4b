"""The verdict: which EXACT method reaches each accuracy target cheapest, per problem (or, in a
store of many problems, per family and size), and how the methods rank across them.

Targets (TARGETS), a ladder of two per quantity: |log Ẑ − log Z| ≤ 0.1 and ≤ 0.01 nats (Ẑ
within about 10 % and 1 % of Z), and the MAE of the test probabilities ≤ 1e-2 and ≤ 1e-3
(right to the second and to the third decimal). Errors are against the truth where every
problem of the group has one, else against the consensus (docs/math.md §10).

Only `ok` runs of exact methods count: an approximation (`exact_method` false in its records:
Laplace, EP, VB, the Vecchia walks) has no error bars that could guarantee a target, so it
never competes; its measured error is in harness.analysis.approximations. A method × budget
counts on a group when at least half of its jobs there are ok, it has ok runs on every problem
of the group, and its error is measured (`counted`); it reaches a target when the mean error of
those runs is within it. Its cost is the mean CPU seconds of one ok run, set-up included. Per
group and target the cheapest reaching method wins; the runner-up is the next, and the ratio of
their costs says how much the choice matters. This is the report's one definition of "best".
A target below the comparison's own precision (REFERENCE_FACTOR × the SE of a reference truth
or of the consensus) cannot be checked; `fix_command` is the command that computes a reference
precise enough (its SE a quarter of the tightest target, REFERENCE_SE / REFERENCE_TEST_SE).

The leaderboard ranks the exact methods over the (group, target) pairs that some method
reached: 1 = cheapest, those that ran but did not reach it share the next rank. `unranked`
says, for every other method of the store, why it has no rank.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.analysis.aggregate import OK, ReportData, precision_floor
from harness.sweep.missing_references import IN_SWEEP

MAX_GROUPS = 8           # more problems than this are grouped by family and size


@dataclass(frozen=True)
class Target:
    quantity: str        # "log_z" or "probabilities"
    limit: float
    name: str
    columns: tuple[str, str]   # (against the truth, against the consensus)


TARGETS = (
    Target("log_z", 0.1, "|Δ log Z| ≤ 0.1", ("abs_log_error", "med_abs_log_error")),
    Target("log_z", 0.01, "|Δ log Z| ≤ 0.01", ("abs_log_error", "med_abs_log_error")),
    Target("probabilities", 1e-2, "MAE ≤ 1e-2", ("mae", "mae_med")),
    Target("probabilities", 1e-3, "MAE ≤ 1e-3", ("mae", "mae_med")),
)
# a reference's SEs: those a sweep computes for a problem without truth, a quarter of the
# tightest target of each quantity (harness.sweep.missing_references, checked against TARGETS
# by its tests): its precision floor (REFERENCE_FACTOR × SE) half the target
REFERENCE_SE = IN_SWEEP.target_se
REFERENCE_TEST_SE = IN_SWEEP.target_test_se


@dataclass(frozen=True)
class Reach:
    """A method's cheapest budget that reaches a target (or, in `Entry.closest`, its best)."""

    method: str
    budget: int
    cost: float          # mean CPU seconds of an ok run, set-up included
    error: float         # mean error of its ok runs


@dataclass
class Entry:
    """One group × target: which exact methods reached it, from cheapest, and which ran."""

    group: str
    target: Target
    column: str                                   # the error column compared with the limit
    reached: list[Reach] = field(default_factory=list)
    entered: list[str] = field(default_factory=list)
    closest: Reach | None = None                  # the lowest error, when nobody reached it
    floor: float = math.nan                       # the comparison's precision, if above limit
    best: dict[str, Reach] = field(default_factory=dict)   # each entered method's lowest error
    problems: list[str] = field(default_factory=list)     # the group's problems

    @property
    def unresolvable(self) -> bool:
        return math.isfinite(self.floor)

    @property
    def against(self) -> str:
        """'consensus' (of the exact methods) or 'truth' (exact or a reference)."""
        return "consensus" if self.column == self.target.columns[1] else "truth"

    @property
    def ratio(self) -> float:
        """Runner-up's cost / the winner's (NaN without a runner-up)."""
        if len(self.reached) < 2:
            return math.nan
        return self.reached[1].cost / self.reached[0].cost if self.reached[0].cost > 0 else math.inf


def groups(data: ReportData, max_groups: int = MAX_GROUPS) -> dict[str, list[str]]:
    """{group: problems}: each problem with jobs on its own (in the store's order), or, past
    max_groups problems, the problems of one family and size N together ('onefactor, N = 200')."""
    if not len(data.jobs):
        return {}
    ran = set(data.jobs["problem"])
    problems = [p for p in data.problems if p in ran] + sorted(ran - set(data.problems))
    if len(problems) <= max_groups:
        return {p: [p] for p in problems}
    first = data.jobs.drop_duplicates("problem").set_index("problem")
    out: dict[str, list[str]] = {}
    for p in problems:
        family, n = first.at[p, "family"], first.at[p, "n_train"]
        out.setdefault(f"{family}, N = {int(n)}" if pd.notna(n) else str(family), []).append(p)
    return out


def column(data: ReportData, problems: list[str], target: Target) -> str:
    """The error column a target is checked on: against the truth when every problem of the
    group has one, else against the consensus."""
    truth = all(data.problems.get(p, {}).get("truth_kind") for p in problems)
    return target.columns[0] if truth else target.columns[1]


def counted(jobs: pd.DataFrame, problems: list[str], column: str) -> pd.DataFrame:
    """One row per method × budget that counts (see the module's docstring): its mean error
    and the mean cost (CPU s, set-up included) of its ok runs."""
    rows = []
    if column not in jobs:
        return pd.DataFrame(columns=["method", "budget", "error", "cost"])
    for (method, budget), g in jobs.groupby(["method", "budget"], sort=True):
        ok = g[(g["status"] == OK) & np.isfinite(g[column].to_numpy(float))]
        if 2 * len(ok) < len(g) or set(ok["problem"]) != set(problems):
            continue
        setup = ok["setup_cpu_seconds"].fillna(0.0) if "setup_cpu_seconds" in ok else 0.0
        rows.append({"method": method, "budget": int(budget),
                     "error": float(ok[column].mean()),
                     "cost": float((ok["cpu_seconds"] + setup).mean())})
    return pd.DataFrame(rows, columns=["method", "budget", "error", "cost"]).dropna()


def exact_cells(data: ReportData, problems: list[str], column: str) -> pd.DataFrame:
    """`counted` for the exact methods only, on the group's jobs."""
    jobs = data.jobs[data.jobs["problem"].isin(problems)]
    if len(jobs):   # data.exact of each method: all its jobs in the store marked exact
        exact = data.jobs.groupby("method")["exact_method"].all()
        jobs = jobs[jobs["method"].map(exact).astype(bool)]
    return counted(jobs, problems, column)


def cheapest_within(cells: pd.DataFrame, limit: float) -> list[Reach]:
    """Per method, its cheapest budget whose mean error is ≤ limit; cheapest method first."""
    hit = cells[cells["error"] <= limit].sort_values(["cost", "method", "budget"])
    out = [Reach(m, int(g.iloc[0]["budget"]), float(g.iloc[0]["cost"]),
                 float(g.iloc[0]["error"])) for m, g in hit.groupby("method", sort=False)]
    return sorted(out, key=lambda r: (r.cost, r.method))


def lowest(cells: pd.DataFrame) -> Reach | None:
    """The lowest-error row (cheapest on ties) as a Reach; None without rows."""
    if not len(cells):
        return None
    r = cells.sort_values(["error", "cost"]).iloc[0]
    return Reach(r["method"], int(r["budget"]), float(r["cost"]), float(r["error"]))


def entry(data: ReportData, group: str, problems: list[str], target: Target) -> Entry:
    col = column(data, problems, target)
    out = Entry(group, target, col, problems=list(problems))
    cells = exact_cells(data, problems, col)
    out.entered = sorted(set(cells["method"]))
    out.best = {m: lowest(g) for m, g in cells.groupby("method")}
    floors = [precision_floor(data, p, col)[0] for p in problems]
    floor = max((f for f in floors if math.isfinite(f)), default=math.nan)
    if floor > target.limit:
        out.floor = floor
        return out
    out.reached = cheapest_within(cells, target.limit)
    if not out.reached:
        out.closest = lowest(cells)
    return out


def entries(data: ReportData, max_groups: int = MAX_GROUPS) -> list[Entry]:
    """Every group × target that some exact method ran (in reading order)."""
    out = []
    for group, problems in groups(data, max_groups).items():
        for target in TARGETS:
            e = entry(data, group, problems, target)
            if e.entered:
                out.append(e)
    return out


def leaderboard(found: list[Entry]) -> pd.DataFrame:
    """Per exact method: the pairs it ran in that someone reached ('entered'), how many it
    reached and won, its mean rank there, and the geometric mean of its cost over the winner's
    where it reached the target; best mean rank first."""
    stats: dict[str, dict] = {}
    for e in found:
        if not e.reached:
            continue
        last = len(e.reached) + 1
        rank = {r.method: i + 1 for i, r in enumerate(e.reached)}
        best = e.reached[0].cost
        for method in e.entered:
            s = stats.setdefault(method, {"ranks": [], "ratios": [], "wins": 0})
            s["ranks"].append(rank.get(method, last))
            s["wins"] += rank.get(method) == 1
        for r in e.reached:
            if best > 0:
                stats[r.method]["ratios"].append(r.cost / best)
    rows = [{"method": m, "entered": len(s["ranks"]), "reached": len(s["ratios"]),
             "wins": s["wins"], "mean_rank": float(np.mean(s["ranks"])),
             "cost_ratio": float(np.exp(np.mean(np.log(s["ratios"])))) if s["ratios"]
             else math.nan}
            for m, s in stats.items()]
    board = pd.DataFrame(rows, columns=["method", "entered", "reached", "wins", "mean_rank",
                                        "cost_ratio"])
    return board.sort_values(["mean_rank", "wins", "method"],
                             ascending=[True, False, True]).reset_index(drop=True)


@dataclass(frozen=True)
class Unranked:
    """Why a method has no rank, or reached no target: `kind` is 'approximation', 'no ok run'
    (0 of `runs` ok; `statuses` the others by count), 'not counted' (no budget with half its
    runs ok and an error measured on every problem of a group) or 'reached none' (`closest`:
    the entry and budget where its error came nearest a target, relative to the limit)."""

    method: str
    kind: str
    runs: int
    ok: int
    statuses: dict[str, int]
    closest: tuple[Entry, Reach] | None = None


def closest(found: list[Entry], method: str) -> tuple[Entry, Reach] | None:
    """The entry where `method`'s lowest error is nearest its target (error / limit)."""
    near = [(e.best[method].error / e.target.limit, i) for i, e in enumerate(found)
            if method in e.best]
    if not near:
        return None
    e = found[min(near)[1]]
    return e, e.best[method]


def unranked(data: ReportData, found: list[Entry]) -> list[Unranked]:
    """Every method of the store that reached no target, with why (exact methods first, in
    the store's order of names, then the approximations)."""
    reached = {r.method for e in found for r in e.reached}
    out = []
    for method in data.methods:
        if method in reached:
            continue
        jobs = data.jobs[data.jobs["method"] == method]
        statuses = jobs["status"].value_counts().sort_index()
        ok = int(statuses.get(OK, 0))
        others = {str(k): int(v) for k, v in statuses.items() if k != OK}
        if not data.exact(method):
            kind = "approximation"
        elif not ok:
            kind = "no ok run"
        elif not any(method in e.entered for e in found):
            kind = "not counted"
        else:
            kind = "reached none"
        out.append(Unranked(method, kind, len(jobs), ok, others, closest(found, method)))
    return sorted(out, key=lambda u: (u.kind == "approximation", u.method))


# ---- the command that makes a target checkable ----------------------------------------------
def problem_spec(data: ReportData, problem: str) -> str:
    """The spec that makes `problem` again (its jobs' `problem_spec`, else the sweep file's,
    else the summary's spec or file, else its name)."""
    for r in data.records:
        if r.get("problem") == problem and r.get("problem_spec"):
            return str(r["problem_spec"])
    sweeps = data.metadata.get("sweeps") if isinstance(data.metadata, dict) else None
    for sweep in [*(sweeps.values() if isinstance(sweeps, dict) else []),
                  data.metadata.get("sweep") if isinstance(data.metadata, dict) else None]:
        for p in (sweep or {}).get("problems", []) if isinstance(sweep, dict) else []:
            if isinstance(p, dict) and p.get("name") == problem and p.get("spec"):
                return str(p["spec"])
    s = data.problems.get(problem, {})
    return str(s.get("spec") or s.get("file") or problem)


def reference_command(spec: str, store: str, target_se: float = REFERENCE_SE,
                      target_test_se: float = REFERENCE_TEST_SE) -> str:
    """`python -m harness reference SPEC --store STORE --target-se S --target-test-se T`, each
    argument quoted for a POSIX shell: one text for the report and the command line."""
    return (f"python -m harness reference {shlex.quote(spec)} --store {shlex.quote(store)} "
            f"--target-se {target_se:g} --target-test-se {target_test_se:g}")


def fix_command(data: ReportData, problems: list[str]) -> str:
    """The commands that make every target of these problems checkable: a reference of each,
    its SEs a quarter of the tightest targets, into the report's store, then the report again
    (which uses every reference stored in the store)."""
    store = data.store_path or "STORE"
    refs = [reference_command(problem_spec(data, p), store) for p in problems]
    return " && ".join([*refs, f"python -m harness report --store {shlex.quote(store)}"])
