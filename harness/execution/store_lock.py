"""The writer's lock of a results store: one sweep client writes a store at a time.

A second client on the same store would run every job the first has not stored yet (both
plan from the same store), so a writer (`harness.execution.store.ResultStore` opened for writing,
i.e. a sweep client) holds an exclusive POSIX record lock (`fcntl.lockf`) on a side file
`<store>-lock` for as long as the store is open, and a second writer is refused with one line
naming the holder. The file holds who that is, as JSON: pid, host, since (UTC), command.

- Readers (report, export, `sweep --check`, `harness.load_results`) never touch the lock:
  SQLite's write-ahead log lets them read beside the writer.
- A dead holder holds nothing: the kernel releases a process's record locks when it ends,
  however it ends (SIGKILL, a crash, a lost machine for NFS's lock manager). The next writer
  takes the lock over and says whose it was (the JSON the dead holder left).
- A holder that closes the store normally removes the file (while still holding the lock);
  the next writer checks that the file it locked is still the one at the path, so a file
  removed under it is never locked twice.
- POSIX locks belong to the process (and closing any descriptor of the file drops them), so
  within one process the lock is shared with a count: a second writer in the same process
  reuses it, and the last one to close releases it. Child processes (Dask workers) do not
  inherit it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.core.errors import InputError


class StoreBusy(InputError):
    """Another process is writing the store (exit code 2, one line naming it)."""

    def __init__(self, store: Path, holder: dict[str, Any]):
        super().__init__("store", f"{store} is being written by another sweep ({describe(holder)})",
                         "wait for it to finish, or give another --store; report, export and "
                         "sweep --check can read it meanwhile")
        self.holder = holder


def lock_path(store: str | Path) -> Path:
    return Path(f"{store}-lock")


def describe(holder: dict[str, Any]) -> str:
    """'pid 4242 on node1 since 2026-12-01 00:10:03 UTC: python -m harness sweep ...'."""
    if not holder:
        return "a process that has not written its name yet"
    since = str(holder.get("since", "?")).replace("T", " ")[:19]
    text = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since {since} UTC"
    return text + (f": {holder['command']}" if holder.get("command") else "")


@dataclass
class _Held:
    fd: int
    count: int
    previous: dict[str, Any]


_HELD: dict[str, _Held] = {}


def _read(fd: int) -> dict[str, Any]:
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
        value = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


class StoreLock:
    """The exclusive writer's lock of `store` (see the module docstring); raises StoreBusy.

    `previous`: what a holder that died left in the file (empty if the lock was free).
    """

    def __init__(self, store: str | Path):
        self.store = Path(store)
        self.path = lock_path(self.store)
        self.key = str(self.path.parent.resolve() / self.path.name)
        self._released = False
        held = _HELD.get(self.key)
        if held is not None:
            held.count += 1
            self.previous = held.previous
            return
        fd = self._acquire()
        self.previous = _read(fd)
        program = "python -m harness" if sys.argv[0].endswith("__main__.py") else \
            f"python {sys.argv[0]}"
        me = {"pid": os.getpid(), "host": socket.gethostname(),
              "since": datetime.now(UTC).isoformat(timespec="seconds"),
              "command": " ".join([program, *sys.argv[1:]])[:300]}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
        except OSError:   # e.g. a full disk: not locked, nothing held (the caller says why)
            os.close(fd)
            raise
        _HELD[self.key] = _Held(fd, 1, self.previous)

    def _acquire(self) -> int:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = _read(fd)
                os.close(fd)
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    raise StoreBusy(self.store, holder) from None
                raise
            try:   # the file we locked may have been removed by the holder that just ended
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        held = _HELD.get(self.key)
        if held is None:
            return
        held.count -= 1
        if held.count > 0:
            return
        del _HELD[self.key]
        try:
            os.unlink(self.path)          # while still locked: nobody can lock this file now
        except OSError:
            pass
        os.close(held.fd)

    def took_over(self) -> str | None:
        """One line if the lock was left by a holder that no longer runs, else None."""
        if not self.previous:
            return None
        return (f"note: took over the store's writer lock from {describe(self.previous)}, "
                f"which no longer holds it")
