"""How the report looks (harness.report.style, colours, figures, pdf_tables): distinct
colour-blind-safe colours for every method, plugins included; tick labels that never run into each
other; PDF tables that fit the page, with method names in ink beside a swatch; no repeated rows in
the best-method table."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.patches import Rectangle
from store_helpers import TRUE_LZ, make_store, record, summary

from harness.plugins.registry import PEERS, methods
from harness.report import colours, pdf, tables
from harness.report.figures import _log_axis, _new, sublabels
from harness.report.pdf_tables import INK
from harness.report.style import KNOWN, Palette, style_context
from harness.report.tables import Cell, Table

PLUGINS = ["shifted-is", "mine", "sov[points=lattice]", "zzz", "a-plugin", "other", "x1", "x2"]


def test_every_registered_method_has_a_fixed_colour():
    assert set(methods()) | set(PEERS) <= set(KNOWN)   # the optional peers too


def test_series_differ_by_colour_and_marker_for_colour_blind_readers_too():
    """Sixteen series once shared navy, indigo and three blues. Every registered method, a
    setting variant and eight plugins: no two share both colour and marker; any two colours
    differ by ΔE >= 15 under normal, deuteranopic and protanopic vision, each visible on white;
    a variant keeps its method's colour (another marker); approximations are dashed."""
    labels = [*KNOWN, "sir[proposal=tilted]", *PLUGINS]
    palette = Palette(labels, approximate=["laplace", "ep"])
    pairs = [(palette.colour(m), palette.marker(m)) for m in palette.labels]
    assert len(set(pairs)) == len(pairs) == len(set(labels))
    used = sorted({c for c, _ in pairs})
    assert min(colours.distance(a, b) for a, b in itertools.combinations(used, 2)) >= 15
    assert all(colours.contrast(c) >= colours.MIN_CONTRAST for c in used)
    assert palette.colour("sir[proposal=tilted]") == palette.colour("sir")
    assert palette.marker("sir[proposal=tilted]") != palette.marker("sir")
    assert palette.linestyle("laplace") == "--" and palette.linestyle("sov") == "-"
    assert Palette(["zzz", *KNOWN]).colour("zzz") == Palette([*KNOWN, "zzz"]).colour("zzz")


def test_every_figure_tells_its_series_apart(tmp_path):
    """In the figures of a store with sixteen methods, no two series of one plot share both
    colour and marker."""
    from harness.report import figures

    names = sorted(KNOWN)
    recs = [record(f"{m}-{b}", "p1", m, b, log_z=TRUE_LZ + 0.1 / b, probs=[0.3, 0.7])
            for m in names for b in (100, 1000)]
    data = make_store(tmp_path / "s.sqlite", recs, [summary("p1")])
    for spec in figures.all_figures(data):
        most = 0
        for ax in spec.figure.axes:
            seen = [(line.get_color(), line.get_marker()) for line in ax.get_lines()
                    if line.get_marker() not in (None, "None", "", " ", "|", "_")]  # not caps
            assert len(seen) == len(set(seen)), (spec.key, seen)
            most = max(most, len(seen))
        assert most == len(names), spec.key    # every method drawn
        plt.close(spec.figure)


def test_colour_distance_knows_the_deficiencies():
    # tab10's red and green: far apart for most readers, close for a deuteranope
    lab = colours.appearance(["#d62728", "#2ca02c"])
    assert colours.distance("#d62728", "#2ca02c") < 25 < np.linalg.norm(lab[0, 0] - lab[1, 0])
    assert colours.distance("#123456", "#123456") == 0


SPANS = [(lo, lo * 10 ** d) for lo in (1e-3, 0.0021) for d in (0.35, 0.7, 1.3, 1.6, 1.9, 2.5)]


def _overlaps(ax) -> list[tuple[str, str]]:
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    lo, hi = sorted(ax.get_xlim())
    labels = [(t.label1.get_window_extent(renderer), t.label1.get_text())
              for t in ax.xaxis.get_major_ticks() + ax.xaxis.get_minor_ticks()
              if t.label1.get_visible() and t.label1.get_text() and lo <= t.get_loc() <= hi]
    labels.sort(key=lambda b: b[0].x0)
    return [(a[1], b[1]) for a, b in zip(labels, labels[1:], strict=False)
            if a[0].x1 > b[0].x0 - 2]


