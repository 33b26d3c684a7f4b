"""What a "—" means in a table of the report, said under the table (HTML and PDF alike).

`legend(table)` is the caption the renderers show: the table's own caption, and when a cell
of the table shows "—" and the caption does not already say what it means, one more
sentence that does, specific to the table (MEANINGS, by the start of its key) or the
general one.
"""

from __future__ import annotations

from harness.report.tables import Table

DASH = "—"
MEANINGS = {    # key prefix -> what "—" stands for there
    "spread-": "no ok run has this value",
    "results-": "no value",
    "consensus": "no consensus value (no exact method with an unbiased Ẑ gave one)",
    "t4": "no ok run with this error measure",
    "unreliable": "the runs gave no value",
    "verdict": "no method of this problem entered for this target",
    "leaderboard": "no value (no target reached, or no runs with both a truth and an SE)",
    "best": "no runner-up within this time",
    "approximations": "not measured (no truth or reference for it)",
    "calibration": "no runs with both a truth and an SE",
    "reliability_rule": "no runs of this kind",
    "scale-": "not measured at this size",
    "tune-": "no value (the strategy was not run, or gave none)",
    "predictive": "no ok run gave test probabilities",
}
GENERAL = "no value (no ok run gave one, or it does not apply)"


def shows_dash(table: Table) -> bool:
    return any(c.text == DASH or c.sub == DASH for row in table.rows for c in row)


def meaning(table: Table) -> str:
    return next((m for k, m in MEANINGS.items() if table.key.startswith(k)), GENERAL)


def legend(table: Table) -> str:
    """The caption, with what "—" means when the table shows one (module doc)."""
    caption = table.caption or ""
    if not shows_dash(table) or f"'{DASH}'" in caption:
        return caption
    return (caption + " " if caption else "") + f"'{DASH}': {meaning(table)}."
