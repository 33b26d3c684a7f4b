"""The report's "Hyperparameter tuning" section: from tune records to surfaces and tables.

Tune records (harness.tuning.job.run_tune_job, docs/math.md §12) are grouped by problem and
search space. For each group:

- the estimated log Z surface of every method, from its grid-strategy runs: the mean over
  replicates at each grid point, ± its standard error (the spread of the replicates; a single
  replicate's own SE when there is one replicate);
- the reference: the exact surface and optimum stored by the sweep (harness.sweep.tune_exact),
  else the consensus — by the report's rule: exact methods with an unbiased Ẑ, each counted
  once — and its best grid point;
- per method × strategy: the chosen point, its distance from the reference optimum in natural-log
  units and in grid steps, the reference log Z lost by choosing it, the CPU seconds of the whole
  tuning and the number of evaluations (means ± SE over replicates);
- pseudo-marginal chains: posterior mean and sd of each log-parameter, against the exact
  posterior when one is stored (one-parameter spaces).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.analysis.aggregate import OK, consensus_exclusions, summarize
from harness.core import metrics
from harness.report.style import fmt
from harness.report.tables import Cell, Table, se_cell

STRATEGY_ORDER = ("grid", "explore-exploit", "pseudo-marginal")


@dataclass
class Surface:
    """log Z on the grid (shape: one entry per axis), mean and SE, NaN where unknown."""

    log_z: np.ndarray
    se: np.ndarray
    runs: int = 0


@dataclass
class TuneGroup:
    """The tune records of one problem and one search space."""

    problem: str
    space: dict[str, list]                      # {name: [low, high, num]}
    records: list[dict]
    reference: dict[str, Any] | None = None     # the stored reference (exact), or None
    surfaces: dict[str, Surface] = field(default_factory=dict)   # method -> grid surface
    ref_surface: np.ndarray | None = None       # exact or consensus log Z on the grid
    ref_kind: str = ""                          # "exact", "consensus" or ""
    ref_optimum: dict[str, float] | None = None
    ref_optimum_log_z: float = math.nan

    @property
    def names(self) -> list[str]:
        return list(self.space)

    @property
    def axes(self) -> list[np.ndarray]:
        return [np.geomspace(lo, hi, int(n)) for lo, hi, n in self.space.values()]

    @property
    def steps(self) -> np.ndarray:
        """Grid step of each axis in natural-log units."""
        return np.array([math.log(hi / lo) / (int(n) - 1) for lo, hi, n in self.space.values()])

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(v[2]) for v in self.space.values())

    @property
    def methods(self) -> list[str]:
        return sorted({r["method"] for r in self.records})

    def grid_index(self, params: dict[str, float] | None) -> tuple[int, ...] | None:
        """The grid point's index of these parameters, None if they are not on the grid."""
        if not params or set(params) != set(self.space):
            return None
        idx = []
        for name, axis in zip(self.names, self.axes, strict=True):
            value = float(params[name])
            if not value > 0:
                return None
            i = int(np.argmin(np.abs(np.log(axis) - math.log(value))))
            if abs(math.log(axis[i]) - math.log(value)) > 1e-6:
                return None
            idx.append(i)
        return tuple(idx)

    def distance(self, params: dict[str, float] | None) -> tuple[float, float]:
        """(natural-log distance, distance in grid steps) from the reference optimum."""
        if not params or not self.ref_optimum or set(params) != set(self.space):
            return math.nan, math.nan
        delta = np.array([math.log(float(params[k]) / float(self.ref_optimum[k]))
                          for k in self.names])
        return float(np.linalg.norm(delta)), float(np.linalg.norm(delta / self.steps))

    def lost(self, params: dict[str, float] | None) -> float:
        """Reference log Z at its optimum minus at these parameters (grid points only)."""
        idx = self.grid_index(params)
        if idx is None or self.ref_surface is None or not math.isfinite(self.ref_optimum_log_z):
            return math.nan
        return float(self.ref_optimum_log_z - self.ref_surface[idx])


# ---- grouping and surfaces ----------------------------------------------------------------
def _is_exact(method_name: str) -> bool:
    from harness.plugins.registry import get_method

    try:
        return bool(get_method(method_name).tags.exact)
    except Exception:  # noqa: BLE001 - a method not installed here: counted as exact
        return True


def methods(data) -> set[str]:
    return {r["method"] for r in data.tune_records}


def approximate(data) -> set[str]:
    return {r["method"] for r in data.tune_records if not _is_exact(r.get("method_name", ""))}


