"""The report's figures (matplotlib, Agg backend), like the paper's Figures 1–2 and more.

Each point is one problem × method × budget cell: the mean over successful replicates, with
error bars of ± one standard error in both directions (CPU seconds and the error). Colours,
markers and line styles come from one Palette, so a method looks the same in every figure.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.analysis.aggregate import METRICS, ReportData, precision_floor, problem_metrics
from harness.report import style  # noqa: F401  (selects the Agg backend first)
from harness.report.style import Palette, style_context

import matplotlib.pyplot as plt  # noqa: E402  isort: skip
from matplotlib.figure import Figure  # noqa: E402  isort: skip
from matplotlib.lines import Line2D  # noqa: E402  isort: skip
from matplotlib.ticker import LogFormatter, LogLocator  # noqa: E402  isort: skip


LABELS_PER_AXIS = 6      # at most about this many tick labels along a log axis
SUBLABELS = ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 5, 6, 8), (1, 2, 5), (1, 3), (1,))


def sublabels(decades: float) -> set[int]:
    """The mantissas labelled on a log axis spanning `decades`: the densest set of SUBLABELS
    whose closest neighbours (in log10) are at least decades / LABELS_PER_AXIS apart, so that
    labels never run into each other ('0.0030.004')."""
    for subs in SUBLABELS:
        gaps = np.diff(np.log10([*subs, 10]))
        if gaps.min() >= decades / LABELS_PER_AXIS:
            return set(subs)
    return {1}


class PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers (0.02, 500, 1e-5): readable, and drawn without
    mathtext, which is most of the drawing time of a figure. Which ticks are labelled depends
    only on the decades in view (`sublabels`)."""

    def set_locs(self, locs=None):
        lo, hi = sorted(self.axis.get_view_interval())
        if not (lo > 0 and math.isfinite(lo) and math.isfinite(hi)):
            self._sublabels = {1}
            return
        self._sublabels = sublabels(math.log10(hi / lo))

    def _num_to_string(self, x, vmin, vmax):
        if 1 <= x < 1e5 and abs(x - round(x)) < 1e-9 * x:
            return f"{round(x)}"
        if 1e-3 <= x < 1e5:
            return f"{x:.3g}"
        mantissa, exponent = f"{x:.0e}".split("e")
        return f"{mantissa}e{int(exponent)}"


@dataclass
class FigureSpec:
    key: str          # stable id (file name / HTML anchor)
    section: str      # a problem name, or "" for the cross-problem figures
    title: str
    caption: str
    figure: Figure
    drawn: bool = False   # laid out by a first savefig (the PDF page keeps that layout)

    def to_bytes(self, fmt: str = "svg") -> bytes:
        buf = io.BytesIO()
        with style_context():
            self.figure.savefig(buf, format=fmt)
        self.drawn = True
        return buf.getvalue()


def _new(ncols: int, width_per: float = 4.9, height: float = 3.6) -> tuple[Figure, list]:
    """A figure with `ncols` plots in a row and a legend strip below them (its own axes, so
    that the PDF can add a caption strip under everything with the layout engine's rect)."""
    fig = plt.figure(figsize=(width_per * ncols + 0.4, height + 0.4), layout="constrained")
    gs = fig.add_gridspec(2, ncols, height_ratios=[height, 0.4])
    axes = [fig.add_subplot(gs[0, j]) for j in range(ncols)]
    legend_ax = fig.add_subplot(gs[1, :])
    legend_ax.axis("off")
    fig._report_layout = (gs, legend_ax, height)   # used by _legend
    return fig, axes


