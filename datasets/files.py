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

No silent default (FileWarning, one line in the CLI): an alpha or beta neither in the spec nor
in the .npz is named with what the data suggest (for rbf, whose alpha is a squared length
scale, the median pairwise squared distance of the training inputs as the kernel sees them; for
a Matérn alpha, a length scale, the median distance); a file without test points says how to
get some (a 'split' column, or `test_fraction=F`: a stratified draw of that share of the rows,
seeded by the `seed` option, in the problem's name); labels of one class are named. A label
not ±1 is an InputError naming the file and the column (of a .npz: the array).
A file problem's identity in job keys and random streams (`Problem.identity`, file_identity)
is its content and the spec's options, never its path: moving a data folder changes no job.
"""

from __future__ import annotations

import csv
import hashlib
import io
import locale
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.conditioning import warn_if_degenerate_kernel
from harness.core.errors import InputError
from harness.core.kernels import make_kernel
from harness.datasets.split import standardise, stratified_split
from harness.model.problem import Problem, Truth, check_labels, describe_kernel
from harness.model.settings import check_number, did_you_mean

FILE_OPTIONS = {"kernel", "alpha", "beta", "label", "order", "seed", "standardize",
                "test_fraction"}
STANDARDISED = " (standardised)"   # the suffix of a standardised file problem's name
KERNEL_DEFAULTS = {"kernel": "rbf", "alpha": 1.0, "beta": 1.0}
SUGGEST_FROM = 2000   # the pairwise distances of alpha's suggestion: of at most this many points

# `run --help` and `sweep --help` (harness.cli.args.add_file_help)
FILE_HELP = (
    "A problem may be a file: data.csv or data.npz, options after a colon, "
    "data.csv:kernel=rbf,alpha=2,beta=1. A .csv has a header row, feature columns, a label "
    "column of -1/+1 and optionally a 'split' column of train/test (without one every row is "
    "a training point); a .npz holds X_train, y_train, X_test [, y_test, kernel, alpha, beta, "
    "standardize], or cov for an orthant problem. Options: kernel (rbf, matern12, matern32, "
    "matern52 or linear; default rbf); alpha (default 1): for rbf a squared length scale, "
    "k = beta exp(-|x - x'|^2 / alpha), for the Matérn kernels a length scale; beta (default "
    "1): the kernel's variance (linear: its scale); label (the label column, default y); "
    "order (interleave, shuffle or as-given: how the training points are arranged, default "
    "interleave); seed (an integer >= 0, default 0: the shuffle order and test_fraction's "
    "draw); standardize (true or false, default true: features centred and scaled on the "
    "training split); test_fraction (a number in (0, 1): that share of the rows, drawn "
    "stratified by seed, becomes the test points, for a file without any). An alpha or beta "
    "left to its default is named on stderr with what the data suggest (docs/math.md §1).")


class FileWarning(UserWarning):
    """What a user file leaves to a default or lacks (a kernel hyperparameter defaulted, no test
    points, labels of one class only): one line in the CLI, naming the file and the fix."""

    one_line = True


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
         standardize: bool, content: str, defaulted: list[str], no_test: str,
         label_field: str, names: list[str] | None = None, **rest) -> Problem:
    """The GPC problem of a file, standardised or not (module doc), checked for a degenerate
    kernel matrix; its notes (FileWarning) once it is valid. `content`: the file's hash
    (content_hash); `defaulted`: the kernel options neither the spec nor the file gave;
    `no_test`: why there are no test points ('' if there are); `label_field`: where the
    labels are ("column 'y'")."""
    with warnings.catch_warnings(record=True) as held:   # said only once the input is valid
        warnings.simplefilter("always")
        if standardize:
            X_train, X_test = _standardised(names, X_train, X_test, str(path))
        n_features = np.shape(X_train)[1] if np.ndim(X_train) == 2 else 1
        problem = Problem.classification(
            file_problem_name(path, options, standardize), X_train, y_train, X_test, kernel,
            order=options.get("order", "interleave"), seed=_seed_from(path, options),
            family="file", params={"path": str(path), **options, "standardize": standardize},
            description=_description(path, n_features, kernel, standardize), **rest,
            identity=file_identity(path, content, {**options, "standardize": standardize}))
    for w in held:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    warn_if_degenerate_kernel(problem.name, problem.kernel, problem.X_train, stacklevel=4)
    for text in (defaulted_note(path, problem, defaulted, standardize),
                 one_class_note(path, problem.y_train, label_field),
                 no_test and no_test_note(path, no_test)):
        if text:
            warnings.warn(text, FileWarning, stacklevel=4)
    return problem


def file_identity(path: Path, content: str, options: dict[str, Any]) -> str:
    """A file problem's identity in job keys and random streams (module doc): its content's
    hash, its type and the spec's options, never its path."""
    values = {**{k: str(v).lower() if isinstance(v, bool) else v for k, v in options.items()},
              "sha256": content, "type": path.suffix.lstrip(".")}
    return "file:" + ",".join(f"{k}={values[k]}" for k in sorted(values))


def content_hash(data: bytes | dict[str, np.ndarray]) -> str:
    """The first 16 hex digits of the SHA-256 of a file's bytes, or of a .npz's arrays (their
    names, dtypes, shapes and bytes, in name order: a zip's own bytes hold the time it was
    written, so the same arrays saved twice differ)."""
    h = hashlib.sha256()
    if isinstance(data, bytes):
        h.update(data)
    else:
        for key in sorted(data):
            a = np.ascontiguousarray(data[key])
            h.update(f"{key}\0{a.dtype.str}\0{a.shape}\0".encode())
            h.update(a.tobytes())
    return h.hexdigest()[:16]


def defaulted_note(path: Path, problem: Problem, defaulted: list[str], standardize: bool
                   ) -> str:
    """The note of kernel hyperparameters left to their defaults ('' for none; `defaulted`
    lists every kernel option not given, the kernel's name included), with what the data
    suggest for alpha: the median pairwise squared distance of the training inputs as the
    kernel sees them (the RBF's alpha is a squared length scale), or the median distance for a
    Matérn kernel (its alpha a length scale)."""
    kernel = problem.kernel
    params = {"kernel": kernel.name, **kernel.params()}
    if kernel.name == "linear":
        params["beta"] = params.pop("scale")
        params.pop("alpha", None)
    hyper = [k for k in ("alpha", "beta") if k in defaulted and k in params]
    if not hyper:
        return ""
    text = (f"{path}: kernel hyperparameters not given, so defaulted: "
            + ", ".join(f"{k}={params[k]:g}" for k in hyper)
            + f" (kernel {kernel.name}{', the default' if 'kernel' in defaulted else ''})")
    suggestion = alpha_suggestion(kernel.name, problem.X_train, standardize)
    if suggestion is not None and "alpha" in hyper:
        value, what = suggestion
        text += f"; {what} {value:.3g}"
        params["alpha"] = float(f"{value:.3g}")
    written = ",".join(f"{k}={params[k]:g}" if k != "kernel" else f"kernel={params[k]}"
                       for k in ("kernel", "alpha", "beta") if k in params)
    where = "the spec (or the .npz)" if path.suffix == ".npz" else "the spec"
    return text + f"; choose them in {where}, e.g. {path.name}:{written}"


def alpha_suggestion(kernel: str, X: np.ndarray, standardize: bool) -> tuple[float, str] | None:
    """(value, what it is) for alpha from the training inputs, or None (a linear kernel, one
    point, or every point equal): for rbf the median pairwise squared distance, for the Matérn
    kernels the median pairwise distance, over at most SUGGEST_FROM evenly spaced points."""
    from scipy.spatial.distance import pdist

    if kernel == "linear" or len(X) < 2:
        return None
    rows = np.unique(np.linspace(0, len(X) - 1, min(len(X), SUGGEST_FROM)).round().astype(int))
    squared = pdist(X[rows], "sqeuclidean")
    median = float(np.median(squared if kernel == "rbf" else np.sqrt(squared)))
    if not median > 0:
        return None
    inputs = "standardised training inputs" if standardize else "training inputs (as given)"
    of = f" ({len(rows)} evenly spaced of {len(X)})" if len(rows) < len(X) else ""
    if kernel == "rbf":
        return median, (f"alpha is a squared length scale, and the median pairwise squared "
                        f"distance of the {inputs}{of} is")
    return median, (f"alpha is a length scale, and the median pairwise distance of the "
                    f"{inputs}{of} is")


def one_class_note(path: Path, y: np.ndarray, field: str) -> str:
    """The note of training labels that are all +1 or all -1 ('' otherwise)."""
    if len(y) == 0 or np.any(y != y[0]):
        return ""
    return (f"{path}: every training label in {field} is {int(y[0]):+d}: one class only; "
            "check the label column (label=COLUMN names another) and the data")


def no_test_note(path: Path, why: str) -> str:
    return (f"{path}: no test points ({why}), so only log Z is estimated, no predictive "
            "probabilities: add a 'split' column of train/test, or the option test_fraction="
            "0.2 to hold out a stratified fifth of the rows (drawn with the option seed)")


def held_out(path: Path, options: dict[str, Any], y: np.ndarray) -> np.ndarray | None:
    """Which rows test_fraction makes test points (a stratified draw seeded by the `seed`
    option), or None without the option."""
    if "test_fraction" not in options:
        return None
    field = f"{path}: option 'test_fraction'"
    text = options["test_fraction"]
    try:
        fraction = float(text)
    except (TypeError, ValueError):
        fraction = float("nan")
    if not 0 < fraction < 1:
        raise InputError(field, f"must be a number between 0 and 1 (exclusive), got {text!r}",
                         "e.g. test_fraction=0.2")
    n = len(y)
    if n < 2:
        raise InputError(field, f"needs at least 2 rows, the file has {n}")
    n_test = min(max(round(fraction * n), 1), n - 1)
    rng = np.random.default_rng(_seed_from(path, options))
    test = np.zeros(n, dtype=bool)
    test[stratified_split(y, n - n_test, n_test, rng)[1]] = True
    return test


def _refuse_fraction(path: Path, options: dict[str, Any], has: str) -> None:
    if "test_fraction" in options:
        raise InputError(f"{path}: option 'test_fraction'", f"the file has test points ({has})",
                         "remove test_fraction, or the file's own test points")


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
    content = content_hash(data)
    if "cov" in keys:
        _refuse_fraction(path, options, "an orthant problem has none")
        return Problem.orthant(str(path), data["cov"], truth=_reference_truth(path, data, 0),
                               family="file", params={"path": str(path)},
                               description=f"orthant problem from {path.name}",
                               identity=file_identity(path, content, options))
    missing = [k for k in ("X_train", "y_train", "X_test") if k not in keys]
    if missing:
        raise InputError(
            str(path), f"has neither 'cov' nor {', '.join(repr(m) for m in missing)}",
            "save cov=... for an orthant problem, or X_train, y_train, X_test, kernel, alpha, beta",
        )
    defaulted = [k for k in KERNEL_DEFAULTS if k not in options and k not in keys]
    given = {**KERNEL_DEFAULTS, **{k: data[k] for k in KERNEL_DEFAULTS if k in keys}, **options}
    kernel_name, alpha, beta = str(given["kernel"]), given["alpha"], given["beta"]
    X_train, X_test = data["X_train"], np.asarray(data["X_test"])
    y_train = check_labels(data["y_train"], f"{path}: y_train")
    y_test = check_labels(data["y_test"], f"{path}: y_test") if "y_test" in keys else None
    test, n_test = None, len(X_test) if X_test.ndim else 1
    if n_test:
        _refuse_fraction(path, options, f"X_test has {n_test}")
    elif (test := held_out(path, options, y_train)) is not None:
        X_all = np.asarray(X_train)
        X_train, X_test, y_train, y_test = X_all[~test], X_all[test], y_train[~test], y_train[test]
    truth = _reference_truth(path, data, len(X_test) if X_test.ndim else 1)
    kernel = _kernel_from(str(path), kernel_name, alpha, beta)
    if "standardize" in options:
        standardize = _flag(f"{path}: option 'standardize'", options["standardize"])
    else:
        standardize = (_flag(f"{path}: standardize", data["standardize"])
                       if "standardize" in keys else True)
    return _gpc(path, options, X_train, y_train, X_test, kernel,
                standardize=standardize, y_test=y_test, truth=truth, content=content,
                defaulted=defaulted, label_field="y_train",
                no_test="X_test is empty" if test is None and not n_test else "")


def load_csv(path: Path, options: dict[str, Any]) -> Problem:
    label = options.get("label", "y")
    standardize = _flag(f"{path}: option 'standardize'", options.get("standardize", True))
    try:
        raw = path.read_bytes()
        text = raw.decode(locale.getpreferredencoding(False))
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc})") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"is not text ({exc.reason} at byte {exc.start})",
                         "save it as a UTF-8 .csv") from None
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
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
    bad = np.flatnonzero(~np.isin(y, (-1, 1)))
    if len(bad):
        raise InputError(f"{path}: row {bad[0] + 2}, column {label!r}",
                         f"labels must be -1 or +1, found {y[bad[0]]:g}",
                         "map the two classes to -1/+1 (0/1 labels: write 0 as -1), or name "
                         "the label column with label=COLUMN")
    if "split" in columns:
        split = np.array([(r.get("split") or "").strip().lower() for r in rows])
        if not np.all(np.isin(split, ("train", "test"))):
            raise InputError(f"{path}: column 'split'", "values must be 'train' or 'test'")
        _refuse_fraction(path, options, "a 'split' column")
        test = split == "test"
    else:
        test = held_out(path, options, y)
    test = np.zeros(len(y), dtype=bool) if test is None else test
    no_test = ("" if test.any() else "no row of its 'split' column is 'test'" if "split" in columns
               else "no 'split' column")
    train = ~test
    given = {**KERNEL_DEFAULTS, **options}
    kernel = _kernel_from(str(path), given["kernel"], given["alpha"], given["beta"])
    return _gpc(path, options, X[train], y[train], X[test], kernel, standardize=standardize,
                names=features, y_test=y[test] if test.any() else None,
                content=content_hash(raw), label_field=f"column {label!r}",
                defaulted=[k for k in KERNEL_DEFAULTS if k not in options], no_test=no_test)


def load_problem_file(path: str, options: dict[str, Any]) -> Problem:
    unknown = set(options) - FILE_OPTIONS
    if unknown:
        name = sorted(unknown)[0]
        raise InputError(f"{path}: option {name!r}", "is not a file option",
                         did_you_mean(name, sorted(FILE_OPTIONS), "file options"))
    p = Path(path)
    if not p.exists():
        raise InputError("problem", f"file {path!r} does not exist")
    if p.suffix == ".npz":
        return load_npz(p, options)
    if p.suffix == ".csv":
        return load_csv(p, options)
    raise InputError("problem", f"unsupported file type {p.suffix!r}", "use .npz or .csv")
