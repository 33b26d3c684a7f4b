"""harness.core.memory: the peak extra memory of a block, by the kernel's high-water mark or by
tracemalloc, within a few MiB of what the block allocated.

Arrays here are larger than glibc's largest dynamic mmap threshold (32 MiB), so they are
always fresh pages: smaller ones may reuse memory the allocator already holds, which is not
new resident memory (see harness.core.memory)."""

import mmap

import numpy as np
import pytest

from harness.core import memory


def _touch(mib: int, fresh: bool = False) -> float:
    """Write `mib` MiB (so every page is resident) and free them. fresh=True takes them
    straight from the kernel (an anonymous mmap): new pages whatever the allocator holds,
    which the high-water mark must see (tracemalloc sees only the allocator's arrays)."""
    if fresh:
        with mmap.mmap(-1, mib * 2**20) as m:
            a = np.frombuffer(m, dtype=np.float64)
            a[:] = 1.0
            value = float(a[-1])
            del a
        return value
    a = np.ones(mib * 2**20 // 8)
    return float(a[-1])


@pytest.mark.parametrize("kernel", [True, False], ids=["high-water-mark", "tracemalloc"])
def test_peak_memory_sees_a_temporary_array(monkeypatch, kernel):
    if kernel and not memory.kernel_high_water_mark():
        pytest.skip("this kernel does not let a process reset its high-water mark")
    monkeypatch.setattr(memory, "kernel_high_water_mark", lambda: kernel)
    with memory.peak_memory() as small:
        _touch(4, fresh=kernel)
    with memory.peak_memory() as large:
        _touch(64, fresh=kernel)            # freed before the block ends: only the peak sees it
    assert large.source == ("rss-high-water-mark" if kernel else "tracemalloc")
    assert 60 <= large.mb <= 80
    assert 0 <= small.mb <= 12


def test_peak_memory_off_and_after_an_error():
    with memory.peak_memory(False) as off:
        _touch(8)
    assert off.mb is None and off.source == "none"
    with pytest.raises(ZeroDivisionError), memory.peak_memory() as failed:
        _touch(48, fresh=memory.kernel_high_water_mark())
        1 / 0                               # noqa: B018 - the block fails
    assert failed.mb is not None and failed.mb >= 40