def evaluations(records: list[dict], stage: str) -> list[dict]:
    return [e for r in records if r.get("status") == OK for e in (r.get("evaluations") or [])
            if e.get("stage") == stage and e.get("status", OK) == OK
            and e.get("log_z") is not None and math.isfinite(float(e["log_z"]))]


def grid_surface(group: TuneGroup, records: list[dict]) -> Surface | None:
    """Mean ± SE over replicates of the grid-strategy log Z at each grid point."""
    runs = [r for r in records if r.get("strategy") == "grid" and r.get("status") == OK]
    if not runs:
        return None
    values = np.full((len(runs), *group.shape), np.nan)
    own_se = np.full_like(values, np.nan)
    for k, r in enumerate(runs):
        for e in evaluations([r], "grid"):
            idx = group.grid_index(e.get("params"))
            if idx is not None:
                values[(k, *idx)] = float(e["log_z"])
                own_se[(k, *idx)] = float(e["log_z_se"]) if e.get("log_z_se") is not None \
                    else np.nan
    mean, n = _nanmean(values)
    spread = np.sqrt(_nanmean((values - mean) ** 2)[0] * n / np.maximum(n - 1, 1))
    se = np.where(n >= 2, spread / np.sqrt(np.maximum(n, 1)), _nanmean(own_se)[0])
    return Surface(mean, se, len(runs))


