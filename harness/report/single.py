"""One report figure on its own (harness.plot_time_error): a notebook's view of a store.

The same drawing as the report's time–error panels (harness.report.figures): one curve per
method, mean over replicates ± 1 SE on both axes, the report's palette (built from every
method of the store, so colours match the report) and the band below the reference's own
precision.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.analysis.aggregate import METRICS, ReportData, aggregate, load
from harness.analysis.names import find_problem
from harness.core.errors import InputError
from harness.report.figures import (
    _clip_floor_band,
    _draw_curves,
    _floor,
    _legend,
    _log_axis,
    _new,
)
from harness.report.palette import palette_for

# harness.analysis.results' column -> the report's
_REPORT_NAMES = {"log_marginal_likelihood": "log_z", "log_marginal_likelihood_se": "log_z_se",
                 "test_probabilities": "probabilities"}


def report_data(results_or_store: Any) -> ReportData:
    """ReportData from a store path, a ReportData, or a harness.load_results DataFrame (maybe
    filtered: its rows are drawn; the problems' truth and consensus come from its store)."""
    if isinstance(results_or_store, ReportData):
        return results_or_store
    if not isinstance(results_or_store, pd.DataFrame):
        return load(results_or_store)
    jobs = results_or_store.rename(columns=_REPORT_NAMES)
    store = results_or_store.attrs.get("store")
    full = load(store) if store else ReportData(jobs.iloc[:0], pd.DataFrame(), {}, {}, {},
                                                pd.DataFrame())
    return ReportData(jobs=jobs, cells=aggregate(jobs), problems=full.problems,
                      metadata=full.metadata, consensus=full.consensus,
                      failures=full.failures, store_path=full.store_path,
                      palette=palette_for(full) if store else None)


def _has(data: ReportData, problem: str, against: str) -> bool:
    """Whether the problem has an exact truth or reference ('truth') or a Bayes posterior."""
    summary = data.problems.get(problem, {})
    if against == "truth":
        return bool(summary.get("truth_kind"))
    return summary.get("bayes_posterior") is not None


def time_error(data: ReportData, problem: str, metric: str = "mae", ax=None, palette=None):
    """CPU seconds against `metric` (a column of METRICS) for one problem; returns the figure."""
    if metric not in METRICS:
        raise InputError("metric", f"unknown metric {metric!r}", f"one of: {', '.join(METRICS)}")
    known = sorted(set(data.cells["problem"])) if len(data.cells) else []
    problem = find_problem(problem, known) or problem   # a spec as written finds its name
    cells = data.cells[data.cells["problem"] == problem] if len(data.cells) else data.cells
    if not len(cells):
        raise InputError("problem", f"no job of problem {problem!r} in these results",
                         f"problems: {', '.join(known) or 'none'}")
    cells = cells[cells[f"{metric}_n"] > 0]
    if not len(cells):
        have = [m for m in METRICS if (data.cells[data.cells["problem"] == problem]
                                       [f"{m}_n"] > 0).any()]
        against = METRICS[metric].against
        missing = (against in ("truth", "posterior") and problem in data.problems
                   and not _has(data, problem, against))
        why = (f"{metric!r} is measured against the problem's {against}, which {problem!r} has "
               "not" if missing else f"no successful job of {problem!r} has {metric!r}")
        raise InputError("metric", why, f"metrics there: {', '.join(have) or 'none'}")
    palette = palette or data.palette or palette_for(data)
    if ax is None:
        fig, (ax,) = _new(1, width_per=5.6)
    else:
        fig = ax.figure
    methods = _draw_curves(ax, cells, palette, "cpu_seconds", metric, xerr=True)
    _log_axis(ax, "x")
    _log_axis(ax, "y")
    band = _floor(ax, data, problem, metric)
    if band is not None:
        _clip_floor_band(ax, cells, metric)
    ax.set_xlabel("CPU seconds per run (log scale)")
    ax.set_ylabel(METRICS[metric].label)
    ax.set_title(f"{problem}: {METRICS[metric].name} against CPU time")
    if hasattr(fig, "_report_layout"):
        _legend(fig, palette, sorted(methods), [band] if band is not None else [])
    else:
        ax.legend(fontsize="small", frameon=False)
    return fig
