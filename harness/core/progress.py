"""Progress of long work, reported without a display (docs/design.md "Progress").

Work announces itself as a phase, `with phase("factorisation", total=T):`, and its loops call
`advance(amount)` as they go (in the phase's own unit: tile columns, particle-variables, ...).
Phases nest (set-up > reordering; estimate > sampling); `advance` counts towards the innermost
one, so code that advances opens the phase it advances. Whoever wants to see it (the command
line draws a bar with an ETA) installs a listener with `listening(sink)`; without one, `phase`
and `advance` cost one context-variable lookup (like harness.core.deadline.check_deadline), so
the numerics stay free of any display and cost nothing in a sweep's worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Sink(Protocol):
    """What listens: told when a phase begins and ends and how far the innermost one got."""

    def begin(self, name: str, total: float | None) -> None: ...

    def advance(self, amount: float) -> None: ...

    def end(self, name: str) -> None: ...


_SINK: ContextVar[Sink | None] = ContextVar("harness_progress_sink", default=None)


@contextmanager
def listening(sink: Sink | None) -> Iterator[None]:
    """Within the block, phases and advances are reported to `sink` (None: to nobody)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


@contextmanager
def phase(name: str, total: float | None = None) -> Iterator[None]:
    """A named piece of work of `total` units (None: unknown, only the time is shown)."""
    sink = _SINK.get()
    if sink is None:
        yield
        return
    sink.begin(name, total)
    try:
        yield
    finally:
        sink.end(name)


def advance(amount: float = 1.0) -> None:
    """`amount` more units of the innermost phase are done."""
    sink = _SINK.get()
    if sink is not None:
        sink.advance(amount)
