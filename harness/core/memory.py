"""Peak memory of one timed call, without slowing it down.

On Linux the kernel keeps the process's resident-set high-water mark (VmHWM in
/proc/self/status), and writing "5" to /proc/self/clear_refs resets it to the current resident
size. So: reset, run, read VmHWM − the resident size at the start = the extra memory the call
touched, at no cost to the call (a sweep worker runs one job at a time, so the process's peak is
the job's). It counts new resident pages: arrays above glibc's largest dynamic mmap threshold
(32 MiB) always are, while smaller ones may reuse memory the allocator already holds from
earlier work and then add nothing; the large arrays are the ones whose growth with N and the
budget the reports are about. Elsewhere (or when the reset is not permitted) tracemalloc
measures the numpy/Python allocations instead; it slows small numpy-heavy runs several-fold
(docs/studies.md, "Small implementation choices"), which is why it is only the fallback.
"""

from __future__ import annotations

import re
import tracemalloc
from contextlib import contextmanager
from functools import cache

_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"


def _status_kib(*fields: str) -> tuple[int, ...]:
    with open(_STATUS, encoding="ascii") as f:
        text = f.read()
    return tuple(int(re.search(rf"^{field}:\s+(\d+) kB", text, re.M).group(1))
                 for field in fields)


def status_bytes(field: str) -> int | None:
    """A size from /proc/self/status (e.g. "VmData") in bytes; None where there is none."""
    try:
        (kib,) = _status_kib(field)
    except (OSError, AttributeError):
        return None
    return kib * 1024


def _reset_high_water_mark() -> None:
    with open(_CLEAR_REFS, "w", encoding="ascii") as f:
        f.write("5")


@cache
def kernel_high_water_mark() -> bool:
    """Whether this process can reset and read its resident high-water mark."""
    try:
        _reset_high_water_mark()
        _status_kib("VmRSS", "VmHWM")
    except (OSError, AttributeError, ValueError):
        return False
    return True


class PeakMemory:
    """The result of peak_memory(): `.mb` (None until the block ends) and `.source`."""

    mb: float | None = None
    source: str = "none"


@contextmanager
def peak_memory(enabled: bool = True):
    """Measure the peak extra memory (MiB) of the block: `with peak_memory() as m: ...; m.mb`."""
    result = PeakMemory()
    if not enabled:
        yield result
        return
    if kernel_high_water_mark():
        _reset_high_water_mark()
        (start,) = _status_kib("VmRSS")
        result.source = "rss-high-water-mark"
        try:
            yield result
        finally:
            (peak,) = _status_kib("VmHWM")
            result.mb = max(peak - start, 0) / 1024
        return
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result.source = "tracemalloc"
    try:
        yield result
    finally:
        result.mb = max(tracemalloc.get_traced_memory()[1] - base, 0) / 2**20
        if not tracing:
            tracemalloc.stop()
