"""User problems from files.

.npz holding either
  cov                                  -> orthant problem: estimate log P(v >= 0), v ~ N(0, cov)
  X_train, y_train (±1), X_test, kernel ('rbf' | 'linear' | 'matern12' | 'matern32' |
  'matern52'), alpha, beta [, y_test]
                                       -> GPC problem (alpha/beta for rbf and the Matérn
                                          kernels, docs/math.md §1; beta scales linear)
optionally with true_log_marginal_likelihood [, true_test_probabilities] as a reference.

.csv with a header: feature columns, a label column (default 'y', values ±1) and optionally a
'split' column with 'train' / 'test' (rows without a split column are all training points).
Kernel options come from the problem spec: `data.csv:kernel=rbf,alpha=2,beta=1,label=class`.

The features of a GPC problem (.npz of the GPC form and .csv) are standardised by default, as
the realdata presets are: centred and scaled by the training split's mean and sd (ddof 0), the
same transformation applied to the test points. A feature constant on the training split is
only centred (its sd would be 0), with a one-line FeatureWarning naming it. `standardize=false`
in the spec (or a `standardize` entry False in the .npz; the spec wins) keeps the features as
given. The problem's name and description say which: a standardised problem is named
`PATH (standardised)` (with the spec's other options, `PATH:alpha=2,kernel=rbf (standardised)`,
so each kernel is its own problem) and its canonical spec carries `standardize=true`, so its
jobs never share keys, names or report cells with the unstandardised problem (named `PATH`).
After the build, a kernel matrix that is numerically the identity or rank one is reported
with a one-line DegenerateKernelWarning (harness.core.conditioning.kernel_degeneracy; e.g. raw
features on scales of 100-1000 under an RBF kernel with alpha = 1: K = I, log Z = N log 1/2).
Orthant problems (.npz with `cov`) are never standardised.
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.conditioning import warn_if_degenerate_kernel
from harness.core.errors import InputError
from harness.core.kernels import make_kernel
from harness.datasets.split import standardise
from harness.model.problem import Problem, Truth, describe_kernel
from harness.model.settings import check_number

FILE_OPTIONS = {"kernel", "alpha", "beta", "label", "order", "seed", "standardize"}
STANDARDISED = " (standardised)"   # the suffix of a standardised file problem's name


class FeatureWarning(UserWarning):
    """A feature of a user file cannot be scaled (one line in the CLI)."""

    one_line = True


def _flag(field: str, value: Any) -> bool:
    """A true/false option: a bool, 0/1, or the text true/false (any case)."""
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise InputError(field, f"must be true or false, got an array of shape {value.shape}")
        value = value.item()
    if isinstance(value, bool | np.bool_) or (isinstance(value, int | np.integer)
                                               and value in (0, 1)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise InputError(field, f"must be true or false, got {value!r}",
                     "write standardize=true or standardize=false")


def _standardised(names: list[str] | None, X_train, X_test, where: str):
    """(X_train, X_test) standardised on the training split (module doc); arrays Problem
    .classification would refuse are returned as they are, for it to say why."""
    try:
        A, B = np.asarray(X_train, dtype=float), np.asarray(X_test, dtype=float)
    except (TypeError, ValueError):
        return X_train, X_test
    A = A[:, None] if A.ndim == 1 else A
    B = B[:, None] if B.ndim == 1 else B
    if (A.ndim != 2 or B.ndim != 2 or not len(A) or A.shape[1] != B.shape[1]
            or not np.all(np.isfinite(A))):
        return X_train, X_test
    constant = np.flatnonzero(A.std(axis=0) == 0)
    if len(constant):
        shown = [repr(names[i]) if names else f"column {i}" for i in constant[:5]]
        warnings.warn(f"{where}: feature{'s' * (len(constant) > 1)} {', '.join(shown)}"
                      f"{' …' if len(constant) > 5 else ''} constant on the training split: "
                      "centred, not scaled (it adds nothing to the kernel's distances)",
                      FeatureWarning, stacklevel=4)
    return standardise(A, B)


def _kernel_from(field: str, name: str, alpha, beta):
    """The kernel of a file problem; alpha and beta (from the file or the spec) are numbers
    checked like every other number (harness.model.settings.check_number: finite, |value| at
    most 2^53), then by the kernel (positive)."""
    try:
        if np.ndim(alpha) or np.ndim(beta):
            raise TypeError
        alpha = float(alpha)
        beta = float(beta)
    except (TypeError, ValueError):
        shown = ", ".join(f"{v!r}" if np.ndim(v) == 0 else f"an array of shape {np.shape(v)}"
                          for v in (alpha, beta))
        raise InputError(field, f"alpha and beta must be numbers, got {shown}") from None
    check_number(f"{field}: alpha", alpha)
    check_number(f"{field}: beta", beta)
    if name == "linear":
        return make_kernel("linear", scale=beta)
    return make_kernel(name, alpha=alpha, beta=beta)


def _description(path: Path, n_features: int, kernel, standardize: bool) -> str:
    """'GPC problem from d.csv (2 features, kernel rbf (alpha=2, beta=1), features standardised
    on the training split)': the kernel actually used, defaults included, and whether the
    features were standardised, so a store and `run` show it."""
    how = ("features standardised on the training split" if standardize
           else "features as given (standardize=false)")
    return (f"GPC problem from {path.name} ({n_features} feature{'s' * (n_features != 1)}, "
            f"kernel {describe_kernel({'name': kernel.name, **kernel.params()})}, {how})")


def _gpc(path: Path, options: dict[str, Any], X_train, y_train, X_test, kernel, *,
         standardize: bool, names: list[str] | None = None, **rest) -> Problem:
    """The GPC problem of a file, standardised or not (module doc), checked for a degenerate
    kernel matrix."""
    with warnings.catch_warnings(record=True) as held:   # said only once the input is valid
        warnings.simplefilter("always")
        if standardize:
            X_train, X_test = _standardised(names, X_train, X_test, str(path))
        n_features = np.shape(X_train)[1] if np.ndim(X_train) == 2 else 1
        problem = Problem.classification(
            file_problem_name(path, options, standardize), X_train, y_train, X_test, kernel,
            order=options.get("order", "interleave"), seed=_seed_from(path, options),
            family="file", params={"path": str(path), **options, "standardize": standardize},
            description=_description(path, n_features, kernel, standardize), **rest)
    for w in held:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    warn_if_degenerate_kernel(problem.name, problem.kernel, problem.X_train, stacklevel=4)
    return problem


def file_problem_name(path: Path, options: dict[str, Any], standardize: bool) -> str:
    """'PATH[:k=v,...][ (standardised)]': the spec's options (sorted; standardize is the
    suffix), so one file under two kernels gives two problems, never one name for both."""
    shown = ",".join(f"{k}={v}" for k, v in sorted(options.items()) if k != "standardize")
    return str(path) + (f":{shown}" if shown else "") + (STANDARDISED if standardize else "")


def _seed_from(path: Path, options: dict[str, Any]) -> int:
    text = options.get("seed", 0)
    try:
        seed = int(text)
    except (TypeError, ValueError):
        seed = -1
    if seed < 0:
        raise InputError(f"{path}: option 'seed'", f"must be an integer >= 0, got {text!r}")
    return seed


def _reference_truth(path: Path, data: dict[str, np.ndarray], n_test: int) -> Truth | None:
    """The optional reference answer stored in the file, checked like any other input."""
    if "true_log_marginal_likelihood" not in data:
        return None
    field = f"{path}: true_log_marginal_likelihood"
    try:
        log_z = float(data["true_log_marginal_likelihood"])
    except (TypeError, ValueError):
        raise InputError(field, "must be a number") from None
    if not (np.isfinite(log_z) and log_z <= 0):
        raise InputError(field, f"must be a finite log-probability (<= 0), got {log_z}")
    check_number(field, log_z)
    probs = None
    if "true_test_probabilities" in data:
        field = f"{path}: true_test_probabilities"
        try:
            probs = np.asarray(data["true_test_probabilities"], dtype=float)
        except (TypeError, ValueError):
            raise InputError(field, "must be numbers") from None
        if probs.shape != (n_test,):
            raise InputError(field, f"has shape {probs.shape} for {n_test} test points")
        if not np.all((probs >= 0) & (probs <= 1)):
            raise InputError(field, "must lie in [0, 1] (and not be NaN)")
    return Truth(log_z, probs, kind="reference", source=f"given in {path.name}")


def load_npz(path: Path, options: dict[str, Any]) -> Problem:
    try:
        with np.load(path, allow_pickle=False) as npz:
            data = {key: npz[key] for key in npz.files}
    except Exception as exc:  # noqa: BLE001 - report any unreadable file the same way
        reason = " ".join(str(exc).split())  # one line
        raise InputError(str(path), f"cannot be read as .npz ({reason})") from None
    keys = set(data)
    if "cov" in keys:
        return Problem.orthant(str(path), data["cov"], truth=_reference_truth(path, data, 0),
                               family="file", params={"path": str(path)},
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
    X_test = np.asarray(data["X_test"])
    truth = _reference_truth(path, data, len(X_test) if X_test.ndim else 1)
    kernel = _kernel_from(str(path), kernel_name, alpha, beta)
    if "standardize" in options:
        standardize = _flag(f"{path}: option 'standardize'", options["standardize"])
    else:
        standardize = (_flag(f"{path}: standardize", data["standardize"])
                       if "standardize" in keys else True)
    return _gpc(path, options, data["X_train"], data["y_train"], X_test, kernel,
                standardize=standardize, y_test=data["y_test"] if "y_test" in keys else None,
                truth=truth)


def load_csv(path: Path, options: dict[str, Any]) -> Problem:
    label = options.get("label", "y")
    standardize = _flag(f"{path}: option 'standardize'", options.get("standardize", True))
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
    kernel = _kernel_from(str(path), options.get("kernel", "rbf"), options.get("alpha", 1.0),
                          options.get("beta", 1.0))
    return _gpc(path, options, X[train], y[train], X[test], kernel, standardize=standardize,
                names=features, y_test=y[test] if test.any() else None)


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