def test_log_tick_labels_do_not_run_into_each_other():
    """Once '0.0030.004' on an axis of about two decades with one decade tick in view."""
    bad = []
    with style_context():
        fig, (ax,) = _new(1)            # the report's narrowest panel: 4.9 inches
        ax.plot([1e-4, 1e3], [1, 2])
        _log_axis(ax, "x")
        for lo, hi in SPANS:
            ax.set_xlim(lo, hi)
            if found := _overlaps(ax):
                bad.append((lo, hi, found))
        plt.close(fig)
    assert not bad, bad[:5]


def test_sublabels_thin_out_with_the_span():
    assert sublabels(0.2) == set(range(1, 10))
    assert sublabels(1.0) == {1, 2, 5} and sublabels(2.5) == {1, 3} and sublabels(4) == {1}


def _spy_pages(monkeypatch):
    pages = []
    monkeypatch.setattr(PdfPages, "savefig", lambda self, figure=None, **kw: pages.append(figure))
    return pages


def test_pdf_tables_fit_the_page_and_draw_names_in_ink(tmp_path, monkeypatch):
    """A table far wider than the page is split into parts of columns (each with the first
    column) instead of running off the page; a method's name is ink beside a swatch of its
    colour (hmc's olive on white was unreadable as text)."""
    wide = Table("w", "wide", ["problem"] + [f"method {i}: MAE-MED" for i in range(30)],
                 [[Cell("onefactor:dmax=0.999,dmin=0.95,n=100,random_signs=True,seed=20")]
                  + [Cell("0.000123", "num", sub="(4.5e-05)") for _ in range(30)]
                  for _ in range(3)])
    names = Table("m", "methods", ["method"], [[Cell("hmc", "method", "#999933")]])
    pages = _spy_pages(monkeypatch)
    with PdfPages(tmp_path / "t.pdf") as out:
        flow = pdf.Flow(out)
        flow.table(wide)
        flow.table(names)
        flow.close()
    axes = [ax for page in pages for ax in page.axes if ax.tables]
    assert len(axes) >= 3                                  # the wide table came in parts
    for ax in axes:
        left, _, width, _ = ax.get_position().bounds
        assert left >= 0 and (left + width) * pdf.PAGE[0] <= pdf.PAGE[0] - pdf.MARGIN + 1e-6
        first = [c.get_text().get_text() for (r, c_), c in ax.tables[0].get_celld().items()
                 if c_ == 0]
        assert any("onefactor" in t for t in first) or "method" in first
    for page in pages:                                     # no text runs out of its cell
        FigureCanvasAgg(page).draw()
        renderer = page.canvas.get_renderer()
        for ax in page.axes:
            for cell in ax.tables[0].get_celld().values() if ax.tables else []:
                box, text = cell.get_window_extent(renderer), cell.get_text()
                inner = text.get_window_extent(renderer)
                assert box.x0 <= inner.x0 and inner.x1 <= box.x1, text.get_text()
    (hmc,) = [c for ax in axes for (r, _), c in ax.tables[0].get_celld().items()
              if r and "hmc" in c.get_text().get_text()]
    assert hmc.get_text().get_color() == INK
    swatches = [p for ax in axes for p in ax.patches if isinstance(p, Rectangle)
                and p.get_facecolor()[:3] == pytest.approx((0x99 / 255, 0x99 / 255, 0x33 / 255))]
    assert len(swatches) == 1


def test_best_table_has_no_repeated_rows(tmp_path):
    """The best-method table once gave the same row twice (CPU-time levels with the same
    answer); it now has one row per problem and accuracy target (the verdict's definition)."""
    recs = []
    for i in range(3):
        recs.append(record(f"A-{i}", "P", "A", 100, i, log_z=TRUE_LZ - 0.01, cpu=1.0 + 1e-3 * i))
        recs.append(record(f"B-{i}", "P", "B", 100, i, log_z=TRUE_LZ - 0.02, cpu=1.0 + 1e-3 * i))
        recs.append(record(f"B2-{i}", "P", "B", 10, i, log_z=TRUE_LZ - 0.5, cpu=0.1))
    data = make_store(tmp_path / "b.sqlite", recs, [summary("P", probs=None)])
    frame = tables.frame(tables.best_table(data, Palette(data.methods)))
    assert not frame.duplicated().any()
    assert list(frame["target"]) == ["|Δ log Z| ≤ 0.1", "|Δ log Z| ≤ 0.01"]

