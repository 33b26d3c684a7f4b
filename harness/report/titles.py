"""Readable problem titles for the report ('one-factor, N = 100, hard (|d| ∈ [0.95, 0.999],
random signs)' rather than 'onefactor:dmax=0.999,dmin=0.95,n=100,random_signs=True'); the spec
stays beside them in small print.

A registered family's own `title` (harness.model.family.ProblemFamily.title) writes it from the
problem's parameters; otherwise it is the family's name, N, the number of test points and the
parameters that differ from the family's defaults. A preset keeps its name in front
('linear1d-p2: linear1d, N = 200, 100 test points, sd_neg 2, sd_pos 1'); a problem of an
unknown family (a file) keeps its name. Titles that would coincide get their spec appended.
"""

from __future__ import annotations

from collections import Counter

from harness.analysis.aggregate import ReportData
from harness.model.family import ProblemFamily
from harness.plugins.registry import presets, problem_families

SIZE_KEYS = ("n", "n_train", "n_test")


def _value(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _generic(family: ProblemFamily, summary: dict, params: dict) -> str:
    defaults = family.defaults()
    parts = [family.name, f"N = {summary.get('n_train')}"]
    if summary.get("n_test"):
        parts.append(f"{summary['n_test']} test points")
    parts += [f"{k} {_value(v)}" for k, v in sorted(params.items())
              if k not in SIZE_KEYS and k in defaults and repr(v) != repr(defaults[k])]
    return ", ".join(parts)


def title(name: str, summary: dict) -> str:
    """The readable title of one problem from its stored summary (its name if there is none)."""
    family = problem_families().get(str(summary.get("family")))
    params = summary.get("params")
    if family is None or not isinstance(params, dict):
        return name
    try:
        text = (family.title({**family.defaults(), **params}) if family.title is not None
                else _generic(family, summary, params))
    except (KeyError, TypeError, ValueError):    # parameters of an older version of the family
        return name
    return f"{name}: {text}" if name in presets() else text


def titles(data: ReportData) -> dict[str, str]:
    """{problem: title} for every problem of the store, distinct; kept on data.titles."""
    if data.titles is None:
        names = list(dict.fromkeys([*data.problems, *(data.jobs["problem"] if len(data.jobs)
                                                      else [])]))
        raw = {p: title(p, data.problems.get(p) or {}) for p in names}
        twice = {t for t, k in Counter(raw.values()).items() if k > 1}
        data.titles = {p: f"{t} [{p}]" if t in twice and t != p else t for p, t in raw.items()}
    return data.titles


def of(data: ReportData, problem: str) -> str:
    return titles(data).get(problem, problem)
