"""The report's tables, in the paper's shape, as plain rows of text for HTML and PDF alike.

Cells show "mean (standard error)" over successful replicates. A mean error below twice the
standard error of the truth it is measured against (a reference value, or the consensus) is
shown as "at reference precision" / "at consensus precision" instead of a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.analysis.aggregate import (
    METRICS,
    OK,
    ReportData,
    precision_floor,
    status_counts,
)
from harness.analysis.verdict import entries
from harness.report import titles
from harness.report.style import fmt, fmt_budget


@dataclass
class Cell:
    text: str
    cls: str = ""        # css class: "floor", "best", "bad", "num", "method"
    colour: str = ""     # swatch colour for method cells
    sub: str = ""        # secondary text shown smaller after the main text (e.g. "(SE)")

    @property
    def full(self) -> str:
        return f"{self.text} {self.sub}" if self.sub else self.text


@dataclass
class Table:
    key: str
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    caption: str = ""
    section: str = ""    # a problem name, or "" for the report-wide tables
    notes: list[str] = field(default_factory=list)
    wrap: bool = False   # secondary texts on lines of their own (HTML and PDF)

    def __bool__(self) -> bool:
        return bool(self.rows)

    def text_rows(self) -> list[list[str]]:
        return [[c.full for c in r] for r in self.rows]


def _c(text, cls="") -> Cell:
    return Cell(str(text), cls)


def method_cell(data: ReportData, palette, method: str) -> Cell:
    return Cell(palette.legend_label(method), "method", palette.colour(method))


def error_cell(data: ReportData, problem: str, column: str, mean, se) -> Cell:
    """'mean (se)', or 'at … precision' when the mean is below the comparison's 2-SE floor."""
    if mean is None or not math.isfinite(float(mean)):
        return _c("—")
    floor, what = precision_floor(data, problem, column)
    if math.isfinite(floor) and floor > 0 and mean < floor:
        return Cell(f"at {what}", "floor", sub=f"(< {fmt(floor, 2)})")
    return se_cell(mean, se)


def se_cell(mean, se, digits: int = 3) -> Cell:
    """'mean' with '(se)' as its secondary text."""
    text = fmt(mean, digits)
    if text == "—" or se is None or not math.isfinite(float(se)):
        return Cell(text, "num")
    return Cell(text, "num", sub=f"({fmt(se, 2)})")


# ---- summary ----------------------------------------------------------------------------
def methods_table(data: ReportData, palette) -> Table:
    rows = []
    for m in data.methods:
        j = data.jobs[data.jobs["method"] == m]
        bad = int((j["status"] != OK).sum())
        no_lz = int(((j["status"] == OK) & ~np.isfinite(j["log_z"].to_numpy(float))).sum())
        rows.append([method_cell(data, palette, m),
                     _c("exact" if data.exact(m) else "approximation"),
                     _c(", ".join(sorted(set(j["budget_unit"])))),
                     _c(", ".join(fmt_budget(b) for b in sorted(set(j["budget"])))),
                     _c(len(j), "num"), _c(int((j["status"] == OK).sum()), "num"),
                     _c(bad, "bad num" if bad else "num"),
                     _c(no_lz if no_lz else "", "num")])
    return Table("methods", "Methods", ["method", "kind", "budget unit", "budgets", "jobs", "ok",
                                        "not ok", "log Z not estimated"], rows,
                 caption="Approximate methods (EP, Laplace, variational) are drawn dashed and "
                         "labelled '(approx.)'; they converge to an approximation, not to the "
                         "truth. 'log Z not estimated' counts successful runs of methods that "
                         "predict only (not failures).")


