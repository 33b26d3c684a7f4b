"""Benchmark problems and their orthant form (docs/math.md §1–2).

A Problem holds either classification data and a kernel, or (for a pure orthant problem)
the covariance R directly, as a dense array or a structured harness.core.covariance.Covariance.
Either way `Problem.cov` is its representation (tiles, products and the diagonal on demand,
O(N) memory for the structured ones). The dense quantities below are derived from it only when
a method asks for them, then cached on the object:

    R  = C (K + I) C,  C = diag(y)                    orthant covariance of the training part (A.30)
    L  = chol(R)                                      shared by every sequential method (§4)
    B  = C K(X_train, X_test)                         training/test cross-covariances (A.28)
    W  = L^{-1} B,  s_j^2 = 1 + k(x*_j, x*_j) - |W_j|^2
                                                      Cholesky row and pivot of each test variable
                                                      appended after the training variables (A.52)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.linalg

from harness.core.conditioning import condition_estimate, warn_if_ill_conditioned
from harness.core.covariance import Covariance, DenseCovariance, KernelCovariance
from harness.core.errors import InputError
from harness.core.kernels import Kernel
from harness.core.linalg import check_covariance, cholesky_lower, float_array
from harness.core.progress import phase

ORDERS = ("interleave", "shuffle", "as-given")


@dataclass(frozen=True)
class Truth:
    """Ground truth for a problem: exact (an oracle) or a reference (carries its error).

    A reference (harness.model.reference_values) carries the standard errors of its log Z and of
    each test probability, and `details`: a plain summary of how it was computed (method,
    budget, precision reached, checks) for records and report headers.
    """

    log_marginal_likelihood: float
    test_probabilities: np.ndarray | None = None
    kind: str = "exact"
    source: str = ""
    log_marginal_likelihood_se: float = 0.0
    test_probabilities_se: np.ndarray | None = None
    details: Mapping[str, Any] | None = None


def class_order(y: np.ndarray, how: str, rng: np.random.Generator | None = None) -> np.ndarray:
    """Permutation of the training points that arranges the two classes.

    'interleave' spreads both classes evenly through the sequence (the paper insists the
    classes must not come in blocks, docs/math.md §5); 'shuffle' is a seeded random permutation;
    'as-given' keeps the order of the data.
    """
    n = len(y)
    if how == "as-given":
        return np.arange(n)
    if how == "shuffle":
        return (rng or np.random.default_rng(0)).permutation(n)
    if how == "interleave":
        key = np.empty(n)
        for label in (1, -1):
            idx = np.flatnonzero(y == label)
            key[idx] = (np.arange(len(idx)) + 0.5) / max(len(idx), 1)
        # ties (equal class sizes) put the positive class first
        return np.lexsort((-y, key))
    raise InputError("order", f"unknown class order {how!r}", f"use one of {list(ORDERS)}")


def _as_matrix(X, field: str) -> np.ndarray:
    X = float_array(X, field)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise InputError(field, f"must be a 2-D array (points x features), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise InputError(field, "contains NaN or infinite values", "remove or impute them")
    return X


def check_labels(y, field: str = "y_train") -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise InputError(field, f"must be a 1-D array of labels, got shape {y.shape}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise InputError(field, "contains NaN or infinite values")
    bad = ~np.isin(y, (-1, 1))
    if np.any(bad):
        example = y[bad][0].item()   # a plain Python value: 0, not np.float64(0.0)
        shown = f"{example:g}" if isinstance(example, int | float) else repr(example)
        raise InputError(
            field, f"labels must be -1 or +1, found {shown}", "map the two classes to -1/+1"
        )
    return y.astype(np.int8)


def describe_kernel(kernel: Mapping[str, Any] | None) -> str:
    """'rbf (alpha=2, beta=1)' from a Problem.kernel_summary() ('' for none)."""
    if not kernel:
        return ""
    params = {k: v for k, v in kernel.items() if k != "name"}
    return str(kernel.get("name", "?")) + (" (" + ", ".join(
        f"{k}={v:g}" if isinstance(v, int | float) else f"{k}={v}"
        for k, v in params.items()) + ")" if params else "")


@dataclass(frozen=True, eq=False)
class Problem:
    """One benchmark problem. Build it with `classification` or `orthant`.

    Construction costs O(N) memory and time (plus the O(N^2) checks of a dense user matrix):
    R, chol, K and the test rows are built on first use.
    """

    name: str
    family: str = "custom"
    params: Mapping[str, Any] = field(default_factory=dict)
    X_train: np.ndarray | None = None
    y_train: np.ndarray | None = None
    X_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    kernel: Kernel | None = None
    covariance: np.ndarray | Covariance | None = None  # pure orthant problems only
    truth: Truth | None = None
    description: str = ""
    bayes_posterior: np.ndarray | None = None  # generating model's P(y*=+1 | x*), synthetic only
    # what job keys and random streams call the problem when it is not its spec or name: a
    # user file's content and options, never its path (harness.datasets.files.file_identity)
    identity: str = ""

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def classification(
        cls,
        name: str,
        X_train,
        y_train,
        X_test,
        kernel: Kernel,
        *,
        y_test=None,
        order: str = "interleave",
        seed: int = 0,
        truth: Truth | None = None,
        family: str = "custom",
        params: Mapping[str, Any] | None = None,
        description: str = "",
        bayes_posterior=None,
        identity: str = "",
    ) -> Problem:
        """A GPC problem; the training points are rearranged by `order` (see class_order)."""
        X_train = _as_matrix(X_train, "X_train")
        y_train = check_labels(y_train, "y_train")
        if len(y_train) != len(X_train):
            raise InputError(
                "y_train", f"has {len(y_train)} labels for {len(X_train)} training points"
            )
        if len(y_train) == 0:
            raise InputError("X_train", "has no training points")
        X_test = (
            np.empty((0, X_train.shape[1])) if X_test is None else _as_matrix(X_test, "X_test")
        )
        if X_test.shape[1] != X_train.shape[1]:
            raise InputError(
                "X_test",
                f"has {X_test.shape[1]} features but X_train has {X_train.shape[1]}",
            )
        if y_test is not None:
            y_test = check_labels(y_test, "y_test")
            if len(y_test) != len(X_test):
                raise InputError("y_test", f"has {len(y_test)} labels for {len(X_test)} points")
        perm = class_order(y_train, order, np.random.default_rng(seed))
        problem = cls(
            name=name,
            family=family,
            params=dict(params or {}),
            X_train=X_train[perm],
            y_train=y_train[perm],
            X_test=X_test,
            y_test=y_test,
            kernel=kernel,
            truth=truth,
            description=description,
            bayes_posterior=None if bayes_posterior is None else np.asarray(bayes_posterior, float),
            identity=identity,
        )
        # validate early (a clear error, not a failure in a worker), in O(N): a finite diagonal
        # of R bounds every entry of R and B (Covariance.check); R = C (K + I) C with K positive
        # semi-definite has eigenvalues >= 1, so needs no Cholesky to be known positive definite
        problem.cov.check("kernel matrix", "rescale the features")
        warn_if_ill_conditioned(name, problem.cov)   # O(N d^2) or O(N) (harness.core.conditioning)
        return problem

    @classmethod
    def orthant(
        cls,
        name: str,
        covariance,
        *,
        truth: Truth | None = None,
        family: str = "custom",
        params: Mapping[str, Any] | None = None,
        description: str = "",
        identity: str = "",
    ) -> Problem:
        """A pure orthant problem: estimate log P(v >= 0), v ~ N(0, covariance).

        `covariance` is a dense array (checked in full, including positive definiteness by a
        Cholesky factorisation: user matrices are small and the error should come early) or a
        harness.core.covariance.Covariance (checked in O(N) by its class; never densified here).
        """
        if isinstance(covariance, Covariance):
            covariance.check("cov")
            if covariance.n_test:
                raise InputError("cov", "a pure orthant problem has no test variables, got "
                                 f"{covariance.n_test}")
            R = covariance
        else:
            R = check_covariance(covariance, "cov")
        problem = cls(
            name=name,
            family=family,
            params=dict(params or {}),
            covariance=R,
            truth=truth,
            description=description,
            identity=identity,
        )
        if not isinstance(R, Covariance):
            problem.chol  # noqa: B018
        warn_if_ill_conditioned(name, R, problem.__dict__.get("chol"))
        return problem

    # ---- shape --------------------------------------------------------------------------
    @property
    def is_orthant(self) -> bool:
        return self.covariance is not None

    @property
    def n_train(self) -> int:
        return self.cov.n

    @property
    def n_test(self) -> int:
        return self.cov.n_test

    def warm(self, max_n: int | None = None) -> None:
        """Build the dense K, R and Cholesky factor now (if N <= max_n, when given).

        The runner calls this in a method's timed set-up when the method reads them
        (Method.needs_dense), so the estimate's timing excludes them exactly as when every
        problem was built dense; a method that builds what it needs from `cov` never pays.
        """
        if (max_n is None or self.n_train <= max_n) and "chol" not in self.__dict__:
            with phase("dense kernel matrix and Cholesky factor"):
                if not self.is_orthant:
                    self.K  # noqa: B018
                self.chol  # noqa: B018

    # ---- derived quantities (cached) ----------------------------------------------------
    @cached_property
    def cov(self) -> Covariance:
        """The orthant covariance as a representation (harness.core.covariance): tiles on demand."""
        if self.is_orthant:
            if isinstance(self.covariance, Covariance):
                return self.covariance
            return DenseCovariance(self.covariance)
        return KernelCovariance.for_kernel(self.kernel, self.X_train, self.y_train.astype(float),
                                           self.X_test)

    @cached_property
    def K(self) -> np.ndarray:
        """Prior covariance of the training latents, K(X_train, X_train)."""
        if self.is_orthant:
            raise AttributeError("a pure orthant problem has no kernel matrix")
        return self.kernel(self.X_train, self.X_train)

    @cached_property
    def R(self) -> np.ndarray:
        """Orthant covariance of the training variables, C (K + I) C (A.30), dense (8 N^2 B)."""
        if not self.is_orthant and "K" in self.__dict__:   # K is built: no second kernel pass
            y = self.cov.y
            R = self.K * y[:, None]
            R *= y
            R[np.diag_indices_from(R)] += 1.0
            return R
        return self.cov.dense()

    @cached_property
    def condition(self) -> float | None:
        """cond(R), estimated or bounded from above (harness.core.conditioning.condition_estimate:
        LAPACK's estimate for a dense R, cheap bounds for the representations); None without
        a cheap one."""
        found = condition_estimate(self.cov, self.__dict__.get("chol"))
        return None if found is None else found[0]

    @cached_property
    def chol(self) -> np.ndarray:
        """Lower Cholesky factor of R."""
        field = "cov" if self.is_orthant else "kernel matrix"
        if not np.all(np.isfinite(self.R)):  # e.g. overflow of a linear kernel on huge features
            raise InputError(field, "has NaN or infinite entries", "rescale the features")
        return cholesky_lower(self.R, field)

    @cached_property
    def test_cross(self) -> np.ndarray:
        """B = C K(X_train, X_test): covariance of the training and test orthant variables."""
        return self.cov.dense_cross()

    @cached_property
    def test_variance(self) -> np.ndarray:
        """Variance of each test orthant variable, 1 + k(x*, x*)."""
        return self.cov.test_diag()

    @cached_property
    def test_rows(self) -> np.ndarray:
        """W = L^{-1} B: the Cholesky row of each test variable (N x n_test)."""
        if self.n_test == 0:
            return np.empty((self.n_train, 0))
        return scipy.linalg.solve_triangular(self.chol, self.test_cross, lower=True)

    @cached_property
    def test_sd(self) -> np.ndarray:
        """Conditional sd of each test variable given the training variables (its pivot)."""
        var = self.test_variance - np.einsum("ij,ij->j", self.test_rows, self.test_rows)
        # var >= 1 in exact arithmetic (the +I of the probit noise); guard rounding only
        return np.sqrt(np.maximum(var, 1e-300))

    def kernel_summary(self) -> dict[str, Any] | None:
        """{"name": ..., parameter: value, ...} of the kernel (None for an orthant problem)."""
        return None if self.is_orthant else {"name": self.kernel.name, **self.kernel.params()}

    def summary(self) -> dict[str, Any]:
        """Plain description for records, stores and reports (includes the truth arrays)."""
        truth = self.truth

        def listed(a):
            return None if a is None else np.asarray(a, float).tolist()

        return {
            "name": self.name,
            "family": self.family,
            "params": {k: (v.item() if isinstance(v, np.generic) else v)
                       for k, v in self.params.items()},
            "description": self.description,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "n_features": None if self.is_orthant else int(self.X_train.shape[1]),
            "covariance": self.cov.describe(),
            "kernel": self.kernel_summary(),
            "truth_kind": None if truth is None else truth.kind,
            "truth_source": None if truth is None else truth.source,
            "true_log_marginal_likelihood": None if truth is None
            else float(truth.log_marginal_likelihood),
            "true_log_marginal_likelihood_se": None if truth is None
            else float(truth.log_marginal_likelihood_se),
            "true_test_probabilities": None if truth is None
            else listed(truth.test_probabilities),
            "true_test_probabilities_se": None if truth is None
            else listed(truth.test_probabilities_se),
            "reference": None if truth is None or truth.details is None else dict(truth.details),
            "bayes_posterior": listed(self.bayes_posterior),
            # held-out labels (±1) of the test points, when known: predictive scores
            "y_test": None if self.y_test is None else [int(v) for v in self.y_test],
        }
