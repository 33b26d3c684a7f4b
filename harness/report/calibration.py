"""Are the error bars honest? The calibration of each method's standard errors against the truth
(docs/math.md §10; the `ok` / `unreliable` statuses are §13).

For every answered job on a problem with exact truth or a reference, and every quantity the method
gives a standard error for:

  log Z                  one z per job:                  z = (log Ẑ − log Z) / SE
  test probabilities     one z per job and test point:   z_i = (p̂_i − p_i) / SE_i

with SE = sqrt(SE_est² + SE_ref²) when the truth is a reference with its own standard error (the
exact oracles have none). If the SEs are right, z is close to standard normal: |z| > 3 in 0.27 %
of cases, |z| > 5 almost never. Methods whose share of |z| > 3 exceeds TAIL_SHARE by more than
a binomial allowance are flagged (`Group.flagged`): their `ok` does not cover their error.

`ok` and `unreliable` jobs are kept apart (one group each): the claim tested is that `ok` runs are
covered, and the unreliable ones show what the reliability rule caught. Jobs with the truth but
without an SE are not in the z's; they are counted (`Group.no_se`, `Calibration.no_se`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from harness.analysis.aggregate import OK, UNRELIABLE, ReportData
from harness.report.style import fmt

QUANTITIES = {"log_z": "log Z", "probabilities": "test probabilities"}
STATUSES = (OK, UNRELIABLE)
TAIL = 3.0            # |z| beyond this is a miss ...
FAR = 5.0             # ... and beyond this far out of any normal band
TAIL_SHARE = 0.01     # the share of |z| > TAIL a method may have before it is flagged ...
ALPHA = 0.001         # ... plus what a method with that share exceeds with probability ALPHA


@dataclass
class Group:
    """The z's of one method, quantity and status, and the jobs left out of them."""

    method: str
    quantity: str                      # a key of QUANTITIES
    status: str                        # "ok" or "unreliable"
    z: np.ndarray                      # one per job (log Z) or per job and test point
    jobs: int                          # jobs with at least one z
    no_se: int = 0                     # jobs with the truth and an estimate but no SE
    against_reference: int = 0         # jobs of `jobs` measured against a reference

    @property
    def n(self) -> int:
        return len(self.z)

    def _finite(self) -> np.ndarray:
        return self.z[np.isfinite(self.z)]

    @property
    def mean(self) -> float:
        f = self._finite()
        return float(np.mean(f)) if len(f) else math.nan

    @property
    def sd(self) -> float:
        f = self._finite()
        return float(np.std(f, ddof=1)) if len(f) > 1 else math.nan

    def share_beyond(self, level: float) -> float:
        return float(np.mean(np.abs(self.z) > level)) if self.n else math.nan

    @property
    def median_abs(self) -> float:
        return float(np.median(np.abs(self.z))) if self.n else math.nan

    @property
    def independent(self) -> int:
        """How many z's the binomial allowance counts as independent: the jobs. The z's of one
        job's test points share its random numbers, so they are not independent draws."""
        return self.jobs

    @property
    def allowed_share(self) -> float:
        """allowed_share(independent) (the flag's threshold for this group)."""
        return allowed_share(self.independent)

    @property
    def flagged(self) -> bool:
        """The standard errors are too small: more |z| > TAIL than the allowance."""
        return bool(self.n) and self.share_beyond(TAIL) > self.allowed_share


def allowed_share(n: int, share: float = TAIL_SHARE, alpha: float = ALPHA) -> float:
    """The largest share of |z| > TAIL that n independent z's of a method whose true share is
    `share` exceed only with probability `alpha`: the (1 − alpha) quantile of
    Binomial(n, share), divided by n."""
    if n <= 0:
        return math.nan
    return float(stats.binom.ppf(1 - alpha, n, share)) / n


@dataclass
class Calibration:
    """Every group of a report's store, and the jobs that could not be in any."""

    groups: list[Group] = field(default_factory=list)
    no_truth: int = 0                   # answered jobs on problems without truth or reference
    no_se: dict[tuple[str, str], int] = field(default_factory=dict)   # (method, quantity)
    approximations: set[str] = field(default_factory=set)   # methods left out (not exact)
    jobs: list[JobZ] = field(default_factory=list)   # every job with the truth, its z's

    def group(self, method: str, quantity: str, status: str = OK) -> Group | None:
        for g in self.groups:
            if (g.method, g.quantity, g.status) == (method, quantity, status):
                return g
        return None

    @property
    def flagged(self) -> list[Group]:
        return [g for g in self.groups if g.flagged]

    @property
    def against_reference(self) -> int:
        return sum(g.against_reference for g in self.groups)

    def __bool__(self) -> bool:
        return bool(self.groups)


