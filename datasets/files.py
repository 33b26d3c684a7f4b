"""User problems from files.

.npz holding either
  cov                                  -> orthant problem: estimate log P(v >= 0), v ~ N(0, cov)
  X_train, y_train (±1), X_test, kernel ('rbf' | 'linear'), alpha, beta [, y_test]
                                       -> GPC problem (alpha/beta for rbf; beta scales linear)
optionally with true_log_marginal_likelihood [, true_test_probabilities] as a reference.

.csv with a header: feature columns, a label column (default 'y', values ±1) and optionally a
'split' column with 'train' / 'test' (rows without a split column are all training points).
Kernel options come from the problem spec: `data.csv:kernel=rbf,alpha=2,beta=1,label=class`.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.kernels import make_kernel
from harness.problem import Problem, Truth

FILE_OPTIONS = {"kernel", "alpha", "beta", "label", "order", "seed"}


def _kernel_from(field: str, name: str, alpha, beta):
    try:
        alpha = float(alpha)
        beta = float(beta)
    except (TypeError, ValueError):
        raise InputError(field, f"alpha and beta must be numbers, got {alpha!r}, {beta!r}") from None
    if name == "linear":
        return make_kernel("linear", scale=beta)
    return make_kernel(name, alpha=alpha, beta=beta)


def load_npz(path: Path, options: dict[str, Any]) -> Problem:
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - report any unreadable file the same way
        raise InputError(str(path), f"cannot be read as .npz ({exc})") from None
    keys = set(data.files)
    truth = None
    if "true_log_marginal_likelihood" in keys:
        probs = data["true_test_probabilities"] if "true_test_probabilities" in keys else None
        truth = Truth(float(data["true_log_marginal_likelihood"]), probs, kind="reference",
                      source=f"given in {path.name}")
    if "cov" in keys:
        return Problem.orthant(str(path), data["cov"], truth=truth, family="file",
                               params={"path": str(path)},
                               description=f"orthant problem from {path.name}")
    missing = [k for k in ("X_train", "y_train", "X_test") if k not in keys]
    if missing:
        raise InputError(
            str(path), f"has neither 'cov' nor {', '.join(repr(m) for m in missing)}",
            "save cov=... for an orthant problem, or X_train, y_train, X_test, kernel, alpha, beta",
        )
    kernel_name = options.get("kernel", str(data["kernel"]) if "kernel" in keys else "rbf")
    alpha = options.get("alpha", data["alpha"] if "alpha" in keys else 1.0)
    beta = options.get("beta", data["beta"] if "beta" in keys else 1.0)
    return Problem.classification(
        str(path), data["X_train"], data["y_train"], data["X_test"],
        _kernel_from(str(path), kernel_name, alpha, beta),
        y_test=data["y_test"] if "y_test" in keys else None,
        order=options.get("order", "interleave"), seed=int(options.get("seed", 0)),
        truth=truth, family="file", params={"path": str(path), **options},
        description=f"GPC problem from {path.name}",
    )


def load_csv(path: Path, options: dict[str, Any]) -> Problem:
    label = options.get("label", "y")
    try:
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc})") from None
    if not rows:
        raise InputError(str(path), "has no data rows")
    columns = list(rows[0])
    if label not in columns:
        raise InputError(f"{path}: label column", f"{label!r} not found in {columns}",
                         "name it with label=COLUMN in the problem spec")
    features = [c for c in columns if c not in (label, "split")]

    def number(row_no, col, text):
        try:
            return float(text)
        except (TypeError, ValueError):
            raise InputError(f"{path}: row {row_no}, column {col!r}",
                             f"is not a number: {text!r}") from None

    X = np.array([[number(i + 2, c, r[c]) for c in features] for i, r in enumerate(rows)])
    y = np.array([number(i + 2, label, r[label]) for i, r in enumerate(rows)])
    split = np.array([r.get("split", "train").strip().lower() for r in rows])
    if not np.all(np.isin(split, ("train", "test"))):
        raise InputError(f"{path}: column 'split'", "values must be 'train' or 'test'")
    train, test = split == "train", split == "test"
    return Problem.classification(
        str(path), X[train], y[train], X[test],
        _kernel_from(str(path), options.get("kernel", "rbf"), options.get("alpha", 1.0),
                     options.get("beta", 1.0)),
        y_test=y[test] if test.any() else None,
        order=options.get("order", "interleave"), seed=int(options.get("seed", 0)),
        family="file", params={"path": str(path), **options},
        description=f"GPC problem from {path.name} ({len(features)} features)",
    )


def load_problem_file(path: str, options: dict[str, Any]) -> Problem:
    unknown = set(options) - FILE_OPTIONS
    if unknown:
        raise InputError(f"{path}: option {sorted(unknown)[0]!r}", "is not a file option",
                         f"valid options: {', '.join(sorted(FILE_OPTIONS))}")
    p = Path(path)
    if not p.exists():
        raise InputError("problem", f"file {path!r} does not exist")
    if p.suffix == ".npz":
        return load_npz(p, options)
    if p.suffix == ".csv":
        return load_csv(p, options)
    raise InputError("problem", f"unsupported file type {p.suffix!r}", "use .npz or .csv")
