"""The report's "Cost against N" section: how a method's cost and error grow with N.

Shown for every series of problems: the problems of one family that differ only in their size
(SIZE_KEYS) and seed, with successful jobs at MIN_SIZES or more sizes N = n_train (e.g.
sweeps/scale.toml). Two problems of a family that differ otherwise (linear1d-p1 and -p2) are
never fitted together. Per series and method, pooling the problems of one size:

  (a) set-up CPU seconds (the runner's `setup_cpu_seconds`: factorisation, compression,
      reordering, saddle point; paid once per problem) against N;
  (b) CPU seconds per sample, cpu_seconds / budget, against N, at the fixed budget;
  (c) |log Ẑ − log Z| against N at the fixed budget: against the exact truth when every
      problem of the family has one, else against the consensus (docs/math.md §10).

The fixed budget is the largest budget that every method ran at MIN_SIZES or more sizes; when
the methods share none, each method uses its own largest such budget (the section says so).
Each quantity's growth is summarised by the least-squares exponent p of log y = p log N + c
over the per-N means (a method run at fewer than MIN_SIZES sizes is not fitted), with its
standard error from the residuals. Stores written before set-up was recorded have no
`setup_cpu_seconds`: (a) is then empty and its exponents are NaN, the rest is unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.analysis.aggregate import OK, ReportData
from harness.report.style import fmt, fmt_budget
from harness.report.tables import Cell, Table, method_cell

SETUP = "setup_cpu_seconds"
QUANTITIES = {   # key -> (column of ScalePoints, short name, axis label)
    "setup": ("setup", "set-up CPU", "set-up CPU seconds (log scale)"),
    "sample": ("sample", "CPU per sample", "CPU seconds per sample (log scale)"),
    "error": ("error", "|Δ log Z|", "|log Ẑ − log Z| (nats, log scale)"),
}


@dataclass(frozen=True)
class Fit:
    """log y = exponent · log N + c by least squares over `points` sizes."""

    exponent: float
    se: float          # NaN with two sizes (a line through two points has no residual)
    points: int

    def text(self) -> str:
        if not math.isfinite(self.exponent):
            return "—"
        p = round(self.exponent, 2) + 0.0   # no "-0.00"
        return f"{p:.2f}" + (f" ± {self.se:.2f}" if math.isfinite(self.se) else "")


NO_FIT = Fit(math.nan, math.nan, 0)


def fit_exponent(n, y) -> Fit:
    """The log–log least-squares slope of y against n (finite, positive points only)."""
    n, y = np.asarray(n, float), np.asarray(y, float)
    keep = np.isfinite(n) & np.isfinite(y) & (n > 0) & (y > 0)
    x, v = np.log(n[keep]), np.log(y[keep])
    if len(np.unique(x)) < 2:
        return NO_FIT
    A = np.vstack([x, np.ones_like(x)]).T
    coef, *_ = np.linalg.lstsq(A, v, rcond=None)
    se = math.nan
    if len(x) > 2:
        resid = v - A @ coef
        s2 = float(resid @ resid) / (len(x) - 2)
        se = math.sqrt(s2 / float(np.sum((x - x.mean()) ** 2)))
    return Fit(float(coef[0]), se, len(x))


@dataclass
class Scaling:
    """Everything the section draws for one series (`series`)."""

    family: str                      # the series' name
    budgets: dict[str, int]          # method -> the fixed budget of (b) and (c)
    shared_budget: int | None        # the budget every method shares, else None
    error_column: str                # "abs_log_error" (truth) or "med_abs_log_error"
    error_against: str               # "the exact truth" / "the consensus"
    points: pd.DataFrame             # one row per method × N (see _points)
    fits: dict[str, dict[str, Fit]] = field(default_factory=dict)  # method -> quantity -> Fit

    @property
    def methods(self) -> list[str]:
        return sorted(self.fits)

    @property
    def has_setup(self) -> bool:
        return bool(np.isfinite(self.points["setup"].to_numpy(float)).any())


SIZE_KEYS = ("n", "n_train", "n_test")     # the parameters that set a problem's size
MIN_SIZES = 3                              # a line through two points says nothing of its fit


def _ok_jobs(data: ReportData, problems) -> pd.DataFrame:
    jobs = data.jobs
    jobs = jobs[jobs["problem"].isin(list(problems)) & (jobs["status"] == OK)]
    return jobs.dropna(subset=["n_train"])


def _series_key(name: str, summary: dict) -> tuple:
    """(family, the parameters other than size and seed); a problem without stored parameters
    is a series of its own."""
    params = summary.get("params")
    if not isinstance(params, dict):
        return (summary.get("family"), ("problem", name))
    return (summary.get("family"), tuple(sorted((k, repr(v)) for k, v in params.items()
                                                if k not in (*SIZE_KEYS, "seed"))))


def series(data: ReportData) -> dict[str, list[str]]:
    """{name: problems} of every series with successful jobs at MIN_SIZES or more sizes. The
    name is the family's, followed by the parameters that tell its series apart when the
    family has several."""
    if not len(data.jobs):
        return {}
    ok = data.jobs[data.jobs["status"] == OK].dropna(subset=["n_train"])
    size = ok.groupby("problem")["n_train"].first()
    groups: dict[tuple, list[str]] = {}
    for problem in sorted(size.index, key=lambda p: (size[p], p)):
        summary = data.problems.get(problem) or {"family": ok[ok["problem"] == problem]
                                                 ["family"].iloc[0]}
        groups.setdefault(_series_key(problem, summary), []).append(problem)
    fitted = {k: v for k, v in groups.items()
              if ok[ok["problem"].isin(v)]["n_train"].nunique() >= MIN_SIZES}
    out = {}
    for (family, fixed), problems in sorted(fitted.items(), key=lambda kv: str(kv[0])):
        others = [f for fam, f in fitted if fam == family and f != fixed]
        differ = [f"{k}={v.strip(chr(39))}" for k, v in fixed
                  if any((k, v) not in o for o in others)]
        out[f"{family}" + (f" ({', '.join(differ)})" if differ else "")] = problems
    return out


def _fixed_budgets(jobs: pd.DataFrame) -> tuple[dict[str, int], int | None]:
    """Per method the budget of (b)/(c): the largest shared by all, else each one's own."""
    spans = {}
    for method, grp in jobs.groupby("method", sort=True):
        spans[method] = {int(b) for b, g in grp.groupby("budget")
                          if g["n_train"].nunique() >= MIN_SIZES}
    spans = {m: b for m, b in spans.items() if b}
    if not spans:
        return {}, None
    shared = set.intersection(*spans.values())
    if shared:
        top = max(shared)
        return {m: top for m in spans}, top
    return {m: max(b) for m, b in spans.items()}, None


