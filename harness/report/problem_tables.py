"""The report's compact tables: one results table per problem, and the paper's error-by-budget
tables as one table per error measure instead of one per method and family.

`results_table` merges what were three tables of a problem (all results, set-up and estimate
CPU, spread): per method × budget the runs and their statuses, the CPU of one run with its
set-up, log Ẑ and the errors against the truth (against the consensus only when there is none),
each "mean (SE)". `n_grid` and `problem_grid` give the paper's Tables 1–3 as rows of method ×
N (or problem) and a column per budget. Cells with no number say why ("no ok run", "not
estimated"; blank: not run at that budget) instead of a bare "—".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.analysis.aggregate import METRICS, OK, ReportData
from harness.core import metrics
from harness.report import titles
from harness.report.style import fmt, fmt_budget
from harness.report.tables import Cell, Table, error_cell, method_cell, se_cell, table_metrics

LOG_Z_METRICS = ("mape_percent", "abs_log_error", "med_abs_log_error", "med_mape_percent")
NO_OK = "no ok run"
NOT_RUN = ""          # a budget the method has no job at: left blank (said in the caption)


def result_metrics(cells: pd.DataFrame) -> list[str]:
    """The error columns of a problem's table: against the truth (|Δ log Z|, MAE, MAE-POST)
    where it has one, else against the consensus; the MAPE only without |Δ log Z|."""
    cols = table_metrics(cells)
    if "abs_log_error" in cols:
        cols = [c for c in cols if c not in ("mape_percent", "med_abs_log_error",
                                             "med_mape_percent")]
    if "mae" in cols:
        cols = [c for c in cols if c != "mae_med"]
    return cols


def _cost(jobs: pd.DataFrame) -> tuple[Cell, bool]:
    """CPU seconds of one ok run with its set-up: 'mean (SE)', then the set-up's median;
    and whether the store recorded the set-up."""
    cpu = jobs["cpu_seconds"].to_numpy(float)
    setup = jobs["setup_cpu_seconds"].to_numpy(float) if "setup_cpu_seconds" in jobs else \
        np.full(len(cpu), np.nan)
    known = bool(np.isfinite(setup).any())
    total = cpu + np.nan_to_num(setup)
    total = total[np.isfinite(total)]
    if not len(total):
        return Cell("—", "num"), known
    cell = se_cell(float(np.mean(total)), metrics.standard_error(total))
    if known:
        cell.sub = f"{cell.sub} set-up {fmt(float(np.nanmedian(setup)), 2)}".strip()
    return cell, known


def _log_z(jobs: pd.DataFrame) -> Cell:
    lz = jobs["log_z"].to_numpy(float)
    lz = lz[np.isfinite(lz)]
    if not len(lz):
        return Cell("not estimated", "floor")
    return se_cell(float(np.mean(lz)), metrics.standard_error(lz), 6)


def _error(data: ReportData, problem: str, r, col: str) -> Cell:
    mean = r[f"{col}_mean"]
    if r[f"{col}_n"] == 0 or not np.isfinite(float(mean)):
        return Cell("not estimated", "floor")
    return error_cell(data, problem, col, mean, r[f"{col}_se"])


def results_table(data: ReportData, palette, problem: str) -> Table:
    """One row per method × budget of `problem` (module doc)."""
    cells = data.cells[data.cells["problem"] == problem]
    jobs = data.jobs[(data.jobs["problem"] == problem) & (data.jobs["status"] == OK)]
    cols = result_metrics(cells)
    rows, setup_known = [], False
    for _, r in cells.sort_values(["method", "budget"]).iterrows():
        mine = jobs[(jobs["method"] == r["method"]) & (jobs["budget"] == r["budget"])]
        runs = Cell(f"{r['n_ok']} of {r['n_jobs']} ok", "bad num" if r["n_not_ok"] else "num",
                    sub=str(r["statuses"]) if r["n_not_ok"] else "")
        head = [method_cell(data, palette, r["method"]), Cell(fmt_budget(r["budget"]), "num"),
                runs]
        if not r["n_ok"]:
            rows.append(head + [Cell(NO_OK, "floor") for _ in range(2 + len(cols))])
            continue
        cost, known = _cost(mine)
        setup_known |= known
        rows.append(head + [cost, _log_z(mine)] + [_error(data, problem, r, c) for c in cols])
    columns = (["method", "budget", "runs", "CPU s per run, set-up incl. (SE)", "log Ẑ (SE)"]
               + [f"{METRICS[c].name} ({_unit(METRICS[c].unit)}) (SE)" for c in cols])
    against = {METRICS[c].against for c in cols}
    return Table(
        f"results-{problem}", "Results by method and budget", columns, rows, section=problem,
        caption="Mean (standard error) over the ok runs of each method × budget; 'runs' counts "
                "every job, with the statuses of those not ok. CPU: thread CPU seconds of one "
                "run plus its set-up (factorisations, reorderings, saddle points, paid once per "
                "problem and worker), the set-up's median after 'set-up'"
                + ("" if setup_known or not rows else " (this store predates set-up records)")
                + ". Errors against "
                + ("the consensus of the exact methods" if against == {"consensus"}
                   else "the truth") + ". 'no ok run': every job of the cell failed or was "
                "unreliable; 'not estimated': the method gives no such value (e.g. no log Z).")


def _unit(unit: str) -> str:
    return "prob." if unit == "probability" else unit


def _grid_cell(data: ReportData, problem: str | None, column: str, values, ran: bool) -> Cell:
    """Mean (SE) of the ok runs' `values`; 'no ok run' when there are none, blank (NOT_RUN)
    when the method has no job there."""
    if not ran:
        return Cell(NOT_RUN, "floor")
    if values is None:
        return Cell(NO_OK, "floor")
    v = np.asarray(values, float)
    mean, se = float(np.mean(v)), metrics.standard_error(v)
    return error_cell(data, problem, column, mean, se) if problem else se_cell(mean, se)


def _grid(data: ReportData, palette, column: str, by: str, name: str, key: str,
          title: str, caption: str, jobs: pd.DataFrame) -> Table:
    """Rows of method × `by` (a column of jobs), a column per budget."""
    ok = jobs[(jobs["status"] == OK) & np.isfinite(jobs[column].to_numpy(float))]
    values = ok.groupby(["method", by, "budget"])[column].agg(list).to_dict()
    ran = set(zip(jobs["method"], jobs[by], jobs["budget"], strict=True))
    keys = sorted({(m, v) for m, v, _ in values})
    budgets = sorted({int(b) for m, _ in keys for b in jobs[jobs["method"] == m]["budget"]})
    n_problems = jobs.groupby(["method", by])["problem"].nunique().to_dict()
    rows = []
    for method, value in keys:
        label = (Cell(titles.of(data, value), "problem") if by == "problem"
                 else Cell(str(int(value)), "num"))
        extra = [] if by == "problem" else [Cell(str(n_problems[method, value]), "num")]
        rows.append([method_cell(data, palette, method), label, *extra]
                    + [_grid_cell(data, value if by == "problem" else None, column,
                                  values.get((method, value, b)), (method, value, b) in ran)
                       for b in budgets])
    m = METRICS[column]
    heads = ["method", name] + ([] if by == "problem" else ["problems"])
    return Table(key, title.format(name=f"{m.name} ({m.unit})"),
                 heads + [f"budget {fmt_budget(b)}" for b in budgets], rows,
                 caption=caption + " Budgets are in each method's own unit (particles, "
                 "samples, ...). Blank: the method has no job at this budget; 'no ok run': none "
                 "of its jobs there was ok.")


def n_grid(data: ReportData, palette, column: str = "mape_percent") -> list[Table]:
    """The paper's Table 1 for every family at once: the error by method × N × budget, pooled
    over the problems of a family with the same N (only families of two or more problems)."""
    fams = data.jobs.groupby("family")["problem"].nunique()
    jobs = data.jobs[data.jobs["family"].isin(fams[fams >= 2].index)]
    parts = [_grid(data, palette, column, "n_train", "N", f"t1-{family}-{column}",
                   "{name} by N × budget: " + str(family),
                   "Mean (SE) over the ok runs of all problems of this family with this N "
                   "(the paper's Table 1).", grp)
             for family, grp in jobs.groupby("family", sort=True)]
    return [t for t in parts if t]


def problem_grid(data: ReportData, palette, column: str) -> Table:
    """The paper's Tables 2–3: the error by method × problem × budget, in one table."""
    return _grid(data, palette, column, "problem", "problem", f"t23-{column}",
                 "{name} by problem × budget",
                 "Mean (SE) over replicates (the paper's Tables 2–3).", data.jobs)
