"""The Vecchia approximation of R as a factor to walk (Cao & Katzfuss 2024; docs/math.md §5, §7).

Each training variable, in a maximin (or sorted 1-D, or strongest-first) order, depends on its
m nearest (or most correlated) earlier neighbours c(i) only: v_i | v_c ~ N(b_i v_c, d_i)
(harness.core.vecchia). Walking that structure estimates P(v >= 0) for v ~ N(0, R̃), R̃ the
Vecchia approximation of R: not the exact Z unless every variable keeps all earlier ones.
O(N m³) set-up, O(N m) a particle, O(N m) memory besides the particles.

Test variables are appended with their own m nearest training inputs (or most correlated
training variables) as neighbours: c* = b* v_c and s*² = d*, their Vecchia conditional mean
and variance.

Orderings (`ordering`): 'auto' is, for a stationary kernel (RBF, Matérn), the sorted order of
1-D inputs and the maximin order in more dimensions, with the m nearest earlier inputs as
neighbours; otherwise (no inputs, or a linear kernel, whose correlations do not fall with
distance) 'strongest': variables by decreasing Σ_j ρ_ij², with the m most correlated earlier
variables as neighbours. 'given' keeps the problem's order; 'maximin' forces the maximin order
(in the correlation distance 1 - |ρ| without inputs). docs/studies.md, "Vecchia neighbours and
orderings", has the measurements behind DEFAULT_M and the orderings.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from harness.core.kernels import RBF, Matern
from harness.core.sequential import WalkResult
from harness.core.vecchia import (
    Conditionals,
    VecchiaFactor,
    VecchiaWalk,
    conditionals,
    correlation_maximin_order,
    correlation_neighbours,
    maximin_order,
    ordered_neighbours,
    strongest_order,
    test_correlation_neighbours,
)
from harness.engine.factor import Factor, FactorMemory, SetupFailed
from harness.model.ordered import cached
from harness.model.problem import Problem

ORDERINGS = ("auto", "given", "maximin", "strongest")
DEFAULT_M = 60   # neighbours per variable (docs/studies.md, "Vecchia neighbours and orderings")
ORDERING_EXCESS_MAX = 0.5   # nats of KL an order may lose to 'auto''s (ordering_excess)


class NonLocalOrderingWarning(UserWarning):
    """The problem's own order ('given') is far from local for the Vecchia approximation."""

    one_line = True   # the CLI prints it as one line (harness.cli)


@dataclass(frozen=True)
class VecchiaStructure:
    """The ordered training variables' conditionals and the test variables' (module doc)."""

    order: np.ndarray          # training variable at each position
    train: Conditionals        # positions of earlier neighbours, coefficients, variances
    test: Conditionals | None  # neighbours (training positions) of each test variable
    kind: str                  # the order used
    seconds: float


def _pair_blocks(cov, order):
    """blocks(i, c) for training position i: (R[c, c], R[c, i]) from one tile."""
    def blocks(i, c):
        idx = order[np.append(c, i)]
        B = cov.block(idx, idx)
        return B[:-1, :-1], B[:-1, -1]
    return blocks


def _test_blocks(cov, order):
    """blocks(j, c) for test variable j: (R[c, c], B[c, j])."""
    def blocks(j, c):
        idx = order[c]
        return cov.block(idx, idx), cov.cross(idx, np.array([j]))[:, 0]
    return blocks


def distance_based(problem: Problem) -> bool:
    """Whether the problem's correlations fall with the distance of its inputs (a stationary
    kernel: RBF, Matérn), so that nearest inputs are the most correlated variables."""
    return not problem.is_orthant and isinstance(problem.kernel, RBF | Matern)


def vecchia_structure(problem: Problem, m: int, ordering: str) -> VecchiaStructure:
    """The Vecchia structure of the problem for m neighbours (cached per problem)."""
    def build():
        t0 = time.thread_time()
        cov, n = problem.cov, problem.n_train
        kind = ordering
        if kind == "auto":
            kind = "strongest" if not distance_based(problem) else \
                "sorted" if problem.X_train.shape[1] == 1 else "maximin"
        X = np.asarray(problem.X_train, dtype=float) \
            if kind != "strongest" and not problem.is_orthant else None
        if kind == "given":
            order = np.arange(n)
        elif kind == "sorted":
            order = np.argsort(X[:, 0], kind="stable")
        elif kind == "strongest":
            order = strongest_order(cov)
        elif X is not None:
            order = maximin_order(X)
        else:
            order, kind = correlation_maximin_order(cov), "maximin-correlation"
        if X is not None:
            nbrs = ordered_neighbours(X[order], m)
        else:
            nbrs = correlation_neighbours(cov, order, m)
        count = np.minimum(np.arange(n), m)
        train = conditionals(_pair_blocks(cov, order), cov.diag()[order], nbrs, count)
        test = None
        if problem.n_test:
            k = min(m, n)
            if X is not None:
                _, tn = cKDTree(X[order]).query(np.asarray(problem.X_test, dtype=float), k)
                tn = np.asarray(tn, dtype=np.intp).reshape(problem.n_test, k)
            else:
                tn = test_correlation_neighbours(cov, order, k)
            test = conditionals(_test_blocks(cov, order), cov.test_diag(), tn,
                                np.full(problem.n_test, k))
        return VecchiaStructure(order, train, test, kind, time.thread_time() - t0)

    return cached(problem, ("vecchia", m, ordering), build)