def _log_axis(ax, which: str) -> None:
    getattr(ax, f"set_{which}scale")("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(LogLocator(base=10, numticks=12))
    axis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
    axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
    ax.grid(True, which="major", alpha=0.6)
    ax.grid(True, which="minor", alpha=0.15)


def _yerr(mean: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Asymmetric bars that stay positive on a log axis."""
    se = np.nan_to_num(se)
    return np.vstack([np.minimum(se, mean * 0.95), se])


def palette_of(data: ReportData, palette: Palette | None) -> Palette:
    """The palette given, else the report's own (harness.report.palette), kept on data.palette so
    every figure of the store draws a method in the same colour."""
    if palette is not None:
        return palette
    if data.palette is None:
        from harness.report.palette import palette_for

        data.palette = palette_for(data)
    return data.palette


def _columns_that_fit(fig: Figure, handles) -> int:
    """Legend columns as wide as the longest label that fit the figure's width (a saved
    figure must not cut its legend): ~0.6 em per character plus the handle and spacing."""
    em = plt.rcParams["legend.fontsize"]
    em = (em if isinstance(em, int | float) else 10.0) / 72   # inches ("medium" -> 10 pt)
    longest = max((len(str(h.get_label())) for h in handles), default=0)
    column = (0.6 * longest + 2.6 + 0.8 + 2.0) * em
    return max(1, int(fig.get_size_inches()[0] // column))


def _legend(fig: Figure, palette: Palette, methods: list[str], extra=(), ncol: int = 3,
            handles=None) -> None:
    """The legend in its strip below the plots, sized to its number of rows."""
    if handles is None:
        handles = [Line2D([], [], color=palette.colour(m), marker=palette.marker(m),
                          linestyle=palette.linestyle(m), label=palette.legend_label(m))
                   for m in methods]
    handles = list(handles) + list(extra)
    gs, legend_ax, height = fig._report_layout
    ncol = max(1, min(len(handles), ncol, _columns_that_fit(fig, handles)))
    rows = math.ceil(len(handles) / ncol) if handles else 0
    strip = 0.1 + 0.24 * rows
    gs.set_height_ratios([height, strip])
    fig.set_size_inches(fig.get_size_inches()[0], height + strip)
    if handles:
        legend_ax.legend(handles=handles, loc="center", ncol=ncol, frameon=False,
                         borderaxespad=0, handlelength=2.6)


def _draw_curves(ax, cells: pd.DataFrame, palette: Palette, xcol: str, ycol: str,
                 xerr: bool) -> list[str]:
    drawn = []
    for method, grp in cells.groupby("method", sort=True):
        grp = grp.sort_values("budget")
        y, yse = grp[f"{ycol}_mean"].to_numpy(float), grp[f"{ycol}_se"].to_numpy(float)
        if xcol == "budget":
            x, xse = grp["budget"].to_numpy(float), np.zeros(len(grp))
        else:
            x, xse = grp[f"{xcol}_mean"].to_numpy(float), grp[f"{xcol}_se"].to_numpy(float)
        keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
        if not keep.any():
            continue
        x, xse, y, yse = x[keep], xse[keep], y[keep], yse[keep]
        ax.errorbar(x, y, yerr=_yerr(y, yse), xerr=_yerr(x, xse) if xerr else None,
                    color=palette.colour(method), marker=palette.marker(method),
                    linestyle=palette.linestyle(method), markersize=5, linewidth=1.6,
                    capsize=2.5, elinewidth=1, label=palette.legend_label(method))
        drawn.append(method)
    return drawn


def _floor(ax, data: ReportData, problem: str, column: str):
    """Shade errors below the comparison's own precision; returns a legend handle or None."""
    floor, what = precision_floor(data, problem, column)
    if not (floor > 0 and math.isfinite(floor)):
        return None
    ax.axhspan(floor * 1e-6, floor, color="#bbbbbb", alpha=0.35, zorder=0, linewidth=0)
    ax.axhline(floor, color="#777777", linewidth=0.9, linestyle=":", zorder=1)
    from matplotlib.patches import Patch

    unit = METRICS[column].unit
    unit = "" if unit == "probability" else (" %" if unit == "%" else f" {unit}")
    return Patch(facecolor="#bbbbbb", alpha=0.5, label=f"at {what} (< 2 SE = {floor:.2g}{unit})")


def _clip_floor_band(ax, cells, column) -> None:
    """Keep the y range on the data, not on the shaded band's far end."""
    vals = cells[f"{column}_mean"].to_numpy(float)
    vals = vals[np.isfinite(vals) & (vals > 0)]
    if len(vals):
        lo, hi = ax.get_ylim()
        ax.set_ylim(max(lo, vals.min() / 5), hi)


def _panels(data: ReportData, problem: str) -> list[str]:
    prob_metric, lz_metric = problem_metrics(data, problem)
    return [c for c in (prob_metric, lz_metric) if c]


def _budget_label(cells: pd.DataFrame) -> str:
    units = sorted(set(cells["budget_unit"]))
    if len(units) == 1:
        return f"budget ({units[0]}, log scale)"
    return "budget (each method's own unit; log scale)"


def _error_panels(data: ReportData, problem: str, palette: Palette, xcol: str, xerr: bool,
                  xlabel, against: str):
    """One panel per error metric of the problem, error (log) against `xcol` (log), one
    curve per method; returns (figure, metric columns) or None when there is no metric."""
    cols = _panels(data, problem)
    cells = data.cells[data.cells["problem"] == problem]
    if not cols:
        return None
    fig, axes = _new(len(cols))
    methods, extra = set(), []
    for ax, col in zip(axes, cols, strict=True):
        sub = cells[cells[f"{col}_n"] > 0]
        methods.update(_draw_curves(ax, sub, palette, xcol, col, xerr=xerr))
        _log_axis(ax, "x")
        _log_axis(ax, "y")
        band = _floor(ax, data, problem, col)
        if band is not None:
            extra = [band]
            _clip_floor_band(ax, sub, col)
        ax.set_xlabel(xlabel(sub if len(sub) else cells))
        ax.set_ylabel(METRICS[col].label)
        ax.set_title(f"{METRICS[col].name} against {against}")
    _legend(fig, palette, sorted(methods), extra)
    return fig, cols


def time_error(data: ReportData, problem: str,
               palette: Palette | None = None) -> FigureSpec | None:
    """CPU time against the error of the test probabilities and of log Z (paper Figs 1–2)."""
    palette = palette_of(data, palette)
    drawn = _error_panels(data, problem, palette, "cpu_seconds", True,
                          lambda _: "CPU seconds per run (log scale)", "CPU time")
    if drawn is None:
        return None
    fig, cols = drawn
    return FigureSpec(
        key=f"time-error-{_slug(problem)}", section=problem,
        title="Error against CPU time",
        caption=("Mean over replicates ± 1 SE (both axes), one point per budget; "
                 "lower and further left is better. " + _against(cols)),
        figure=fig)


def error_budget(data: ReportData, problem: str,
                 palette: Palette | None = None) -> FigureSpec | None:
    """Budget against the error of the test probabilities and of log Z."""
    palette = palette_of(data, palette)
    drawn = _error_panels(data, problem, palette, "budget", False, _budget_label, "budget")
    if drawn is None:
        return None
    fig, cols = drawn
    return FigureSpec(
        key=f"error-budget-{_slug(problem)}", section=problem, title="Error against budget",
        caption="Mean over replicates ± 1 SE. A Monte Carlo method's error falls like "
                "budget^-1/2 once past its burn-in. " + _against(cols),
        figure=fig)


def cpu_budget(data: ReportData, problem: str,
               palette: Palette | None = None) -> FigureSpec | None:
    """Budget against CPU seconds."""
    palette = palette_of(data, palette)
    cells = data.cells[(data.cells["problem"] == problem) & (data.cells["cpu_seconds_n"] > 0)]
    if not len(cells):
        return None
    fig, (ax,) = _new(1, width_per=5.6)
    methods = _draw_curves(ax, cells, palette, "budget", "cpu_seconds", xerr=False)
    _log_axis(ax, "x")
    _log_axis(ax, "y")
    ax.set_xlabel(_budget_label(cells))
    ax.set_ylabel("CPU seconds per run (log scale)")
    ax.set_title("Cost against budget")
    _legend(fig, palette, sorted(methods))
    return FigureSpec(key=f"cpu-budget-{_slug(problem)}", section=problem,
                      title="CPU time against budget",
                      caption="Mean thread CPU seconds over successful replicates ± 1 SE "
                              "(BLAS limited to one thread).",
                      figure=fig)


def _against(cols) -> str:
    kinds = {METRICS[c].against for c in cols}
    if kinds == {"consensus"}:
        return ("This problem has no exact truth: errors are against the consensus (median "
                "over the exact methods with an unbiased Ẑ, each once, at their largest "
                "budgets).")
    return ""


def _slug(text: str) -> str:
    out = "".join(ch if ch.isalnum() else "-" for ch in text.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")[:80] or "x"


def problem_figures(data: ReportData, problem: str,
                    palette: Palette | None = None) -> list[FigureSpec]:
    """A problem's figures: error against CPU time (the summary's), against budget, cost."""
    palette = palette_of(data, palette)
    with style_context():
        specs = [make(data, problem, palette) for make in (time_error, error_budget, cpu_budget)]
    return [s for s in specs if s is not None]


def all_figures(data: ReportData, palette: Palette | None = None) -> list[FigureSpec]:
    """Every per-problem figure of the report, in reading order (the cost against N of a family
    of problems is harness.report.scaling_figures)."""
    return [spec for problem in data.problems if (data.jobs["problem"] == problem).any()
            for spec in problem_figures(data, problem, palette)]


def close(specs: list[FigureSpec]) -> None:
    for s in specs:
        plt.close(s.figure)
