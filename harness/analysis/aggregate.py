"""From a results store to per-job errors, the consensus, and per-cell summaries.

Every job of the store becomes one row of `ReportData.jobs`, whatever its status: failed,
timed-out and crashed jobs are kept (their errors are NaN) so that they are counted and listed,
never dropped. Unreliable jobs (an answer the method's own diagnostics call degenerate,
harness.model.reliability) keep their numbers and errors in `jobs`, but like the failed ones they
are left out of the cells, the curves and the consensus, and listed apart (`ReportData.unreliable`).
Errors (docs/math.md §10):

  abs_log_error, mape_percent, mae     against the problem's truth (exact or a reference)
  mae_post                             against the generating model's Bayes posterior
  mae_med, med_abs_log_error,          against the consensus: the per-point median over the
  med_mape_percent                     methods whose answer is exact and whose Ẑ is unbiased, each
                                       method once (compute_consensus, docs/math.md §3d)

A reference truth carries a standard error; errors of log Z below REFERENCE_FACTOR times it
cannot be told apart from zero and are shown as "at reference precision".

Where the problem has held-out labels (`y_test` in its stored summary: CSV and .npz files with
test labels, the realdata presets and the synthetic families), each job's test probabilities
are also scored against them (PREDICTIVE: accuracy, log-loss, Brier score;
harness.core.metrics.predictive_scores, docs/math.md §10), jobs and cells alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core import metrics
from harness.core.errors import InputError
from harness.model.reference_values import REFERENCE_FACTOR
from harness.model.result import ANSWERED
from harness.model.status_summary import reason_kinds

OK = "ok"
UNRELIABLE = "unreliable"


@dataclass(frozen=True)
class Metric:
    """An error measure as the report names and draws it."""

    column: str
    name: str       # short name used in tables ("MAPE of log Z")
    label: str      # axis label with its unit
    unit: str
    against: str    # "truth", "posterior" or "consensus"


METRICS: dict[str, Metric] = {m.column: m for m in (
    Metric("mape_percent", "MAPE of log Z", "MAPE of log Z (%, log scale)", "%", "truth"),
    Metric("abs_log_error", "|Δ log Z|", "|log Ẑ − log Z| (nats, log scale)", "nats", "truth"),
    Metric("mae", "MAE", "MAE of test probabilities (log scale)", "probability", "truth"),
    Metric("mae_post", "MAE-POST", "MAE vs Bayes posterior (log scale)", "probability",
           "posterior"),
    Metric("mae_med", "MAE-MED", "MAE vs consensus median (log scale)", "probability",
           "consensus"),
    Metric("med_abs_log_error", "|Δ log Z| vs consensus",
           "|log Ẑ − consensus log Z| (nats, log scale)", "nats", "consensus"),
    Metric("med_mape_percent", "MAPE vs consensus",
           "MAPE of log Z vs consensus (%, log scale)", "%", "consensus"),
)}
# scores against held-out labels (not errors: accuracy is better higher); "labels" is what
# they are measured against
PREDICTIVE: dict[str, Metric] = {m.column: m for m in (
    Metric("accuracy", "accuracy", "accuracy on held-out labels", "fraction", "labels"),
    Metric("log_loss", "log-loss", "log-loss on held-out labels (nats per point)", "nats",
           "labels"),
    Metric("brier", "Brier score", "Brier score on held-out labels", "probability²", "labels"),
)}
COST_COLUMNS = ("cpu_seconds", "wall_seconds", "peak_memory_mb")
SETUP_COLUMNS = ("setup_cpu_seconds", "setup_wall_seconds")   # NaN in stores that predate them
VALUE_COLUMNS = COST_COLUMNS + tuple(METRICS) + tuple(PREDICTIVE)


@dataclass
class Consensus:
    """The per-point median over the eligible methods, each counted once (compute_consensus).

    `methods`: the registered names of the methods it comes from; `members`: the runs used,
    (method label, budget, runs) per setting variant; `excluded`: (method label, why) for the
    methods with successful runs on the problem that were left out."""

    problem: str
    log_z: float | None = None
    log_z_iqr: float = math.nan          # spread of log Z across the runs (nats)
    log_z_se: float = math.nan           # standard error of the median (nats)
    log_z_runs: int = 0
    probabilities: np.ndarray | None = None
    probabilities_iqr: np.ndarray | None = None
    probabilities_se: np.ndarray | None = None
    probability_runs: int = 0
    members: list[tuple[str, int, int]] = field(default_factory=list)  # (label, budget, runs)
    methods: list[str] = field(default_factory=list)          # method names, each once
    excluded: list[tuple[str, str]] = field(default_factory=list)    # (label, why not)

    @property
    def mean_probability_iqr(self) -> float:
        if self.probabilities_iqr is None:
            return math.nan
        return float(np.mean(self.probabilities_iqr))

    @property
    def mean_probability_se(self) -> float:
        if self.probabilities_se is None:
            return math.nan
        return float(np.mean(self.probabilities_se))


@dataclass
class ReportData:
    """Everything the figures, tables and pages are drawn from."""

    jobs: pd.DataFrame                    # one row per job (all statuses)
    cells: pd.DataFrame                   # one row per problem × method × budget
    problems: dict[str, dict[str, Any]]   # Problem.summary() by name (+ jobs-only problems)
    metadata: dict[str, Any]
    consensus: dict[str, Consensus]
    failures: pd.DataFrame                # failed, timed-out and crashed jobs grouped by reason
    store_path: str = ""
    palette: Any = None                   # style.Palette, set when the report is drawn
    titles: dict[str, str] | None = None  # readable problem titles (harness.report.titles)
    tune_records: list[dict] = field(default_factory=list)   # kind "tune" (report.tuning)
    records: list[dict] = field(default_factory=list)   # the jobs' plain records, row by row
    unreliable: pd.DataFrame = field(default_factory=pd.DataFrame)   # unreliable jobs by cell

    @property
    def methods(self) -> list[str]:
        return sorted(self.jobs["method"].unique()) if len(self.jobs) else []

    def exact(self, method: str) -> bool:
        rows = self.jobs[self.jobs["method"] == method]
        return bool(rows["exact_method"].all()) if len(rows) else True


# ---- loading ----------------------------------------------------------------------------
def read_store(store_path: str | Path, salvage: bool = False):
    """(records, problems, metadata) of a results store, read-only; a clear error if it is
    missing or damaged (harness.execution.store.StoreDamaged). `salvage`: of a damaged store, the
    rows that can still be read (harness.execution.store.salvage). A problem stored without truth
    gets its reference (the store's, else the shipped one; harness.model.reference_values
    .summaries_with_references), so errors are measured against it."""
    from harness.execution.store import ResultStore, store_file
    from harness.execution.store import salvage as salvaged
    from harness.model.reference_values import summaries_with_references

    path = Path(store_path)
    if store_file(path) is None:     # a symlink that points nowhere, a FIFO: StoreDamaged
        raise InputError("--store", f"no results store at {str(path)!r}",
                         "run `python -m harness sweep` first or pass --store PATH")
    if salvage:
        found = salvaged(path)
        return found.records, summaries_with_references(found.problems), found.metadata
    with ResultStore(path, read_only=True) as store:
        return (store.records(), summaries_with_references(store.problems(),
                                                          store.references()),
                store.metadata())


def load(store_path: str | Path, salvage: bool = False) -> ReportData:
    records, problems, metadata = read_store(store_path, salvage)
    tune = [r for r in records if is_tune(r)]
    data = prepare([r for r in records if not is_tune(r)], problems, metadata)
    data.store_path = str(store_path)
    data.tune_records = tune
    return data


def is_tune(record: dict) -> bool:
    """A tuning job's record (harness.tuning), kept out of the estimate tables."""
    return record.get("kind") == "tune"


