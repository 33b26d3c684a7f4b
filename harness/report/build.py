"""build_report: store -> one self-contained HTML file, a PDF, and CSV summaries."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import matplotlib

from harness.analysis.aggregate import OK, UNRELIABLE, ReportData, load
from harness.analysis.results import job_rows, write_csv
from harness.core.progress import advance, phase
from harness.model.problem import describe_kernel
from harness.model.result import ANSWERED
from harness.report import (
    calibration,
    calibration_section,
    html,
    pdf,
    predictive,
    problem_tables,
    reproduction,
    rule_check,
    scaling_section,
    tables,
    titles,
    tuning,
    tuning_section,
    verdict_section,
)
from harness.report import figures as figs
from harness.report.palette import palette_for
from harness.report.style import fmt

HTML_NAME = "report.html"
PDF_NAME = "report.pdf"
APPENDIX_NAME = "report-appendix.pdf"


def _facts(data: ReportData, problem: str) -> list[tuple[str, str]]:
    s = data.problems[problem]
    jobs = data.jobs[data.jobs["problem"] == problem]
    out = []
    if s.get("description"):
        out.append(("description", s["description"]))
    out.append(("family", str(s.get("family", ""))))
    n_test = s.get("n_test")
    out.append(("size", f"N = {s.get('n_train')} training points"
                + (f", {n_test} test points" if n_test else "")))
    if s.get("kernel"):
        out.append(("kernel", describe_kernel(s["kernel"])))
    kind = s.get("truth_kind")
    if kind:
        lz = s.get("true_log_marginal_likelihood")
        se = s.get("true_log_marginal_likelihood_se") or 0.0
        text = f"{kind}" + (f" — {s['truth_source']}" if s.get("truth_source") else "")
        out.append(("truth", text))
        if lz is not None:
            out.append(("log Z (truth)", fmt(lz, 10) + (f" ± {fmt(se, 2)} (reference SE; errors "
                                                        f"below {fmt(2 * se, 2)} nats are at "
                                                        f"reference precision)" if se else "")))
        pse = s.get("true_test_probabilities_se")
        if pse:
            out.append(("test probabilities (truth)",
                        f"reference SE ≤ {fmt(max(pse), 2)} (mean {fmt(sum(pse) / len(pse), 2)};"
                        f" an MAE below {fmt(2 * sum(pse) / len(pse), 2)} is at reference "
                        "precision)"))
    else:
        out.append(("truth", "none: errors are measured against the consensus of the exact "
                             "methods with an unbiased Ẑ"))
    if s.get("bayes_posterior") is not None:
        out.append(("Bayes posterior", "known (generating model): MAE-POST is reported"))
    c = data.consensus.get(problem)
    if c is not None and c.members:
        parts = []
        if c.log_z is not None:
            parts.append(f"log Z {fmt(c.log_z, 8)} (IQR {fmt(c.log_z_iqr, 2)}, SE "
                         f"{fmt(c.log_z_se, 2)} nats, {c.log_z_runs} runs)")
        if c.probabilities is not None:
            parts.append(f"test probabilities: mean IQR {fmt(c.mean_probability_iqr, 2)}, "
                         f"mean SE {fmt(c.mean_probability_se, 2)} ({c.probability_runs} runs)")
        parts.append("from " + ", ".join(c.methods) + " (each method once)")
        out.append(("consensus", "; ".join(parts)))
    if c is not None and c.excluded and not s.get("truth_kind"):
        out.append(("left out of the consensus",
                    "; ".join(f"{m}: {why}" for m, why in c.excluded)))
    n_ok = int((jobs["status"] == OK).sum())
    out.append(("jobs", f"{len(jobs)} ({n_ok} ok, {len(jobs) - n_ok} not ok)"))
    return out


def _notes(data: ReportData) -> list[str]:
    notes = []
    if not len(data.jobs) and not data.tune_records:
        notes.append("The store holds no finished jobs yet.")
    waiting = [p for p in data.problems if not (data.jobs["problem"] == p).any()]
    if waiting and len(data.jobs):
        notes.append(f"{len(waiting)} problem(s) have no stored jobs yet: "
                     + ", ".join(waiting[:6]) + (", …" if len(waiting) > 6 else "") + ".")
    no_truth = [p for p, s in data.problems.items() if not s.get("truth_kind")
                and (data.jobs["problem"] == p).any()]
    if no_truth:
        notes.append(f"{len(no_truth)} problem(s) without exact truth ({', '.join(no_truth[:6])}"
                     f"{', …' if len(no_truth) > 6 else ''}) are compared with the consensus "
                     "(per-point median over the exact methods whose Ẑ is unbiased, each "
                     "method once, at their largest budgets).")
    ref = [p for p, s in data.problems.items() if s.get("truth_kind") == "reference"]
    if ref:
        notes.append(f"{len(ref)} problem(s) have a reference truth with a standard error "
                     "rather than an exact one; errors below twice that are shown as "
                     "'at reference precision'.")
    approx = [m for m in data.methods if not data.exact(m)]
    if approx:
        notes.append("Approximations (not exact methods): " + ", ".join(approx)
                     + ". They are excluded from the consensus and drawn dashed.")
    single = [p for p, c in data.consensus.items()
              if len(c.methods) == 1
              and not data.problems[p].get("truth_kind")]
    if single:
        notes.append("On " + ", ".join(single[:6]) + " the consensus comes from a single exact "
                     "method, so MAE-MED there measures that method's own spread.")
    return notes


def context_for(data: ReportData, figure_specs, svgs: dict[str, bytes]) -> dict:
    from harness.core.version import __version__

    palette = data.palette
    meta = data.metadata
    n_jobs = len(data.jobs)
    n_ok = int((data.jobs["status"] == OK).sum()) if n_jobs else 0
    n_unreliable = int((data.jobs["status"] == UNRELIABLE).sum()) if n_jobs else 0
    bad = data.jobs[~data.jobs["status"].isin(ANSWERED)]["status"].value_counts().sort_index()
    problems = []
    for name in data.problems:
        if not (data.jobs["problem"] == name).any():
            continue
        specs = [f for f in figure_specs if f.section == name]
        problems.append({
            "name": name, "title": titles.of(data, name), "anchor": "p-" + html.anchor(name),
            "facts": _facts(data, name),
            "figure_specs": specs,
            "figures": [html.figure_context(f, svgs[f.key]) for f in specs],
            "summary_figures": specs[:1],      # its error against CPU time, in the summary
            "summary_keys": [f.key for f in specs[:1]],
            "tables": [t for t in (problem_tables.results_table(data, palette, name),) if t],
            "spread": tables.spread_table(data, palette, name),
        })
    cross = [f for f in figure_specs if not f.section]
    paper = [t for t in (
        *problem_tables.n_grid(data, palette, "mape_percent"),
        problem_tables.problem_grid(data, palette, "mae"),
        problem_tables.problem_grid(data, palette, "mape_percent"),
        tables.problem_by_method_table(data, palette),
        tables.consensus_table(data),
        predictive.predictive_table(data, palette),
    ) if t]
    sweep_name = meta.get("sweep_name") or (meta.get("sweep") or {}).get("name") or ""
    return {
        "title": "GPC benchmark report" + (f": {sweep_name}" if sweep_name else ""),
        "appendix_pdf": "",                                    # build_report names it
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "store_path": data.store_path, "version": __version__,
        "problems": problems, "n_methods": len(data.methods), "n_jobs": n_jobs, "n_ok": n_ok,
        "n_bad": n_jobs - n_ok - n_unreliable, "n_unreliable": n_unreliable,
        "bad_breakdown": ", ".join(f"{v} {k}" for k, v in bad.items()),
        "notes": _notes(data),
        "methods_table": tables.methods_table(data, palette),
        "best_table": tables.best_table(data, palette),
        "cross_figure_specs": cross,
        "cross_figures": [html.figure_context(f, svgs[f.key]) for f in cross],
        "paper_tables": paper,
        "reproduction": reproduction.section(data),   # paper-* sweeps only
        "failures_table": tables.failures_table(data),
        "unreliable_table": tables.unreliable_table(data),
        "status_table": tables.status_table(data),
        "environment": tables.environment_rows(meta),
        "sweep_files": sweep_files(meta),
        "scale": [],                                           # scaling_section.context fills it
        "tuning": [], "n_tune_jobs": len(data.tune_records),   # tuning_section.context fills these
        "tune_failures": tuning.failures_table(data),
        "calibration": None,                                   # calibration_section.context
        "verdict": None,                                       # verdict_section.section
    }


def sweep_files(meta: dict) -> list[tuple[str, str]]:
    """(name, text) of every sweep file that wrote to the store (several if it was reused)."""
    sweeps = meta.get("sweeps")
    if isinstance(sweeps, dict) and sweeps:
        files = [(str(name), str(v.get("text") or "")) for name, v in sweeps.items()
                 if isinstance(v, dict) and v.get("text")]
        if files:
            return files
    text = meta.get("sweep_file")
    return [(str(meta.get("sweep_path") or ""), str(text))] if text else []


def _figures(data: ReportData) -> tuple[dict, list]:
    """Every figure of the report, drawn with progress (a problem at a time, then cost against
    N, tuning and the calibration), and those three sections by name."""
    problems = [p for p in data.problems if (data.jobs["problem"] == p).any()]
    with phase("drawing the figures", total=len(problems) + 3):
        specs = []
        for i, problem in enumerate(problems, 1):
            with phase(f"problem {i} of {len(problems)}"):     # beside the bar
                specs += figs.problem_figures(data, problem, data.palette)
            advance()
        with phase("cost against N"):
            scale = scaling_section.sections(data, data.palette)
        advance()
        with phase("tuning"):
            tune = tuning_section.sections(data, data.palette)
        advance()
        with phase("calibration"):
            cal = calibration_section.section(data, data.palette)
        advance()
    parts = {"scale": scale, "tuning": tune, "calibration": cal}
    specs += [f for s in scale for f in s.figures] + [f for s in tune for f in s.figures]
    return parts, specs + (cal.figures if cal is not None else [])


def build_report(store_path: str | Path, out_dir: str | Path, *, pdf_file: bool = True,
                 csv: bool = True) -> dict[str, Path]:
    """Read a results store and write report.html (self-contained), report.pdf and CSVs.

    Returns the paths written: "html", "pdf", and "cells_csv" / "jobs_csv" (and
    "calibration_csv", "reliability_rule_csv" / "tuning_csv" when the store has jobs for them).
    """
    with phase("reading the store"):   # harness.core.progress: bars in `report`
        data = load(store_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data.palette = palette_for(data)
    # every figure stays open until both the HTML and the PDF have it: silence matplotlib's
    # warning about more than 20 open figures (they are all closed below)
    with matplotlib.rc_context({"figure.max_open_warning": 0}), phase("building the report"):
        parts, specs = _figures(data)
        try:
            svgs = {}
            with phase("rendering the figures", total=len(specs)):
                for i, f in enumerate(specs, 1):
                    with phase(f"figure {i} of {len(specs)}"):
                        svgs[f.key] = f.to_bytes("svg")
                    advance()
            with phase("writing the HTML"):
                context = context_for(data, specs, svgs)
                context["appendix_pdf"] = APPENDIX_NAME if pdf_file else ""
                for key, part in (("scale", scaling_section), ("tuning", tuning_section)):
                    context[key] = part.context(parts[key], svgs)
                calibration_sec = parts["calibration"]
                context["calibration"] = calibration_section.context(calibration_sec, svgs)
                context["verdict"] = verdict_section.section(
                    data, data.palette, calibration_sec.calibration if calibration_sec else None)
                written: dict[str, Path] = {}
                written["html"] = out / HTML_NAME
                written["html"].write_text(html.render(context), encoding="utf-8")
            if pdf_file:
                written["pdf"] = pdf.write_pdf(out / PDF_NAME, context, APPENDIX_NAME)
                written["appendix_pdf"] = pdf.write_appendix(out / APPENDIX_NAME, context)
        finally:
            figs.close(specs)
    if csv:
        written["cells_csv"] = out / "cells.csv"
        data.cells.to_csv(written["cells_csv"], index=False)
        written["jobs_csv"] = out / "jobs.csv"
        write_csv(written["jobs_csv"], *job_rows(data))   # the columns of `export`
        if calibration_sec is not None:
            written["calibration_csv"] = out / "calibration.csv"
            write_csv(written["calibration_csv"],
                      *calibration.csv_rows(calibration_sec.calibration))
            written["reliability_rule_csv"] = out / "reliability_rule.csv"
            write_csv(written["reliability_rule_csv"],
                      *rule_check.csv_rows(calibration_sec.rule_cells))
        if tuning.write_csv(data, out / "tuning.csv"):
            written["tuning_csv"] = out / "tuning.csv"
    return written
