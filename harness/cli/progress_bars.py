"""Progress bars on stderr (tqdm) for the phases of long work (harness.core.progress).

One line: the open phases' names, outermost first ("set-up › tile-low-rank factorisation"),
and the bar, elapsed time and ETA of the outermost phase that knows its total (else the time
of the outermost phase). A clock thread redraws it every second, so the time moves through
long calls that cannot report (a LAPACK factorisation). Shown only on a terminal and without
`-q`; warnings printed meanwhile go above the bar.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

from harness.core.progress import listening

WITH_TOTAL = "{desc}: {percentage:3.0f}%|{bar}| {elapsed} elapsed, ETA {remaining}"
WITHOUT_TOTAL = "{desc}: {elapsed} elapsed"


@dataclass(eq=False)
class _Phase:
    name: str
    total: float | None
    done: float = 0.0
    start: float = field(default_factory=time.time)


class Bars:
    """A harness.core.progress sink drawing one tqdm bar (module doc)."""

    def __init__(self, stream: TextIO, tick: float = 1.0):
        self.stream = stream
        self.stack: list[_Phase] = []
        self.owner: _Phase | None = None
        self.bar = None
        self.lock = threading.RLock()
        self._stop = threading.Event()
        self._clock = threading.Thread(target=self._redraw_every, args=(tick,), daemon=True)
        self._clock.start()

    # ---- the sink ------------------------------------------------------------------------
    def begin(self, name: str, total: float | None) -> None:
        with self.lock:
            self.stack.append(_Phase(name, total if total else None))
            self._show()

    def advance(self, amount: float) -> None:
        with self.lock:
            if not self.stack:
                return
            self.stack[-1].done += amount
            if self.bar is not None and self.owner is self.stack[-1]:
                self.bar.update(amount)

    def end(self, name: str) -> None:
        with self.lock:
            while self.stack and self.stack.pop().name != name:
                pass
            self._show()

    # ---- drawing -------------------------------------------------------------------------
    def _show(self) -> None:
        from tqdm import tqdm

        owner = next((p for p in self.stack if p.total), self.stack[0] if self.stack else None)
        desc = " › ".join(p.name for p in self.stack)
        if owner is not self.owner:
            self._close_bar()
            self.owner = owner
            if owner is not None:
                ncols, nrows = screen(self.stream)
                self.bar = tqdm(total=owner.total, initial=owner.done, desc=desc,
                                file=self.stream, leave=False, mininterval=0.2,
                                ncols=ncols, nrows=nrows,
                                bar_format=WITH_TOTAL if owner.total else WITHOUT_TOTAL)
                self.bar.start_t = owner.start   # the phase's time, not the bar's
                return
        if self.bar is not None:
            self.bar.set_description_str(desc)

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _redraw_every(self, tick: float) -> None:
        while not self._stop.wait(tick):
            with self.lock:
                if self.bar is not None:
                    self.bar.refresh()

    def write(self, text: str) -> None:
        """A line above the bar."""
        with self.lock:
            if self.bar is not None:
                self.bar.clear()
            self.stream.write(text if text.endswith("\n") else text + "\n")
            self.stream.flush()
            if self.bar is not None:
                self.bar.refresh()

    def close(self) -> None:
        self._stop.set()
        self._clock.join()
        with self.lock:
            self.stack.clear()
            self.owner = None
            self._close_bar()


def screen(stream: TextIO) -> tuple[int, int]:
    """The terminal's (columns, lines); 100 x 24 where it does not say (a pseudo-terminal of
    size 0: tqdm would draw nothing)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return 100, 24
    return size.columns or 100, size.lines or 24


_shown: list[Bars] = []   # the bars drawn now (progress_bars), for lines written meanwhile


def write_line(text: str, stream: TextIO | None = None) -> None:
    """A line on stderr (or `stream`), above the bars when they are drawn there."""
    stream = sys.stderr if stream is None else stream
    if _shown and _shown[-1].stream is stream:
        _shown[-1].write(text)
    else:
        print(text, file=stream, flush=True)


def wanted(args, stream: TextIO | None = None) -> bool:
    """Bars only on a terminal and without -q."""
    stream = sys.stderr if stream is None else stream
    return getattr(args, "verbosity", 1) > 0 and bool(getattr(stream, "isatty", bool)())


@contextmanager
def progress_bars(args, stream: TextIO | None = None) -> Iterator[Bars | None]:
    """Within the block, the phases of long work draw a bar on `stream` (default stderr) when
    it is a terminal and -q was not given; warnings are written above the bar."""
    stream = sys.stderr if stream is None else stream
    if not wanted(args, stream):
        yield None
        return
    bars = Bars(stream)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        bars.write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show
    _shown.append(bars)
    try:
        with listening(bars):
            yield bars
    finally:
        _shown.remove(bars)
        warnings.showwarning = shown
        bars.close()
