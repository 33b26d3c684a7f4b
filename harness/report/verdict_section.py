"""The report's first page: the verdict table (harness.analysis.verdict: per problem and
accuracy target, the cheapest exact method, the runner-up and the cost ratio), the leaderboard
across problems with every method of the store (those without a rank say why), the
approximations table (harness.report.approximations_section) and the calibration's headline
(whose error bars to believe). A target that cannot be checked says why and points to a note
with the command that makes it checkable (verdict.fix_command)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.analysis.aggregate import OK, REFERENCE_FACTOR, ReportData
from harness.analysis.verdict import (
    TARGETS,
    Entry,
    Unranked,
    entries,
    fix_command,
    groups,
    leaderboard,
    unranked,
)
from harness.report import titles
from harness.report.approximations_section import approximations_table
from harness.report.calibration import QUANTITIES, TAIL, Calibration
from harness.report.style import fmt, fmt_budget
from harness.report.tables import Cell, Table, method_cell

CAPTION = (
    "Per problem and accuracy target: the exact method that reaches it cheapest (mean CPU "
    "seconds of one run, set-up included, at its cheapest budget whose ok runs' mean error is "
    "within the target), then the runner-up and its cost over the winner's (a ratio near 1 is a "
    "tie). Targets: |Δ log Z| ≤ 0.1 and ≤ 0.01 nats (Ẑ within about 10 % and 1 %), MAE of the "
    "test probabilities ≤ 1e-2 and ≤ 1e-3; errors against the exact or reference truth, else "
    "the consensus of the exact methods. Only ok runs count, and a budget counts only when at "
    "least half its jobs are ok. Approximations never compete (no error bars to guarantee a "
    "target): their errors are in 'Approximations against the exact answer'. '—': no exact "
    "method has this error measured on the problem (the cell says why).")
BOARD_CAPTION = (
    "Exact methods ranked over every problem × target that some method reached: 1 for the "
    "cheapest there, the next rank shared by the methods that ran but did not reach it. 'cost "
    "vs cheapest': geometric mean of the method's cost over the winner's where it reached the "
    "target. Every other method of the store is listed below them with why it has no rank. "
    f"Error bars: from 'Calibration of the standard errors' (ok runs; share of |z| > {TAIL:g}); "
    "'too small' means the runs miss the truth by more than 3 SEs too often to believe. "
    "'—': no rank or no value (the last column says why).")


@dataclass
class VerdictSection:
    table: Table
    board: Table
    believe: str          # the calibration's headline, one sentence
    approximations: Table = field(default_factory=lambda: Table("approximations", "", [], []))


def _floor_why(data: ReportData, e: Entry) -> str:
    """Why a target is not checkable: the precision of what the errors are measured against."""
    known = f"known to ±{fmt(e.floor, 2)}"
    if e.against == "consensus":
        return f"the truth is the consensus of the exact methods, {known}"
    se = e.floor / REFERENCE_FACTOR
    what = "log Z" if e.target.quantity == "log_z" else "test probabilities' (mean)"
    return f"the reference's {what} SE is {fmt(se, 2)} ({known})"


def _target_cell(data: ReportData, palette, e: Entry | None, problems: list[str],
                 quantity: str, fixes: dict[str, str]) -> Cell:
    if e is None:
        if quantity == "probabilities" and not any(data.problems.get(p, {}).get("n_test")
                                                   for p in problems):
            return Cell("—", "floor", sub="no test points")
        return Cell("—", "floor", sub="no exact method measured")
    if e.unresolvable:
        fixes.setdefault(e.group, fix_command(data, problems))
        return Cell("not checkable", "floor",
                    sub=f"{_floor_why(data, e)}, too coarse for ≤ {fmt(e.target.limit, 1)}"
                        f"\nfix: command [{list(fixes).index(e.group) + 1}] below")
    if not e.reached:
        c = e.closest
        return Cell("none reached", "floor",
                    sub=f"closest: {palette.legend_label(c.method)} {fmt(c.error, 2)} at "
                        f"{fmt_budget(c.budget)}" if c is not None else "")
    best = e.reached[0]
    cell = method_cell(data, palette, best.method)
    cell.text += f" · {fmt(best.cost, 2)} s"
    cell.sub = (f"budget {fmt_budget(best.budget)} · "
                + (f"next {palette.legend_label(e.reached[1].method)} ×{fmt(e.ratio, 2)}"
                   if len(e.reached) > 1 else "the only one to reach it"))
    return cell


def verdict_table(data: ReportData, palette, found: list[Entry]) -> Table:
    """Problems × targets; `notes` holds the commands that make the uncheckable ones checkable,
    numbered as the cells point to them."""
    by = {(e.group, e.target.name): e for e in found}
    rows, fixes = [], {}
    for group, problems in groups(data).items():
        if not any((group, t.name) in by for t in TARGETS):
            continue
        if problems == [group]:
            head = Cell(titles.of(data, group), "problem")
            head.sub = group if head.text != group else ""
        else:
            head = Cell(group, "problem", sub=f"{len(problems)} problems")
        rows.append([head] + [_target_cell(data, palette, by.get((group, t.name)), problems,
                                           t.quantity, fixes) for t in TARGETS])
    notes = (["To make the targets marked 'not checkable' checkable, compute a reference "
              "precise enough (its SEs a quarter of the tightest targets) into the store and "
              "draw the report again, which uses every reference in the store:"]
             + [f"[{i}] {group}: {command}" for i, (group, command) in enumerate(fixes.items(), 1)]
             if fixes else [])
    return Table("verdict", "Cheapest exact method to each accuracy target",
                 ["problem"] + [t.name for t in TARGETS], rows, caption=CAPTION,
                 notes=notes, wrap=True)


def _bars(cal: Calibration | None, method: str, quantity: str) -> Cell:
    g = cal.group(method, quantity, OK) if cal else None
    if g is None or not g.n:
        return Cell("no SE" if cal and cal.no_se.get((method, quantity)) else "—", "floor")
    # a no-break space keeps the number and its % on one line in a narrow column
    share = f"{fmt(100 * g.share_beyond(TAIL), 2)}\u00a0%" if g.share_beyond(TAIL) else "0\u00a0%"
    return Cell("too small", "bad", sub=share) if g.flagged else Cell("covered", sub=share)


def why(data: ReportData, palette, u: Unranked) -> str:
    """One line on why a method has no rank or reached no target."""
    statuses = ", ".join(f"{n} {s}" for s, n in u.statuses.items())
    if u.kind == "approximation":
        return "approximation (never ranked): see 'Approximations'"
    if u.kind == "no ok run":
        return f"0 of {u.runs} runs ok: {statuses}"
    if u.kind == "not counted":
        return (f"{u.ok} of {u.runs} runs ok{' (' + statuses + ')' if statuses else ''}; no "
                "budget with half its runs ok and an error on every problem of a group")
    if u.closest is None:
        return "ran but reached no target"
    e, r = u.closest
    group = titles.of(data, e.group) if e.group in data.problems else e.group
    return (f"ran but reached no target; closest: {fmt(r.error, 2)} against {e.target.name} "
            f"at budget {fmt_budget(r.budget)} ({group})")


def board_table(data: ReportData, palette, found: list[Entry],
                cal: Calibration | None) -> Table:
    board = leaderboard(found)
    notes = {u.method: why(data, palette, u) for u in unranked(data, found)}
    rows = [[Cell(str(i + 1), "num"), method_cell(data, palette, r["method"]),
             Cell(fmt(r["mean_rank"], 2), "num"), Cell(str(r["wins"]), "num"),
             Cell(f"{r['reached']} of {r['entered']}", "num"),
             Cell(f"×{fmt(r['cost_ratio'], 2)}" if math.isfinite(r["cost_ratio"]) else "—",
                  "num")]
            + [_bars(cal, r["method"], q) for q in QUANTITIES]
            + [Cell(notes.get(r["method"], ""), "floor")]
            for i, r in board.iterrows()]
    ranked = set(board["method"])
    rows += [[Cell("—", "floor"), method_cell(data, palette, u.method)]
             + [Cell("—", "floor") for _ in range(4)]
             + [_bars(cal, u.method, q) for q in QUANTITIES] + [Cell(notes[u.method], "floor")]
             for u in unranked(data, found) if u.method not in ranked]
    return Table("leaderboard", "Leaderboard across problems",
                 ["#", "method", "mean rank", "cheapest", "reached", "cost vs cheapest",
                  *(f"{name} error bars" for name in QUANTITIES.values()), "why not ranked"],
                 rows, caption=BOARD_CAPTION)


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
    """The first page, or None when no method ran on any target (nor any approximation)."""
    found = entries(data)
    approx = approximations_table(data, palette)
    if not found and not approx.rows:
        return None
    return VerdictSection(verdict_table(data, palette, found),
                          board_table(data, palette, found, cal), believe(cal), approx)
