"""The report's tuning sections: figures and tables of every tuning group
(harness.report.tuning computes them)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.report import html
from harness.report.tables import Table
from harness.report.tuning import TuneGroup, chain_table, facts, groups, optimum_table
from harness.report.tuning_figures import group_figures


@dataclass
class TuneSection:
    group: TuneGroup
    figures: list                      # figures.FigureSpec
    tables: list[Table]


def sections(data, palette) -> list[TuneSection]:
    """Figures and tables of every tuning group (empty when the store has no tune jobs)."""
    out = []
    for g in groups(data):
        tables = [t for t in (optimum_table(g, palette), chain_table(g, palette)) if t]
        out.append(TuneSection(g, group_figures(g, palette), tables))
    return out


def context(secs: list[TuneSection], svgs: dict[str, bytes]) -> list[dict]:
    """The template's view of the sections (figures as inline SVG)."""
    return [{"name": s.group.problem, "anchor": "tune-" + html.anchor(s.group.problem),
             "facts": facts(s.group), "figure_specs": s.figures,
             "figures": [html.figure_context(f, svgs[f.key]) for f in s.figures],
             "tables": s.tables} for s in secs]
