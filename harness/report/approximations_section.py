"""The first page's approximations table (numbers from harness.analysis.approximations): per
problem (row, as in the verdict table) and approximation (column), how far off its answer is
against the exact truth, a reference or else the consensus of the exact methods (|Δ log Z| in
nats, the MAE and the largest error of the test probabilities), what it cost, and the cheapest
exact method that gets as close, with its cost over the approximation's."""

from __future__ import annotations

import math

from harness.analysis.aggregate import ReportData
from harness.analysis.approximations import Measured, Row, rows
from harness.analysis.verdict import Reach, groups
from harness.report import titles
from harness.report.style import fmt, fmt_budget
from harness.report.tables import Cell, Table

CAPTION = (
    "How far off each approximation is (its answer is not the model's exact one, and it has no "
    "error bars to say how far): mean over its ok runs at its largest budget of |Δ log Z| "
    "(nats) and of the test probabilities' MAE, 'max' the largest error over the test points "
    "(mean over runs), against the exact or reference truth ('vs consensus': against the "
    "consensus of the exact methods, where the problem has neither); its cost is the mean CPU "
    "seconds of one run, set-up included (after '@': its budget). 'exact as close': per error, "
    "the cheapest exact method (any budget) whose mean error is as small, and its cost over "
    "the approximation's (×1: equal cost, ×0.5: half), or 'none' with the exact methods' "
    "closest; an error below the comparison's precision is shown as '< floor', and the exact "
    "methods are held to that floor. '—': the approximation did not run on this problem.")


def _error(m: Measured, unit: str) -> str:
    if m.at_floor:
        what = "consensus" if m.against == "consensus" else "reference"
        return f"< {fmt(m.floor, 2)}{unit} (at {what} precision)"
    return fmt(m.error, 2) + unit + (" vs consensus" if m.against == "consensus" else "")


def _exact(palette, m: Measured, cost: float) -> str:
    """'sir ×4.8' (the cheapest exact method as close, its cost over the approximation's), or
    'none (closest sov 0.0039)'."""
    r: Reach | None = m.exact
    if r is not None:
        return f"{r.method} ×{fmt(r.cost / cost, 2)}" if cost > 0 else r.method
    b = m.best_exact
    return "none" + (f" (closest {b.method} {fmt(b.error, 2)})" if b is not None else "")


def cell(palette, r: Row) -> Cell:
    """'0.015 nats · MAE 0.0084', then the largest error, the cost and budget, and the
    cheapest exact method as close for each error."""
    if r.budget is None:
        statuses = ", ".join(f"{n} {s}" for s, n in r.statuses.items())
        return Cell("not measured", "floor",
                    sub=f"{r.why} ({r.ok} of {r.runs} ok{': ' + statuses if statuses else ''})")
    main, exact = [], []
    for m, unit, name in ((r.log_z, " nats", "log Z"), (r.mae, "", "MAE")):
        if m is None or m.why:
            if m is not None and m.why != "no test points":
                main.append(f"{name} not measurable: {m.why}")
            continue
        main.append(("MAE " if name == "MAE" else "") + _error(m, unit))
        exact.append(f"{name} {_exact(palette, m, r.cost)}")
    cost = (f"max {fmt(r.max_error, 2)} · " if math.isfinite(r.max_error) else "") \
        + f"{fmt(r.cost, 2)} s @{fmt_budget(r.budget)}"
    lines = [cost] + (["exact as close: " + "; ".join(exact)] if exact else [])
    return Cell(" · ".join(main) or "not measurable", "", sub="\n".join(lines))


def approximations_table(data: ReportData, palette) -> Table:
    """Problems × approximations; empty when no approximation ran."""
    found = rows(data)
    methods = sorted({r.method for r in found})
    by = {(r.group, r.method): r for r in found}
    out = []
    for group, problems in groups(data).items():
        if not any((group, m) in by for m in methods):
            continue
        head = (Cell(titles.of(data, group), "problem") if problems == [group]
                else Cell(group, "problem", sub=f"{len(problems)} problems"))
        out.append([head] + [cell(palette, by[(group, m)]) if (group, m) in by
                             else Cell("—", "floor", sub="did not run") for m in methods])
    return Table("approximations", "Approximations against the exact answer",
                 ["problem"] + methods, out,
                 caption=CAPTION, wrap=True)