def _float(value) -> float:
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _array(value) -> np.ndarray | None:
    if value is None:
        return None
    a = np.asarray(value, float)
    return a if a.ndim == 1 else None


def prepare(records: list[dict], problems: dict[str, dict], metadata: dict) -> ReportData:
    """Per-job errors, consensus, per-cell summaries and failure lists from plain records."""
    problems = {k: dict(v) for k, v in problems.items()}
    rows = []
    for r in records:
        status = str(r.get("status") or "unknown")
        rows.append({
            "job_id": r.get("job_id"),
            "sweep": r.get("sweep"),
            "problem": r["problem"],
            "method": r["method"],
            "method_name": r.get("method_name", r["method"]),
            "exact_method": bool(r.get("exact_method", True)),
            "budget": int(r["budget"]),
            "budget_unit": r.get("budget_unit") or "budget",
            "replicate": r.get("replicate"),
            "status": status,
            "reason": r.get("reason") or "",
            "log_z": _float(r.get("log_marginal_likelihood")),
            "log_z_se": _float(r.get("log_marginal_likelihood_se")),
            "probabilities": (_array(r.get("test_probabilities")) if status in ANSWERED
                              else None),
            "n_train": r.get("n_train"),
            "n_test": r.get("n_test"),
            **{c: _float(r.get(c)) for c in COST_COLUMNS + SETUP_COLUMNS},
            # values the runner computed, used when the store has no summary of the problem
            "_rec_abs_log_error": _float(r.get("abs_log_error")),
            "_rec_mape_percent": _float(r.get("mape_percent")),
            "_rec_mae": _float(r.get("mae")),
            "_rec_truth_kind": r.get("truth_kind"),
            "_rec_true_log_z": _float(r.get("true_log_marginal_likelihood")),
            **{f"_rec_{c}": _float(r.get(c)) for c in PREDICTIVE},
        })
    jobs = pd.DataFrame(rows, columns=[
        "job_id", "sweep", "problem", "method", "method_name", "exact_method", "budget",
        "budget_unit", "replicate", "status", "reason", "log_z", "log_z_se", "probabilities",
        "n_train", "n_test", *COST_COLUMNS, *SETUP_COLUMNS, "_rec_abs_log_error",
        "_rec_mape_percent", "_rec_mae", "_rec_truth_kind", "_rec_true_log_z",
        *(f"_rec_{c}" for c in PREDICTIVE)])
    answered = jobs["status"].isin(ANSWERED)

    # problems known only from their jobs still get a section
    for name, grp in jobs.groupby("problem", sort=True):
        if name not in problems:
            first = grp.iloc[0]
            problems[name] = {"name": name, "family": name.split(":")[0],
                              "n_train": first["n_train"], "n_test": first["n_test"],
                              "truth_kind": first["_rec_truth_kind"],
                              "true_log_marginal_likelihood":
                                  None if math.isnan(first["_rec_true_log_z"])
                                  else first["_rec_true_log_z"],
                              "description": "(no problem summary in the store)"}
    jobs["family"] = [problems[p].get("family") or p.split(":")[0] for p in jobs["problem"]]
    jobs["n_train"] = [problems[p].get("n_train") if n is None or n != n else n
                       for p, n in zip(jobs["problem"], jobs["n_train"], strict=True)]

    # ---- against truth and the Bayes posterior ----
    for col in (*METRICS, *PREDICTIVE):
        jobs[col] = math.nan
    for i in np.flatnonzero(answered.to_numpy()):
        row = jobs.iloc[i]
        s = problems[row["problem"]]
        lz, probs = row["log_z"], row["probabilities"]
        true_lz = s.get("true_log_marginal_likelihood")
        if s.get("truth_kind") and true_lz is not None and not math.isnan(lz):
            jobs.iat[i, jobs.columns.get_loc("abs_log_error")] = metrics.abs_log_error(lz, true_lz)
            jobs.iat[i, jobs.columns.get_loc("mape_percent")] = metrics.mape_percent(lz, true_lz)
        elif not math.isnan(row["_rec_abs_log_error"]):
            jobs.iat[i, jobs.columns.get_loc("abs_log_error")] = row["_rec_abs_log_error"]
            jobs.iat[i, jobs.columns.get_loc("mape_percent")] = row["_rec_mape_percent"]
        true_p = _array(s.get("true_test_probabilities"))
        if probs is not None and true_p is not None and len(true_p) == len(probs) and len(probs):
            jobs.iat[i, jobs.columns.get_loc("mae")] = metrics.mae(probs, true_p)
        elif not math.isnan(row["_rec_mae"]):
            jobs.iat[i, jobs.columns.get_loc("mae")] = row["_rec_mae"]
        post = _array(s.get("bayes_posterior"))
        if probs is not None and post is not None and len(post) == len(probs) and len(probs):
            jobs.iat[i, jobs.columns.get_loc("mae_post")] = metrics.mae(probs, post)
        y_test = _array(s.get("y_test"))
        if probs is not None and y_test is not None and len(y_test) == len(probs) and len(probs):
            scores = metrics.predictive_scores(probs, y_test)
        else:   # the record's own, when the store's summary has no labels
            scores = {c: row[f"_rec_{c}"] for c in PREDICTIVE}
        for col, value in scores.items():
            jobs.iat[i, jobs.columns.get_loc(col)] = value

    # ---- against the consensus ----
    why_not = consensus_exclusions(records)
    consensus = {name: compute_consensus(name, jobs[jobs["problem"] == name], why_not)
                 for name in problems}
    against_consensus(jobs, consensus)

    jobs = jobs.drop(columns=[c for c in jobs.columns if c.startswith("_rec_")])
    return ReportData(jobs=jobs, cells=aggregate(jobs), problems=problems, metadata=metadata,
                      consensus=consensus, failures=failures(jobs), records=records,
                      unreliable=unreliable(jobs))


