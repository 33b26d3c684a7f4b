"""A one-line progress display on stderr: done / failed / unreliable / remaining, rate and ETA,
and what the sweep is waiting for (e.g. workers)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


class Progress:
    """Redraws one line on a terminal; prints a line every `interval` seconds otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None, interval: float = 10.0,
                 width: int = 24):
        self.total, self.width, self.interval = total, width, interval
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = self.failed = self.unreliable = 0
        self.start = time.monotonic()
        self._last = 0.0
        self._drawn = False
        self.waiting: str | None = None   # shown at the end of the line while set

    def line(self) -> str:
        n, total = self.done, self.total
        filled = int(self.width * n / total) if total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.monotonic() - self.start
        text = (f"[{bar}] {n}/{total} done, {self.failed} failed, "
                + (f"{self.unreliable} unreliable, " if self.unreliable else "")
                + f"{total - n} to run, {duration(elapsed)} elapsed")
        if 0 < n < total and self.waiting is None:
            text += f", ETA {duration(elapsed / n * (total - n))}"
        if self.waiting is not None:
            text += f"; {self.waiting}"
        return text

    def tick(self, waiting: str | None = None) -> None:
        """While no job finishes: keep the elapsed time current (a terminal, every second)
        and show `waiting` (without a terminal: a line when it appears or goes, and every
        `interval` seconds while it stays)."""
        changed = (waiting is None) != (self.waiting is None)
        self.waiting = waiting
        now = time.monotonic()
        if self.tty:
            if changed or now - self._last >= 1.0:
                self.update(force=True)
        elif changed or (waiting is not None and now - self._last >= self.interval):
            self.update(force=True)

    def update(self, status: str | None = None, force: bool = False) -> None:
        if status is not None:
            self.done += 1
            if status == "unreliable":
                self.unreliable += 1
            elif status != "ok":
                self.failed += 1
        now = time.monotonic()
        if self.tty:
            if force or now - self._last >= 0.1 or self.done == self.total:
                self.stream.write("\r" + self.line() + "\x1b[K")
                self.stream.flush()
                self._last, self._drawn = now, True
        elif force or now - self._last >= self.interval or self.done == self.total:
            print(self.line(), file=self.stream, flush=True)
            self._last = now

    def note(self, message: str) -> None:
        """A message on its own line (not overwritten by the bar)."""
        if self.tty and self._drawn:
            self.stream.write("\r\x1b[K")
        print(message, file=self.stream, flush=True)
        if self.tty and self._drawn:
            self.update(force=True)

    def close(self) -> None:
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