def best_table(data: ReportData, palette, problems=None) -> Table:
    """The verdict in detail (harness.analysis.verdict, the report's one definition of "best":
    the cheapest exact method reaching an accuracy target, cost = mean CPU seconds of one ok
    run, set-up included): per problem (or group) and target, the winner's budget, cost and
    error, the runner-up's, their cost ratio and how many exact methods reached it."""
    keep = set(problems or data.problems)
    rows, last = [], None
    for e in entries(data):
        if not keep & set(e.problems):
            continue
        head = Cell(titles.of(data, e.group) if e.group in data.problems else e.group,
                    "problem") if e.group != last else _c("")
        last = e.group
        against = _c("consensus" if e.against == "consensus" else "truth")
        if not e.reached:
            why = (f"not checkable: known to ±{fmt(e.floor, 2)}" if e.unresolvable
                   else "none reached" + (f" (closest {e.closest.method} "
                                          f"{fmt(e.closest.error, 2)})" if e.closest else ""))
            rows.append([head, _c(e.target.name), against, _c(why, "floor")]
                        + [_c("—") for _ in range(6)])
            continue
        best, second = e.reached[0], e.reached[1] if len(e.reached) > 1 else None
        rows.append([head, _c(e.target.name), against, method_cell(data, palette, best.method),
                     _c(fmt_budget(best.budget), "num"), _c(fmt(best.cost, 2), "num"),
                     _c(fmt(best.error, 2), "num"),
                     method_cell(data, palette, second.method) if second else _c("—"),
                     _c(f"×{fmt(e.ratio, 2)}" if second else "—", "num"),
                     _c(f"{len(e.reached)} of {len(e.entered)}", "num")])
    return Table("best", "Cheapest exact method to each target, in detail",
                 ["problem", "target", "error against", "cheapest exact method", "at budget",
                  "CPU s per run", "mean error", "runner-up", "its cost / cheapest",
                  "reached by"], rows,
                 caption="The verdict's numbers: for each accuracy target, the exact method "
                         "whose cheapest budget within it costs least (mean CPU seconds of one "
                         "ok run, set-up included), its mean error there, the runner-up and "
                         "the ratio of their costs, and how many of the exact methods that ran "
                         "reached it. Approximations never compete (see 'Approximations "
                         "against the exact answer'). '—': no exact method reached the target, "
                         "or only one did (no runner-up).")


# ---- per problem ------------------------------------------------------------------------
def table_metrics(cells: pd.DataFrame) -> list[str]:
    """The error columns of a problem's tables: those with values; the MAPE against the
    consensus only when there is no MAPE against truth."""
    cols = [c for c in METRICS if f"{c}_n" in cells and cells[f"{c}_n"].sum() > 0]
    if "mape_percent" in cols and "med_mape_percent" in cols:
        cols.remove("med_mape_percent")
    return cols


def spread_table(data: ReportData, palette, problem: str) -> Table:
    """Median [IQR] of CPU seconds and the errors per cell (robust view of the replicates)."""
    cells = data.cells[data.cells["problem"] == problem]
    cols = ["cpu_seconds"] + table_metrics(cells)
    rows = []
    for _, r in cells.sort_values(["method", "budget"]).iterrows():
        rows.append([method_cell(data, palette, r["method"]), _c(fmt_budget(r["budget"]), "num")]
                    + [_c(f"{fmt(r[f'{c}_median'])} [{fmt(r[f'{c}_q25'], 2)}, "
                          f"{fmt(r[f'{c}_q75'], 2)}]" if r[f"{c}_n"] else "—", "num")
                       for c in cols])
    names = ["CPU s"] + [METRICS[c].name for c in cols[1:]]
    return Table(f"spread-{problem}", "Median [inter-quartile range] over replicates",
                 ["method", "budget"] + names, rows, section=problem)


