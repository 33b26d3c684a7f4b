"""The report's "Cost against N" sections: the scaling fits of a series run at several sizes,
with their figures and tables (harness.report.scaling computes them)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.analysis.aggregate import ReportData
from harness.report import html
from harness.report.scaling import (
    Scaling,
    exponent_table,
    facts,
    points_table,
    scaling,
    series,
)
from harness.report.scaling_figures import scale_figures
from harness.report.tables import Table


@dataclass
class ScaleSection:
    scaling: Scaling
    figures: list
    tables: list[Table]


def sections(data: ReportData, palette) -> list[ScaleSection]:
    """One section per series with enough sizes (harness.report.scaling.series; empty
    otherwise)."""
    out = []
    for name in series(data):
        s = scaling(data, name)
        if s is None or not s.fits:
            continue
        out.append(ScaleSection(s, scale_figures(s, palette),
                                [exponent_table(s, palette), points_table(s, palette)]))
    return out


def context(secs: list[ScaleSection], svgs: dict[str, bytes]) -> list[dict]:
    """The template's view of the sections (figures as inline SVG)."""
    return [{"name": f"Cost against N: {s.scaling.family}",
             "anchor": "scale-" + html.anchor(s.scaling.family), "facts": facts(s.scaling),
             "figure_specs": s.figures,
             "figures": [html.figure_context(f, svgs[f.key]) for f in s.figures],
             "tables": s.tables} for s in secs]
