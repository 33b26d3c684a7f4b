"""The PDF: the same figures and tables as the HTML, through matplotlib's PdfPages.

A4 landscape. Text and tables flow down the page and continue on the next one (a table's
header is repeated); each figure gets a page of its own with its caption. A new part (a
problem, failed jobs, ...) starts a new page only when the current one is at least half full
(`Flow.section_break`), so short tables do not leave near-empty pages behind.
"""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

from harness.report import style  # noqa: F401  (Agg backend)
from harness.report.figures import FigureSpec
from harness.report.style import style_context
from harness.report.tables import Table

import matplotlib.pyplot as plt  # noqa: E402  isort: skip
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402  isort: skip

PAGE = (11.69, 8.27)   # A4 landscape, inches
MARGIN = 0.55          # inches
MAX_CELL = 46          # characters per line inside a table cell before it wraps
CHAR_W = 0.56          # average character width, in units of the font size
LINE_H = 1.42          # line height, in units of the font size
INK, MUTED, BAD, FLOOR = "#1d2329", "#5b6670", "#b3261e", "#6b7280"


class Flow:
    """Blocks of text and tables laid out top to bottom, page after page."""

    def __init__(self, pdf: PdfPages):
        self.pdf = pdf
        self.fig = None
        self.y = 0.0           # inches from the top of the page

    # ---- pages ----
    def _page(self):
        if self.fig is None:
            self.fig = plt.figure(figsize=PAGE)
            self.y = MARGIN
        return self.fig

    def _room(self) -> float:
        return PAGE[1] - MARGIN - self.y

    def new_page(self) -> None:
        if self.fig is not None:
            self.pdf.savefig(self.fig)
            plt.close(self.fig)
        self.fig = None

    def section_break(self, gap: float = 0.3) -> None:
        """A new page if this one is at least half full, else a gap: short parts share pages."""
        if self.fig is not None and self.y < PAGE[1] / 2:
            self.y += gap
        else:
            self.new_page()

    def _ensure(self, height: float) -> None:
        if self.fig is not None and height > self._room():
            self.new_page()
        self._page()

    # ---- blocks ----
    def text(self, text: str, size: float = 9.5, color: str = INK, weight: str = "normal",
             width: int | None = None, mono: bool = False, gap: float = 0.08) -> None:
        chars = width or int((PAGE[0] - 2 * MARGIN) * 72 / (size * CHAR_W))
        lines: list[str] = []
        for para in text.split("\n"):
            lines.extend(textwrap.wrap(para, chars, replace_whitespace=False) or [""])
        line_h = size * LINE_H / 72
        while lines:
            self._ensure(line_h * min(len(lines), 3))
            fit = max(int(self._room() // line_h), 1)
            chunk, lines = lines[:fit], lines[fit:]
            self.fig.text(MARGIN / PAGE[0], 1 - self.y / PAGE[1], "\n".join(chunk), va="top",
                          ha="left", fontsize=size, color=color, weight=weight,
                          family="monospace" if mono else "sans-serif", linespacing=1.3)
            self.y += line_h * len(chunk) + gap
            if lines:
                self.new_page()

    def heading(self, text: str, size: float = 13.5) -> None:
        self._ensure(size * LINE_H / 72 + 1.0)    # keep a heading with what follows
        self.y += 0.06
        self.text(text, size=size, weight="bold", gap=0.1)

    def table(self, table: Table) -> None:
        if not table.rows:
            return
        header = [_wrap(c, 20) for c in table.columns]
        body = [[_wrap(c.text, MAX_CELL) for c in row] for row in table.rows]
        ncol = len(header)
        def longest(text: str, bold: bool) -> float:
            return max(len(s) for s in text.split("\n")) * (1.12 if bold else 1.0)

        chars = [max([longest(header[j], True)]
                     + [longest(r[j], bool(src[j].colour) or "bad" in src[j].cls)
                        for r, src in zip(body, table.rows, strict=True)]) + 2
                 for j in range(ncol)]
        avail = PAGE[0] - 2 * MARGIN
        size = max(4.5, min(8.0, avail * 72 / (sum(chars) * CHAR_W)))
        widths = [c * size * CHAR_W / 72 for c in chars]          # inches
        line_h = size * LINE_H / 72

        def height(cells):
            return (max(c.count("\n") + 1 for c in cells) + 0.55) * line_h

        hh = height(header)
        start = 0
        while start < len(body):
            self._ensure(hh + height(body[start]) + 0.05)
            room, stop, used = self._room(), start, hh
            while stop < len(body) and used + height(body[stop]) <= room:
                used += height(body[stop])
                stop += 1
            stop = max(stop, start + 1)
            self._draw_table(table, header, body, start, stop, widths, size, hh, height)
            start = stop
            if start < len(body):
                self.new_page()
                self.text(f"{table.title} (continued)", size=9, color=MUTED, weight="bold")
        if table.caption:
            self.text(table.caption, size=7.5, color=MUTED, gap=0.18)
        else:
            self.y += 0.12

    def _draw_table(self, table, header, body, start, stop, widths, size, hh, height):
        rows = body[start:stop]
        heights = [hh] + [height(r) for r in rows]
        total_h, total_w = sum(heights), sum(widths)
        fig = self._page()
        ax = fig.add_axes((MARGIN / PAGE[0], 1 - (self.y + total_h) / PAGE[1],
                           total_w / PAGE[0], total_h / PAGE[1]))
        ax.axis("off")
        tab = ax.table(cellText=rows, colLabels=header, cellLoc="left", colLoc="left",
                       colWidths=[w / total_w for w in widths], bbox=(0, 0, 1, 1))
        tab.auto_set_font_size(False)
        tab.set_fontsize(size)
        for (r, c), cell in tab.get_celld().items():
            cell.set_height(heights[r] / total_h)
            cell.set_edgecolor("#d0d4d8")
            cell.set_linewidth(0.4)
            cell.PAD = 0.04
            if r == 0:
                cell.set_facecolor("#eef1f4")
                cell.set_text_props(weight="bold", color=INK)
                continue
            src = table.rows[start + r - 1][c]
            props = {"color": INK}
            if "bad" in src.cls:
                props = {"color": BAD, "weight": "bold"}
            elif "floor" in src.cls:
                props = {"color": FLOOR, "style": "italic"}
            if src.colour:
                props = {"color": src.colour, "weight": "bold"}
            if "num" in src.cls:
                cell.get_text().set_horizontalalignment("right")
                cell._loc = "right"
            cell.set_text_props(**props)
        self.y += total_h + 0.04

    def figure(self, spec: FigureSpec) -> None:
        """A figure on a page of its own, titled and captioned."""
        self.new_page()
        fig = spec.figure
        head = f"{spec.section}: {spec.title}" if spec.section else spec.title
        w, h = fig.get_size_inches()
        lines = textwrap.wrap(spec.caption, int(w * 72 / (7.5 * CHAR_W)) - 4)
        extra = len(lines) * 7.5 * LINE_H / 72 + 0.25     # a strip below the plot, inches
        engine = fig.get_layout_engine()
        title = fig.suptitle(head, fontsize=11, weight="bold")
        fig.set_size_inches(w, h + extra)
        engine.set(rect=(0, extra / (h + extra), 1, h / (h + extra)))
        txt = fig.text(0.02, (extra - 0.12) / (h + extra), "\n".join(lines), fontsize=7.5,
                       color=MUTED, va="top", linespacing=1.3)
        self.pdf.savefig(fig)
        txt.remove()
        title.set_text("")
        engine.set(rect=(0, 0, 1, 1))
        fig.set_size_inches(w, h)

    def close(self) -> None:
        self.new_page()


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width)) if len(text) > width else text


