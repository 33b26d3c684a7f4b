"""Reference values as data: the JSON file of one problem's reference, where references are
found, and how a problem (or a stored problem summary) gets one as its truth.

A reference record (harness.references.compute.compute_reference) holds a problem's log Z and test
probabilities with their standard errors and their provenance (method, budget, seeds, versions,
diagnostics, checks) — the shape benchmark suites use for ground truth without a closed form
(inference-gym: each value with its standard error; posteriordb: reference values with the
checks they passed). Exported, it is one JSON file per problem (`FORMAT`); imported, it is
checked like any other input.

Where a problem's reference comes from (the first that matches; a problem with an exact oracle,
or a problem file that carries its own truth, keeps that):
  1. beside a problem file: `data.npz` -> `data.reference.json` (one record, or a list of
     records, e.g. for several kernel settings of the same file);
  2. shipped with the package: harness/data/references/<problem name>.json (the presets without
     truth: gauss-p1 ... gauss-p6, crabs, breast-cancer, digits-3v5);
  3. for reports, also the results store's `references` table (`reference --store`).
A record matches a problem when their fingerprints agree: the SHA-256 of the kernel, the sizes
and the data (training inputs and labels, test inputs; for an orthant problem the covariance's
diagonal and its product with a fixed vector), rounded to float32 so that last-bit differences
between machines do not matter while any change of the data does. A stored problem summary (a
report on an existing store) is matched by its family, parameters, sizes and kernel.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.errors import InputError
from harness.core.seeding import canonical_json
from harness.model.problem import Problem, Truth

FORMAT = "gpc-harness-reference/1"
REFERENCE_SUFFIX = ".reference.json"
SUMMARY_KEYS = ("family", "params", "n_train", "n_test", "kernel")
# an error below this many reference standard errors cannot be told from zero (the report's
# "at reference precision", harness.analysis.aggregate.precision_floor)
REFERENCE_FACTOR = 2.0


# ---- identity -----------------------------------------------------------------------------
def fingerprint(problem: Problem) -> str:
    """SHA-256 (hex) of what determines a problem's answer, in float32 (module doc)."""
    h = hashlib.sha256(canonical_json({
        "kernel": problem.kernel_summary(), "n_train": problem.n_train,
        "n_test": problem.n_test, "orthant": problem.is_orthant}).encode())
    if problem.is_orthant:
        probe = np.cos(np.arange(problem.n_train))   # fixed, no symmetry a permutation keeps
        arrays = [problem.cov.diag(), problem.cov.matmul(probe)]
    else:
        arrays = [problem.X_train, problem.y_train, problem.X_test]
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.float32).tobytes())
    return h.hexdigest()


def file_name(problem_name: str) -> str:
    """The JSON file name of a problem's reference: 'gauss-p1' -> 'gauss-p1.json' (a problem
    file's by its file name: '/data/mine.npz' -> 'mine.npz.json')."""
    head, sep, options = problem_name.partition(":")
    base = Path(head).name + sep + options
    return re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("_") + ".json"


def reference_path(problem_file: str | Path) -> Path:
    """Where a problem file's own references live: data.npz -> data.reference.json."""
    p = Path(problem_file)
    return p.with_name(p.stem + REFERENCE_SUFFIX)


