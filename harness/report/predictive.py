"""The report's predictive-quality table: on every problem with held-out labels (y_test), each
method's accuracy, log-loss and Brier score (docs/math.md §10) at its largest budget, mean (SE)
over the successful replicates, below the scores of the exact predictive probabilities (the
truth) and of the generating model's Bayes posterior when they are known. One table across
problems (cells.csv has every budget)."""

from __future__ import annotations

from harness.analysis.aggregate import PREDICTIVE, ReportData
from harness.core import metrics
from harness.report.style import fmt, fmt_budget
from harness.report.tables import Cell, Table, method_cell, se_cell

REFERENCES = (("true_test_probabilities", "exact predictive (truth)"),
              ("bayes_posterior", "Bayes posterior (generating model)"))


def _reference_rows(summary: dict) -> list[list[Cell]]:
    labels = summary.get("y_test")
    rows = []
    for field, name in REFERENCES:
        probs = summary.get(field)
        if labels and probs is not None and len(probs) == len(labels):
            scores = metrics.predictive_scores(probs, labels)
            rows.append([Cell(name, "method"), Cell("—"), Cell("—")]
                        + [Cell(fmt(scores[c], 3), "num") for c in PREDICTIVE])
    return rows


def predictive_table(data: ReportData, palette) -> Table:
    """Scores against the held-out labels (an empty table when no job has them)."""
    cells = data.cells[data.cells["accuracy_n"] > 0] if len(data.cells) else data.cells
    rows = []
    for problem, grp in cells.groupby("problem", sort=True):
        summary = data.problems.get(problem, {})
        n = len(summary.get("y_test") or [])
        rows.append([Cell(f"{problem}" + (f" ({n} held-out labels)" if n else ""))]
                    + [Cell("")] * (2 + len(PREDICTIVE)))
        rows += _reference_rows(summary)
        top = grp.sort_values("budget").groupby("method").tail(1).sort_values("method")
        for _, r in top.iterrows():
            rows.append([method_cell(data, palette, r["method"]),
                         Cell(fmt_budget(r["budget"]), "num"),
                         Cell(str(int(r["accuracy_n"])), "num")]
                        + [se_cell(r[f"{c}_mean"], r[f"{c}_se"]) for c in PREDICTIVE])
    return Table("predictive", "Predictive quality on the held-out labels",
                 ["method", "largest budget", "runs", "accuracy (SE)", "log-loss, nats (SE)",
                  "Brier score (SE)"], rows,
                 caption="Each method at its largest budget, scored against the problem's "
                         "held-out labels: higher accuracy is better, lower log-loss and Brier "
                         "score are better. Mean (standard error) over the successful "
                         "replicates: the SE is the method's Monte Carlo spread, not the "
                         "sampling error of the test set (about √(a(1 − a)/n) on an accuracy a "
                         "over n points), which every row of a problem shares, so its rows "
                         "compare fairly. The exact predictive probabilities score what exact "
                         "inference with the problem's kernel reaches. cells.csv has every "
                         "budget.")