def consensus_table(data: ReportData, problems=None) -> Table:
    rows = []
    for problem in problems or data.problems:
        c = data.consensus.get(problem)
        if c is None or not c.members:
            continue
        members = "; ".join(f"{m} @ {fmt_budget(b)} ×{n}" for m, b, n in c.members)
        rows.append([_c(problem), _c(", ".join(c.methods)), _c(members),
                     _c(c.log_z_runs, "num"),
                     _c(fmt(c.log_z, 8) if c.log_z is not None else "—", "num"),
                     _c(fmt(c.log_z_iqr, 2), "num"), _c(fmt(c.log_z_se, 2), "num"),
                     _c(c.probability_runs, "num"), _c(fmt(c.mean_probability_iqr, 2), "num"),
                     _c(fmt(c.mean_probability_se, 2), "num")])
    return Table("consensus", "Consensus (median of the exact methods with an unbiased Ẑ)",
                 ["problem", "methods", "runs used (method @ budget × runs)", "log Z runs",
                  "log Z median", "log Z IQR", "log Z SE", "prob. runs", "mean prob. IQR",
                  "mean prob. SE"], rows,
                 caption="MAE-MED and the log Z deviation from the consensus are measured against "
                         "the per-point median over the methods that are exact and declare an "
                         "unbiased Ẑ (Tags.exact and Tags.unbiased_z; approximations, MCMC and "
                         "undeclared plugins are measured against it, not part of it). Each "
                         "method counts once: the successful runs of its setting variants, each "
                         "at its largest budget, are pooled into one per-point median. The "
                         "spread of those method medians (IQR; with one method, of its runs) "
                         "and the standard error of the median (≈ 1.25 σ/√n) say how far it can "
                         "be trusted; errors below 2 SE are shown as 'at consensus precision'.")


# ---- the paper's tables -----------------------------------------------------------------
def problem_by_method_table(data: ReportData, palette, columns=("mae_post", "mae_med")) -> Table:
    """Table 4's shape: MAE-POST / MAE-MED by problem × method at each method's largest budget."""
    cells = data.cells
    present = [c for c in columns if len(cells) and cells[f"{c}_n"].sum() > 0]
    if not present:
        return Table("t4", "", [], [])
    methods = data.methods
    rows = []
    for problem, grp in cells.groupby("problem", sort=True):
        row = [_c(problem)]
        any_value = False
        for m in methods:
            g = grp[grp["method"] == m]
            for c in present:
                g2 = g[g[f"{c}_n"] > 0]
                if not len(g2):
                    row.append(_c("—"))
                    continue
                top = g2.loc[g2["budget"].idxmax()]
                cell = error_cell(data, problem, c, top[f"{c}_mean"], top[f"{c}_se"])
                cell.sub = f"{cell.sub} @{fmt_budget(top['budget'])}".strip()
                row.append(cell)
                any_value = True
        if any_value:
            rows.append(row)
    columns_out = ["problem"] + [f"{palette.legend_label(m)}: {METRICS[c].name}"
                                 for m in methods for c in present]
    return Table("t4", " / ".join(METRICS[c].name for c in present) + " by problem × method",
                 columns_out, rows,
                 caption="At each method's largest budget (after '@'); mean (SE) over replicates "
                         "(the paper's Table 4). MAE-POST compares with the generating model's "
                         "Bayes posterior (synthetic problems only), MAE-MED with the consensus.")


# ---- failures ---------------------------------------------------------------------------
def status_table(data: ReportData) -> Table:
    t = status_counts(data.jobs)
    if t.empty:
        return Table("status", "Jobs by status", [], [])
    rows = []
    for _, r in t.iterrows():
        row = [_c(r["problem"]), _c(r["method"])]
        for c in t.columns[2:]:
            v = int(r[c])
            row.append(_c(v, "bad num" if (c != OK and v) else "num"))
        rows.append(row)
    return Table("status", "Jobs by status", list(t.columns), rows)


def failures_table(data: ReportData) -> Table:
    f = data.failures
    rows = [[_c(r["problem"]), _c(r["method"]), _c(fmt_budget(r["budget"]), "num"),
             _c(r["status"], "bad"), _c(r["count"], "num"), _c(r["reason"] or "(no reason given)"),
             _c(r["job_ids"])] for _, r in f.iterrows()]
    return Table("failures", "Failed, timed-out and crashed jobs",
                 ["problem", "method", "budget", "status", "jobs", "reason", "job ids"], rows,
                 caption="Every job that gave no answer (status other than 'ok' or "
                         "'unreliable'), grouped by reason. These runs are left out of the means "
                         "and standard errors, and counted here.")