def against_consensus(jobs: pd.DataFrame, consensus: Mapping[str, Consensus]) -> None:
    """Fill the consensus errors (med_abs_log_error, med_mape_percent, mae_med) of the answered
    jobs, in place, against `consensus` (by problem name; a problem without one is left NaN)."""
    for col in ("med_abs_log_error", "med_mape_percent", "mae_med"):
        jobs[col] = math.nan
    for i in np.flatnonzero(jobs["status"].isin(ANSWERED).to_numpy()):
        row = jobs.iloc[i]
        c = consensus.get(row["problem"])
        if c is None:
            continue
        if c.log_z is not None and not math.isnan(row["log_z"]):
            jobs.iat[i, jobs.columns.get_loc("med_abs_log_error")] = metrics.abs_log_error(
                row["log_z"], c.log_z)
            if c.log_z != 0:
                jobs.iat[i, jobs.columns.get_loc("med_mape_percent")] = metrics.mape_percent(
                    row["log_z"], c.log_z)
        p = row["probabilities"]
        if c.probabilities is not None and p is not None and len(p) == len(c.probabilities):
            jobs.iat[i, jobs.columns.get_loc("mae_med")] = metrics.mae(p, c.probabilities)


UNREGISTERED = "not a registered method here, so it is not known to give an unbiased Ẑ"