def ordering_excess(problem: Problem, m: int, ordering: str) -> float | None:
    """How much farther R̃ in `ordering` is from R than in 'auto', in nats of Kullback-Leibler
    divergence: ½ (Σ log d_i - Σ log d_i^auto), since KL(N(0, R) || N(0, R̃)) =
    ½ (Σ log d_i - log det R) for a Vecchia approximation (tr R̃⁻¹ R = N). Only for
    ordering='given' with m < N - 1 (None otherwise); costs the set-up of 'auto' at m."""
    if ordering != "given" or m >= problem.n_train - 1:
        return None

    def excess():
        given = vecchia_structure(problem, m, "given").train.var
        auto = vecchia_structure(problem, m, "auto").train.var
        return float(0.5 * (np.sum(np.log(given)) - np.sum(np.log(auto))))

    return cached(problem, ("vecchia-ordering-excess", m), excess)


def check_ordering(problem: Problem, m: int, ordering: str, label: str) -> float | None:
    """ordering_excess, with a NonLocalOrderingWarning (one line) when it exceeds
    ORDERING_EXCESS_MAX."""
    excess = ordering_excess(problem, m, ordering)
    if excess is not None and excess > ORDERING_EXCESS_MAX:
        warnings.warn(f"{label}: ordering={ordering} is not local on {problem.name} (its "
                      f"Vecchia approximation is {excess:.3g} nats of KL farther from R than "
                      "ordering=auto's): its error is not estimated reliably; use "
                      "ordering=auto", NonLocalOrderingWarning, stacklevel=2)
    return excess


@dataclass(frozen=True)
class Vecchia:
    """The Vecchia factor as a part of an orthant sampler (module doc).

    Parameters
    ----------
    m : int
        Neighbours per variable.
    ordering : str
        One of ORDERINGS.
    block_size : int
        Variables per block of the walk: 1 is the plain walk, t_i = b_i v_c(i) / sqrt(d_i);
        a resampled walk with a look-ahead takes blocks (harness.core.vecchia.VecchiaWalk).
    """

    m: int
    ordering: str
    block_size: int = 1
    streams_points = True   # the walk holds only the rows still read: stream random points

    def needs_dense(self, n_train: int) -> bool:
        """Only small tiles of `problem.cov` are read."""
        return False

    def block(self, n_train: int) -> int:
        return self.block_size

    def structure(self, problem: Problem) -> VecchiaStructure:
        return vecchia_structure(problem, self.m, self.ordering)

    def build(self, problem: Problem) -> Factor:
        """The Vecchia walk; its history keeps only the rows a later block or a test variable
        reads. Raises SetupFailed for a singular neighbours' block."""
        try:
            s = self.structure(problem)
        except np.linalg.LinAlgError as exc:
            raise SetupFailed("the Vecchia conditionals could not be solved: a neighbours' "
                              f"block R[c, c] is singular ({exc})") from None
        test, test_sd, keep = s.test, np.empty(0), None
        if test is not None:
            test_sd = np.sqrt(test.var)
            keep = np.unique(test.idx[test.read()])
        walk = VecchiaWalk(s.train, self.block_size, keep)

        def test_means(result: WalkResult, cols: slice) -> np.ndarray:
            V, rows = result.Z.T, result.columns   # the kept v's and each variable's row
            out = np.empty((V.shape[1], cols.stop - cols.start))
            for o, j in enumerate(range(cols.start, cols.stop)):
                out[:, o] = test.coef[j] @ V[rows[test.idx[j]]]
            return out

        return Factor(walk=walk, test_sd=test_sd, test_means=test_means,
                      history_rows=walk.history_rows, diagnostics={
            "approximation": f"Vecchia, m = {self.m}: estimates P(v >= 0) under the "
                             "approximated covariance",
            "m": self.m, "ordering": s.kind, "vecchia_setup_seconds": s.seconds,
            "history_rows": walk.history_rows,
            "floored_variances": s.train.floored,
            "min_conditional_variance_ratio": float(np.min(s.train.var
                                                           / problem.cov.diag()[s.order])),
        })

    def memory(self, n_train: int, n_test: int) -> FactorMemory:
        """O(N m): neighbours, coefficients and variances of every
        variable (training and test); set-up: batches of m x m systems and the neighbour
        search's blocks."""
        m = min(self.m, max(n_train - 1, 1))
        held = {"neighbour structure": (n_train + n_test) * (16 * m + 16)}
        setup = {"conditional systems": 2048 * 8 * 2 * (m + 1) ** 2,
                 "neighbour search blocks": 4 * 8 * (1 << 22),
                 "ordering": 128 * n_train}
        return FactorMemory(held, setup)

    def saddle_operator(self, problem: Problem) -> tuple[tuple, Callable[[], object]]:
        """(cache key, maker) of the factor the saddle point is solved with: the sparse
        factor L = U⁻¹ D^{1/2}, products by sparse triangular solves (O(N m) each)."""
        return (("vecchia-tilting", self.m, self.ordering),
                lambda: VecchiaFactor(self.structure(problem).train))
