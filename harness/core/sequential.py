"""The sequential (Cholesky) view shared by the rejection–bootstrap, SOV and SIR estimators.

docs/math.md §4: with R = L L^T and v = L z, z ~ N(0, I), given z_<j the variable v_j is
N(c_j, L_jj^2) with c_j = L[j, :j] z[:j]; so v_j >= 0  <=>  z_j >= -t_j,  t_j = c_j / L_jj.

`CholeskyWalk.run` visits the variables in order for n particles at once and hands each
t_j (a vector over particles) to a `step`, which returns the z_j to store and, optionally,
a resampling (rows `dst` become copies of rows `src`, or with dst=None every row j becomes a
copy of row src[j]). The c_j of a block of upcoming variables come from ONE matrix product
with the stored history, Z[:, :i] @ L[i:i+k, :i]^T, so the walk costs about n N^2 flops at
BLAS speed; inside a block only the small corrections L[j, i:j] z[i:j] remain. Resampling
is applied to the in-block arrays at once and to the long history lazily, one gather of the
rows per block (and of any other per-particle state a structured walk holds, `_resampled`).
A structured walk may keep its history in another form (`_new_history`, `_gather_history`,
`_store_block`, `_result`: the Vecchia walk keeps the v's, and gathers only the rows a later
variable still reads).

A step with an `enter_block` method is told of each block before its first variable:
step.enter_block(i0, i1, W, D) with W the (n, i1 - i0) array of the block's conditional means
given the earlier blocks (column o is overwritten by z_{i0+o} once drawn, and its rows are
permuted with the particles) and D the factor's diagonal block L[i0:i1, i0:i1]. The tilted
step's Gaussian look-ahead over the block reads both (docs/math.md §7b).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.core.deadline import check_deadline
from harness.core.progress import advance, phase
from harness.core.rowops import copy_rows, gather_rows
from harness.core.threads import matmul_rows


@dataclass(frozen=True)
class Resample:
    """Rows `dst` of the particle arrays become copies of rows `src` (dst=None: all rows)."""

    src: np.ndarray
    dst: np.ndarray | None = None


Step = Callable[[int, np.ndarray], tuple[np.ndarray, Resample | None]]


@dataclass
class WalkResult:
    Z: np.ndarray        # (n, N) standardised draws of the final population, v = Z @ L^T
    lineage: np.ndarray  # (n,) index of each final particle's ancestor at the first variable
    columns: np.ndarray | None = None   # a walk that keeps only some variables (Vecchia):
    #                                     Z's column of each variable, -1 if not kept


def sampling(points: int, n_vars: int):
    """The progress phase (harness.core.progress) that walks of `points` particles in all over
    `n_vars` variables advance: every block of the walk counts particles x variables."""
    return phase("sampling", total=points * n_vars)


def default_block_size(n_vars: int) -> int:
    """Block size balancing in-block corrections (~ n N k) and history gathers (~ n N^2 / k)."""
    return int(min(n_vars, max(16, min(128, round(np.sqrt(2.0 * n_vars))))))


class CholeskyWalk:
    """Walk the variables of v = L z in order for many particles at once (see module doc)."""

    draws_in_history = True   # the history is Z itself: a step that does a whole block at
    #                           once (no resampling) draws straight into Z's block columns

    def __init__(self, L: np.ndarray, block_size: int | None = None):
        self.L = np.ascontiguousarray(L, dtype=float)   # no copy from walk_factor
        self.n_vars = len(self.L)
        self.block_size = block_size or default_block_size(self.n_vars)
        self.pivots = np.ascontiguousarray(np.diag(self.L))

    # ---- hooks (a structured factor, e.g. tile-low-rank, overrides these) ----------------
    def _block_means(self, Z: np.ndarray, i0: int, i1: int, out: np.ndarray) -> None:
        """out = conditional means of variables i0..i1-1 given the history Z[:, :i0]."""
        matmul_rows(Z[:, :i0], self.L[i0:i1, :i0].T, out)   # on the threads in force

    def _diagonal_block(self, i0: int, i1: int) -> np.ndarray:
        """L[i0:i1, i0:i1]: the in-block corrections read its strictly lower part."""
        return self.L[i0:i1, i0:i1]

    def _resampled(self, anc: np.ndarray, i0: int) -> None:
        """Particle p of the block starting at variable i0 descends from particle anc[p] at its
        start: permute any per-particle state the walk holds besides the history (dense walk:
        none)."""

    def _block_done(self, Z: np.ndarray, i0: int, i1: int) -> None:
        """Called once the draws of variables i0..i1-1 are final in Z (dense walk: nothing)."""

    def _new_history(self, n: int) -> np.ndarray:
        """The history of n particles: their standardised draws, (n, N)."""
        self._history_spare = None
        return np.empty((n, self.n_vars))

    def _gather_history(self, Z: np.ndarray, anc: np.ndarray, i0: int) -> np.ndarray:
        """The history of variables < i0 with particle p's row taken from row anc[p] (one
        gather into a spare buffer, which then becomes the history)."""
        if self._history_spare is None:
            self._history_spare = np.empty_like(Z)
        gather_rows(Z, anc, i0, self._history_spare)
        Z, self._history_spare = self._history_spare, Z
        return Z

    def _store_block(self, Z: np.ndarray, W: np.ndarray, i0: int, i1: int,
                     anc: np.ndarray | None) -> None:
        """Variables i0..i1-1 drawn: W holds their z's in the particles' final order (anc:
        the block-start row each particle descends from, None if no resampling)."""
        Z[:, i0:i1] = W

    def _result(self, Z: np.ndarray, lineage: np.ndarray) -> WalkResult:
        self._history_spare = None   # not held between runs
        return WalkResult(Z, lineage)

    def _walk_block(self, step: Step, i0: int, W: np.ndarray, D: np.ndarray,
                    lineage: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """The block's variables one at a time: W's columns become the draws; (the row of the
        history, as of block start, each particle descends from (None if no resampling), the
        particles' lineage)."""
        n = len(W)
        anc = None
        for o in range(W.shape[1]):
            j = i0 + o
            c = W[:, o] + W[:, :o] @ D[o, :o] if o else W[:, 0].copy()
            z, resample = step(j, c / self.pivots[j])
            W[:, o] = z
            if resample is None:
                continue
            if anc is None:
                anc = np.arange(n)
            src, dst = resample.src, resample.dst
            if dst is None:                 # full resampling: new rows from old ones
                W[:] = W[src]
                lineage = lineage[src]
                anc = anc[src]
            else:                           # rows dst replaced by copies of rows src
                copy_rows(W, dst, src)
                lineage[dst] = lineage[src]
                anc[dst] = anc[src]
        return anc, lineage

    def run(self, n: int, step: Step) -> WalkResult:
        N, k = self.n_vars, self.block_size
        Z = self._new_history(n)
        lineage = np.arange(n)
        enter = getattr(step, "enter_block", None)
        fused = getattr(step, "fused_block", None)
        in_place = fused is not None and self.draws_in_history
        # In-block work array: column o holds the block-start conditional mean of variable
        # i0+o until that variable is drawn, then its draw z. So a particle's in-block state
        # is one contiguous row, and resampling copies exactly kb numbers per particle. A
        # fused step works in Z's own block columns instead (no copy into the history).
        W_full = None if in_place else np.empty((n, k))
        for i0 in range(0, N, k):
            check_deadline()  # cooperative per-job CPU-time limit (harness.core.deadline)
            i1 = min(i0 + k, N)
            kb = i1 - i0
            W = Z[:, i0:i1] if in_place else W_full[:, :kb] if kb < k else W_full
            if i0:  # conditional means of the block's variables from the history: one GEMM
                self._block_means(Z, i0, i1, W)
            else:
                W[:] = 0.0
            D = self._diagonal_block(i0, i1)
            if enter is not None:
                enter(i0, i1, W, D)
            if fused is not None:   # the step does the whole block itself (no resampling)
                fused(i0, i1, W, D, self.pivots[i0:i1])
                anc = None
            else:
                anc, lineage = self._walk_block(step, i0, W, D, lineage)
            if anc is not None and i0:
                Z = self._gather_history(Z, anc, i0)
                self._resampled(anc, i0)
            if not in_place:
                self._store_block(Z, W, i0, i1, anc)
            self._block_done(Z, i0, i1)
            advance(n * kb)   # particle-variables (harness.core.progress)
        return self._result(Z, lineage)
