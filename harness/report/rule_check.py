"""Does the reliability rule catch the misses? Each run with the truth, judged by its own error
bars, against the status the rule gave it (docs/math.md §10 and §13).

A run is *off* when its log Ẑ or any of its test probabilities lies more than 3 of its own
standard errors from the truth (|z| > 3, z as in harness.report.calibration), and *within*
otherwise. The rule (harness.model.reliability) sees only the run's own diagnostics, never the
truth; status `unreliable` is its flag. Per method × problem × budget the table counts:

  off, and how many of them the rule flagged        (the goal: all of them)
  within, and how many of them it flagged           (false alarms: as few as the data allow)
  ok and off                                        (what a reader of the `ok` runs is misled by)

Honest standard errors are not a bound: a run with K randomisations has t_{K−1} z's, so with 50
test points about one run in five is "off" at one point by chance (|t₃₉| > 3 in 0.47 % of
cases). "ok and off" is judged with that in mind, against the calibration table above it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from harness.analysis.aggregate import OK, UNRELIABLE, ReportData
from harness.report import titles
from harness.report.calibration import TAIL, Calibration
from harness.report.style import fmt_budget

COLUMNS = ["method", "problem", "budget", "runs", "off by > 3 SE", "off, flagged",
           "within 3 SE", "within, flagged", "ok and off", "worst |z| of ok runs"]


@dataclass
class RuleCell:
    """The runs of one method × problem × budget, by (off or within) × (flagged or not)."""

    method: str
    problem: str
    budget: int
    off: int = 0
    off_flagged: int = 0
    within: int = 0
    within_flagged: int = 0
    worst_ok: float = 0.0          # the largest |z| of the ok runs (log Z or a test point)

    @property
    def runs(self) -> int:
        return self.off + self.within

    @property
    def ok_and_off(self) -> int:
        return self.off - self.off_flagged

    @property
    def ok_runs(self) -> int:
        return self.runs - self.off_flagged - self.within_flagged


def worst_z(z: dict[str, np.ndarray | None]) -> float | None:
    """The largest |z| of one run over log Z and its test points; None without any SE."""
    values = [np.abs(v) for v in z.values() if v is not None and len(v)]
    return float(max(np.max(v) for v in values)) if values else None


def rule_cells(cal: Calibration) -> list[RuleCell]:
    """One RuleCell per method × problem × budget with at least one run that has an SE, from
    the jobs with the truth that the calibration read (their z's computed once)."""
    cells: dict[tuple[str, str, int], RuleCell] = {}
    for job in cal.jobs:
        worst = worst_z(job.z)
        if worst is None:
            continue
        row = job.row
        key = (row["method"], row["problem"], int(row["budget"]))
        cell = cells.setdefault(key, RuleCell(*key))
        flagged = row["status"] == UNRELIABLE
        if worst > TAIL:       # nan never is: a NaN z is not evidence of a miss
            cell.off += 1
            cell.off_flagged += flagged
        else:
            cell.within += 1
            cell.within_flagged += flagged
        if row["status"] == OK:
            cell.worst_ok = max(cell.worst_ok, worst)
    return [cells[k] for k in sorted(cells)]


def totals(cells: list[RuleCell]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for c in cells:
        for name in ("runs", "off", "off_flagged", "within", "within_flagged", "ok_and_off"):
            out[name] += getattr(c, name)
    return dict(out)


def caption(cells: list[RuleCell]) -> str:
    t = totals(cells)
    return (f"Each run of an exact method on a problem with the truth is 'off' when its log Z or "
            f"any of its test probabilities is more than {TAIL:g} of its own SEs from the truth, "
            f"'within' otherwise; 'flagged' runs are those the reliability rule stored as "
            f"unreliable (docs/math.md §13), from their own diagnostics, without the truth. "
            f"Over this report: {t.get('off', 0)} runs off, {t.get('off_flagged', 0)} of them "
            f"flagged; {t.get('within', 0)} within, {t.get('within_flagged', 0)} of them flagged "
            f"(false alarms). Honest SEs are not a bound: with K randomisations z follows a "
            f"t with K − 1 degrees of freedom, so a run with many test points is sometimes off "
            f"at one of them by chance; 'ok and off' runs at |z| a little over {TAIL:g} are "
            f"that tail, the calibration table above says whether there are too many.")


def table(cells: list[RuleCell], data: ReportData, palette):
    """The table: one row per method × problem × budget."""
    from harness.report.tables import Cell, Table

    names = titles.titles(data)
    rows = []
    for c in cells:
        colour = palette.colour(c.method) if palette is not None else ""
        label = palette.legend_label(c.method) if palette is not None else c.method
        missed = c.ok_and_off > 0
        rows.append([
            Cell(label, "method", colour), Cell(names.get(c.problem, c.problem)),
            Cell(fmt_budget(c.budget), "num"), Cell(str(c.runs), "num"),
            Cell(str(c.off), "num"), Cell(f"{c.off_flagged}/{c.off}" if c.off else "", "num"),
            Cell(str(c.within), "num"),
            Cell(f"{c.within_flagged}/{c.within}" if c.within else "", "num"),
            Cell(str(c.ok_and_off), "bad num" if missed else "num"),
            Cell(f"{c.worst_ok:.2f}" if c.ok_runs else "", "num"),
        ])
    return Table("reliability_rule", "Does the reliability rule catch the misses?", COLUMNS,
                 rows, caption=caption(cells))


def csv_rows(cells: list[RuleCell]) -> tuple[list[str], list[dict]]:
    """(columns, rows) for reliability_rule.csv."""
    columns = ["method", "problem", "budget", "runs", "off", "off_flagged", "within",
               "within_flagged", "ok_and_off", "worst_abs_z_ok"]
    rows = [dict(zip(columns, [c.method, c.problem, c.budget, c.runs, c.off, c.off_flagged,
                               c.within, c.within_flagged, c.ok_and_off, c.worst_ok],
                     strict=True)) for c in cells]
    return columns, rows
