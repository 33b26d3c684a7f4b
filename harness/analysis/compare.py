"""Two runs compared (`python -m harness compare`): per problem × method × budget, the candidate's
CPU time and errors against the baseline's, as ratios with their uncertainty, and the changes
beyond a threshold flagged (docs/math.md §10, "Comparing two runs").

The sides are two stores, or two sweeps (of one store or of two): a sweep's jobs are the ids its
runs planned, kept in the store's metadata `sweeps` (harness.sweep.driver.record_metadata; a store
written before has only each job's `sweep` column, the sweep that first stored it). Cells pair by
problem name, method label and budget; a method whose label changed (a setting changed in the
sweep file) pairs with the one unpaired label of the same method on the other side, if there is
exactly one. Tuning jobs are not compared.

Quantities: the estimate's CPU seconds, the log Z error and the test-probability error, against
the truth where the problem has one, else against the *baseline's* consensus on both sides (one
yardstick; docs/math.md §3d). Values below a floor are raised to it, so that two answers the
yardstick cannot tell apart compare as equal: CPU_FLOOR for times, twice the reference's or
the consensus's SE (aggregate.precision_floor), else EXACT_FLOOR.

Ratio and interval: r = exp(mean log x_B − mean log x_A), the ratio of the geometric means over
the successful replicates, with the 95 % Welch t interval of the difference of the log means
(SE² = s_A²/n_A + s_B²/n_B, degrees of freedom by Welch–Satterthwaite). A deterministic method
(Tags.stochastic False: one run, no spread) gets r itself as its error interval; a side with one
run of CPU time gets the pooled spread of log CPU time over its store's cells with replicates;
otherwise one run has no interval. Per method, the cells' log ratios are averaged, SE² = Σ SE_i² /
k², degrees of freedom by Welch–Satterthwaite over every component: the verdict that two or three
replicates per cell cannot give.

Rule: a change is flagged as a regression ("worse") when its whole interval lies above
1 + threshold (ERROR_THRESHOLD 10 %; TIME_THRESHOLD 50 % for CPU time; the CPU thresholds are
justified in docs/studies.md, "Comparing two runs"), "better" when it lies below
1 / (1 + threshold); a cell is also worse when a larger share of its jobs fails (a
status other than ok). Cells are marked at 95 % each, which marks about one cell in 40 by chance
once the two runs' answers are not identical (unchanged methods with unchanged job keys give
identical answers, ratio exactly 1); so a method is flagged worse when its pooled interval is,
when more of its jobs fail, or when a cell's interval is at the family-wise level 1 − 5 % / m
(Bonferroni over the method's m cell tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.aggregate import (
    OK,
    ReportData,
    against_consensus,
    is_tune,
    precision_floor,
    prepare,
    problem_metrics,
    read_store,
)
from harness.core.errors import InputError
from harness.model.settings import did_you_mean

ERROR_THRESHOLD = 0.10
TIME_THRESHOLD = 0.50
CONFIDENCE = 0.95
CPU_FLOOR = 0.01        # seconds (docs/studies.md, "Comparing two runs")
EXACT_FLOOR = 1e-9      # an error against an exact oracle (its own accuracy, docs/math.md §3)
# the quantities compared: name -> what the text says
QUANTITIES = {"cpu_seconds": "CPU time", "log_z_error": "log Z error",
              "probability_error": "prob. error"}
LOG_Z_COLUMN = {"mape_percent": "abs_log_error", "med_mape_percent": "med_abs_log_error"}


@dataclass
class Ratio:
    """exp(d) with d = mean log x_B − mean log x_A; `var` holds the variance components of d
    with their degrees of freedom ((v, df), ...): empty when d is exact, None without an
    interval."""

    d: float
    var: tuple[tuple[float, float], ...] | None
    n: tuple[int, int] = (0, 0)

    @property
    def se(self) -> float:
        return math.nan if self.var is None else math.sqrt(sum(v for v, _ in self.var))

    @property
    def df(self) -> float:
        """Welch–Satterthwaite: (Σ v)² / Σ v² / df (infinite for an exact d)."""
        if self.var is None:
            return math.nan
        total = sum(v for v, _ in self.var)
        spread = sum(v * v / df for v, df in self.var if v > 0)
        return math.inf if total == 0 or spread == 0 else total * total / spread

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """The two-sided interval of the ratio at `confidence` ((0, inf) without one)."""
        if self.var is None:
            return 0.0, math.inf
        from scipy.special import stdtrit  # the Student t quantile, a fast ufunc

        half = 0.0 if self.se == 0 else float(stdtrit(self.df, 0.5 + confidence / 2)) * self.se
        return math.exp(self.d - half), math.exp(self.d + half)

    def verdict(self, threshold: float, confidence: float = CONFIDENCE) -> str:
        """'worse' or 'better' when the whole interval lies beyond the threshold, else ''."""
        low, high = self.interval(confidence)
        if low > 1 + threshold:
            return "worse"
        if high < 1 / (1 + threshold):
            return "better"
        return ""

    def to_dict(self, threshold: float) -> dict[str, Any]:
        low, high = self.interval()
        return {"ratio": math.exp(self.d), "low": low, "high": high,
                "n_baseline": self.n[0], "n_candidate": self.n[1],
                "verdict": self.verdict(threshold)}


def log_ratio(a, b, exact: bool = False, spread: tuple[tuple | None, tuple | None] = (None, None)
              ) -> Ratio | None:
    """The Ratio of positive values b to a (module doc); None when a side has no value.
    `exact`: the values carry no randomness; `spread`: per side, (variance of one log value,
    its degrees of freedom) to use for a side of one value (pooled_log_spread)."""
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    if not len(la) or not len(lb):
        return None
    d = float(np.mean(lb) - np.mean(la))
    if exact:
        return Ratio(d, (), (len(la), len(lb)))
    parts = []
    for values, pool in ((la, spread[0]), (lb, spread[1])):
        if len(values) >= 2:
            parts.append((float(np.var(values, ddof=1)) / len(values), len(values) - 1))
        elif pool is not None:
            parts.append((pool[0] / len(values), pool[1]))
        else:
            return Ratio(d, None, (len(la), len(lb)))
    return Ratio(d, tuple(parts), (len(la), len(lb)))


def pooled(ratios: list[Ratio]) -> Ratio | None:
    """The mean of several log ratios, its variance components divided by k² (module doc);
    ratios without an interval are left out."""
    usable = [r for r in ratios if r.var is not None]
    if not usable:
        return None
    k = len(usable)
    return Ratio(sum(r.d for r in usable) / k,
                 tuple((v / k**2, df) for r in usable for v, df in r.var),
                 (sum(r.n[0] for r in usable), sum(r.n[1] for r in usable)))


def pooled_log_spread(jobs: pd.DataFrame, column: str = "cpu_seconds") -> tuple | None:
    """(variance, degrees of freedom) of one log value around its cell's mean, pooled over the
    cells with at least two successful jobs; None without such a cell."""
    ok = jobs[(jobs["status"] == OK) & (jobs[column] > 0)]
    total, dof = 0.0, 0
    for _, grp in ok.groupby(["problem", "method", "budget"]):
        values = np.log(np.maximum(grp[column].to_numpy(float), CPU_FLOOR))
        if len(values) >= 2:
            total += float(np.var(values, ddof=1)) * (len(values) - 1)
            dof += len(values) - 1
    return (total / dof, dof) if dof else None


# ---- the sides ----------------------------------------------------------------------------------
@dataclass
class Side:
    """One side of a comparison: its store, its sweep (or None: the whole store), its jobs."""

    store: str
    sweep: str | None
    data: ReportData

    def describe(self) -> str:
        n = len(self.data.jobs)
        return f"{self.store}" + (f" (sweep {self.sweep})" if self.sweep else "") + f": {n} jobs"


def load_side(store: str | Path, sweep: str | None = None) -> Side:
    """The estimate jobs of a store, or of one of its sweeps (module doc), prepared."""
    records, problems, metadata = read_store(store)
    records = [r for r in records if not is_tune(r)]
    if sweep is not None:
        sweeps = metadata.get("sweeps") if isinstance(metadata.get("sweeps"), dict) else {}
        ids = (sweeps.get(sweep) or {}).get("job_ids") if isinstance(sweeps.get(sweep), dict) \
            else None
        if ids:
            wanted = set(ids)
            records = [r for r in records if r.get("job_id") in wanted]
        else:
            names = sorted(set(sweeps) | {str(r.get("sweep")) for r in records if r.get("sweep")})
            if sweep not in names:
                raise InputError("--sweeps", f"{store} holds no sweep {sweep!r}",
                                 did_you_mean(sweep, names, "sweeps") if names
                                 else "it holds no sweep names")
            records = [r for r in records if r.get("sweep") == sweep]
    data = prepare(records, problems, metadata)
    data.store_path = str(store)
    return Side(str(store), sweep, data)


def _names(values, most: int = 3) -> str:
    """'a, b, c and 4 more' (sorted)."""
    names = sorted({str(v) for v in values})
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most
                                      else "")


def nothing_in_common(baseline: Side, candidate: Side) -> str | None:
    """Why the two sides have no problem × method × budget cell to compare (a side with no
    job, no problem in common, or problems in common but none run by a common method at a
    common budget), in a phrase; None when they have one."""
    a, b = baseline.data.jobs, candidate.data.jobs
    for what, side, jobs in (("baseline", baseline, a), ("candidate", candidate, b)):
        if not len(jobs):
            return f"the {what} ({side.describe()}) holds no estimate job"
    common = set(a["problem"]) & set(b["problem"])
    if not common:
        return (f"the two have no problem in common (baseline: {_names(a['problem'])}; "
                f"candidate: {_names(b['problem'])})")
    pairs = dict(pair_methods(a, b)[0])
    cells_a = {(p, pairs[m], int(n)) for p, m, n in zip(a["problem"], a["method"], a["budget"],
                                                       strict=True) if m in pairs}
    if not cells_a & {(p, m, int(n)) for p, m, n in zip(b["problem"], b["method"], b["budget"],
                                                        strict=True)}:
        return (f"the two have problems in common ({_names(common)}) but no method run on "
                "them at a budget in common")
    return None


def pair_methods(a: pd.DataFrame, b: pd.DataFrame) -> tuple[list[tuple[str, str]], list[str],
                                                             list[str]]:
    """([(baseline label, candidate label)], labels only in the baseline, only in the
    candidate): equal labels pair; then a method name with exactly one unpaired label on
    each side pairs them (a setting changed)."""
    names_a = dict(zip(a["method"], a["method_name"], strict=False))
    names_b = dict(zip(b["method"], b["method_name"], strict=False))
    pairs = [(m, m) for m in sorted(names_a) if m in names_b]
    left_a = [m for m in sorted(names_a) if m not in names_b]
    left_b = [m for m in sorted(names_b) if m not in names_a]
    for name in sorted(set(names_a[m] for m in left_a)):
        mine = [m for m in left_a if names_a[m] == name]
        theirs = [m for m in left_b if names_b[m] == name]
        if len(mine) == 1 and len(theirs) == 1:
            pairs.append((mine[0], theirs[0]))
            left_a.remove(mine[0])
            left_b.remove(theirs[0])
    return sorted(pairs, key=lambda p: p[1]), left_a, left_b


def _deterministic(method_name: str) -> bool:
    """Whether a registered method says its answer does not depend on the seed."""
    from harness.plugins.registry import get_method

    try:
        return not get_method(method_name).tags.stochastic
    except InputError:
        return False


# ---- the comparison -----------------------------------------------------------------------------
@dataclass
class Comparison:
    """Everything `compare` prints or writes as JSON."""

    baseline: Side
    candidate: Side
    error_threshold: float = ERROR_THRESHOLD
    time_threshold: float = TIME_THRESHOLD
    cells: list[dict[str, Any]] = field(default_factory=list)
    methods: list[dict[str, Any]] = field(default_factory=list)
    only_baseline: list[str] = field(default_factory=list)
    only_candidate: list[str] = field(default_factory=list)
    median_cpu_ratio: float = math.nan

    @property
    def flagged(self) -> list[str]:
        """Candidate labels of the methods with a regression (`_method`)."""
        return [m["method"] for m in self.methods if m["verdict"] == "worse"]

    def threshold(self, quantity: str) -> float:
        return self.time_threshold if quantity == "cpu_seconds" else self.error_threshold

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": {"store": self.baseline.store, "sweep": self.baseline.sweep,
                             "jobs": len(self.baseline.data.jobs)},
                "candidate": {"store": self.candidate.store, "sweep": self.candidate.sweep,
                              "jobs": len(self.candidate.data.jobs)},
                "rule": {"confidence": CONFIDENCE, "error_threshold": self.error_threshold,
                         "time_threshold": self.time_threshold, "cpu_floor_seconds": CPU_FLOOR,
                         "exact_floor": EXACT_FLOOR},
                "flagged": self.flagged, "methods": self.methods, "cells": self.cells,
                "only_baseline": self.only_baseline, "only_candidate": self.only_candidate,
                "median_cpu_ratio": self.median_cpu_ratio}


def _columns(data: ReportData, problem: str) -> dict[str, str | None]:
    """The job column of each error quantity on a problem (truth, else consensus)."""
    prob, log_z = problem_metrics(data, problem)
    return {"log_z_error": LOG_Z_COLUMN.get(log_z), "probability_error": prob}


def _values(jobs: pd.DataFrame, column: str, floor: float) -> np.ndarray:
    v = jobs[column].to_numpy(float)
    return np.maximum(v[np.isfinite(v)], floor)


def _floor(data: ReportData, problem: str, column: str) -> float:
    floor, _ = precision_floor(data, problem, column)
    return floor if math.isfinite(floor) and floor > 0 else EXACT_FLOOR


def compare(baseline: Side, candidate: Side, error_threshold: float = ERROR_THRESHOLD,
            time_threshold: float = TIME_THRESHOLD) -> Comparison:
    """Compare the candidate's jobs with the baseline's, cell by cell and method by method
    (module doc).

    Parameters
    ----------
    baseline, candidate : Side
        The two runs (load_side: a store, or one sweep of a store).
    error_threshold : float
        A relative change of an error beyond which a cell or method is flagged.
    time_threshold : float
        The same for CPU time.

    Returns
    -------
    Comparison
        The paired cells and methods with their ratios, intervals and flags, and the methods
        found on one side only.
    """
    out = Comparison(baseline, candidate, error_threshold, time_threshold)
    a, b = baseline.data, candidate.data
    b.jobs = b.jobs.copy()
    against_consensus(b.jobs, a.consensus)   # one yardstick: the baseline's consensus
    pairs, out.only_baseline, out.only_candidate = pair_methods(a.jobs, b.jobs)
    spreads = (pooled_log_spread(a.jobs), pooled_log_spread(b.jobs))
    per_method: dict[tuple[str, str], dict[str, list[Ratio]]] = {}
    for label_a, label_b in pairs:
        ja, jb = a.jobs[a.jobs["method"] == label_a], b.jobs[b.jobs["method"] == label_b]
        exact = _deterministic(str(ja["method_name"].iloc[0]))
        ratios = per_method.setdefault((label_a, label_b), {q: [] for q in QUANTITIES})
        for (problem, budget), ca in ja.groupby(["problem", "budget"], sort=True):
            cb = jb[(jb["problem"] == problem) & (jb["budget"] == budget)]
            if not len(cb):
                continue
            cell = _cell(out, a, problem, int(budget), label_a, label_b, ca, cb, exact, spreads)
            for q in QUANTITIES:
                if cell["_ratios"].get(q) is not None:
                    ratios[q].append(cell["_ratios"][q])
            out.cells.append(cell)
    for (label_a, label_b), ratios in per_method.items():
        cells = [c for c in out.cells if c["method"] == label_b and c["baseline_method"] == label_a]
        out.methods.append(_method(out, label_a, label_b, cells, ratios))
    for cell in out.cells:
        del cell["_ratios"]
    cpu = [c["cpu_seconds"]["ratio"] for c in out.cells if c["cpu_seconds"]]
    out.median_cpu_ratio = float(np.median(cpu)) if cpu else math.nan
    return out


def _method(out: Comparison, label_a: str, label_b: str, cells: list[dict],
            ratios: dict[str, list[Ratio]]) -> dict[str, Any]:
    """A method's line: its cells' ratios pooled, and its verdict: worse when a pooled
    interval is, when more jobs fail in a cell, or when a cell's interval is at the
    family-wise level (Bonferroni over the method's cells and quantities: CONFIDENCE
    per cell would flag about one cell in 40 by chance once the answers are not identical)."""
    summary: dict[str, Any] = {"method": label_b, "baseline_method": label_a,
                               "cells": len(cells),
                               "cells_worse": sum(c["verdict"] == "worse" for c in cells),
                               "cells_better": sum(c["verdict"] == "better" for c in cells)}
    verdicts = []
    for q, rs in ratios.items():
        r = pooled(rs)
        summary[q] = None if r is None else r.to_dict(out.threshold(q))
        verdicts.append("" if r is None else r.verdict(out.threshold(q)))
    tests = max(1, sum(len(rs) for rs in ratios.values()))
    family = 1 - (1 - CONFIDENCE) / tests
    strong = [f"{c['problem']} / {c['budget']}: {QUANTITIES[q]}" for c in cells
              for q, r in c["_ratios"].items()
              if r is not None and r.verdict(out.threshold(q), family) == "worse"]
    failing = [f"{c['problem']} / {c['budget']}: more jobs fail" for c in cells
               if any(w.startswith("more jobs fail") for w in c["why"])]
    summary["decisive_cells"] = strong + failing
    summary["verdict"] = ("worse" if "worse" in verdicts or strong or failing
                          else "better" if "better" in verdicts else "")
    return summary


def _cell(out: Comparison, a: ReportData, problem: str, budget: int, label_a: str, label_b: str,
          ca: pd.DataFrame, cb: pd.DataFrame, exact: bool, spreads) -> dict[str, Any]:
    """One problem × method × budget of the comparison (with its Ratio objects in `_ratios`)."""
    ok_a, ok_b = ca[ca["status"] == OK], cb[cb["status"] == OK]
    cell: dict[str, Any] = {"problem": problem, "method": label_b, "baseline_method": label_a,
                            "budget": budget,
                            "jobs": {"baseline": [len(ok_a), len(ca)],
                                     "candidate": [len(ok_b), len(cb)]}}
    ratios: dict[str, Ratio | None] = {
        "cpu_seconds": log_ratio(_values(ok_a, "cpu_seconds", CPU_FLOOR),
                                 _values(ok_b, "cpu_seconds", CPU_FLOOR), spread=spreads)}
    for q, column in _columns(a, problem).items():
        ratios[q] = None if column is None else log_ratio(
            _values(ok_a, column, _floor(a, problem, column)),
            _values(ok_b, column, _floor(a, problem, column)), exact=exact)
        cell[f"{q}_measure"] = column
    why = []
    for q, r in ratios.items():
        cell[q] = None if r is None else r.to_dict(out.threshold(q))
        if cell[q] and cell[q]["verdict"]:
            why.append(f"{QUANTITIES[q]} {cell[q]['verdict']}")
    failing_a, failing_b = 1 - len(ok_a) / len(ca), 1 - len(ok_b) / len(cb)
    if failing_b > failing_a:
        why.append(f"more jobs fail ({len(cb) - len(ok_b)} of {len(cb)}, baseline "
                   f"{len(ca) - len(ok_a)} of {len(ca)})")
    cell["why"] = why
    cell["verdict"] = ("worse" if any("worse" in w or w.startswith("more") for w in why)
                       else "better" if why else "")
    cell["_ratios"] = ratios
    return cell