def _section(flow: Flow, s: dict, size: float) -> None:
    """One section (a problem's, or a problem's tuning): facts, tables, then figures."""
    flow.heading(s["name"], size=size)
    for k, v in s["facts"]:
        flow.text(f"{k}: {v}", size=9, gap=0.02)
    flow.y += 0.1
    for t in s["tables"]:
        flow.heading(t.title, size=11)
        flow.table(t)
    for spec in s["figure_specs"]:
        flow.figure(spec)


def _sections(flow: Flow, sections: list[dict], title: str) -> None:
    """A headed part of the report, one section after the other (each from a new page)."""
    if not sections:
        return
    flow.section_break()
    flow.heading(title, size=15)
    for i, s in enumerate(sections):
        if i:
            flow.section_break()
        _section(flow, s, 13)


def _calibration(flow: Flow, cal: dict | None) -> None:
    """The calibration section: heading, text and table, and its figure. After a page that is
    less than half full the text comes first (the figure's page would leave that page short);
    otherwise the figure comes first and the text starts the page the rest of the report
    continues."""
    if not cal:
        return

    def text() -> None:
        flow.heading("Calibration of the standard errors", size=15)
        flow.text("Status ok promises that the error bars cover the error. Every method's "
                  "z = (estimate − truth) / SE, over its jobs on problems with exact truth or a "
                  "reference, is compared with the standard normal: which methods' error bars "
                  "can be believed.", size=9)
        if cal["flagged"]:
            flow.text("Standard errors too small for " + ", ".join(cal["flagged"]) + ": their "
                      "ok runs miss the truth by more than 3 SEs too often.", size=9.5,
                      weight="bold", color=BAD)
        flow.table(cal["table"])

    if flow.fig is not None and flow.y < PAGE[1] / 2:
        flow.y += 0.3
        text()
        for spec in cal["figure_specs"]:
            flow.figure(spec)
    else:
        for spec in cal["figure_specs"]:
            flow.figure(spec)
        text()


