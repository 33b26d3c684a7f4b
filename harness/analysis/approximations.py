"""How far off each approximation is, measured against the exact answer, and whether an exact
method gets there at equal cost: the numbers of the report's approximations table.

An approximation (`exact_method` false in its records: Laplace, EP, VB, the Vecchia walks, a
peer's variational fit) converges to its own answer, not the model's, and has no error bars that
say how far that is. Here, per group of problems (harness.analysis.verdict.groups) and per
approximation, at its largest budget that counts (verdict.counted: at least half its jobs ok,
ok runs on every problem of the group), the mean over its ok runs of

  |Δ log Z|    nats, against the truth (exact or a reference) or else the consensus of the
               exact methods (the verdict's column for its log Z targets);
  MAE          of the test probabilities, against the same;
  max error    the largest |p̂ − p| over the test points of a run;

its cost (mean CPU seconds of one ok run, set-up included), and beside each error the cheapest
exact method × budget whose mean error is at most that (or at most the comparison's precision
floor, when the error is below it: neither can be told apart from zero there). Where an error
cannot be measured, `why` says so (no truth, reference or consensus; no test points; the method
gives no log Z; no budget that counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.analysis.aggregate import OK, ReportData, precision_floor
from harness.analysis.verdict import (
    TARGETS,
    Reach,
    cheapest_within,
    column,
    counted,
    exact_cells,
    groups,
    lowest,
)


@dataclass(frozen=True)
class Measured:
    """One error of an approximation and the cheapest exact method that reaches it."""

    column: str                 # the error column (against truth or consensus)
    error: float = math.nan     # mean over the ok runs; NaN when not measurable
    floor: float = math.nan     # the comparison's precision (REFERENCE_FACTOR × its SE)
    exact: Reach | None = None  # cheapest exact method × budget with error ≤ max(error, floor)
    best_exact: Reach | None = None   # the exact methods' lowest error, when none reaches it
    why: str = ""               # why it is not measured

    @property
    def against(self) -> str:
        return "consensus" if self.column in ("med_abs_log_error", "mae_med") else "truth"

    @property
    def at_floor(self) -> bool:
        return math.isfinite(self.floor) and self.error < self.floor


@dataclass
class Row:
    """One approximation on one group."""

    group: str
    method: str
    runs: int                   # its jobs on the group
    ok: int
    budget: int | None = None   # the largest budget that counts (None: none counts)
    cost: float = math.nan      # mean CPU s of an ok run there, set-up included
    log_z: Measured | None = None
    mae: Measured | None = None
    max_error: float = math.nan
    why: str = ""               # why no budget counts
    statuses: dict[str, int] = field(default_factory=dict)


def _reference(data: ReportData, problem: str, col: str) -> np.ndarray | None:
    """The test probabilities an MAE column is measured against."""
    if col == "mae":
        p = data.problems.get(problem, {}).get("true_test_probabilities")
        return None if p is None else np.asarray(p, float)
    c = data.consensus.get(problem)
    return None if c is None else c.probabilities


def max_errors(data: ReportData, jobs: pd.DataFrame, col: str) -> np.ndarray:
    """Per job, the largest |p̂ − p| over its test points (NaN without both)."""
    out = []
    for problem, probs in zip(jobs["problem"], jobs["probabilities"], strict=True):
        ref = _reference(data, problem, col)
        ok = probs is not None and ref is not None and len(probs) == len(ref) and len(ref)
        out.append(float(np.max(np.abs(np.asarray(probs) - ref))) if ok else math.nan)
    return np.asarray(out, float)


def _unmeasured(data: ReportData, problems: list[str], jobs: pd.DataFrame, col: str,
                quantity: str) -> str:
    """Why an error column has no value for these ok jobs."""
    if quantity == "probabilities" and not any(data.problems.get(p, {}).get("n_test")
                                               for p in problems):
        return "no test points"
    has = (jobs["log_z"].notna() if quantity == "log_z"
           else jobs["probabilities"].map(lambda p: p is not None and len(p) > 0))
    if not has.any():
        return "the method gives no " + ("log Z" if quantity == "log_z" else
                                         "test probabilities")
    if col in ("med_abs_log_error", "mae_med"):
        return "no truth, no reference and no consensus of exact methods"
    return "not measured"


def _why_none(data: ReportData, problems: list[str], jobs: pd.DataFrame,
              cols: dict[str, str]) -> str:
    """Why no budget of a method with ok runs counts: its errors cannot be measured, or no
    budget has half its runs ok on every problem of the group."""
    ok = jobs[jobs["status"] == OK]
    half = any(2 * (g["status"] == OK).sum() >= len(g) and set(g["problem"]) >= set(problems)
               for _, g in jobs.groupby("budget"))
    reasons = sorted({_unmeasured(data, problems, ok, col, q) for q, col in cols.items()}
                     - {"not measured"})
    return "; ".join(reasons) if half and reasons else \
        "no budget with half its runs ok on every problem"


def _measure(data: ReportData, problems: list[str], jobs: pd.DataFrame, budget: int,
             col: str, quantity: str) -> Measured:
    ok = jobs[(jobs["budget"] == budget) & (jobs["status"] == OK)]
    values = ok[col].to_numpy(float) if col in ok else np.array([])
    if not len(values) or not np.isfinite(values).all():
        return Measured(col, why=_unmeasured(data, problems, ok, col, quantity))
    error = float(values.mean())
    floors = [precision_floor(data, p, col)[0] for p in problems]
    floor = max((f for f in floors if math.isfinite(f)), default=math.nan)
    cells = exact_cells(data, problems, col)
    limit = max(error, floor) if math.isfinite(floor) else error
    reach = cheapest_within(cells, limit)
    return Measured(col, error, floor, reach[0] if reach else None,
                    None if reach else lowest(cells))


def row(data: ReportData, group: str, problems: list[str], method: str) -> Row:
    jobs = data.jobs[data.jobs["problem"].isin(problems) & (data.jobs["method"] == method)]
    statuses = jobs["status"].value_counts().sort_index()
    out = Row(group, method, len(jobs), int(statuses.get(OK, 0)),
              statuses={str(k): int(v) for k, v in statuses.items() if k != OK})
    cols = {q: column(data, problems, next(t for t in TARGETS if t.quantity == q))
            for q in ("log_z", "probabilities")}
    budgets = set()
    for col in cols.values():
        budgets |= set(counted(jobs, problems, col)["budget"])
    if not budgets:
        out.why = _why_none(data, problems, jobs, cols) if out.ok else "no ok run"
        return out
    out.budget = max(budgets)
    ok = jobs[(jobs["budget"] == out.budget) & (jobs["status"] == OK)]
    setup = ok["setup_cpu_seconds"].fillna(0.0) if "setup_cpu_seconds" in ok else 0.0
    out.cost = float((ok["cpu_seconds"] + setup).mean())
    out.log_z = _measure(data, problems, jobs, out.budget, cols["log_z"], "log_z")
    out.mae = _measure(data, problems, jobs, out.budget, cols["probabilities"], "probabilities")
    if math.isfinite(out.mae.error):
        out.max_error = float(np.nanmean(max_errors(data, ok, cols["probabilities"])))
    return out


def rows(data: ReportData) -> list[Row]:
    """Every approximation on every group it ran on, group by group (approximations by name)."""
    approx = [m for m in data.methods if not data.exact(m)]
    out = []
    for group, problems in groups(data).items():
        ran = set(data.jobs[data.jobs["problem"].isin(problems)]["method"])
        out += [row(data, group, problems, m) for m in approx if m in ran]
    return out