def _error_column(data: ReportData, jobs: pd.DataFrame) -> tuple[str, str]:
    truth = all(data.problems.get(p, {}).get("truth_kind") for p in set(jobs["problem"]))
    if truth and np.isfinite(jobs["abs_log_error"].to_numpy(float)).any():
        kind = {data.problems[p].get("truth_kind") for p in set(jobs["problem"])}
        return "abs_log_error", ("the exact truth" if kind == {"exact"} else "the reference truth")
    return "med_abs_log_error", "the consensus"


def _mean_se(values) -> tuple[float, float]:
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if not len(v):
        return math.nan, math.nan
    se = float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan
    return float(np.mean(v)), se


def _points(jobs: pd.DataFrame, budgets: dict[str, int], error_column: str) -> pd.DataFrame:
    """One row per method × N: set-up CPU (every successful job: set-up does not depend on the
    budget), CPU per sample and the error at the method's fixed budget, mean and SE."""
    rows = []
    setup = jobs[SETUP] if SETUP in jobs else pd.Series(math.nan, index=jobs.index)
    for (method, n), grp in jobs.groupby(["method", "n_train"], sort=True):
        if method not in budgets:
            continue
        at = grp[grp["budget"] == budgets[method]]
        s_mean, s_se = _mean_se(setup.loc[grp.index])
        p_mean, p_se = _mean_se(at["cpu_seconds"].to_numpy(float) / budgets[method])
        e_mean, e_se = _mean_se(at[error_column])
        rows.append({"method": method, "n_train": int(n), "budget": budgets[method],
                     "runs": len(at), "problems": grp["problem"].nunique(),
                     "setup": s_mean, "setup_se": s_se, "sample": p_mean, "sample_se": p_se,
                     "error": e_mean, "error_se": e_se})
    return pd.DataFrame(rows, columns=["method", "n_train", "budget", "runs", "problems",
                                       "setup", "setup_se", "sample", "sample_se", "error",
                                       "error_se"])