def consensus_exclusion(method_name: str, settings: Mapping[str, Any] | None,
                        exact_method: bool = True) -> str | None:
    """Why runs of this method instance stay out of the consensus, or None when they enter it.

    Only an exact method (Tags.exact, as stored in the record's `exact_method` and as its class
    says now) whose Ẑ is unbiased (Method.unbiased_z with the stored settings; Tags.unbiased_z
    defaults to False) enters: a plugin has to declare both to count (docs/math.md §3d). Records
    do not carry unbiasedness, so it is asked of the registered class at analysis time; a
    method that is not registered in this process (removed, or a method file not loaded) stays
    out, and says so.
    """
    from harness.plugins.registry import get_method

    if not exact_method:
        return "an approximation (Tags.exact is False)"
    try:
        cls = get_method(method_name)
    except InputError:
        return UNREGISTERED
    if not cls.tags.exact:
        return "an approximation (Tags.exact is False)"
    try:
        method = cls.from_settings(dict(settings or {}))
    except (InputError, TypeError, ValueError):
        return "its stored settings no longer make an instance, so its Ẑ cannot be checked"
    if not method.unbiased_z():
        return "exact, but its Ẑ is not declared unbiased (Tags.unbiased_z / Method.unbiased_z)"
    return None


def consensus_exclusions(records: list[dict]) -> dict[str, str | None]:
    """{method label: consensus_exclusion of its instance} for the labels of `records`."""
    out: dict[str, str | None] = {}
    for r in records:
        label = r["method"]
        if label not in out:
            out[label] = consensus_exclusion(r.get("method_name", label), r.get("settings"),
                                             bool(r.get("exact_method", True)))
    return out


