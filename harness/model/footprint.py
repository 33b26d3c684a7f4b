"""Peak memory of a job, estimated before it runs, and the memory it may have.

A method states what a job will hold at its peak (`Method.memory_estimate`, from the problem's
size, the budget and the method's settings) as a `MemoryEstimate` with three plain parts:

- `held`: what stays resident for the whole job: the dense matrices the method makes the
  problem build and cache (R = C(K + I)C and its Cholesky factor L, 8 N² bytes each), reordered
  or compressed factors, latent-prior factors, test rows, all cached per problem;
- `setup`: transient work of `Method.prepare` (e.g. the saddle-point Jacobian), freed before the
  estimate starts;
- `work`: what the estimate call itself allocates (particles, point sets, work matrices). This is
  the part the runner measures as a job's `peak_memory_mb` (harness.core.memory).

total = Σ held + max(Σ setup, Σ work): set-up and estimate work never coexist. The problem's own
representation (its covariance, or the kernel matrix it is built from) is added by
`job_memory` through `problem_bytes`, the one place that knows what a Problem holds by itself.
Counts are of the large arrays only (vectors of length N and Python objects are ignored); the
methods' constants are derived from their code and checked against measured peaks in
tests/model/test_footprint.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.errors import InputError

MIB = 2**20
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def dense(n: int, m: int | None = None) -> int:
    """Bytes of a dense n x m float64 matrix (m = n by default)."""
    return 8 * int(n) * int(n if m is None else m)


@dataclass(frozen=True)
class MemoryEstimate:
    """A job's peak memory before it runs (module doc): bytes per named part."""

    held: Mapping[str, int] = field(default_factory=dict)
    work: Mapping[str, int] = field(default_factory=dict)
    setup: Mapping[str, int] = field(default_factory=dict)

    @property
    def job_bytes(self) -> int:
        """What the estimate call allocates (compare with a record's peak_memory_mb)."""
        return int(sum(self.work.values()))

    @property
    def total_bytes(self) -> int:
        return int(sum(self.held.values()) + max(sum(self.setup.values()), self.job_bytes))

    @property
    def breakdown(self) -> dict[str, int]:
        """Every part, largest first (set-up parts are marked)."""
        parts = {**self.held, **self.work, **{f"{k} (set-up)": v for k, v in self.setup.items()}}
        return dict(sorted(((k, int(v)) for k, v in parts.items() if v > 0),
                           key=lambda kv: -kv[1]))

    def with_held(self, parts: Mapping[str, int]) -> MemoryEstimate:
        """The same estimate with more held parts (e.g. the problem's representation)."""
        return MemoryEstimate({**parts, **self.held}, self.work, self.setup)

    def describe(self, parts: int = 3) -> str:
        """'26.8 GB (dense factor L 26.8 GB, dense R 26.8 GB, ...)': the largest parts."""
        items = list(self.breakdown.items())
        shown = ", ".join(f"{k} {format_bytes(v)}" for k, v in items[:parts])
        more = ", ..." if len(items) > parts else ""
        return f"{format_bytes(self.total_bytes)} ({shown}{more})"


def format_bytes(n: float) -> str:
    """Decimal units, three significant figures: 26.8 GB, 512 MB."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{int(n)} B"


def parse_bytes(field_name: str, value: Any) -> int:
    """'8GB', '512 MiB', '1.5e9' or a number of bytes -> bytes (InputError otherwise)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if math.isfinite(value) and value >= 1:
            return int(value)
        raise InputError(field_name, f"must be a positive amount of memory, got {value!r}")
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(value))
    unit = m.group(2).upper() if m else None
    amount = float(m.group(1)) * _UNITS[unit] if m and unit in _UNITS else math.nan
    if not (math.isfinite(amount) and amount >= 1):   # 1e400GB is inf, 1e-9 less than a byte
        raise InputError(field_name, f"is not an amount of memory: {str(value)[:60]!r}",
                         "write e.g. 8GB, 512MB or 16GiB")
    return int(amount)


def problem_bytes(summary: Mapping[str, Any]) -> int:
    """Bytes a problem holds by itself, from its summary.

    The size of its covariance representation (Problem.summary()["covariance"]: O(N) for the
    structured ones, 8 N² for a dense user matrix); a summary without it (an older store)
    counts the dense 8 N². (For a dense orthant problem R *is* that covariance, so a method
    that also counts "dense R" counts it twice: conservative.)
    """
    cov = summary.get("covariance")
    if isinstance(cov, Mapping) and cov.get("nbytes") is not None:
        return int(cov["nbytes"])
    return dense(int(summary["n_train"]))


def job_memory(summary: Mapping[str, Any], method, budget: int) -> MemoryEstimate:
    """The whole job's estimate: the method's, plus the problem's own representation, plus the
    kernel matrix K that Problem.warm builds (beside R) for a method that reads the dense
    quantities of a GPC problem (Method.needs_dense; the methods' estimates count R and L)."""
    n = int(summary["n_train"])
    est = method.memory_estimate(n, int(summary.get("n_test") or 0), int(budget))
    held = {"problem covariance": problem_bytes(summary)}
    if summary.get("kernel") is not None and method.needs_dense(n):
        held["dense K (with R)"] = dense(n)
    return est.with_held(held)


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is no /proc)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            m = re.search(r"^MemAvailable:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return None
    return None if m is None else int(m.group(1)) * 1024


class TooLarge(InputError):
    """A job refused before it runs: its estimate exceeds the memory it may have."""

    def __init__(self, what: str, estimate: MemoryEstimate, limit: int, where: str):
        """`where` says whose limit it is, with {} for the amount: 'the workers have {}'."""
        self.estimate, self.limit = estimate, limit
        ValueError.__init__(self, f"{what} needs {estimate.describe()}; "
                                  + where.format(format_bytes(limit)))


def memory_limit(value: Any, field_name: str) -> tuple[int | None, str]:
    """(bytes a job may use, how to say whose limit it is): `value` ("8GB", bytes) when given,
    else the memory available (MemAvailable)."""
    if value is not None:
        return parse_bytes(field_name, value), f"the memory limit ({field_name}) is {{}}"
    return available_memory(), "this machine has {} available"


def refuse_too_large(what: str, summary: Mapping[str, Any], method, budget: int,
                     limit: int | None, where: str) -> None:
    """Raise TooLarge if the job's estimate exceeds `limit` (`run` and harness.estimate)."""
    est = too_large(summary, method, budget, limit)
    if est is not None:
        raise TooLarge(f"{what} at budget {budget}", est, limit, where)


def too_large(summary: Mapping[str, Any], method, budget: int, limit: int | None
              ) -> MemoryEstimate | None:
    """The job's estimate if it exceeds `limit` bytes, else None (also when limit is None)."""
    if limit is None:
        return None
    est = job_memory(summary, method, budget)
    return est if est.total_bytes > limit else None
