"""Keeps the tests out of the checkout and the user's home (tests/conftest.py applies it).

Commands write where they run: `sweep` notes its store in results/.last-store, the default
stores are results/<name>.sqlite and the reports reports/<name>/, all relative to the working
folder. So every test runs in a folder of its own (`<tmp_path>/cwd`), the session's fixtures in
one of the session's, with HOME and the XDG folders in a temporary folder, and two checks keep
it so:

- GUARD, an audit hook (sys.addaudithook) in every test process, refuses with PermissionError a
  write into the checkout or into the real home (a file opened for writing, a folder made, a
  file renamed, removed or copied there, an SQLite database opened there) outside their caches
  (CACHES), and records it: the test in which it happened fails, even when the code swallows
  the error (as `remember_store` does). Subprocesses start in the test's folder; what they
  write is for the second check.
- `watched` and `changes`: the controller compares the checkout's result paths (RESULT_FOLDERS,
  the stores and the new entries at its top) at the end of the session with the start. A change
  traced to this session (a file naming its temporary folder, as results/.last-store names the
  store a sweep wrote) fails it; other changes, which other processes working in the checkout
  at the same time may make, are listed as a warning.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]          # the checkout
REAL_HOME = Path(os.path.expanduser("~")).resolve()  # before any test moves HOME
# folders a test may write into wherever they are: caches of Python, numba, pytest, ruff,
# hypothesis (its examples database stays where pytest started), and ~/.cache (pip, matplotlib)
CACHES = frozenset({"__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache",
                    ".mypy_cache", ".cache"})
RESULT_FOLDERS = ("results", "reports")
STORE_SUFFIXES = (".sqlite", ".db", ".sqlite-wal", ".sqlite-shm", ".sqlite-journal",
                  ".db-wal", ".db-shm", ".db-journal")
TEXT_LIMIT = 8 * 2**20     # files read whole to find the session's folder in them
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# audit event -> positions of the paths it writes (sys.audit events of CPython 3.11)
WRITES = {"os.mkdir": (0,), "os.remove": (0,), "os.rmdir": (0,), "os.truncate": (0,),
          "os.rename": (0, 1), "os.symlink": (1,), "os.link": (1,), "os.chmod": (0,),
          "os.utime": (0,), "shutil.copyfile": (1,), "shutil.copytree": (1,),
          "shutil.rmtree": (0,)}


def home_environment(home: Path) -> dict[str, str]:
    """HOME and the XDG folders of a temporary home (no library keeps its files in the user's
    home then)."""
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state")}


def _is_dir(path) -> bool:
    try:
        return os.path.isdir(path)
    except (TypeError, ValueError):
        return False


def _exists(path) -> bool:
    try:
        return os.path.lexists(path)
    except (TypeError, ValueError):
        return True


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class Guard:
    """The audit hook (module doc): `arm` it with the folders a test may write into even when
    they lie in a protected one (the session's temporary folders); `take` returns and forgets
    what it refused."""

    def __init__(self, checkout: Path = ROOT, home: Path = REAL_HOME):
        # a folder holding the temporary folder (a home of /) is not protected
        tmp = os.path.realpath(tempfile.gettempdir())
        self.protected = [(str(path), where) for path, where in ((checkout, "the checkout"),
                                                                 (home, "the home"))
                          if not _inside(tmp, str(path))]
        self.allowed: list[str] = []
        self.armed = False
        self.refused: list[str] = []

    def arm(self, allowed=()) -> None:
        self.allowed = [os.path.realpath(a) for a in allowed]
        self.armed = True

    def disarm(self) -> None:
        self.armed = False

    def take(self) -> list[str]:
        refused, self.refused = self.refused, []
        return refused

    def refusal(self, path) -> str | None:
        """Why writing `path` is refused ("the checkout", "the home"), or None."""
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:     # a file descriptor
            return None
        full = os.path.realpath(os.path.join(os.getcwd(), text))
        if any(_inside(full, a) for a in self.allowed):
            return None
        for root, where in self.protected:
            if _inside(full, root) and not CACHES.intersection(full[len(root):].split(os.sep)):
                return where
        return None

    def written(self, event: str, args: tuple) -> list:
        """The paths an audited event writes (none for a read)."""
        if event == "open":
            path, mode, flags = args
            if isinstance(mode, str):
                return [path] if any(c in mode for c in "wax+") else []
            return [path] if isinstance(flags, int) and flags & WRITE_FLAGS else []
        if event == "sqlite3.connect":
            database = os.fsdecode(args[0]) if isinstance(args[0], str | bytes | os.PathLike) \
                else ""
            if database.startswith("file:"):
                database, _, query = database[5:].partition("?")
                if "mode=ro" in query or "mode=memory" in query:
                    return []
            return [] if database in ("", ":memory:") else [database]
        paths = [args[i] for i in WRITES.get(event, ()) if i < len(args)]
        if event == "os.mkdir":   # makedirs(exist_ok=True) of a folder that is there: no write
            return [p for p in paths if not _is_dir(p)]
        if event in ("os.remove", "os.rmdir", "shutil.rmtree"):   # nothing there: no write
            return [p for p in paths if _exists(p)]
        return paths

    def __call__(self, event: str, args: tuple) -> None:
        if not self.armed or (event != "open" and event not in WRITES
                              and event != "sqlite3.connect"):
            return
        for path in self.written(event, args):
            where = self.refusal(path)
            if where:
                what = f"{event} {os.fsdecode(os.fspath(path))!r}"
                self.refused.append(f"{what} (in {where})")
                raise PermissionError(f"a test may not write into {where}: {what} (commands "
                                      "write where they run: tests/helpers/checkout_guard.py)")


GUARD = Guard()
if not getattr(sys, "_checkout_guard_installed", False):   # one hook a process, for good
    sys.addaudithook(GUARD)
    sys._checkout_guard_installed = True


# ---- the session's check of the checkout -----------------------------------------------------
def _stat(path: Path) -> str:
    st = path.lstat()
    return f"{st.st_size} bytes, modified {st.st_mtime_ns}"


def watched(root: Path = ROOT) -> dict[str, str]:
    """The checkout's result paths: every entry under RESULT_FOLDERS (a file by size and time,
    results/.last-store by its text), the stores at the top (STORE_SUFFIXES) by size and time,
    and the top's other entries by name, caches and build records aside."""
    state: dict[str, str] = {}
    for folder in RESULT_FOLDERS:
        for dirpath, dirs, files in os.walk(root / folder):
            for name in dirs:
                state[os.path.relpath(os.path.join(dirpath, name), root)] = "folder"
            for name in files:
                path = Path(dirpath, name)
                key = os.path.relpath(path, root)
                try:
                    state[key] = (path.read_text(errors="replace").strip()
                                  if name == ".last-store" else _stat(path))
                except OSError:
                    state[key] = "unreadable"
    for entry in os.scandir(root):
        if entry.name in CACHES or entry.name.endswith(".egg-info"):
            continue
        state[entry.name] = _stat(Path(entry.path)) if entry.name.endswith(STORE_SUFFIXES) \
            else "present"
    return state


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs, one line each: 'new results/x.sqlite', 'changed results/.last-store (now
    /tmp/...)', 'removed reports/quick'."""
    out = []
    for key in sorted(before.keys() | after.keys()):
        if key not in before:
            out.append(f"new {key}")
        elif key not in after:
            out.append(f"removed {key}")
        elif before[key] != after[key]:
            out.append(f"changed {key}" + (f" (now {after[key]})"
                                          if key.endswith(".last-store") else ""))
    return out


def traced_to(change: str, session_folder: Path, root: Path = ROOT) -> bool:
    """Whether a change (a `changes` line) names the session's temporary folder: a new or
    changed file that holds its path (results/.last-store pointing at a store of a test)."""
    kind, _, rest = change.partition(" ")
    if kind == "removed":
        return False
    path = root / rest.split(" (now ")[0]
    try:
        if not path.is_file() or path.stat().st_size > TEXT_LIMIT:
            return False
        return os.fsencode(str(session_folder)) in path.read_bytes()
    except OSError:
        return False

