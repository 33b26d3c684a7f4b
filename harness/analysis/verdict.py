"""The verdict: which method reaches each accuracy target cheapest, per problem (or, in a store
of many problems, per family and size), and how the methods rank across them.

Targets (TARGETS), a ladder of two per quantity: |log Ẑ − log Z| ≤ 0.1 and ≤ 0.01 nats (Ẑ
within about 10 % and 1 % of Z), and the MAE of the test probabilities ≤ 1e-2 and ≤ 1e-3
(right to the second and to the third decimal). Errors are against the truth where every
problem of the group has one, else against the consensus (docs/math.md §10).

Only `ok` runs count. A method × budget reaches a target on a group when at least half of its
jobs there are ok, it has ok runs on every problem of the group, and the mean error of those
runs is within the target. Its cost is the mean CPU seconds of one ok run, set-up included
(set-up + estimate: what one answer costs a user). Per group and target, the method whose
cheapest reaching budget costs least wins; the runner-up is the next method, and the ratio
of their costs says how much the choice matters. A target below the comparison's own
precision (twice the SE of a reference truth or of the consensus) cannot be checked and is
marked so instead.

The leaderboard ranks the methods over the (group, target) pairs that some method reached:
there, the methods that reached it are ranked by cost (1 = cheapest) and those that ran but
did not reach it share the next rank. A method is ranked only where it ran.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.analysis.aggregate import OK, ReportData, precision_floor

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


@dataclass(frozen=True)
class Reach:
    """A method's cheapest budget that reaches a target (or, in `Entry.closest`, its best)."""

    method: str
    budget: int
    cost: float          # mean CPU seconds of an ok run, set-up included
    error: float         # mean error of its ok runs


@dataclass
class Entry:
    """One group × target: who reached it, from cheapest, and who ran there."""

    group: str
    target: Target
    column: str                                   # the error column compared with the limit
    reached: list[Reach] = field(default_factory=list)
    entered: list[str] = field(default_factory=list)
    closest: Reach | None = None                  # the lowest error, when nobody reached it
    floor: float = math.nan                       # the comparison's precision, if above limit

    @property
    def unresolvable(self) -> bool:
        return math.isfinite(self.floor)

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


def _column(data: ReportData, problems: list[str], target: Target) -> str:
    truth = all(data.problems.get(p, {}).get("truth_kind") for p in problems)
    return target.columns[0] if truth else target.columns[1]


def _cells(jobs: pd.DataFrame, problems: list[str], column: str) -> pd.DataFrame:
    """One row per method × budget that counts: mean error and cost of its ok runs."""
    rows = []
    for (method, budget), g in jobs.groupby(["method", "budget"], sort=True):
        ok = g[(g["status"] == OK) & np.isfinite(g[column].to_numpy(float))]
        if 2 * len(ok) < len(g) or set(ok["problem"]) != set(problems):
            continue
        setup = ok["setup_cpu_seconds"].fillna(0.0) if "setup_cpu_seconds" in ok else 0.0
        rows.append({"method": method, "budget": int(budget),
                     "error": float(ok[column].mean()),
                     "cost": float((ok["cpu_seconds"] + setup).mean())})
    return pd.DataFrame(rows, columns=["method", "budget", "error", "cost"])


def entry(data: ReportData, group: str, problems: list[str], target: Target) -> Entry:
    column = _column(data, problems, target)
    jobs = data.jobs[data.jobs["problem"].isin(problems)]
    out = Entry(group, target, column)
    if column not in jobs:
        return out
    cells = _cells(jobs, problems, column).dropna()
    out.entered = sorted(set(cells["method"]))
    floors = [precision_floor(data, p, column)[0] for p in problems]
    floor = max((f for f in floors if math.isfinite(f)), default=math.nan)
    if floor > target.limit:
        out.floor = floor
        return out
    hit = cells[cells["error"] <= target.limit].sort_values(["cost", "method"])
    for method, g in hit.groupby("method", sort=False):
        r = g.iloc[0]
        out.reached.append(Reach(method, int(r["budget"]), float(r["cost"]), float(r["error"])))
    out.reached.sort(key=lambda r: (r.cost, r.method))
    if not out.reached and len(cells):
        r = cells.sort_values(["error", "cost"]).iloc[0]
        out.closest = Reach(r["method"], int(r["budget"]), float(r["cost"]), float(r["error"]))
    return out


def entries(data: ReportData, max_groups: int = MAX_GROUPS) -> list[Entry]:
    """Every group × target that some method ran (in reading order)."""
    out = []
    for group, problems in groups(data, max_groups).items():
        for target in TARGETS:
            e = entry(data, group, problems, target)
            if e.entered:
                out.append(e)
    return out


def leaderboard(found: list[Entry]) -> pd.DataFrame:
    """Per method: the pairs it ran in that someone reached ('entered'), how many it reached
    and won, its mean rank there, and the geometric mean of its cost over the winner's where
    it reached the target; best mean rank first."""
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
