"""The report's first page: the verdict table (harness.analysis.verdict: per problem and
accuracy target, the cheapest method, the runner-up and the cost ratio), the leaderboard
across problems, and the calibration's headline (whose error bars to believe)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.analysis.aggregate import OK, ReportData
from harness.analysis.verdict import TARGETS, Entry, entries, groups, leaderboard
from harness.report import titles
from harness.report.calibration import QUANTITIES, TAIL, Calibration
from harness.report.style import fmt, fmt_budget
from harness.report.tables import Cell, Table, method_cell

CAPTION = (
    "Per problem and accuracy target: the method that reaches it cheapest (mean CPU seconds of "
    "one run, set-up included, at its cheapest budget whose ok runs' mean error is within the "
    "target), then the runner-up and its cost over the winner's (a ratio near 1 is a tie). "
    "Targets: |Δ log Z| ≤ 0.1 and ≤ 0.01 nats (Ẑ within about 10 % and 1 %), MAE of the test "
    "probabilities ≤ 1e-2 and ≤ 1e-3; errors against the exact or reference truth, else the "
    "consensus. Only ok runs count, and a budget counts only when at least half its jobs are "
    "ok. Approximations are marked '(approx.)': they have no error bars to tell when they are "
    "within a target, so the cheapest exact method is named beside them.")
BOARD_CAPTION = (
    "Ranks over every problem × target that some method reached: 1 for the cheapest there, "
    "the next rank shared by the methods that ran but did not reach it. 'cost vs cheapest': "
    "geometric mean of the method's cost over the winner's where it reached the target. Error "
    f"bars: from 'Calibration of the standard errors' (ok runs; share of |z| > {TAIL:g}); "
    "'too small' means the runs miss the truth by more than 3 SEs too often to believe.")


@dataclass
class VerdictSection:
    table: Table
    board: Table
    believe: str          # the calibration's headline, one sentence


def _target_cell(data: ReportData, palette, e: Entry | None) -> Cell:
    if e is None:
        return Cell("—")
    if e.unresolvable:
        return Cell("not checkable", "floor", sub=f"truth known to {fmt(e.floor, 2)}")
    if not e.reached:
        c = e.closest
        return Cell("none reached", "floor",
                    sub=f"closest: {c.method} {fmt(c.error, 2)}" if c is not None else "")
    best = e.reached[0]
    cell = method_cell(data, palette, best.method)
    cell.text += f" · {fmt(best.cost, 2)} s"
    lines = [f"budget {fmt_budget(best.budget)} · "
             + (f"next {palette.legend_label(e.reached[1].method)} ×{fmt(e.ratio, 2)}"
                if len(e.reached) > 1 else "the only one to reach it")]
    if not data.exact(best.method) and not (len(e.reached) > 1
                                            and data.exact(e.reached[1].method)):
        exact = next((r for r in e.reached if data.exact(r.method)), None)
        lines.append(f"exact: {exact.method} ×{fmt(exact.cost / best.cost, 2)}"
                     if exact is not None and best.cost > 0 else "no exact method reached it")
    cell.sub = "\n".join(lines)
    return cell


def verdict_table(data: ReportData, palette, found: list[Entry]) -> Table:
    by = {(e.group, e.target.name): e for e in found}
    rows = []
    for group, problems in groups(data).items():
        if not any((group, t.name) in by for t in TARGETS):
            continue
        if problems == [group]:
            head = Cell(titles.of(data, group), "problem")
            head.sub = group if head.text != group else ""
        else:
            head = Cell(group, "problem", sub=f"{len(problems)} problems")
        rows.append([head] + [_target_cell(data, palette, by.get((group, t.name)))
                              for t in TARGETS])
    return Table("verdict", "Cheapest method to each accuracy target",
                 ["problem"] + [t.name for t in TARGETS], rows, caption=CAPTION,
                 wrap=True)


def _bars(cal: Calibration | None, method: str, quantity: str) -> Cell:
    g = cal.group(method, quantity, OK) if cal else None
    if g is None or not g.n:
        return Cell("no SE" if cal and cal.no_se.get((method, quantity)) else "—", "floor")
    share = f"{fmt(100 * g.share_beyond(TAIL), 2)} %" if g.share_beyond(TAIL) else "0 %"
    return Cell("too small", "bad", sub=share) if g.flagged else Cell("covered", sub=share)


def board_table(data: ReportData, palette, found: list[Entry],
                cal: Calibration | None) -> Table:
    board = leaderboard(found)
    rows = [[Cell(str(i + 1), "num"), method_cell(data, palette, r["method"]),
             Cell(fmt(r["mean_rank"], 2), "num"), Cell(str(r["wins"]), "num"),
             Cell(f"{r['reached']} of {r['entered']}", "num"),
             Cell(f"×{fmt(r['cost_ratio'], 2)}" if math.isfinite(r["cost_ratio"]) else "—",
                  "num")]
            + [_bars(cal, r["method"], q) for q in QUANTITIES]
            for i, r in board.iterrows()]
    return Table("leaderboard", "Leaderboard across problems",
                 ["#", "method", "mean rank", "cheapest", "reached", "cost vs cheapest",
                  *(f"{name} error bars" for name in QUANTITIES.values())], rows,
                 caption=BOARD_CAPTION)


def believe(cal: Calibration | None) -> str:
    """'Error bars to believe: ...; too small: ...; none: ...' from the ok runs."""
    if not cal:
        return ""
    ok = [g for g in cal.groups if g.status == OK and g.n]
    good = sorted({g.method for g in ok} - {g.method for g in ok if g.flagged})
    bad = sorted(f"{g.method} ({QUANTITIES[g.quantity]})" for g in ok if g.flagged)
    none = sorted({m for m, _ in cal.no_se} - {g.method for g in ok})
    parts = [f"error bars to believe: {', '.join(good) or 'none'}"]
    if bad:
        parts.append(f"too small: {', '.join(bad)}")
    if none:
        parts.append(f"no error bars: {', '.join(none)}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def section(data: ReportData, palette, cal: Calibration | None) -> VerdictSection | None:
    """The first page, or None when no method ran on any target."""
    found = entries(data)
    if not found:
        return None
    return VerdictSection(verdict_table(data, palette, found), board_table(data, palette, found,
                                                                             cal), believe(cal))