def compute_consensus(problem: str, jobs: pd.DataFrame,
                      why_not: Mapping[str, str | None]) -> Consensus:
    """The consensus of one problem's jobs (docs/math.md §3d, §10).

    Runs enter when their status is ok and their method instance is eligible: `why_not` maps a
    method label to None (eligible) or the reason it is not (consensus_exclusions); a label
    missing from it is left out. Each setting variant (label) contributes its runs at its
    largest budget; the runs of all variants of one method (method_name) are pooled into that
    method's per-point median, so every method counts once however many variants or replicates
    it ran; the consensus is the per-point median of those method medians. Its spread (IQR) and
    standard error are over the method medians, or, with a single method, over its runs.
    log Z and the test probabilities are treated separately (a method may give only one).
    """
    c = Consensus(problem)
    ok = jobs[jobs["status"] == OK]
    eligible = np.array([why_not.get(m, "no eligibility known") is None for m in ok["method"]],
                        dtype=bool)
    c.excluded = sorted({(m, why_not.get(m) or "no eligibility known")
                         for m in ok["method"][~eligible]})
    ok = ok[eligible]

    def best(frame, has):
        """[(method name, [(label, budget, runs frame), ...]), ...] of the runs that have it."""
        picked = []
        for name, by_name in frame.groupby("method_name", sort=True):
            variants = []
            for label, grp in by_name.groupby("method", sort=True):
                grp = grp[grp.apply(has, axis=1)]
                if len(grp):
                    top = grp["budget"].max()
                    variants.append((label, int(top), grp[grp["budget"] == top]))
            if variants:
                picked.append((name, variants))
        return picked

    def combine(picked, column):
        """(median, iqr, se, runs) over the methods, each once (its pooled runs' median)."""
        per_method = [np.vstack([np.vstack([np.atleast_1d(np.asarray(v, float))
                                            for v in g[column]]) for _, _, g in variants])
                      for _, variants in picked]
        medians = np.vstack([np.median(runs, axis=0) for runs in per_method])
        rows = medians if len(per_method) > 1 else per_method[0]
        med, iqr, se = metrics.median_consensus(rows)
        if len(per_method) > 1:
            med = np.median(medians, axis=0)
        return med, iqr, se, sum(len(runs) for runs in per_method)

    lz_sets = best(ok, lambda r: not math.isnan(r["log_z"]))
    if lz_sets:
        med, iqr, se, runs = combine(lz_sets, "log_z")
        c.log_z, c.log_z_iqr, c.log_z_se = float(med[0]), float(iqr[0]), float(se[0])
        c.log_z_runs = runs
    sizes = [len(p) for p in ok["probabilities"] if p is not None and len(p)]
    p_sets = []
    if sizes:
        n_test = max(set(sizes), key=sizes.count)
        p_sets = best(ok, lambda r: r["probabilities"] is not None
                      and len(r["probabilities"]) == n_test)
        (c.probabilities, c.probabilities_iqr, c.probabilities_se,
         c.probability_runs) = combine(p_sets, "probabilities")
    members: dict[tuple[str, int], int] = {}
    for _, variants in lz_sets + p_sets:
        for label, budget, g in variants:
            members[(label, budget)] = max(members.get((label, budget), 0), len(g))
    c.members = [(m, b, n) for (m, b), n in sorted(members.items())]
    c.methods = sorted({name for name, _ in lz_sets + p_sets})
    return c


