"""Tables on a PDF page (harness.report.pdf): sized to fit the page's width, drawn with
matplotlib's table, method names in ink beside a swatch of their colour.

A table is fitted by shrinking its font down to MIN_SIZE, then by wrapping its cells more
narrowly (WRAPS); a table still too wide is split into parts of columns, each repeating the
first column (`fit`), so that no column is ever cut off at the page's edge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.patches import Rectangle

from harness.report.tables import Cell, Table

MIN_SIZE = 4.5         # points: the smallest font a table is set in
WRAPS = (46, 34, 24, 16)   # characters per line inside a cell, tried in turn
HEADER_WRAP = 20
CHAR_W = 0.56          # average character width of running text, in units of the font size
LINE_H = 1.42          # line height, in units of the font size
PAD = 0.04             # matplotlib's cell padding, a share of the cell's width on each side
SWATCH = "   "         # room left for a swatch before a method's name
INK, BAD, FLOOR = "#1d2329", "#b3261e", "#6b7280"


BREAK_AFTER = re.compile(r"(?<=[,:;/\])])(?=\S)")   # where a long word may break


def _pieces(word: str, width: int) -> list[str]:
    """A word longer than `width` split after its commas, colons, slashes and closing brackets
    (a spec at its parameters), any piece still too long at `width`; else the word."""
    if len(word) <= width:
        return [word]
    return [p[i:i + width] for p in BREAK_AFTER.split(word) for i in range(0, len(p), width)]


def wrap(text: str, width: int) -> str:
    """Each line of `text` wrapped at `width` characters: at spaces, and inside a longer word
    after its punctuation (`_pieces`), so a long spec wraps within its column."""
    lines = []
    for line in text.split("\n"):
        if len(line) <= width:
            lines.append(line)
            continue
        current = ""
        for piece, spaced in _joined(line, width):
            glue = " " if spaced and current else ""
            if current and len(current) + len(glue) + len(piece) > width:
                lines.append(current)
                current, glue = "", ""
            current += glue + piece
        lines.append(current)
    return "\n".join(lines)


def _joined(line: str, width: int) -> list[tuple[str, bool]]:
    """(piece, whether a space precedes it) of a line, in order."""
    out = []
    for k, word in enumerate(line.split(" ")):
        for j, piece in enumerate(_pieces(word, width)):
            out.append((piece, k > 0 and j == 0))
    return out


def cell_text(table: Table, cell: Cell) -> str:
    """What the PDF shows: the text (after room for a swatch), and the secondary text (an SE,
    statuses) after it, or on lines of its own in a table that wraps."""
    text = (SWATCH if cell.colour else "") + cell.text
    if not cell.sub:
        return text
    return f"{text}\n{cell.sub}" if table.wrap else f"{text} {cell.sub}"


@dataclass
class Layout:
    size: float                    # font size, points
    widths: list[float]            # column widths, inches
    header: list[str]
    body: list[list[str]]
    pad: float                     # extra height of a row, in lines

    def height(self, cells: list[str]) -> float:
        return (max(c.count("\n") + 1 for c in cells) + self.pad) * self.size * LINE_H / 72


@lru_cache(maxsize=4096)
def _advance(char: str, bold: bool) -> float:
    """The advance width of one character in the report's sans-serif font, in font sizes."""
    font = get_font(findfont(FontProperties(weight="bold" if bold else "normal")))
    font.set_size(100, 72)
    try:
        return font.load_char(ord(char)).linearHoriAdvance / 65536 / 100
    except (RuntimeError, ValueError):   # a character the font lacks: a wide one
        return 1.0


def text_width(text: str, bold: bool = False) -> float:
    """The widest line of `text`, in font sizes (no kerning: a hair wide, never narrow)."""
    return max(sum(_advance(c, bold) for c in line) for line in text.split("\n"))


def _ems(table: Table, header: list[str], body: list[list[str]]) -> list[float]:
    """Each column's width in font sizes: its widest text (bold where drawn bold) over the
    share of the cell that matplotlib leaves it (1 − 2 × PAD), and a little air."""
    return [max([text_width(header[j], True)]
                + [text_width(r[j], "bad" in src[j].cls) for r, src in zip(body, table.rows,
                                                                            strict=True)])
            / (1 - 2 * PAD) + 0.4
            for j in range(len(header))]


