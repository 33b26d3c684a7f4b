"""The PDFs: the same figures and tables as the HTML, through matplotlib's PdfPages: a summary
(report.pdf: the verdict, the calibration, one figure per problem) and an appendix with the rest.

A4 landscape. Text and tables flow down the page and continue on the next one (a table's
header is repeated); each figure gets a page of its own with its caption. A new part (a
problem, failed jobs, ...) starts a new page only when the current one is at least half full
(`Flow.section_break`), so short tables do not leave near-empty pages behind.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from harness.core.progress import advance, phase
from harness.report import (
    dashes,
    pdf_tables,
    style,  # noqa: F401  (Agg backend)
)
from harness.report.figures import FigureSpec
from harness.report.pdf_tables import BAD, CHAR_W, INK, LINE_H
from harness.report.style import style_context
from harness.report.tables import Table

import matplotlib.pyplot as plt  # noqa: E402  isort: skip
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402  isort: skip

PAGE = (11.69, 8.27)   # A4 landscape, inches
MARGIN = 0.55          # inches
MUTED = "#5b6670"
TITLE_STRIP = 0.42     # inches above a figure for its title on its page


class Flow:
    """Blocks of text and tables laid out top to bottom, page after page."""

    def __init__(self, pdf: PdfPages, titles: dict[str, str] | None = None):
        self.pdf = pdf
        self.titles = titles or {}     # problem name -> readable title (figure headings)
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
    @staticmethod
    def _lines(text: str, size: float, width: int | None) -> list[str]:
        chars = width or int((PAGE[0] - 2 * MARGIN) * 72 / (size * CHAR_W))
        lines: list[str] = []
        for para in text.split("\n"):
            lines.extend(textwrap.wrap(para, chars, replace_whitespace=False) or [""])
        return lines

    def text_height(self, text: str, size: float = 9.5, gap: float = 0.08,
                    width: int | None = None) -> float:
        """The height `text` takes (inches), on one page."""
        return len(self._lines(text, size, width)) * size * LINE_H / 72 + gap

    def text(self, text: str, size: float = 9.5, color: str = INK, weight: str = "normal",
             width: int | None = None, mono: bool = False, gap: float = 0.08) -> None:
        lines = self._lines(text, size, width)
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

    def table(self, table: Table, max_size: float = 8.0, pad: float = 0.55,
              caption_size: float = 7.5) -> None:
        """The table across pages (its header repeated), fitted to the page's width
        (harness.report.pdf_tables.fit: several parts of columns if need be)."""
        if not table.rows:
            return
        for part, lay in pdf_tables.fit(table, PAGE[0] - 2 * MARGIN, max_size, pad):
            if part is not table:
                self.text(part.title, size=9, color=MUTED, weight="bold")
            self._rows(part, lay)
        if dashes.legend(table):
            self.text(dashes.legend(table), size=caption_size, color=MUTED, gap=0.18)
        else:
            self.y += 0.12

    def table_height(self, table: Table, max_size: float = 8.0, pad: float = 0.55,
                     caption_size: float = 7.5) -> float:
        """The height `table` takes (inches) if it fits on one page."""
        legend = dashes.legend(table)
        height = self.text_height(legend, caption_size, 0.18) if legend else 0.12
        for part, lay in pdf_tables.fit(table, PAGE[0] - 2 * MARGIN, max_size, pad):
            height += 0.04 + sum(lay.height(r) for r in [lay.header, *lay.body])
            height += self.text_height(part.title, 9) if part is not table else 0
        return height

    def _rows(self, table: Table, lay: pdf_tables.Layout) -> None:
        start, hh = 0, lay.height(lay.header)
        while start < len(lay.body):
            self._ensure(hh + lay.height(lay.body[start]) + 0.05)
            room, stop, used = self._room(), start, hh
            while stop < len(lay.body) and used + lay.height(lay.body[stop]) <= room:
                used += lay.height(lay.body[stop])
                stop += 1
            stop = max(stop, start + 1)
            self.y += pdf_tables.draw(self._page(), table, lay, start, stop, MARGIN, self.y,
                                      PAGE) + 0.04
            start = stop
            if start < len(lay.body):
                self.new_page()
                self.text(f"{table.title} (continued)", size=9, color=MUTED, weight="bold")

    def table_beside(self, table: Table, notes: list[tuple[str, float, str]],
                     max_size: float = 8.0, pad: float = 0.55, draw: bool = True) -> float:
        """A table that fits one page's width whole, with `notes` ((text, size, weight), in
        muted ink after the first) in the column to its right; returns the height taken."""
        lay = pdf_tables.layout(table, PAGE[0] - 2 * MARGIN, max_size, pad)
        if lay is None:                          # too wide to share the page: one after the other
            if draw:
                self.table(table, max_size, pad)
                for text, size, weight in notes:
                    self.text(text, size=size, weight=weight)
            return (self.table_height(table, max_size, pad)
                    + sum(self.text_height(t, z) for t, z, _ in notes))
        height = 0.04 + sum(lay.height(r) for r in [lay.header, *lay.body])
        x = MARGIN + sum(lay.widths) + 0.3
        chars = {z: max(int((PAGE[0] - MARGIN - x) * 72 / (z * CHAR_W)), 30) for _, z, _ in notes}
        side = sum(self.text_height(t, z, 0.08, chars[z]) for t, z, _ in notes)
        if draw:
            self._ensure(max(height, side))
            top, y = self.y, self.y
            pdf_tables.draw(self._page(), table, lay, 0, len(lay.body), MARGIN, top, PAGE)
            for i, (text, size, weight) in enumerate(notes):
                self.fig.text(x / PAGE[0], 1 - y / PAGE[1],
                              "\n".join(self._lines(text, size, chars[size])), va="top",
                              ha="left", fontsize=size, weight=weight,
                              color=MUTED if i else INK, linespacing=1.3)
                y += self.text_height(text, size, 0.08, chars[size])
            self.y = top + max(height, side) + 0.1
        return max(height, side) + 0.1

    def figure(self, spec: FigureSpec) -> None:
        """A figure on a page of its own, titled and captioned."""
        self.new_page()
        fig = spec.figure
        section = self.titles.get(spec.section, spec.section)
        head = f"{section}: {spec.title}" if section else spec.title
        w, h = fig.get_size_inches()
        lines = textwrap.wrap(spec.caption, int(w * 72 / (7.5 * CHAR_W)) - 4)
        extra = len(lines) * 7.5 * LINE_H / 72 + 0.25     # a strip below the plot, inches
        if spec.drawn and not fig.legends:
            self._laid_out(fig, head, "\n".join(lines), extra)
            return
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

    def _laid_out(self, fig, head: str, caption: str, extra: float) -> None:
        """The page of a figure its layout engine has already laid out (its SVG was drawn):
        its axes kept where they are, a title strip added above and the caption's strip below,
        without laying it out a second time (most of a figure page's time)."""
        w, h = fig.get_size_inches()
        full = h + extra + TITLE_STRIP
        boxes = [(ax, ax.get_position()) for ax in fig.axes]
        engine = fig.get_layout_engine()
        fig.set_layout_engine("none")
        fig.set_size_inches(w, full)
        for ax, b in boxes:
            ax.set_position((b.x0, (extra + b.y0 * h) / full, b.width, b.height * h / full))
        texts = [fig.text(0.5, 1 - 0.12 / full, head, ha="center", va="top", fontsize=11,
                          weight="bold"),
                 fig.text(0.02, (extra - 0.12) / full, caption, fontsize=7.5, color=MUTED,
                          va="top", linespacing=1.3)]
        self.pdf.savefig(fig)
        for t in texts:
            t.remove()
        fig.set_size_inches(w, h)
        for ax, b in boxes:
            ax.set_position(b)
        fig.set_layout_engine(engine)

    def close(self) -> None:
        self.new_page()


def _section(flow: Flow, s: dict, size: float) -> None:
    """One section (a problem's, or a problem's tuning): facts, tables, then figures (a
    problem's figure of the summary is not repeated)."""
    flow.heading(s.get("title", s["name"]), size=size)
    if s.get("title", s["name"]) != s["name"]:
        flow.text(s["name"], size=8, color=MUTED, gap=0.1)
    for k, v in s["facts"]:
        flow.text(f"{k}: {v}", size=9, gap=0.02)
    flow.y += 0.1
    for t in s["tables"]:
        flow.heading(t.title, size=11)
        flow.table(t)
    shown = {f.key for f in s.get("summary_figures", [])}
    for spec in s["figure_specs"]:
        if spec.key not in shown:
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
    """The calibration section: heading, text and table, and its figure (the reliability
    rule's table is in the appendix). After a page that is less than half full the text comes
    first (the figure's page would leave that page short); otherwise the figure comes first."""
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


FRONT_SIZES = (7.5, 7.0, 6.5, 6.0, 5.5, 5.0, pdf_tables.MIN_SIZE)   # page one's table fonts
FRONT_PAD = 0.35
FRONT_TOGETHER = 6.0   # the smallest font at which the approximations share page one


def _status(context: dict) -> str:
    return (f"{len(context['problems'])} problems, {context['n_methods']} methods, "
            f"{context['n_jobs']} jobs: {context['n_ok']} ok"
            + (f", {context['n_unreliable']} unreliable" if context.get("n_unreliable") else "")
            + (f", {context['n_bad']} failed ({context['bad_breakdown']})"
               if context["n_bad"] else "") + "."
            + (f" {context['n_tune_jobs']} tuning jobs." if context["n_tune_jobs"] else "")
            + " Details in the appendix.")


def _front(flow: Flow, context: dict) -> None:
    """Page one: title, the jobs' status, the verdict table (with the commands that make its
    uncheckable targets checkable), the leaderboard and the calibration's headline, then the
    approximations table; their fonts the largest of FRONT_SIZES that fits one page."""
    flow.text(context["title"], size=18, weight="bold", gap=0.05)
    flow.text(f"Generated {context['generated']} from {context['store_path']} · "
              f"gpc-harness {context['version']}", size=8.5, color=MUTED, gap=0.12)
    flow.text(_status(context), size=10, weight="bold",
              color=BAD if context["n_bad"] or context.get("n_unreliable") else INK, gap=0.1)
    v = context.get("verdict")
    if v is None:
        flow.text("No method has an error against a truth or a consensus yet: no verdict.",
                  color=MUTED)
        return
    head = "Verdict: the cheapest method to each accuracy target"
    notes = [(v.believe, 8.5, "bold")] if v.believe else []
    notes.append((v.board.caption, 6.5, "normal"))
    board = replace(v.board, caption="")
    approx = v.approximations if v.approximations.rows else None

    def height(z: float, with_approx: bool) -> float:
        return (flow.text_height(head, 13.5, 0.16) + flow.table_height(v.table, z, FRONT_PAD, 6.5)
                + sum(flow.text_height(n, 6.5) for n in v.table.notes)
                + (flow.text_height(board.title, 11, 0.16)
                   + flow.table_beside(board, notes, z, FRONT_PAD, draw=False) if board.rows
                   else sum(flow.text_height(t, z) for t, z, _ in notes))
                + (flow.text_height(approx.title, 11, 0.16)
                   + flow.table_height(approx, z, FRONT_PAD, 6.5) if with_approx else 0.0))

    # all on page one if it fits at a readable size, else the approximations on a page of
    # their own, each page's font the largest that fits it
    together = approx is not None and height(FRONT_TOGETHER, True) <= flow._room()
    size = next((z for z in FRONT_SIZES if height(z, together) <= flow._room()),
                FRONT_SIZES[-1])
    flow.heading(head, size=13.5)
    flow.table(v.table, size, FRONT_PAD, 6.5)
    for note in v.table.notes:         # the commands that make a target checkable
        flow.text(note, size=6.5, mono=note.startswith("["), gap=0.04)
    if board.rows:                     # empty when no method reached any target
        flow.heading(board.title, size=11)
        flow.table_beside(board, notes, size, FRONT_PAD)
    elif v.believe:
        flow.text(v.believe, size=8.5, weight="bold")
    if approx is None:
        return
    if not together:
        flow.new_page()
        room = PAGE[1] - 2 * MARGIN - flow.text_height(approx.title, 13.5, 0.16)
        size = next((z for z in FRONT_SIZES
                     if flow.table_height(approx, z, FRONT_PAD, 6.5) <= room), FRONT_SIZES[-1])
    flow.heading(approx.title, size=11 if together else 13.5)
    flow.table(approx, size, FRONT_PAD, 6.5)


def _notes(flow: Flow, context: dict) -> None:
    """The report's notes and how to read its errors."""
    for note in context["notes"]:
        flow.text(note, size=9)
    flow.text("Errors are means over successful replicates with standard errors in "
              "brackets. An error below twice the standard error of the value it is "
              "compared with (a reference truth, or the consensus) is shown as 'at "
              "reference precision' / 'at consensus precision'.", size=8.5, color=MUTED,
              gap=0.15)


def _overview(flow: Flow, context: dict, appendix: str) -> None:
    """The summary after page one: where the rest is, the calibration, one figure per problem
    (its error against CPU time)."""
    flow.new_page()
    flow.heading("Summary", size=16)
    flow.text(f"This PDF is the summary: the verdict, the leaderboard, the calibration of the "
              f"standard errors and one figure per problem. Everything else (per problem its "
              f"facts, results table and further figures, the paper's tables, unreliable and "
              f"failed jobs, the environment and the sweep file) is in {appendix} beside it, "
              f"and all of it in report.html.", size=9.5, gap=0.15)
    _notes(flow, context)
    _calibration(flow, context.get("calibration"))
    advance()
    for i, p in enumerate(context["problems"], 1):
        with phase(f"problem {i} of {len(context['problems'])}"):
            for spec in p["summary_figures"]:
                flow.figure(spec)
        advance()


def _appendix_intro(flow: Flow, context: dict) -> None:
    """The appendix's first part: title, notes, methods and the best-method table."""
    flow.text(f"Appendix: {context['title']}", size=16, weight="bold", gap=0.05)
    flow.text(f"Generated {context['generated']} from {context['store_path']} · gpc-harness "
              f"{context['version']}. The summary (verdict, leaderboard, calibration, one "
              "figure per problem) is report.pdf.", size=8.5, color=MUTED, gap=0.15)
    flow.text(_status(context), size=10, weight="bold", gap=0.1)
    _notes(flow, context)
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


def _pages(flow: Flow, context: dict, with_figures: bool = True) -> None:
    """Per problem facts, its table and its further figures; cost against N, tuning, the
    cross-problem tables and figures, the reliability rule, failures, environment, sweep."""
    for i, p in enumerate(context["problems"], 1):
        flow.section_break()
        with phase(f"problem {i} of {len(context['problems'])}"):   # beside the bar
            _section(flow, p, 15)
        advance()
    _sections(flow, context.get("scale", []), "Cost against N")
    _sections(flow, context["tuning"], "Hyperparameter tuning")
    advance()
    if context["cross_figure_specs"] or context["paper_tables"]:
        flow.section_break()
        flow.heading("Across problems", size=15)
        for t in context["paper_tables"]:
            flow.heading(t.title, size=11)
            flow.table(t)
        for spec in context["cross_figure_specs"]:
            flow.figure(spec)
    cal = context.get("calibration")
    if cal and cal["rule_table"]:
        flow.section_break()
        flow.heading("Does the reliability rule catch the misses?", size=15)
        flow.table(cal["rule_table"])
    advance()
    _jobs(flow, context)
    advance()
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


def _jobs(flow: Flow, context: dict) -> None:
    """Unreliable estimates, failed jobs, jobs by status and failed tuning jobs."""
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


def _pdf(path: Path, context: dict, fill, title: str, parts: int) -> Path:
    """A PDF at `path`, its pages from fill(flow) (which advances `parts` times: progress), its
    metadata titled `title`."""
    titles = {p["name"]: p["title"] for p in context["problems"]}
    with phase(f"writing {path.name}", total=parts), style_context(), PdfPages(path) as pdf:
        flow = Flow(pdf, titles)
        fill(flow)
        flow.close()
        info = pdf.infodict()
        info["Title"] = title
        info["Creator"] = "gpc-harness report"
        info["CreationDate"] = datetime.now(UTC)
    return path


def write_pdf(path: Path, context: dict, appendix: str = "report-appendix.pdf") -> Path:
    """The summary: page one (`_front`: the verdict, the leaderboard), then the calibration
    and one figure per problem; the rest is in the appendix (`write_appendix`)."""
    def fill(flow: Flow) -> None:
        _front(flow, context)
        advance()
        _overview(flow, context, appendix)
    return _pdf(path, context, fill, context["title"], 2 + len(context["problems"]))


def write_appendix(path: Path, context: dict) -> Path:
    """The appendix: notes, methods, the best-method table; per problem its facts, table and
    further figures; cost against N, tuning, across problems, the reliability rule, failed
    jobs, environment and sweep file."""
    def fill(flow: Flow) -> None:
        _appendix_intro(flow, context)
        advance()
        _pages(flow, context)
        advance()
    return _pdf(path, context, fill, f"Appendix: {context['title']}",
                len(context["problems"]) + 5)