def scaling(data: ReportData, name: str) -> Scaling | None:
    """The section's numbers for one series of `series` (None if it is not one)."""
    problems = series(data).get(name)
    if problems is None:
        return None
    jobs = _ok_jobs(data, problems)
    budgets, shared = _fixed_budgets(jobs)
    if not budgets:
        return None
    column, against = _error_column(data, jobs)
    points = _points(jobs, budgets, column)
    fits = {}
    for method, grp in points.groupby("method", sort=True):
        if grp["n_train"].nunique() < MIN_SIZES:
            continue      # this method was not run at enough sizes to fit
        fits[method] = {q: fit_exponent(grp["n_train"], grp[col])
                        for q, (col, _, _) in QUANTITIES.items()}
    return Scaling(name, budgets, shared, column, against, points, fits)


# ---- tables -----------------------------------------------------------------------------
def _budget_text(s: Scaling, method: str | None = None) -> str:
    if s.shared_budget is not None:
        return fmt_budget(s.shared_budget)
    return fmt_budget(s.budgets[method]) if method else "each method's largest"


def exponent_table(s: Scaling, palette) -> Table:
    rows = []
    for m in s.methods:
        pts = s.points[s.points["method"] == m]
        f = s.fits[m]
        rows.append([method_cell(None, palette, m),
                     Cell(f["setup"].text(), "num"), Cell(f["sample"].text(), "num"),
                     Cell(f["error"].text(), "num"),
                     Cell(f"{pts['n_train'].min()} – {pts['n_train'].max()}", "num"),
                     Cell(str(len(pts)), "num"), Cell(_budget_text(s, m), "num")])
    return Table(f"scale-exponents-{s.family}", f"Fitted exponents p (cost ~ N^p): {s.family}",
                 ["method", "set-up CPU", "CPU per sample", "|Δ log Z|", "N", "sizes",
                  "budget"], rows,
                 caption="Least-squares slope of log y against log N over the per-N means, ± "
                         "its standard error from the residuals (three or more sizes). "
                         f"Errors are against {s.error_against}."
                         + ("" if s.has_setup else " The store records no set-up times "
                            "(written before the runner timed set-up)."))


def points_table(s: Scaling, palette) -> Table:
    rows = []
    for m in s.methods:
        first = True
        for _, r in s.points[s.points["method"] == m].iterrows():
            rows.append([method_cell(None, palette, m) if first else Cell(""),
                         Cell(str(r["n_train"]), "num"),
                         _se(r["setup"], r["setup_se"]), _se(r["sample"], r["sample_se"]),
                         _se(r["error"], r["error_se"]), Cell(str(r["runs"]), "num")])
            first = False
    return Table(f"scale-points-{s.family}", f"Cost and error by N: {s.family}",
                 ["method", "N", "set-up CPU s", "CPU s per sample", "|Δ log Z| (nats)",
                  "runs"], rows,
                 caption="Means (standard errors) over the successful runs of every problem of "
                         "this size, at the fixed budget (set-up: at every budget).")


def _se(mean, se) -> Cell:
    text = fmt(mean, 3)
    return Cell(text, "num", sub="" if text == "—" or not math.isfinite(se)
                else f"({fmt(se, 2)})")


def facts(s: Scaling) -> list[tuple[str, str]]:
    sizes = sorted(set(s.points["n_train"]))
    budget = (f"{fmt_budget(s.shared_budget)} (the largest budget every method ran at "
              f"{MIN_SIZES} or more sizes)" if s.shared_budget is not None else
              "the methods share no budget: each at its own largest ("
              + ", ".join(f"{m} {fmt_budget(b)}" for m, b in sorted(s.budgets.items())) + ")")
    return [("sizes", ", ".join(str(n) for n in sizes)),
            ("methods", ", ".join(s.methods)),
            ("fixed budget", budget),
            ("error", f"|log Ẑ − log Z| against {s.error_against}")]


