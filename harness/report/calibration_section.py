"""The report's "Calibration of the standard errors" section: the figure and the table of the
z's of harness.report.calibration (docs/math.md §10)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from harness.analysis.aggregate import UNRELIABLE, ReportData
from harness.report import html, rule_check
from harness.report.calibration import QUANTITIES, TAIL, Calibration, calibration, table
from harness.report.figures import FigureSpec, _legend, _log_axis, _new
from harness.report.tables import Table

from matplotlib.lines import Line2D  # noqa: E402  isort: skip

NORMAL_LEVEL = 1.96        # the two-sided 95 % line of the figure, with TAIL
MAX_DRAWN = 4000           # points of one curve; more are thinned (keeping the largest |z|)
LOW = 0.05                 # the figure's smallest |z|
TITLE = "Calibration of the standard errors"


@dataclass
class CalibrationSection:
    calibration: Calibration
    figures: list[FigureSpec]
    table: Table
    rule_cells: list[rule_check.RuleCell]     # does the reliability rule catch the misses?
    rule_table: Table


def _survival(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, share of |z| ≥ x) at the sorted |z|, thinned to MAX_DRAWN points: every one of the
    largest (the tail the figure is about), evenly spaced ranks below."""
    x = np.sort(np.abs(z))
    n = len(x)
    share = (n - np.arange(n)) / n
    if n > MAX_DRAWN:
        tail = MAX_DRAWN // 4
        idx = np.unique(np.r_[np.linspace(0, n - tail - 1, MAX_DRAWN - tail).astype(int),
                              np.arange(n - tail, n)])
        x, share = x[idx], share[idx]
    return x, share


def figure(cal: Calibration, palette) -> FigureSpec | None:
    """Per quantity, the share of z's with |z| ≥ x against x (log–log), one line per method
    (dotted for its unreliable runs), with the standard normal's 2 (1 − Φ(x)) in black."""
    quantities = [q for q in QUANTITIES if any(g.quantity == q and g.n for g in cal.groups)]
    if not quantities:
        return None
    fig, axes = _new(len(quantities), width_per=5.4 if len(quantities) > 1 else 7.5, height=4.2)
    finite = np.concatenate([np.abs(g.z[np.isfinite(g.z)]) for g in cal.groups] + [[1.0]])
    high = max(10.0, 1.5 * float(finite.max()))
    handles: dict[str, Line2D] = {}
    for ax, q in zip(axes, quantities, strict=True):
        lowest = 1.0
        for g in (g for g in cal.groups if g.quantity == q and g.n):
            x, share = _survival(g.z)
            x = np.clip(x, LOW, high)            # |z| = inf drawn at the right edge
            lowest = min(lowest, float(share[-1]))
            bad = g.status == UNRELIABLE
            style = {"color": palette.colour(g.method),
                     "linestyle": ":" if bad else palette.linestyle(g.method),
                     "linewidth": 1.2 if bad else 1.8}
            ax.step(x, share, where="post", **style)
            ax.plot(x[-1:], share[-1:], marker=palette.marker(g.method), markersize=4,
                    color=style["color"], linestyle="none")
            label = palette.legend_label(g.method) + (" (unreliable runs)" if bad else "")
            handles.setdefault(label, Line2D([], [], marker=palette.marker(g.method),
                                             label=label, **style))
        grid = np.geomspace(LOW, high, 300)
        normal = 2 * stats.norm.sf(grid)
        ax.plot(grid, normal, color="black", linestyle="--", linewidth=1.2)
        for level in (NORMAL_LEVEL, TAIL):
            ax.axvline(level, color="#6b7280", linestyle=":", linewidth=1.0)
            ax.text(level, 1.0, f" {level:g}", color="#6b7280", fontsize=8, va="top")
        _log_axis(ax, "x")
        _log_axis(ax, "y")
        ax.set_xlim(LOW, high)
        ax.set_ylim(max(min(lowest, 1e-3) / 2, 1e-7), 1.3)
        ax.set_xlabel("x = |estimate − truth| / SE  (log scale)")
        ax.set_ylabel("share of z with |z| ≥ x  (log scale)")
        per = "job" if q == "log_z" else "job and test point"
        ax.set_title(f"{QUANTITIES[q]}: one z per {per}")
    extra = [Line2D([], [], color="black", linestyle="--", label="standard normal: 2 (1 − Φ(x))")]
    _legend(fig, palette, [], extra=extra, ncol=3, handles=list(handles.values()))
    return FigureSpec(
        key="calibration", section=TITLE, title="share of |z| ≥ x against the standard normal",
        caption="For each method, the share of its z = (estimate − truth) / SE at least x in "
                "size, over its ok runs (solid; unreliable runs dotted) on problems with exact "
                "truth or a reference. The black dashed curve is what honest normal errors give; "
                "a curve to its right means SEs too small for the errors. Dotted lines: "
                f"|z| = {NORMAL_LEVEL:g} (5 % of normal z beyond) and {TAIL:g} (0.27 %). A "
                "marker ends each curve at its largest |z| (at the right edge if infinite: a "
                f"zero SE); |z| below {LOW:g} is drawn at the left edge. Methods without SEs "
                "are not drawn (see the table's caption).", figure=fig)


def section(data: ReportData, palette) -> CalibrationSection | None:
    """The section, or None when no job has both the truth and an SE."""
    cal = calibration(data)
    if not cal:
        return None
    spec = figure(cal, palette)
    cells = rule_check.rule_cells(cal)
    return CalibrationSection(cal, [spec] if spec is not None else [], table(cal, palette),
                              cells, rule_check.table(cells, data, palette))


def context(sec: CalibrationSection | None, svgs: dict[str, bytes]) -> dict | None:
    """The template's view of the section (figures as inline SVG)."""
    if sec is None:
        return None
    flagged = sorted({f"{g.method} ({QUANTITIES[g.quantity]})" for g in sec.calibration.flagged
                      if g.status != UNRELIABLE})
    return {"figure_specs": sec.figures,
            "figures": [html.figure_context(f, svgs[f.key]) for f in sec.figures],
            "table": sec.table, "rule_table": sec.rule_table, "flagged": flagged}
