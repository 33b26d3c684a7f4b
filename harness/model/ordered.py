"""A problem's training variables in a new order, with the factor and test rows a walk needs
(docs/math.md §6), built once per problem and cached on it.

The orderings themselves are numerics (harness.core.reorder: univariate and block pivoted
Cholesky, the k-d tree order); this module applies them to a Problem. The result is cached per
problem (the factor is a property of the problem, like its Cholesky factor), so
`Method.prepare` can build it outside the timed region.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np
import scipy.linalg

from harness.core.errors import InputError
from harness.core.linalg import cholesky_lower
from harness.core.reorder import kdtree_order, pivoted_cholesky
from harness.model.problem import Problem

_CACHE: WeakKeyDictionary[Problem, dict] = WeakKeyDictionary()


def cached(problem: Problem, key, build: Callable[[], object]):
    """build() once per (problem, key): factors and orders are properties of the problem."""
    store = _CACHE.setdefault(problem, {})
    if key not in store:
        store[key] = build()
    return store[key]


@dataclass(frozen=True)
class OrderedProblem:
    """The training variables of a problem in a new order, with everything a walk needs.

    Test variables stay last: their Cholesky rows are recomputed for the new order
    (test_rows = L^{-1} B[order]); their pivots do not depend on the order.
    """

    order: np.ndarray
    chol: np.ndarray
    test_rows: np.ndarray
    test_sd: np.ndarray
    kind: str
    seconds: float


def check_inputs(problem: Problem) -> None:
    """The k-d tree order needs training inputs: InputError for a pure orthant problem."""
    if problem.is_orthant:
        raise InputError("reorder", "kdtree ordering needs training inputs; a pure orthant "
                         "problem has none", "use reorder=none or block")


def ordered_problem(problem: Problem, kind: str = "univariate", tile: int | None = None
                    ) -> OrderedProblem:
    """The problem's training variables reordered by `kind`.

    'none' (as given), 'univariate', 'block' (tiles of `tile`), or 'kdtree' (k-d tree order of
    the training inputs with leaves of `tile` points; classification problems only).
    """
    if kind == "kdtree":
        check_inputs(problem)

    def build():
        if kind == "none":
            return OrderedProblem(np.arange(problem.n_train), problem.chol, problem.test_rows,
                                  problem.test_sd, "none", 0.0)
        t0 = time.thread_time()
        if kind == "kdtree":
            order = kdtree_order(problem.X_train, tile or problem.n_train)
            # the reordered R straight from the representation: no dense R in the given order
            chol = cholesky_lower(problem.cov.block(order, order), "kernel matrix")
            label = f"kdtree{tile}"
        else:
            ro = pivoted_cholesky(problem.R, kind, tile)
            order, chol, label = ro.order, ro.chol, ro.kind
        if problem.n_test:
            W = scipy.linalg.solve_triangular(chol, problem.cov.cross(order, slice(None)),
                                              lower=True)
            var = problem.test_variance - np.einsum("ij,ij->j", W, W)
            sd = np.sqrt(np.maximum(var, 1e-300))
        else:
            W, sd = np.empty((problem.n_train, 0)), np.empty(0)
        return OrderedProblem(order, chol, W, sd, label, time.thread_time() - t0)

    return cached(problem, ("ordered", kind, _tile_of(kind, tile)), build)


def _tile_of(kind: str, tile: int | None) -> int | None:
    """The tile as part of a cache key: only the tiled orderings have one."""
    return tile if kind in ("block", "kdtree") else None


FORTRAN_ORDERED = ("none", "kdtree")   # orderings whose factor comes from LAPACK


def walk_factor(problem: Problem, kind: str = "none", tile: int | None = None) -> np.ndarray:
    """ordered_problem(problem, kind, tile).chol in C order, the layout the Cholesky walk
    reads (LAPACK's factors are Fortran-ordered, FORTRAN_ORDERED): copied once per problem
    and cached, not on every run (at N = 16,384 the copy took seconds, and N² memory)."""
    op = ordered_problem(problem, kind, tile)
    return cached(problem, ("walk factor", kind, _tile_of(kind, tile)),
                  lambda: np.ascontiguousarray(op.chol))
