"""The report's palette: one colour, marker and line style per method of a store, the same in
every figure and table of its report (approximations dashed)."""

from __future__ import annotations

from harness.analysis.aggregate import ReportData
from harness.report import tuning
from harness.report.style import Palette


def palette_for(data: ReportData) -> Palette:
    """The report's palette: every method of the store, approximations dashed."""
    return Palette(sorted(set(data.methods) | tuning.methods(data)),
                   [m for m in data.methods if not data.exact(m)]
                   + sorted(tuning.approximate(data)))