# ---- aggregation ------------------------------------------------------------------------
def summarize(values) -> dict[str, float]:
    """n, mean, standard error, median and quartiles of the finite values."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return {"n": 0, "mean": math.nan, "se": math.nan, "median": math.nan,
                "q25": math.nan, "q75": math.nan}
    q25, med, q75 = np.percentile(v, [25, 50, 75])
    return {"n": len(v), "mean": float(np.mean(v)), "se": metrics.standard_error(v),
            "median": float(med), "q25": float(q25), "q75": float(q75)}


def aggregate(jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per problem × method × budget: job counts by status, and for CPU seconds and
    every error, the mean, standard error, median and quartiles over the successful replicates.
    """
    rows = []
    for (problem, method, budget), grp in jobs.groupby(["problem", "method", "budget"],
                                                       sort=True):
        ok = grp[grp["status"] == OK]
        row = {
            "problem": problem, "method": method, "budget": int(budget),
            "method_name": grp["method_name"].iloc[0],
            "exact_method": bool(grp["exact_method"].all()),
            "budget_unit": grp["budget_unit"].iloc[0],
            "family": grp["family"].iloc[0], "n_train": grp["n_train"].iloc[0],
            "n_jobs": len(grp), "n_ok": len(ok), "n_not_ok": len(grp) - len(ok),
            "statuses": ", ".join(f"{k} {v}" for k, v in
                                  grp["status"].value_counts().sort_index().items()
                                  if k != OK),
            "log_z_estimated": int(np.isfinite(ok["log_z"].to_numpy(float)).sum()),
        }
        for col in VALUE_COLUMNS:
            for k, v in summarize(ok[col]).items():
                row[f"{col}_{k}"] = v
        rows.append(row)
    columns = ["problem", "method", "budget", "method_name", "exact_method", "budget_unit",
               "family", "n_train", "n_jobs", "n_ok", "n_not_ok", "statuses", "log_z_estimated"]
    columns += [f"{col}_{k}" for col in VALUE_COLUMNS
                for k in ("n", "mean", "se", "median", "q25", "q75")]
    return pd.DataFrame(rows, columns=columns)


def _ids(grp: pd.DataFrame) -> str:
    ids = [str(j)[:12] for j in grp["job_id"]]
    return ", ".join(ids[:5]) + (f" … (+{len(ids) - 5})" if len(ids) > 5 else "")


def failures(jobs: pd.DataFrame) -> pd.DataFrame:
    """Jobs without an answer (failed, timeout, error, ...) grouped by problem, method, budget,
    status and reason (with example ids); unreliable jobs are listed apart (`unreliable`)."""
    bad = jobs[~jobs["status"].isin(ANSWERED)]
    cols = ["problem", "method", "budget", "status", "reason", "count", "job_ids"]
    if not len(bad):
        return pd.DataFrame(columns=cols)
    rows = []
    for key, grp in bad.groupby(["problem", "method", "budget", "status", "reason"], sort=True):
        rows.append({**dict(zip(cols[:5], key, strict=True)), "count": len(grp),
                     "job_ids": _ids(grp)})
    return pd.DataFrame(rows, columns=cols)