def unreliable_table(data: ReportData) -> Table:
    u = data.unreliable
    rows = [[_c(r["problem"]), _c(r["method"]), _c(fmt_budget(r["budget"]), "num"),
             _c(f"{r['count']} of {r['n_jobs']}", "bad num"), _c(fmt(r["log_z_median"], 6), "num"),
             _c(fmt(r["abs_log_error_median"], 3) if np.isfinite(r["abs_log_error_median"])
                else "", "num"),
             _c(r["reasons"]), _c(r["job_ids"])] for _, r in u.iterrows()]
    return Table("unreliable", "Unreliable estimates",
                 ["problem", "method", "budget", "jobs", "median log Ẑ", "median |Δ log Z|",
                  "reasons", "job ids"], rows,
                 caption="Jobs whose own diagnostics call the estimate degenerate (weights or one "
                         "randomisation holding the whole estimate, a saddle point far from "
                         "converged: harness.model.reliability). Their numbers are kept in the "
                         "store and the exports (status 'unreliable', with the reason) but left "
                         "out of the figures, means and consensus; |Δ log Z| is against the truth.")


def _fact_rows(facts: dict, prefix: str = "") -> list[tuple[str, str]]:
    """Environment facts as (key, value) rows: one row per BLAS library, the thread variables
    in one row (only those set), nested dicts flattened with dots."""
    out: list[tuple[str, str]] = []
    for key, value in facts.items():
        name = f"{prefix}{key}"
        if key == "blas" and isinstance(value, list):
            for i, lib in enumerate(value):
                if not isinstance(lib, dict):
                    out.append((f"{name} {i}", str(lib)))
                    continue
                path = str(lib.get("filepath") or "")
                text = " ".join(str(lib[k]) for k in ("internal_api", "version") if lib.get(k))
                extra = [f"{lib['num_threads']} thread(s)" if "num_threads" in lib else "",
                         str(lib.get("threading_layer") or ""), str(lib.get("architecture") or ""),
                         path.rsplit("/", 1)[-1]]
                out.append((f"{name} {i}", ", ".join(x for x in [text, *extra] if x)))
        elif key == "thread_env" and isinstance(value, dict):
            set_ = [f"{k}={v}" for k, v in value.items() if v is not None]
            out.append((name, ", ".join(set_) or "none set"))
        elif isinstance(value, dict):
            out.extend(_fact_rows(value, f"{name}."))
        elif isinstance(value, list):
            out.append((name, ", ".join(map(str, value))))
        else:
            out.append((name, str(value)))
    return out


def environment_rows(metadata: dict) -> list[tuple[str, str]]:
    """The environment (versions, CPU, BLAS, threads) of the client, then of the workers, shown
    once per group of identical workers and only where they differ from the client; then the
    other metadata (cluster, times, sweeps)."""
    env = metadata.get("environment")
    client = dict(_fact_rows(env)) if isinstance(env, dict) else {}
    out = list(client.items())
    workers = metadata.get("workers")
    if isinstance(workers, dict) and workers:
        groups: dict[tuple, list[str]] = {}
        for address, facts in workers.items():
            rows = tuple(_fact_rows(facts)) if isinstance(facts, dict) else (("facts", str(facts)),)
            groups.setdefault(rows, []).append(str(address))
        for rows, addresses in groups.items():
            label = (f"workers ({len(addresses)})" if len(groups) == 1
                     else f"workers {', '.join(addresses[:3])}"
                     + (f" … (+{len(addresses) - 3})" if len(addresses) > 3 else ""))
            differ = [(k, v) for k, v in rows if client.get(k) != v]
            out.append((label, "same as the client" if not differ else
                        f"{len(addresses)} process(es), as the client except:"))
            out.extend((f"{label}: {k}", v) for k, v in differ)
    for k, v in metadata.items():
        if k in ("environment", "workers", "sweep_file", "sweep"):  # sweep file shown as text
            continue
        if k.startswith("tune_reference:"):  # shown in the tuning section
            continue
        if k == "sweeps" and isinstance(v, dict):
            v = {name: {a: b for a, b in info.items() if a not in ("text", "job_ids")}
                 for name, info in v.items() if isinstance(info, dict)}
        if isinstance(v, dict):
            out.extend(_fact_rows(v, f"{k}."))
        else:
            out.append((k, ", ".join(map(str, v)) if isinstance(v, list) else str(v)))
    return out


def frame(table: Table) -> pd.DataFrame:
    return pd.DataFrame(table.text_rows(), columns=table.columns)