def _float(value) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def _vector(value, n: int | None = None) -> np.ndarray | None:
    if value is None:
        return None
    a = np.asarray(value, float)
    if a.ndim != 1 or (n is not None and len(a) != n):
        return None
    return a


def z_scores(estimate, se, truth, truth_se=0.0) -> np.ndarray:
    """(estimate − truth) / sqrt(se² + truth_se²), elementwise. A zero combined SE gives z = 0
    for an exact hit and ±inf otherwise (an error bar of zero covers nothing else)."""
    estimate, se = np.asarray(estimate, float), np.asarray(se, float)
    truth, truth_se = np.asarray(truth, float), np.nan_to_num(np.asarray(truth_se, float))
    diff = estimate - truth
    total = np.sqrt(se ** 2 + truth_se ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(total > 0, diff / np.where(total > 0, total, 1.0),
                     np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
    return np.asarray(z, float)


def job_z(row, record: dict, summary: dict) -> dict[str, np.ndarray | None]:
    """One job's z's by quantity, for the quantities it has an estimate and the truth of:
    None where it gives no standard error. `row` is the job's row of ReportData.jobs, `record`
    its stored record (the per-point SEs), `summary` its problem's (the truth)."""
    out: dict[str, np.ndarray | None] = {}
    true_lz = _float(summary.get("true_log_marginal_likelihood"))
    lz = _float(row["log_z"])
    if math.isfinite(true_lz) and math.isfinite(lz):
        se = _float(row["log_z_se"])
        out["log_z"] = (z_scores([lz], [se], [true_lz],
                                 [_float(summary.get("true_log_marginal_likelihood_se"))])
                        if math.isfinite(se) and se >= 0 else None)
    probs = row["probabilities"]
    true_p = _vector(summary.get("true_test_probabilities"))
    if probs is not None and len(probs) and true_p is not None and len(true_p) == len(probs):
        pse = _vector(record.get("test_probabilities_se"), len(probs))
        tse = _vector(summary.get("true_test_probabilities_se"), len(probs))
        keep = np.isfinite(pse) & (pse >= 0) if pse is not None else None
        out["probabilities"] = (z_scores(probs[keep], pse[keep], true_p[keep],
                                         0.0 if tse is None else tse[keep])
                                if keep is not None and keep.any() else None)
    return out


@dataclass
class JobZ:
    """One job's z's by quantity (None: no SE for it), for a job of an exact method on a problem
    with the truth."""

    row: object                            # the job's row of ReportData.jobs
    z: dict[str, np.ndarray | None]
    reference: bool                        # measured against a reference (not exact truth)


def jobs_with_truth(data: ReportData, out: Calibration):
    """Every ok or unreliable job of an exact method on a problem with the truth, as JobZ; the
    jobs of approximations and those without the truth are counted on `out`."""
    jobs = data.jobs
    for i in range(len(jobs)):
        row = jobs.iloc[i]
        if row["status"] not in STATUSES:
            continue
        record = data.records[i] if i < len(data.records) else {}
        s = data.problems.get(row["problem"], {})
        if not bool(row.get("exact_method", True)):
            out.approximations.add(row["method"])   # its SE is of its own approximation
            continue
        if not s.get("truth_kind"):
            out.no_truth += 1
            continue
        yield JobZ(row, job_z(row, record, s), s.get("truth_kind") == "reference")


def calibration(data: ReportData) -> Calibration:
    """The z's of every method × quantity × status (ok, unreliable) over the jobs of the store
    that have the truth (exact or a reference, as the analysis attached it to the problem)."""
    z: dict[tuple[str, str, str], list[np.ndarray]] = {}
    refs: dict[tuple[str, str, str], int] = {}
    no_se: dict[tuple[str, str, str], int] = {}
    out = Calibration()
    out.jobs = list(jobs_with_truth(data, out))
    for job in out.jobs:
        for quantity, values in job.z.items():
            key = (job.row["method"], quantity, job.row["status"])
            if values is None:
                no_se[key] = no_se.get(key, 0) + 1
            else:
                z.setdefault(key, []).append(values)
                refs[key] = refs.get(key, 0) + int(job.reference)
    for key in sorted(set(z) | set(no_se), key=lambda k: (k[1] != "log_z", k[0],
                                                           STATUSES.index(k[2]))):
        method, quantity, status = key
        values = z.get(key, [])
        if values:
            out.groups.append(Group(method, quantity, status, np.concatenate(values),
                                    jobs=len(values), no_se=no_se.get(key, 0),
                                    against_reference=refs.get(key, 0)))
        if no_se.get(key):
            out.no_se[(method, quantity)] = out.no_se.get((method, quantity), 0) + no_se[key]
    return out


# ---- the table and its CSV --------------------------------------------------------------
COLUMNS = ["quantity", "method", "stored as", "jobs", "z values", "jobs without SE", "mean z",
           "sd of z", "|z| > 3", "|z| > 5", "median |z|", "allowed |z| > 3", "verdict"]


def _pct(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return "0 %" if x == 0 else f"{fmt(100 * x, 2)} %"


def caption(cal: Calibration) -> str:
    """The table's caption: the rule, and what is left out."""
    text = (f"z = (estimate − truth) / SE, one per job for log Z and one per job and test "
            f"point for the test probabilities, over the jobs on problems with exact truth or a "
            f"reference. With honest SEs z is close to standard normal: |z| > 3 in 0.27 % of "
            f"cases, |z| > 5 almost never. Rule: a method's SEs are flagged 'too small' when its "
            f"share of |z| > 3 exceeds {100 * TAIL_SHARE:g} % by more than a binomial allowance: "
            f"the (1 − {ALPHA:g}) quantile of Binomial(n, {TAIL_SHARE:g}) / n, with n the number "
            f"of jobs (the test points of one job share its random numbers, so only the jobs "
            f"count as independent; 'allowed |z| > 3'). 'ok' rows test the claim that ok runs "
            f"are covered; 'unreliable' rows (docs/math.md §13) show what the reliability rule "
            f"caught.")
    if cal.against_reference:
        text += (f" {cal.against_reference} job-quantities are measured against a reference "
                 "truth with its own SE: there SE = sqrt(SE_est² + SE_ref²).")
    if cal.no_se:
        parts = [f"{m} ({QUANTITIES[q]}: {n})" for (m, q), n in sorted(cal.no_se.items())]
        text += (f" Left out for want of a standard error, {sum(cal.no_se.values())} "
                 "job-quantities with the truth: " + ", ".join(parts) + ".")
    if cal.no_truth:
        text += (f" {cal.no_truth} answered jobs are on problems without truth or reference "
                 "and are not in this table.")
    if cal.approximations:
        text += (" Approximations are not in this table: their standard error, if any, is of "
                 "their own approximated quantity, not of the error against the truth ("
                 + ", ".join(sorted(cal.approximations)) + ").")
    return text


def table(cal: Calibration, palette):
    """The calibration table: one row per method × quantity × status."""
    from harness.report.tables import Cell, Table

    rows = []
    for g in cal.groups:
        colour = palette.colour(g.method) if palette is not None else ""
        label = palette.legend_label(g.method) if palette is not None else g.method
        share3 = g.share_beyond(TAIL)
        rows.append([
            Cell(QUANTITIES[g.quantity]), Cell(label, "method", colour),
            Cell(g.status, "bad" if g.status == UNRELIABLE else ""),
            Cell(str(g.jobs), "num"), Cell(str(g.n), "num"),
            Cell(str(g.no_se) if g.no_se else "", "num"),
            Cell(fmt(g.mean, 3), "num"), Cell(fmt(g.sd, 3), "num"),
            Cell(_pct(share3), "bad num" if g.flagged else "num"),
            Cell(_pct(g.share_beyond(FAR)), "num"), Cell(fmt(g.median_abs, 3), "num"),
            Cell(_pct(g.allowed_share), "num"),
            Cell("SEs too small", "bad") if g.flagged else Cell("covered"),
        ])
    return Table("calibration", "Calibration of the standard errors", COLUMNS, rows,
                 caption=caption(cal))


def csv_rows(cal: Calibration) -> tuple[list[str], list[dict]]:
    """(columns, rows) of the table's numbers, for calibration.csv (harness.analysis.results
    .write_csv)."""
    columns = ["quantity", "method", "status", "jobs", "n_z", "jobs_without_se",
               "jobs_against_reference", "mean_z", "sd_z", "share_abs_z_gt_3",
               "share_abs_z_gt_5", "median_abs_z", "allowed_share_abs_z_gt_3", "flagged"]
    rows = [dict(zip(columns, [g.quantity, g.method, g.status, g.jobs, g.n, g.no_se,
                               g.against_reference, g.mean, g.sd, g.share_beyond(TAIL),
                               g.share_beyond(FAR), g.median_abs, g.allowed_share, g.flagged],
                     strict=True)) for g in cal.groups]
    return columns, rows