# ---- reading and writing ------------------------------------------------------------------
def _number(field: str, value: Any, *, low: float = -math.inf, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(field, f"must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise InputError(field, f"must lie in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def _vector(field: str, value: Any, n: int, *, low: float, high: float) -> list[float]:
    if not isinstance(value, list) or len(value) != n:
        raise InputError(field, f"must be a list of {n} numbers, got "
                         f"{len(value) if isinstance(value, list) else type(value).__name__}")
    return [_number(f"{field}[{i}]", v, low=low, high=high) for i, v in enumerate(value)]


def check_record(record: Any, where: str = "reference") -> dict[str, Any]:
    """The record if it is a valid reference (InputError naming the field otherwise)."""
    if not isinstance(record, dict):
        raise InputError(where, f"must be a JSON object, got {type(record).__name__}")
    if record.get("format") != FORMAT:
        raise InputError(f"{where}: format", f"must be {FORMAT!r}, got {record.get('format')!r}",
                         "export it with `python -m harness reference ... --out FILE.json`")
    for key in ("problem", "fingerprint", "method"):
        if not isinstance(record.get(key), str) or not record[key]:
            raise InputError(f"{where}: {key}", f"must be a non-empty string, got "
                             f"{record.get(key)!r}")
    _number(f"{where}: log_marginal_likelihood", record.get("log_marginal_likelihood"), high=0.0)
    _number(f"{where}: log_marginal_likelihood_se", record.get("log_marginal_likelihood_se"),
            low=0.0)
    probs, ses = record.get("test_probabilities"), record.get("test_probabilities_se")
    if probs is not None:
        n = len(probs) if isinstance(probs, list) else -1
        _vector(f"{where}: test_probabilities", probs, n, low=0.0, high=1.0)
        _vector(f"{where}: test_probabilities_se", ses, n, low=0.0, high=1.0)
    return record


def export_reference(record: dict[str, Any], path: str | Path) -> Path:
    """Write one problem's reference as a JSON file (FORMAT); returns the path."""
    check_record(record)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
    return path


def import_references(path: str | Path) -> list[dict[str, Any]]:
    """The reference record(s) of a JSON file (one record or a list), each checked."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise InputError(str(path), f"is not valid JSON ({exc})") from None
    items = data if isinstance(data, list) else [data]
    return [check_record(r, f"{path}" + (f"[{i}]" if isinstance(data, list) else ""))
            for i, r in enumerate(items)]


@lru_cache(maxsize=64)
def _cached_file(path: str, mtime: float) -> tuple[dict[str, Any], ...]:
    return tuple(import_references(path))


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return []
    return list(_cached_file(str(path), mtime))


def shipped_dir() -> Path:
    """The folder of the references shipped with the package."""
    return Path(str(resources.files("harness") / "data" / "references"))


def shipped(problem_name: str) -> list[dict[str, Any]]:
    """The shipped references that may belong to a problem name: its own file, and its
    preset's for a name with options ('gauss-p1:alpha=5,beta=1' is gauss-p1 when the options
    are the preset's own; the fingerprint decides)."""
    names = dict.fromkeys([file_name(problem_name), file_name(problem_name.partition(":")[0])])
    return [r for name in names for r in _read(shipped_dir() / name)]


# ---- attaching a reference ----------------------------------------------------------------
def describe(record: dict[str, Any]) -> str:
    """One line for report headers: method, budget and precision, and the checks."""
    parts = record.get("parts")
    probs = record.get("test_probabilities_se") or []
    text = (f"{record['method']}, {record.get('budget', 0):,} {record.get('budget_unit', '')}"
            + (f" in {parts} parts" if parts else "")
            + f"; log Z SE {record['log_marginal_likelihood_se']:.2g}"
            + (f", test probability SE <= {max(probs):.2g}" if probs else ""))
    checks = record.get("checks") or []
    passed = [c["name"] for c in checks if c.get("passed")]
    failed = [c["name"] for c in checks if not c.get("passed")]
    if checks:
        text += "; checks " + ", ".join([f"{n} passed" for n in passed]
                                       + [f"{n} FAILED" for n in failed])
    return text


def details(record: dict[str, Any]) -> dict[str, Any]:
    """The plain summary of a reference a problem summary carries (`reference`)."""
    probs = record.get("test_probabilities_se") or []
    return {"method": record["method"], "budget": record.get("budget"),
            "budget_unit": record.get("budget_unit"), "parts": record.get("parts"),
            "log_marginal_likelihood_se": record["log_marginal_likelihood_se"],
            "test_probabilities_se_max": max(probs) if probs else None,
            "targets_reached": record.get("targets_reached"),
            "checks": {c["name"]: bool(c.get("passed")) for c in record.get("checks") or []},
            "cpu_seconds": record.get("cpu_seconds"), "created_at": record.get("created_at"),
            "description": describe(record)}


def as_truth(record: dict[str, Any]) -> Truth:
    """A reference record as the problem's Truth (kind 'reference', with its errors)."""
    probs = record.get("test_probabilities")
    return Truth(record["log_marginal_likelihood"],
                 None if probs is None else np.asarray(probs, float), kind="reference",
                 source=describe(record),
                 log_marginal_likelihood_se=record["log_marginal_likelihood_se"],
                 test_probabilities_se=None if probs is None
                 else np.asarray(record["test_probabilities_se"], float),
                 details=details(record))


def candidates(problem_name: str, file: str | None = None) -> list[dict[str, Any]]:
    """References that may belong to a problem: beside its file, then shipped."""
    found = _read(reference_path(file)) if file else []
    return found + shipped(problem_name)


def find_reference(problem: Problem, file: str | None = None) -> dict[str, Any] | None:
    """The first reference whose fingerprint matches the problem (module doc), or None."""
    options = candidates(problem.name, file)
    if not options:
        return None
    fp = fingerprint(problem)
    return next((r for r in options if r["fingerprint"] == fp), None)


def with_reference(problem: Problem, file: str | None = None) -> Problem:
    """The problem with its reference as truth, when it has no truth and a reference matches."""
    if problem.truth is not None:
        return problem
    record = find_reference(problem, file)
    return problem if record is None else replace(problem, truth=as_truth(record))


def summary_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The truth fields of a problem summary (Problem.summary) for a reference."""
    truth = as_truth(record)
    return {"truth_kind": truth.kind, "truth_source": truth.source,
            "true_log_marginal_likelihood": truth.log_marginal_likelihood,
            "true_log_marginal_likelihood_se": truth.log_marginal_likelihood_se,
            "true_test_probabilities": record.get("test_probabilities"),
            "true_test_probabilities_se": record.get("test_probabilities_se"),
            "reference": truth.details}


def resolves(record: dict[str, Any], log_z_error: float, test_mae: float) -> bool:
    """Whether a reference is precise enough to tell these errors from zero: REFERENCE_FACTOR
    times its log Z SE at most `log_z_error`, and times its mean test-probability SE at most
    `test_mae` (a record without test probabilities: the log Z alone)."""
    pse = record.get("test_probabilities_se") or []
    return (REFERENCE_FACTOR * float(record["log_marginal_likelihood_se"]) <= log_z_error
            and (not pse or REFERENCE_FACTOR * float(np.mean(pse)) <= test_mae))


def same_problem(summary: dict[str, Any], record: dict[str, Any]) -> bool:
    """Whether a stored summary describes the record's problem (the name aside: a preset
    spelled with its own default options is the same problem)."""
    theirs = record.get("problem_summary") or {}
    return all(_plain(summary.get(k)) == _plain(theirs.get(k)) for k in SUMMARY_KEYS)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def summaries_with_references(problems: dict[str, dict[str, Any]],
                              stored: dict[str, dict[str, Any]] | None = None
                              ) -> dict[str, dict[str, Any]]:
    """Stored problem summaries, each without truth given its reference when one matches:
    the store's own (`stored`: {problem name: record}), else the shipped one."""
    out = {}
    for name, summary in problems.items():
        if not summary.get("truth_kind"):
            options = ([stored[name]] if stored and name in stored else []) + shipped(name)
            record = next((r for r in options if same_problem(summary, r)), None)
            if record is not None:
                summary = {**summary, **summary_fields(record)}
        out[name] = summary
    return out