def layout(table: Table, width: float, max_size: float = 8.0,
           pad: float = 0.55) -> Layout | None:
    """The largest font (≤ max_size) and the widest wrap at which the table fits `width`
    inches; None if it does not fit at MIN_SIZE and the narrowest wrap."""
    for limit in WRAPS:
        header = [wrap(c, min(HEADER_WRAP, limit)) for c in table.columns]
        body = [[wrap(cell_text(table, c), limit) for c in row] for row in table.rows]
        ems = _ems(table, header, body)
        size = min(max_size, width * 72 / sum(ems))
        if size >= MIN_SIZE:
            return Layout(size, [e * size / 72 for e in ems], header, body, pad)
    return None


def fit(table: Table, width: float, max_size: float = 8.0,
        pad: float = 0.55) -> list[tuple[Table, Layout]]:
    """The table and its layout, or its parts of columns (each with the first column) that
    fit `width` at MIN_SIZE, titled '(columns a–b of n)'."""
    whole = layout(table, width, max_size, pad)
    if whole is not None:
        return [(table, whole)]
    n = len(table.columns)
    parts, start = [], 1
    while start < n:
        stop = start + 1
        while stop < n and layout(_columns(table, [0, *range(start, stop + 1)]), width) \
                is not None:
            stop += 1
        part = _columns(table, [0, *range(start, stop)])
        part.title = f"{table.title} (columns {start + 1}–{stop} of {n})"
        parts.append((part, layout(part, width, max_size, pad) or _forced(part, width, pad)))
        start = stop
    return parts


def _columns(table: Table, keep: list[int]) -> Table:
    return replace(table, columns=[table.columns[j] for j in keep],
                   rows=[[row[j] for j in keep] for row in table.rows])


def _forced(table: Table, width: float, pad: float) -> Layout:
    """Two columns that do not fit even alone: the narrowest wrap at MIN_SIZE, scaled to the
    width (the text may then touch its cell's edges, but nothing leaves the page)."""
    header = [wrap(c, WRAPS[-1]) for c in table.columns]
    body = [[wrap(cell_text(table, c), WRAPS[-1]) for c in row] for row in table.rows]
    ems = _ems(table, header, body)
    return Layout(MIN_SIZE, [width * e / sum(ems) for e in ems], header, body, pad)


def draw(fig, table: Table, lay: Layout, start: int, stop: int, left: float, top: float,
         page: tuple[float, float]) -> float:
    """Rows start..stop of the table with its header, top-left at (left, top) inches from the
    page's top-left corner; returns the height drawn, inches."""
    rows = lay.body[start:stop]
    heights = [lay.height(lay.header)] + [lay.height(r) for r in rows]
    total_h, total_w = sum(heights), sum(lay.widths)
    ax = fig.add_axes((left / page[0], 1 - (top + total_h) / page[1], total_w / page[0],
                       total_h / page[1]))
    ax.axis("off")
    tab = ax.table(cellText=rows, colLabels=lay.header, cellLoc="left", colLoc="left",
                   colWidths=[w / total_w for w in lay.widths], bbox=(0, 0, 1, 1))
    tab.auto_set_font_size(False)
    tab.set_fontsize(lay.size)
    tops = [1 - sum(heights[:r]) / total_h for r in range(len(heights))]
    for (r, c), cell in tab.get_celld().items():
        cell.set_height(heights[r] / total_h)
        cell.set_edgecolor("#d0d4d8")
        cell.set_linewidth(0.4)
        cell.PAD = PAD
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
        if "num" in src.cls:
            cell.get_text().set_horizontalalignment("right")
            cell._loc = "right"
        cell.set_text_props(**props)
        if src.colour:
            _swatch(ax, src.colour, lay, tops[r], heights[r] / total_h, total_w, total_h,
                    sum(lay.widths[:c]) / total_w + PAD * lay.widths[c] / total_w,
                    lay.body[start + r - 1][c].count("\n") + 1)
    return total_h


def _swatch(ax, colour: str, lay: Layout, top: float, height: float, total_w: float,
            total_h: float, x: float, lines: int) -> None:
    """A square of the method's colour where the cell's first line begins (the cell's text is
    centred vertically, `lines` lines of 1.2 font sizes)."""
    side = 0.62 * lay.size / 72                     # inches
    line = 1.2 * lay.size / 72
    centre = top - height / 2 + (lines - 1) / 2 * line / total_h
    ax.add_patch(Rectangle((x, centre - side / 2 / total_h), side / total_w, side / total_h,
                           facecolor=colour, edgecolor="none", transform=ax.transAxes,
                           clip_on=False, zorder=5))