def _nanmean(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over the first axis of the finite values (NaN where none) and their count."""
    n = np.isfinite(values).sum(axis=0)
    total = np.where(np.isfinite(values), values, 0.0).sum(axis=0)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan), n


def consensus_surface(group: TuneGroup) -> np.ndarray | None:
    """Per-point consensus of the grid evaluations, by the report's rule (docs/math.md §3d,
    harness.analysis.aggregate.consensus_exclusion): only exact methods with an unbiased Ẑ, each
    method once — the median of its own evaluations (all variants and replicates) at the point —
    then the median over those methods."""
    why_not = consensus_exclusions(group.records)
    eligible = [r for r in group.records if why_not.get(r["method"]) is None]
    pooled: dict[tuple[int, ...], dict[str, list[float]]] = {}
    for r in eligible:
        for e in evaluations([r] if r.get("strategy") == "grid" else [], "grid"):
            idx = group.grid_index(e.get("params"))
            if idx is not None:
                pooled.setdefault(idx, {}).setdefault(r.get("method_name", r["method"]),
                                                      []).append(float(e["log_z"]))
    if not pooled:
        return None
    out = np.full(group.shape, np.nan)
    for idx, by_method in pooled.items():
        medians = [float(np.median(v)) for v in by_method.values()]
        out[idx] = float(metrics.median_consensus(np.array(medians)[:, None])[0][0])
    return out


def set_reference(group: TuneGroup) -> None:
    """The exact surface when stored for this space, else the consensus."""
    ref = group.reference or {}
    surface = ref.get("surface") if ref.get("space") == group.space else None
    if surface:
        values = np.full(group.shape, np.nan)
        for params, lz in zip(surface["points"], surface["log_z"], strict=True):
            idx = group.grid_index(params)
            if idx is not None and lz is not None:
                values[idx] = float(lz)
        group.ref_surface, group.ref_kind = values, "exact"
        group.ref_optimum = {k: float(v) for k, v in surface["optimum"].items()}
        group.ref_optimum_log_z = float(surface["optimum_log_z"])
        return
    group.reference = None
    cons = consensus_surface(group)
    if cons is None or not np.isfinite(cons).any():
        return
    best = np.unravel_index(int(np.nanargmax(cons)), cons.shape)
    group.ref_surface, group.ref_kind = cons, "consensus"
    group.ref_optimum = {k: float(ax[i]) for k, ax, i in
                         zip(group.names, group.axes, best, strict=True)}
    group.ref_optimum_log_z = float(cons[best])


def groups(data) -> list[TuneGroup]:
    """One TuneGroup per problem × search space, in problem order, surfaces filled in."""
    from harness.sweep.tune_exact import stored_references

    refs = stored_references(data.metadata)
    by_key: dict[tuple[str, str], list[dict]] = {}
    for r in data.tune_records:
        by_key.setdefault((r["problem"], json.dumps(r.get("space") or {}, sort_keys=True)),
                          []).append(r)
    out = []
    for (problem, space_text), records in sorted(by_key.items()):
        space = {k: list(v) for k, v in json.loads(space_text).items()}
        if not space:
            continue
        g = TuneGroup(problem, space, records, refs.get(problem))
        for method in g.methods:
            s = grid_surface(g, [r for r in records if r["method"] == method])
            if s is not None:
                g.surfaces[method] = s
        set_reference(g)
        out.append(g)
    return out


# ---- tables -------------------------------------------------------------------------------
def _mean_se(values) -> tuple[float, float]:
    """Mean and standard error of the finite values (None counts as missing)."""
    s = summarize([math.nan if x is None else x for x in values])
    return s["mean"], s["se"]


def _count(mean: float) -> str:
    """A mean count: whole numbers without decimals."""
    if not math.isfinite(mean):
        return "—"
    return str(int(mean)) if float(mean).is_integer() else f"{mean:.1f}"


def chosen_text(group: TuneGroup, chosen: list[dict]) -> str:
    """The chosen point: its value if every replicate agrees, else geometric mean [range]."""
    if not chosen:
        return "—"
    parts = []
    for name in group.names:
        v = np.array([float(c[name]) for c in chosen])
        if np.allclose(v, v[0], rtol=1e-9):
            parts.append(f"{name} = {fmt(v[0])}")
        else:
            parts.append(f"{name} ≈ {fmt(float(np.exp(np.mean(np.log(v)))))} "
                         f"[{fmt(v.min(), 2)}–{fmt(v.max(), 2)}]")
    return ", ".join(parts)


def _strategies(records: list[dict]) -> list[str]:
    found = {r.get("strategy") for r in records}
    return [s for s in STRATEGY_ORDER if s in found] + sorted(
        s for s in found - set(STRATEGY_ORDER) if s)


def optimum_table(group: TuneGroup, palette) -> Table:
    rows = []
    for method in group.methods:
        mine = [r for r in group.records if r["method"] == method]
        for strategy in _strategies(mine):
            runs = [r for r in mine if r.get("strategy") == strategy]
            ok = [r for r in runs if r.get("status") == OK and r.get("chosen")]
            chosen = [r["chosen"] for r in ok]
            dist = [group.distance(c) for c in chosen]
            bad = len(runs) - len(ok)
            rows.append([
                Cell(palette.legend_label(method), "method", palette.colour(method)),
                Cell(strategy), Cell(f"{len(ok)}/{len(runs)}", "bad num" if bad else "num"),
                Cell(chosen_text(group, chosen)),
                se_cell(*_mean_se([d[0] for d in dist])),
                se_cell(*_mean_se([d[1] for d in dist])),
                se_cell(*_mean_se([group.lost(c) for c in chosen])),
                se_cell(*_mean_se([r.get("chosen_log_z") for r in ok]), 6),
                se_cell(*_mean_se([r.get("cpu_seconds") for r in ok])),
                Cell(_count(_mean_se([r.get("n_evaluations") for r in ok])[0]), "num"),
            ])
    ref = {"exact": "the exact optimum (bounded optimiser on the exact log Z)",
           "consensus": "the best grid point of the consensus surface (per-point median of "
                        "the exact methods' grid evaluations)"}.get(group.ref_kind, "")
    caption = ("Means (standard errors) over the successful replicates. Distances are from "
               + (ref or "the reference optimum (none here: no exact truth and no exact "
                  "method ran the grid)")
               + "; 'log Z lost' is the reference log Z at its optimum minus at the chosen "
               "grid point (0 is best). CPU seconds are the whole tuning job's (every "
               "evaluation).")
    return Table(f"tune-table-optimum-{group.problem}", "Optimum found by each method and strategy",
                 ["method", "strategy", "ok / jobs", "chosen", "|Δ log θ| (nats)",
                  "grid steps", "log Z lost", "chosen log Ẑ", "tuning CPU s", "evaluations"],
                 rows, caption=caption, section=group.problem)


def exact_posterior_moments(reference: dict | None) -> tuple[float, float] | None:
    """Mean and sd of the log-parameter under the stored exact posterior (1-D)."""
    from harness.tuning.exact import posterior_summary

    post = (reference or {}).get("posterior")
    if not post:
        return None
    summary = posterior_summary(post["log_grid"], post["log_density"])
    return summary["mean"], summary["sd"]


def chain_table(group: TuneGroup, palette) -> Table:
    """Posterior mean and sd of each log-parameter per method (pseudo-marginal chains)."""
    rows = []
    for method in group.methods:
        runs = [r for r in group.records if r["method"] == method
                and r.get("strategy") == "pseudo-marginal" and r.get("status") == OK
                and (r.get("chain") or {}).get("samples")]
        if not runs:
            continue
        samples = [np.asarray(r["chain"]["samples"], float).reshape(-1, len(group.names))
                   for r in runs]
        row = [Cell(palette.legend_label(method), "method", palette.colour(method)),
               Cell(str(len(runs)), "num"),
               Cell(fmt(_mean_se([r["chain"].get("acceptance_fraction") for r in runs])[0]),
                    "num")]
        for j in range(len(group.names)):
            row += [se_cell(*_mean_se([s[:, j].mean() for s in samples])),
                    se_cell(*_mean_se([s[:, j].std() for s in samples]))]
        rows.append(row)
    moments = exact_posterior_moments(group.reference)
    if rows and moments is not None:
        rows.append([Cell("exact posterior", "method"), Cell("", "num"), Cell("", "num"),
                     Cell(fmt(moments[0]), "num"), Cell(fmt(moments[1]), "num")])
    columns = ["method", "chains", "acceptance"]
    for name in group.names:
        columns += [f"mean log {name}", f"sd log {name}"]
    return Table(f"tune-table-chain-{group.problem}", "Pseudo-marginal posterior of the "
                 "log-hyperparameters", columns, rows, section=group.problem,
                 caption="Per chain (all walkers after burn-in), the mean and standard deviation "
                         "of each natural-log parameter; means (standard errors) over replicate "
                         "chains. Uniform prior on the log box of the grid."
                         + (" The last row integrates the exact posterior."
                            if moments is not None else ""))


def facts(group: TuneGroup) -> list[tuple[str, str]]:
    out = [("search space", "; ".join(f"{k}: {int(n)} log-spaced points from {fmt(lo)} to "
                                       f"{fmt(hi)}" for k, (lo, hi, n) in group.space.items()))]
    if group.ref_kind == "exact":
        out.append(("exact optimum", ", ".join(f"{k} = {fmt(v, 4)}"
                                                 for k, v in group.ref_optimum.items())
                    + f" (log Z = {fmt(group.ref_optimum_log_z, 8)}); "
                    + str((group.reference or {}).get("surface", {}).get("source", ""))))
    elif group.ref_kind == "consensus":
        out.append(("reference", "no exact truth: the consensus surface (per-point median of "
                                 "the exact methods' grid evaluations); its best grid point "
                    + ", ".join(f"{k} = {fmt(v, 4)}" for k, v in group.ref_optimum.items())))
    else:
        out.append(("reference", "none (no exact truth and no exact method ran the grid)"))
    n_ok = sum(r.get("status") == OK for r in group.records)
    out.append(("tuning jobs", f"{len(group.records)} ({n_ok} ok, "
                               f"{len(group.records) - n_ok} not ok)"))
    return out


def failures_table(data) -> Table:
    """Every tuning job that did not succeed, with its reason."""
    bad = sorted((r for r in data.tune_records if r.get("status") != OK),
                 key=lambda r: (r["problem"], r["method"], str(r.get("strategy")),
                                r.get("replicate") or 0))
    rows = [[Cell(r["problem"]), Cell(r["method"], "method"), Cell(str(r.get("strategy"))),
             Cell(str(r.get("replicate")), "num"), Cell(str(r.get("status")), "bad"),
             Cell(str(r.get("reason") or "")), Cell(str(r.get("job_id") or "")[:12])]
            for r in bad]
    return Table("tune-failures", "Tuning jobs that did not succeed",
                 ["problem", "method", "strategy", "replicate", "status", "reason", "job"], rows,
                 caption="Left out of the tuning section's means; the evaluations they made "
                         "before stopping are kept in the store and in tuning.csv.")


def write_csv(data, path: Path) -> Path | None:
    """Every evaluation of every tune job, one row each (None when there are none)."""
    if not data.tune_records:
        return None
    cols = ["problem", "method", "strategy", "replicate", "job_id", "stage", "budget", "params",
            "log_z", "log_z_se", "cpu_seconds", "status"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in data.tune_records:
            for e in r.get("evaluations") or []:
                w.writerow([r["problem"], r["method"], r.get("strategy"), r.get("replicate"),
                            r.get("job_id"), e.get("stage"), e.get("budget"),
                            json.dumps(e.get("params"), sort_keys=True), e.get("log_z"),
                            e.get("log_z_se"), e.get("cpu_seconds"), e.get("status")])
    return path