def unreliable(jobs: pd.DataFrame) -> pd.DataFrame:
    """Unreliable jobs by problem × method × budget: how many of the cell's jobs, the median
    log Ẑ they reported and its error against the truth (NaN without one), and the kinds of
    reason (each reason is 'kind: details', harness.model.reliability.unreliable_reason)."""
    cols = ["problem", "method", "budget", "count", "n_jobs", "log_z_median",
            "abs_log_error_median", "reasons", "job_ids"]
    flagged = jobs[jobs["status"] == UNRELIABLE]
    if not len(flagged):
        return pd.DataFrame(columns=cols)
    rows = []
    for key, grp in flagged.groupby(["problem", "method", "budget"], sort=True):
        cell = jobs[(jobs["problem"] == key[0]) & (jobs["method"] == key[1])
                    & (jobs["budget"] == key[2])]
        kinds = sorted({kind for reason in grp["reason"] for kind in reason_kinds(reason)})
        rows.append({**dict(zip(cols[:3], key, strict=True)), "count": len(grp),
                     "n_jobs": len(cell),
                     "log_z_median": summarize(grp["log_z"])["median"],
                     "abs_log_error_median": summarize(grp["abs_log_error"])["median"],
                     "reasons": "; ".join(kinds), "job_ids": _ids(grp)})
    return pd.DataFrame(rows, columns=cols)


def status_counts(jobs: pd.DataFrame) -> pd.DataFrame:
    """Jobs by problem × method × status (a wide table, zeros filled)."""
    if not len(jobs):
        return pd.DataFrame()
    table = (jobs.groupby(["problem", "method", "status"]).size()
             .unstack("status", fill_value=0).reset_index())
    order = ["problem", "method"] + ([OK] if OK in table.columns else []) + sorted(
        c for c in table.columns if c not in ("problem", "method", OK))
    return table[order]


# ---- precision floors -------------------------------------------------------------------
def precision_floor(data: ReportData, problem: str, column: str) -> tuple[float, str]:
    """Errors below this value are not resolved by the comparison point: (floor, what).

    For a reference truth: REFERENCE_FACTOR × its standard error (log Z errors; for the MAE
    when the summary also carries per-point standard errors). For the consensus metrics:
    REFERENCE_FACTOR × the standard error of the consensus median. NaN when unknown/exact.
    """
    s = data.problems.get(problem, {})
    metric = METRICS.get(column)
    if metric is None:
        return math.nan, ""
    if metric.against == "truth" and s.get("truth_kind") == "reference":
        se = _float(s.get("true_log_marginal_likelihood_se"))
        true_lz = _float(s.get("true_log_marginal_likelihood"))
        if column == "abs_log_error" and se > 0:
            return REFERENCE_FACTOR * se, "reference precision"
        if column == "mape_percent" and se > 0 and true_lz:
            return 100 * REFERENCE_FACTOR * se / abs(true_lz), "reference precision"
        pse = _array(s.get("true_test_probabilities_se"))
        if column == "mae" and pse is not None and len(pse):
            return REFERENCE_FACTOR * float(np.mean(pse)), "reference precision"
    if metric.against == "consensus":
        c = data.consensus.get(problem)
        if c is None:
            return math.nan, ""
        if column == "med_abs_log_error":
            return REFERENCE_FACTOR * c.log_z_se, "consensus precision"
        if column == "med_mape_percent" and c.log_z:
            return 100 * REFERENCE_FACTOR * c.log_z_se / abs(c.log_z), "consensus precision"
        if column == "mae_med":
            return REFERENCE_FACTOR * c.mean_probability_se, "consensus precision"
    return math.nan, ""


def problem_metrics(data: ReportData, problem: str) -> tuple[str | None, str | None]:
    """(probability metric, log Z metric) drawn for a problem: against truth when it has one,
    else against the consensus; None when no job has it."""
    cells = data.cells[data.cells["problem"] == problem]

    def first(*cols):
        for col in cols:
            if f"{col}_n" in cells and cells[f"{col}_n"].sum() > 0:
                return col
        return None

    return first("mae", "mae_med"), first("mape_percent", "med_mape_percent")
