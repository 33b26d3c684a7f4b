"""`python -m harness compare`: a candidate run against a baseline, per problem × method × budget
(harness.analysis.compare: ratios of CPU time and errors, intervals, regressions flagged)."""

from __future__ import annotations

import json
import math

from harness.core.errors import InputError

MARKS = {"worse": "+", "better": "-", "": " "}   # asv compare's marks


def setup(p):
    """Compare two stores (or two sweeps) and flag what got worse."""
    from harness.analysis.compare import ERROR_THRESHOLD, TIME_THRESHOLD

    p.description = (
        "Compare a candidate run with a baseline: per problem × method × budget, the ratio "
        "(candidate / baseline) of the geometric means over replicates of the estimate's CPU "
        "time, of the log Z error and of the test-probability error (against the truth, else "
        "the baseline's consensus), with 95 % intervals (Welch t on the logs); per method, the "
        "same pooled over its cells. A change is flagged (+ worse, - better) when its whole "
        "interval lies beyond the threshold.")
    p.epilog = ("exit status: 0 no regression; 1 some method is worse (flagged +); 2 bad input, "
                "or nothing to compare (no problem × method × budget in common). Two sweeps of "
                "one store: compare STORE --sweeps BASELINE CANDIDATE")
    p.add_argument("baseline", metavar="BASELINE", help="the baseline's results store")
    p.add_argument("candidate", metavar="CANDIDATE", nargs="?",
                   help="the candidate's results store (default: the baseline's, with --sweeps)")
    p.add_argument("--sweeps", nargs=2, metavar=("BASELINE", "CANDIDATE"),
                   help="compare these two sweeps (their names in the stores) instead of whole "
                   "stores; the jobs they share are compared as they are (identical)")
    p.add_argument("--error-threshold", default=str(ERROR_THRESHOLD), metavar="FRACTION",
                   help=f"an error is worse when its interval lies above 1 + this "
                   f"(default {ERROR_THRESHOLD:g}: 10 %%)")
    p.add_argument("--time-threshold", default=str(TIME_THRESHOLD), metavar="FRACTION",
                   help=f"CPU time is worse when its interval lies above 1 + this (default "
                   f"{TIME_THRESHOLD:g}: CPU times of one job vary by tens of percent between "
                   "runs)")
    p.add_argument("--all", action="store_true",
                   help="list every cell, not only the flagged ones")
    p.add_argument("--json", action="store_true", help="print the whole comparison as JSON")


def _fraction(field: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise InputError(field, f"must be a fraction >= 0, got {text!r}", f"e.g. {field} 0.1")
    return value


def run(args) -> int:
    from harness.analysis.compare import compare, load_side, nothing_in_common

    if args.candidate is None and args.sweeps is None:
        raise InputError("compare", "needs two stores, or one store and --sweeps A B",
                         "e.g. compare results/old.sqlite results/new.sqlite")
    sweeps = args.sweeps or (None, None)
    thresholds = (_fraction("--error-threshold", args.error_threshold),
                  _fraction("--time-threshold", args.time_threshold))
    sides = (load_side(args.baseline, sweeps[0]),
             load_side(args.candidate or args.baseline, sweeps[1]))
    why = nothing_in_common(*sides)
    if why:
        raise InputError("compare", f"nothing to compare: {why}",
                         "compare two runs of the same problems, methods and budgets, e.g. "
                         "one sweep file before and after a change")
    result = compare(*sides, *thresholds)
    if args.json:
        print(json.dumps(_plain(result.to_dict()), allow_nan=False))
    else:
        print("\n".join(lines(result, args.all)))
    return 1 if result.flagged else 0


def _plain(value):
    """JSON-ready: NaN and infinite numbers (no value, no interval) become null."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _ratio(q: dict | None) -> str:
    """'1.02 [0.81, 1.29]' (a ratio and its interval), '—' without a value."""
    if not q:
        return "—"
    high = "∞" if math.isinf(q["high"]) else f"{q['high']:.3g}"
    return f"{q['ratio']:.3g} [{q['low']:.3g}, {high}]" + (" " + MARKS[q["verdict"]]
                                                             if q["verdict"] else "")


def lines(result, every_cell: bool = False) -> list[str]:
    """The comparison as text: the sides, the rule, one line per method, the flagged cells."""
    from harness.analysis.compare import QUANTITIES

    out = [f"baseline  {result.baseline.describe()}",
           f"candidate {result.candidate.describe()}",
           f"ratios candidate / baseline of the geometric means over replicates [95 % interval]: "
           f"+ worse when the interval lies above ×{1 + result.error_threshold:g} (errors) or "
           f"×{1 + result.time_threshold:g} (CPU time), - better below their inverses; a method "
           f"is + when its pooled interval is, when more of its jobs fail, or when a cell is at "
           f"the family-wise level (Bonferroni over its cells; docs/math.md §10)", ""]
    names = [m["method"] + (f" (was {m['baseline_method']})"
                            if m["method"] != m["baseline_method"] else "")
             for m in result.methods]
    width = max([len(n) for n in names] + [6])
    out.append(f"  {'method':<{width}}  cells  " + "  ".join(f"{v:<24}" for v in
                                                              QUANTITIES.values()).rstrip())
    for m, name in zip(result.methods, names, strict=True):
        out.append(f"{MARKS[m['verdict']]} {name:<{width}}  {m['cells']:>5}  "
                   + "  ".join(f"{_ratio(m[q]):<24}" for q in QUANTITIES).rstrip())
    shown = [c for c in result.cells if every_cell or c["verdict"]]
    if shown:
        out += ["", "cells (problem / method / budget):" if every_cell
                else "flagged cells (problem / method / budget):"]
        for c in shown:
            jobs = c["jobs"]
            out.append(f"{MARKS[c['verdict']]} {c['problem']} / {c['method']} / {c['budget']}: "
                       + ", ".join(f"{QUANTITIES[q]} {_ratio(c[q])}" for q in QUANTITIES)
                       + f"; ok {jobs['baseline'][0]}/{jobs['baseline'][1]} -> "
                       f"{jobs['candidate'][0]}/{jobs['candidate'][1]}"
                       + (f" ({'; '.join(c['why'])})" if c["why"] else ""))
    for what, labels in (("only in the baseline", result.only_baseline),
                         ("only in the candidate", result.only_candidate)):
        if labels:
            out.append(f"{what}: {', '.join(labels)}")
    if math.isfinite(result.median_cpu_ratio):
        out.append(f"CPU time over all {len(result.cells)} paired cells: median ratio "
                   f"{result.median_cpu_ratio:.3g}"
                   + (" (far from 1: the machines or their load differ, judge times with care)"
                      if abs(math.log(result.median_cpu_ratio)) > math.log(1.25) else ""))
    worse = result.flagged
    better = [m["method"] for m in result.methods if m["verdict"] == "better"]
    out.append(f"{len(worse)} method(s) worse" + (f": {', '.join(worse)}" if worse else "")
               + f"; {len(better)} better" + (f": {', '.join(better)}" if better else ""))
    return out
