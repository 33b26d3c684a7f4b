"""Randomised quasi-Monte Carlo point sets for the sequential estimators (docs/math.md §6).

A `PointSet` holds `randomisations` independent randomisations of one point set in [0, 1)^dim
and hands them out in chunks of point indices, variable-major (dim x rows: row block k holds
the chunk's points of randomisation k), which is the layout the Cholesky walk reads column by
column. Every estimate made from one randomisation is unbiased, and the randomisations are
independent given the base points, so the spread of the K per-randomisation estimates gives a
standard error (`batch_standard_error`; `batch_error` for what an estimator reports).

Kinds:
  sobol    scrambled Sobol' points (scipy.stats.qmc.Sobol: one Matousek linear matrix scramble
           with 30 bits, drawn once per PointSet) and an independent random digital shift per
           randomisation. The shift has infinite precision: the 30 digits are XORed with random
           bits, the digits beyond the 30th are random (a uniform offset within the 2^-30 cell),
           so every point is exactly uniform and never 0. Randomisations share the base scramble
           and differ by their shifts: given the scramble they are i.i.d. and each is unbiased,
           which is what the standard error needs. (An independent scramble per randomisation
           would cost dim x 30^2 operations each: 0.25 s at dim = 5000.)
  lattice  a rank-1 Richtmyer lattice, x_r = frac(r sqrt(p) + shift) with p the first dim
           primes, r = 1, 2, ..., an independent uniform shift per randomisation, and the baker's
           (tent) transformation w = |2x - 1| that Genz's codes use for lattice rules.
  random   pseudo-random uniforms (the Monte Carlo baseline); the randomisations are batches.

Reproducible from the Generator passed in: every seed, scramble and shift derives from it, and
the QMC kinds give the same points whatever the chunking.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numba import njit

from harness.core import special
from harness.core.errors import InputError
from harness.core.special import log1m_
from harness.core.threads import over_blocks

KINDS = ("sobol", "lattice", "random")
SOBOL_MAX_DIM = 21201   # scipy.stats.qmc.Sobol.MAXDIM
_BITS = 30
_CELL = 2.0**-_BITS
_NEG_TINY = -np.finfo(float).tiny   # largest value log(1 - w) may take: keeps it < 0
_W_MAX = 1.0 - 2.0**-53             # largest w whose log(1 - w) is taken


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def _shifted_rows(base, xor, offset, out, r0, m, lo, hi, log):
    """Rows lo..hi-1 of one randomisation of m Sobol' points in one pass, into columns
    r0..r0+m-1 of out: w = (digits XOR shift + offset) 2^-30 (module doc), or with `log`
    log(1 - min(w, 1 - 2^-53)) capped below 0 (special.log1m_: special.log1m's numbers)."""
    for j in range(lo, hi):
        x, off = xor[j], offset[j]
        if log:
            for i in range(m):
                w = min((np.float64(base[j, i] ^ x) + off) * _CELL, _W_MAX)
                out[j, r0 + i] = min(log1m_(w), _NEG_TINY)
        else:
            for i in range(m):
                out[j, r0 + i] = (np.float64(base[j, i] ^ x) + off) * _CELL


def first_primes(n: int) -> np.ndarray:
    """The first n primes (sieve of Eratosthenes)."""
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    limit = max(16, int(n * (np.log(n) + np.log(np.log(n + 2)) + 3)))
    while True:
        sieve = np.ones(limit + 1, dtype=bool)
        sieve[:2] = False
        for p in range(2, int(limit**0.5) + 1):
            if sieve[p]:
                sieve[p * p :: p] = False
        primes = np.flatnonzero(sieve)
        if len(primes) >= n:
            return primes[:n].astype(np.int64)
        limit *= 2


def split_budget(budget: int, parts: int) -> np.ndarray:
    """Near-equal positive sizes summing to budget (at most `parts` of them)."""
    parts = max(1, min(parts, budget))
    base, extra = divmod(budget, parts)
    return np.array([base + (k < extra) for k in range(parts)], dtype=np.int64)


AUTO_POINTS_EACH = 25     # "randomisations = 0": about this many points per randomisation,
AUTO_MIN, AUTO_MAX = 10, 40   # between these many randomisations


def auto_randomisations(budget: int, points_each: int = AUTO_POINTS_EACH) -> int:
    """K for "randomisations = 0" (docs/math.md §6).

    The standard error from K randomisations has K - 1 degrees of freedom, so more of them give
    honest errors with heavy-tailed weights, at the price of QMC's gain inside a randomisation;
    the limits are justified in docs/studies.md, "Number of randomisations".

    Parameters
    ----------
    budget : int
        The estimate's points in all.
    points_each : int
        The points a randomisation should have (25 for the QMC methods; methods.sir passes its
        own).

    Returns
    -------
    int
        budget // points_each clipped to [AUTO_MIN, AUTO_MAX] = [10, 40], so 40 from 1,000
        points on.
    """
    return int(min(AUTO_MAX, max(AUTO_MIN, int(budget) // points_each)))


class PointSet:
    """K randomisations of a point set in [0, 1)^dim with sizes[k] points each (module doc)."""

    def __init__(self, kind: str, dim: int, sizes, rng: np.random.Generator):
        if kind not in KINDS:
            raise InputError("points", f"unknown point set {kind!r}", f"use one of {list(KINDS)}")
        if kind == "sobol" and dim > SOBOL_MAX_DIM:
            raise InputError("points", f"Sobol' points exist up to dimension {SOBOL_MAX_DIM}, "
                             f"this problem needs {dim}", "use points=lattice")
        self.kind, self.dim = kind, int(dim)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.K = len(self.sizes)
        self.rng = np.random.default_rng(rng.integers(2**63))
        if kind == "sobol":
            from scipy.stats import qmc

            self._engine = qmc.Sobol(self.dim, scramble=True, bits=_BITS,
                                     rng=np.random.default_rng(self.rng.integers(2**63)))
            self._position = 0
            self._xor = self.rng.integers(0, 2**_BITS, size=(self.K, self.dim), dtype=np.uint32)
            self._offset = self.rng.random((self.K, self.dim))
        elif kind == "lattice":
            primes = first_primes(self.dim).astype(float)
            self._q = np.sqrt(primes) % 1.0
            self._shift = self.rng.random((self.K, self.dim))

    @property
    def n_points(self) -> int:
        return int(self.sizes.sum())

    def chunk_rows(self, a: int, b: int) -> list[tuple[int, int, int]]:
        """[(randomisation k, first row, number of rows)] of the point indices [a, b)."""
        out, row = [], 0
        for k, size in enumerate(self.sizes):
            m = max(0, min(b, int(size)) - a)
            if m:
                out.append((k, row, m))
                row += m
        return out

    def _sobol_base(self, a: int, b: int) -> np.ndarray:
        """Base Sobol' points a..b-1 as 30-bit integers, variable-major (dim x (b - a))."""
        if self._position != a:
            self._engine.reset()
            self._engine.fast_forward(a)
        with warnings.catch_warnings():  # first n points of a net: unbiased, just less balanced
            warnings.simplefilter("ignore", UserWarning)
            pts = self._engine.random(b - a)
        self._position = b
        return np.ascontiguousarray((pts * 2.0**_BITS).astype(np.uint32).T)

    def uniforms(self, a: int, b: int, log: bool = False
                 ) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
        """Points a..b-1 of every randomisation, variable-major: (dim x rows), and chunk_rows
        (with `log`, Sobol' points come as log(1 - w) already, see log_complement)."""
        rows = self.chunk_rows(a, b)
        n = sum(m for _, _, m in rows)
        out = np.empty((self.dim, n))
        if self.kind == "random":
            out[:] = self.rng.random((self.dim, n))
            return out, rows
        if self.kind == "sobol":
            base = self._sobol_base(a, max(a + m for _, _, m in rows))
            for k, r0, m in rows:
                args = (base, self._xor[k], self._offset[k], out, r0, m)
                over_blocks(lambda lo, hi, args=args: _shifted_rows(*args, lo, hi, log),
                            self.dim, 64)
            return out, rows
        r = np.arange(a + 1, a + 1 + max(m for _, _, m in rows), dtype=float)
        base = np.multiply.outer(self._q, r)   # r q < 2^53: exact enough (r q mod 1 ~ 1e-10)
        base %= 1.0
        for k, r0, m in rows:
            block = out[:, r0 : r0 + m]
            np.add(base[:, :m], self._shift[k][:, None], out=block)
            block %= 1.0
            block *= 2.0
            block -= 1.0
            np.abs(block, out=block)   # tent: w = |2x - 1| in [0, 1]
        return out, rows

    def log_complement_streamed(self, a: int, b: int, block: int
                                ) -> tuple[StreamedLogComplement, list[tuple[int, int, int]]]:
        """log_complement(a, b) of random points, generated `block` variables at a time as a
        walk reaches them (StreamedLogComplement): the same numbers, (block x rows) held."""
        if self.kind != "random":
            raise ValueError("only random points can be streamed (a QMC point has all its "
                             "coordinates at once)")
        rows = self.chunk_rows(a, b)
        return StreamedLogComplement(self.rng, self.dim, sum(m for _, _, m in rows),
                                     block), rows

    def log_complement(self, a: int, b: int) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
        """log(1 - w) of points a..b-1, variable-major, always < 0 and finite; and chunk_rows.

        This is what the truncated-normal draw of docs/math.md §6 needs:
        z = -ndtri_exp(log(1 - w) + log Φ(t)).
        """
        if self.kind == "random":  # log(1 - U) ~ -Exp(1): one draw instead of two passes
            rows = self.chunk_rows(a, b)
            n = sum(m for _, _, m in rows)
            E = self.rng.standard_exponential((self.dim, n))
            np.negative(E, out=E)
        elif self.kind == "sobol":
            return self.uniforms(a, b, log=True)
        else:
            E, rows = self.uniforms(a, b)
            np.minimum(E, _W_MAX, out=E)   # the tent can reach 1 exactly
            special.log1m(E, out=E)
        np.minimum(E, _NEG_TINY, out=E)
        return E, rows


class StreamedLogComplement:
    """PointSet.log_complement of random points for a walk that visits the variables in
    order: E[j] for j = 0, 1, ... generated `block` rows at a time from the same stream,
    log(1 - U) = -Exp(1) (numpy's Generator fills an array in order, so consecutive blocks
    are the whole array's rows, bit for bit)."""

    def __init__(self, rng: np.random.Generator, dim: int, n: int, block: int):
        self.rng, self.shape, self.block = rng, (dim, n), max(1, int(block))
        self._start, self._rows = 0, np.empty((0, n))

    def __getitem__(self, j: int) -> np.ndarray:
        o = j - self._start
        if 0 <= o < len(self._rows):
            return self._rows[o]
        if o != len(self._rows) or j >= self.shape[0]:
            raise IndexError(f"variable {j}: a streamed point set is read in order "
                             f"(next is {self._start + len(self._rows)})")
        k = min(self.block, self.shape[0] - j)
        self._rows = self.rng.standard_exponential((k, self.shape[1]))
        np.negative(self._rows, out=self._rows)
        np.minimum(self._rows, _NEG_TINY, out=self._rows)
        self._start = j
        return self._rows[0]


def batch_standard_error(log_values: np.ndarray, sizes) -> tuple[float, float]:
    """(log of the pooled mean, standard error of its log) from K per-batch means in log space.

    log_values[k] = log of batch k's mean; the pooled mean weights batch k by sizes[k]. The
    standard error of the log is se(pooled mean) / pooled mean (delta method), with the
    batch-means variance estimate; NaN when there is a single batch.
    """
    log_values = np.asarray(log_values, float)
    share = np.asarray(sizes, float) / np.sum(sizes)
    log_mean = float(np.logaddexp.reduce(log_values + np.log(share)))
    K = len(log_values)
    if K < 2:
        return log_mean, float("nan")
    ratio = np.exp(log_values - log_mean)
    return log_mean, float(np.sqrt(K / (K - 1) * np.sum(share**2 * (ratio - 1.0) ** 2)))



@dataclass(frozen=True)
class BatchError:
    """The pooled log mean of K batches and the standard error an estimator should report.

    delta_se is `batch_standard_error`'s. With equal batch sizes its square is
    K/(K-1) Σ_k (p_k - 1/K)^2, p_k = batch k's share of the pooled sum, so delta_se <= 1 nat
    whatever the true error: when one batch holds the mass (heavy-tailed weights, e.g. SOV on
    a short-length-scale RBF orthant) it reads ~1 while the log means of independent runs
    spread over many nats. The pooled mean then behaves like a mean over K_eff = 1 / Σ p_k^2
    batches (K when they contribute equally, 1 when one holds everything), so its log is
    uncertain by about the per-batch spread of the logs over sqrt(K_eff):

        se = max(delta_se, log_sd / sqrt(K_eff)),   log_sd = sd of the K per-batch log means
    (over the batches whose mean is not 0: a zero mean, e.g. a particle filter whose particles
    all died, has no log and counts in delta_se only; NaN with fewer than two such batches).

    For well-behaved batches log_sd / sqrt(K) ~ delta_se (they differ at second order in the
    relative spread), so this only matters when the weights are degenerate.

    Batches that agree to rounding (log_sd <= RESOLUTION_RTOL max(1, |log_mean|)) say nothing
    about the error, and se is then at least 1 / S, S the points in all batches: an event of
    probability below 1/S is seen by none of them, and where its weights fall to 0 it moves
    the mean by its probability (the case behind it: docs/studies.md, "Standard error at
    rounding"). `resolution_floor` says when the floor is taken.
    """

    log_mean: float
    se: float            # what to report (NaN with one batch)
    delta_se: float      # se of the pooled mean / pooled mean (delta method)
    log_sd: float        # standard deviation of the per-batch log means (NaN with one batch)
    k_eff: float         # 1 / Σ p_k^2, p_k the share of batch k in the pooled sum
    top_share: float     # max p_k
    resolution_floor: bool = False   # se is 1 / S: the batches agree to rounding


DEGENERATE_SHARE = 0.5   # one batch holding more than this: the estimate rests on that batch
RESOLUTION_RTOL = 1e-12  # batch estimates closer than this (relative) agree to rounding


COVERAGE_SIGMAS = 2.5     # t_coverage_factor matches the normal coverage at ±2.5 SE


def t_coverage_factor(batches: int, sigmas: float = COVERAGE_SIGMAS) -> float:
    """The factor that turns a standard error from `batches` independent batches into one
    whose ±sigmas interval has the normal ±sigmas coverage (docs/math.md §7b).

    (estimate - truth) / se from K batches is a Student t with K - 1 degrees of freedom, not a
    normal: ±3 se covers 98.5 % with K = 10 where a normal covers 99.73 %. Multiplying se by
    t_{K-1}^{-1}(Φ(sigmas)) / sigmas restores the coverage at ±sigmas: at 2.5 (the default)
    1.246 for K = 10, 1.105 for 20, 1.049 for 40, towards 1 as K grows, and ±3 se then covers
    99.54 % under t_9. Matching at 3 (1.365 for K = 10) over-corrects the bulk: measured log Z
    z's of `sir` at 10 populations had sd 0.78 (docs/studies.md, "Small-budget calibration").
    NaN with fewer than two batches (no spread, no se).
    """
    if batches < 2:
        return float("nan")
    from scipy.stats import norm, t

    return float(t.ppf(norm.cdf(sigmas), batches - 1) / sigmas)


def ratio_standard_error(share: np.ndarray, values: np.ndarray, pooled: np.ndarray,
                         points: int) -> np.ndarray:
    """Standard errors of ratios pooled over K independent batches (linearised ratio).

    pooled = Σ_k share_k values_k, share_k = batch k's part of the denominator (Σ_k share_k =
    1), values_k = batch k's own ratios (rows of `values`, one column per ratio):
    se² = K/(K-1) Σ_k share_k² (values_k - pooled)², at least 1 / points where the batches
    agree to rounding (BatchError's resolution floor). NaN with a single batch.
    """
    share = np.asarray(share, float)[:, None]
    K = len(share)
    if K < 2:
        return np.full(np.shape(pooled), np.nan)
    se = np.sqrt(K / (K - 1) * np.sum(share**2 * (values - pooled) ** 2, axis=0))
    agree = np.ptp(values, axis=0) <= RESOLUTION_RTOL * np.minimum(pooled, 1.0 - pooled)
    se[agree] = np.maximum(se[agree], 1.0 / float(points))
    return se


def batch_error(log_values: np.ndarray, sizes) -> BatchError:
    """`BatchError` of K per-batch log means (see its doc for the reported se)."""
    log_values = np.asarray(log_values, float)
    log_mean, delta_se = batch_standard_error(log_values, sizes)
    p = np.exp(log_values + np.log(np.asarray(sizes, float) / np.sum(sizes)) - log_mean)
    p /= p.sum()   # rounding only
    k_eff = float(1.0 / np.sum(p * p))
    if len(log_values) < 2:
        return BatchError(log_mean, delta_se, delta_se, float("nan"), k_eff, float(p.max()))
    live = log_values[np.isfinite(log_values)]   # a batch whose mean is 0 has no log
    log_sd = float(np.std(live, ddof=1)) if len(live) >= 2 else float("nan")
    se = delta_se if np.isnan(log_sd) else max(delta_se, log_sd / np.sqrt(k_eff))
    floor = bool(log_sd <= RESOLUTION_RTOL * max(1.0, abs(log_mean)))
    if floor:
        se = max(se, 1.0 / float(np.sum(sizes)))
    return BatchError(log_mean, se, delta_se, log_sd, k_eff, float(p.max()), floor)