def write_pdf(path: Path, context: dict, figure_specs: list[FigureSpec]) -> Path:
    """Title and summary, the best-method table, per problem its facts, tables and figures,
    then the cross-problem figures and tables, failed jobs, environment and sweep file."""
    with style_context(), PdfPages(path) as pdf:
        flow = Flow(pdf)
        flow.text(context["title"], size=20, weight="bold", gap=0.05)
        flow.text(f"Generated {context['generated']} from {context['store_path']} · "
                  f"gpc-harness {context['version']}", size=9, color=MUTED, gap=0.2)
        flow.text(f"{len(context['problems'])} problems, {context['n_methods']} methods, "
                  f"{context['n_jobs']} jobs: {context['n_ok']} succeeded, "
                  f"{context['n_bad']} did not"
                  + (f" ({context['bad_breakdown']}; listed under 'Failed jobs')"
                     if context["n_bad"] else "")
                  + (f", {context['n_unreliable']} unreliable (listed under 'Unreliable "
                     "estimates')" if context.get("n_unreliable") else "") + "."
                  + (f" {context['n_tune_jobs']} tuning jobs." if context["n_tune_jobs"] else ""),
                  size=10.5, weight="bold",
                  color=BAD if context["n_bad"] or context.get("n_unreliable") else INK)
        for note in context["notes"]:
            flow.text(note, size=9)
        flow.text("Errors are means over successful replicates with standard errors in "
                  "brackets. An error below twice the standard error of the value it is "
                  "compared with (a reference truth, or the consensus) is shown as 'at "
                  "reference precision' / 'at consensus precision'.", size=8.5, color=MUTED,
                  gap=0.15)
        if context.get("reproduction"):
            flow.heading("Reproduction of the paper", size=15)
            for t in context["reproduction"]:
                flow.heading(t.title, size=11)
                flow.table(t)
            flow.section_break()
        if context["methods_table"].rows:
            flow.heading("Methods")
            flow.table(context["methods_table"])
        if context["best_table"].rows:
            flow.heading(context["best_table"].title)
            flow.table(context["best_table"])
        for p in context["problems"]:
            flow.section_break()
            _section(flow, p, 15)
        _sections(flow, context.get("scale", []), "Cost against N")
        _sections(flow, context["tuning"], "Hyperparameter tuning")
        if context["cross_figure_specs"] or context["paper_tables"]:
            flow.section_break()
            flow.heading("Across problems", size=15)
            for t in context["paper_tables"]:
                flow.heading(t.title, size=11)
                flow.table(t)
            for spec in context["cross_figure_specs"]:
                flow.figure(spec)
        _calibration(flow, context.get("calibration"))
        flow.section_break()
        if context.get("n_unreliable"):
            flow.heading("Unreliable estimates", size=15)
            flow.table(context["unreliable_table"])
        flow.heading("Failed jobs", size=15)
        if context["n_bad"]:
            flow.table(context["failures_table"])
        elif context.get("n_unreliable"):
            flow.text("None.")
        else:
            flow.text(f"None: all {context['n_jobs']} jobs succeeded." if context["n_jobs"]
                      else "No estimate jobs." if context["n_tune_jobs"] else "No jobs yet.")
        if context["n_bad"] or context.get("n_unreliable"):
            flow.heading("Jobs by status", size=11)
            flow.table(context["status_table"])
        if context["tune_failures"].rows:
            flow.heading(context["tune_failures"].title, size=11)
            flow.table(context["tune_failures"])
        flow.heading("Environment", size=15)
        if context["environment"]:
            for k, v in context["environment"]:
                flow.text(f"{k}: {v}", size=8.5, gap=0.01)
        else:
            flow.text("The store records no environment.", color=MUTED)
        for name, text in context["sweep_files"]:
            flow.section_break()
            flow.heading(f"Sweep file{': ' + name if name else ''}", size=15)
            flow.text(text, size=7.5, mono=True, width=150)
        if not context["sweep_files"]:
            flow.heading("Sweep file", size=15)
            flow.text("The store records no sweep file.", color=MUTED)
        flow.close()
        info = pdf.infodict()
        info["Title"] = context["title"]
        info["Creator"] = "gpc-harness report"
        info["CreationDate"] = datetime.now(UTC)
    return path
