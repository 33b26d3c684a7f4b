"""The dense Cholesky factor of a problem's R in a chosen ordering (docs/math.md §4, §6)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.core.sequential import CholeskyWalk, WalkResult, default_block_size
from harness.core.threads import matmul_rows
from harness.engine.factor import Factor, FactorMemory
from harness.model.footprint import dense
from harness.model.ordered import FORTRAN_ORDERED, ordered_problem, walk_factor
from harness.model.problem import Problem


@dataclass(frozen=True)
class DenseCholesky:
    """The factor L of R = L Lᵀ with the training variables reordered by `reorder`, walked
    block by block with one matrix product per block (harness.core.sequential.CholeskyWalk).

    Parameters
    ----------
    reorder : str
        'none', 'univariate' (harness.core.reorder), 'block' or 'kdtree' (tiles of `tile`).
    tile : int or None
        Tile of the block and k-d tree orderings.
    block_size : int
        Variables per block of the walk; 0 chooses default_block_size(N).
    """

    reorder: str = "none"
    tile: int | None = None
    block_size: int = 0
    streams_points = False      # the history holds every variable: nothing gained by streaming

    def needs_dense(self, n_train: int) -> bool:
        """The dense factor reads the problem's dense R."""
        return True

    def block(self, n_train: int) -> int:
        return self.block_size or default_block_size(n_train)

    def build(self, problem: Problem) -> Factor:
        """The (cached) reordered factor and its test rows W = L⁻¹ B, ready to walk."""
        op = ordered_problem(problem, self.reorder, self.tile)
        W = op.test_rows

        def test_means(result: WalkResult, cols: slice) -> np.ndarray:
            return matmul_rows(result.Z, W[:, cols])

        L = walk_factor(problem, self.reorder, self.tile)   # C order, copied once
        return Factor(walk=CholeskyWalk(L, self.block_size or None), test_sd=op.test_sd,
                      test_means=test_means,
                      diagnostics={"reorder": op.kind, "reorder_seconds": op.seconds})

    def memory(self, n_train: int, n_test: int) -> FactorMemory:
        """R, L and the test rows, plus a reordered copy of both and the
        reordering's Schur complement."""
        held = {"dense R": dense(n_train), "dense factor L": dense(n_train),
                "test rows": 2 * dense(n_train, n_test)}          # B and W = L^{-1} B
        if self.reorder in FORTRAN_ORDERED:
            held["dense factor L in C order (the walk's)"] = dense(n_train)
        setup = {}
        if self.reorder != "none":
            held["reordered factor"] = dense(n_train)
            held["reordered test rows"] = dense(n_train, n_test)
            setup["reordering Schur complement"] = dense(n_train)
        return FactorMemory(held, setup)

    def saddle_operator(self, problem: Problem) -> tuple[tuple, Callable[[], object]]:
        """(cache key, maker) of the factor the saddle point is solved with: L itself."""
        return (("minimax-tilting", self.reorder, self.tile),
                lambda: ordered_problem(problem, self.reorder, self.tile).chol)
