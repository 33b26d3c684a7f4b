"""Results store: SQLite, written only by the client, one transaction per finished job.

Plain data only (numbers, text, JSON), so opening a store from elsewhere runs no code.
Tables:
  jobs(job_id PRIMARY KEY, sweep, problem, method, budget, replicate, status, reason,
       log_z, cpu_seconds, abs_log_error, mape_percent, mae, finished_at, record JSON,
       setup_cpu_seconds)  -- the set-up (Method.prepare) CPU time, apart from cpu_seconds;
                              added to older stores when they are opened
  problems(name PRIMARY KEY, summary JSON)     -- Problem.summary(), truth arrays included
  metadata(key PRIMARY KEY, value JSON)        -- environment facts, sweep file text, the exact
                                  surfaces of tuning problems (harness.sweep.tune_exact), ...
  job_log(seq, job_id, status, finished_at, stored_at)  -- every add_record, append-only
  references(problem PRIMARY KEY, fingerprint, created_at, record JSON)
                                  -- reference values of problems without exact truth
                                     (harness.references.compute, `reference --store`)
  parts(job_id, part, record JSON, stored_at)  -- each finished part of a job split into parts
                                  (harness.execution.parts); the job's record once all are here
Every table above also has a last column `checksum` (see Integrity below).
A record is run_one's dict (harness.execution.runner) plus the job's identity; a tuning job's
(harness.tuning.job) has log_z the chosen point's log Ẑ, cpu_seconds the whole tuning's.

Faults (the design: docs/design.md "Storage and resume"):
- Integrity: every open checks the file first (`damage`) and refuses a damaged one with
  `StoreDamaged` (exit 2, one line), before anything is read or written: the file
  (`store_file`: a symlink resolved; a folder, FIFO or device refused), its write-ahead log's
  header, `PRAGMA integrity_check`, the schema as `_build` declares it (no trigger, no view)
  and every row of the harness's tables (`_SEALED`), each written with a `checksum` column:
  the SHA-256 (32 hex digits) of the canonical JSON of its values as stored (`checksum`),
  whose JSON columns must parse to the type the readers expect (`_parse`), checksum or not
  (cost: docs/studies.md, "Store integrity check"). A store made before checksums is checked
  by parsing alone and sealed by its first writer, changing no value. A new store is built
  under a temporary name and renamed into place.
- A write that fails (`StoreWriteFailed`, exit 2, one line): a full disk (SQLITE_FULL, ENOSPC;
  or an I/O error with less than FULL_BELOW bytes left) or a disk or file that refuses it
  (SQLITE_IOERR, SQLITE_READONLY). The transaction is rolled back; the records that could not
  be written wait in a side file (`hold`, `<store>-held.jsonl`) that the next writer imports
  first (`import_held`).
- One writer: opening for writing takes the store's writer lock (harness.execution.store_lock);
  `ResultStore(path, read_only=True)` reads beside a writer, takes no lock and writes nothing.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import struct
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from harness.core.errors import InputError
from harness.execution.store_lock import StoreLock

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    sweep TEXT,
    problem TEXT NOT NULL,
    method TEXT NOT NULL,
    budget INTEGER NOT NULL,
    replicate INTEGER,
    status TEXT NOT NULL,
    reason TEXT,
    log_z REAL,
    cpu_seconds REAL,
    abs_log_error REAL,
    mape_percent REAL,
    mae REAL,
    finished_at TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_problem ON jobs(problem, method, budget);
CREATE TABLE IF NOT EXISTS problems (name TEXT PRIMARY KEY, summary TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS job_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    status TEXT NOT NULL,
    finished_at TEXT,
    stored_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS "references" (
    problem TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS parts (
    job_id TEXT NOT NULL,
    part INTEGER NOT NULL,
    record TEXT NOT NULL,
    stored_at TEXT NOT NULL,
    PRIMARY KEY (job_id, part)
);
"""


_ADDED_COLUMNS = ("setup_cpu_seconds",)   # after the first schema: added by ALTER TABLE
_COLUMNS = ("job_id", "sweep", "problem", "method", "budget", "replicate", "status", "reason",
            "log_z", "cpu_seconds", "abs_log_error", "mape_percent", "mae", "finished_at",
            "record", *_ADDED_COLUMNS)


# the tables (and their columns) a file must have to be read as a results store
_REQUIRED = {"jobs": {"job_id", "status", "record"}, "problems": {"name", "summary"},
             "metadata": {"key", "value"}}
_SQLITE_HEADER = b"SQLite format 3\x00"
_IDENTITY = {"job_id", "problem", "method", "budget", "status"}   # what add_record needs

# Every row the harness writes is sealed with a checksum of its columns (as stored, read back),
# verified at every open: table -> (the columns it covers, in order; the JSON columns and the
# type their value must have: dict, or None for any JSON value).
_SEALED: dict[str, tuple[tuple[str, ...], dict[str, type | None]]] = {
    "jobs": (_COLUMNS, {"record": dict}),
    "problems": (("name", "summary"), {"summary": dict}),
    "metadata": (("key", "value"), {"value": None}),
    "job_log": (("seq", "job_id", "status", "finished_at", "stored_at"), {}),
    "references": (("problem", "fingerprint", "created_at", "record"), {"record": dict}),
    "parts": (("job_id", "part", "record", "stored_at"), {"record": dict}),
}
_CHECKSUM = "checksum"
_OWN_INDEXES = {"jobs_by_problem"}          # besides SQLite's own sqlite_autoindex_*
_WAL_MAGIC = (0x377F0682, 0x377F0683)


def checksum(values: Iterable[Any]) -> str:
    """The checksum of a row: SHA-256 (first 32 hex digits) of the canonical JSON of its
    values as SQLite returns them (so an integer 1 and a real 1.0 differ). TypeError for a
    value no harness column holds (a blob)."""
    text = json.dumps(list(values), ensure_ascii=False, allow_nan=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


_KIND = {dict: "an object", list: "an array", str: "a string", int: "a number",
         float: "a number", bool: "true/false", type(None): "null"}


def _parse(text: Any, want: type | None) -> tuple[Any, str | None]:
    """(value, None) of a stored JSON text, else (None, what is wrong with it)."""
    if not isinstance(text, str):
        return None, f"not text but {type(text).__name__}"
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, f"not JSON ({exc})"
    if want is not None and not isinstance(value, want):
        return None, f"{_KIND.get(type(value), type(value).__name__)} where an object is expected"
    return value, None


def _json(value: Any) -> str:
    return json.dumps(value, allow_nan=False, default=str)


class StoreDamaged(InputError):
    """The file at a store's path is not a sound results store (exit code 2, one line)."""

    def __init__(self, path: Path, why: str, fix: str = ""):
        why = " ".join(why.split(" with text ")[0].split())[:200]   # one short line
        super().__init__("store", f"{path} is damaged or not a results store: {why}", fix or (
            f"restore it from a backup, or start a new store with --store NEW.sqlite; "
            f"`python -m harness export --store {path} --out rows.csv` saves the jobs still "
            f"readable"))
        self.path, self.why = path, why


class StoreWriteFailed(InputError):
    """A write to the store failed: a full disk, or a disk or file that refuses writes
    (exit code 2, one line). `remedy`: what makes the next run work."""

    def __init__(self, path: Path, problem: str, fix: str = "", remedy: str = ""):
        self.remedy = remedy or "free some space"
        super().__init__("store", f"cannot write {path}: {problem}",
                         fix or f"{self.remedy} and run the same command again")
        self.path, self.problem = path, problem


StoreFull = StoreWriteFailed   # its name while a full disk was the only failed write it said

FULL_BELOW = 1 << 20    # bytes: an I/O error with less free than this is a full disk
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_REFUSED_ERRNOS = (errno.EIO, errno.EROFS, errno.EPERM, errno.EACCES, errno.EFBIG)


def write_failure(exc: BaseException, path: Path) -> StoreWriteFailed | None:
    """The StoreWriteFailed that `exc`, raised by a write to the store at `path`, means (None:
    not a failed write, e.g. a bug or a damaged file)."""
    code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    full = (code == sqlite3.SQLITE_FULL if isinstance(exc, sqlite3.Error)
            else isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS)
    refused = (code in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN)
               if isinstance(exc, sqlite3.Error)
               else isinstance(exc, OSError) and exc.errno in _REFUSED_ERRNOS)
    if not (full or refused):
        return None
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    if full or (free is not None and free < FULL_BELOW):
        return StoreWriteFailed(path, f"the disk is full ({exc}; {free} bytes free)"
                                if free is not None else f"the disk is full ({exc})")
    wal = Path(f"{path}-wal")
    return StoreWriteFailed(
        path, f"the disk refused a write ({exc}): an immutable or read-only {path.name} or "
        f"{wal.name}, a read-only or failing disk?",
        remedy=f"make {path.name} and {wal.name} writable again (lsattr, chattr -i; mount)")


@contextmanager
def _disk_writes(path: Path) -> Iterator[None]:
    """A failed write in the block becomes StoreWriteFailed (one line)."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        failed = write_failure(exc, path)
        if failed is None:
            raise
        raise failed from None


def read_only_connection(path: str | Path, ignore_wal: bool = False) -> sqlite3.Connection:
    """A connection that cannot write the store, nor create anything beside it when no writer
    is there (no write-ahead log, or `ignore_wal`: opened as immutable; else read beside the
    writer)."""
    path = Path(path)
    mode = "mode=ro" if Path(f"{path}-wal").exists() and not ignore_wal else "immutable=1"
    return sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, timeout=30.0)


_NOT_A_STORE_FIX = ("give --store the path of a results store file (or a new path), or make the "
                    "link point at one")


def store_file(path: str | Path) -> Path | None:
    """The regular file a store path names (a symlink resolved to its target), or None if
    nothing is there. StoreDamaged (one line) for a dangling or looping symlink and for
    anything that is not a regular file (a folder, a FIFO, a device): never opened."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise StoreDamaged(path, f"it is a symlink to {os.readlink(path)}, which does not "
                               f"exist", _NOT_A_STORE_FIX) from None
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreDamaged(path, "it is a symlink loop", _NOT_A_STORE_FIX) from None
        raise
    if not stat.S_ISREG(mode):
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or
                stat.S_ISBLK(mode) else "not a file")
        raise StoreDamaged(path, f"it is {kind}, not a regular file", _NOT_A_STORE_FIX)
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def damage(path: str | Path) -> str | None:
    """Why the file at `path` is not a sound results store (None: it is one). Read-only.

    Covers what the harness reads: the file (a regular SQLite file, a symlink resolved), its
    write-ahead log's header, `PRAGMA integrity_check`, the schema (the harness's tables with
    their columns as the harness declares them; no trigger or view) and every row of the
    harness's tables (its checksum, and its JSON columns parse to the right type; a row of an
    older store has no checksum, only the second check)."""
    try:
        real = store_file(path)
    except StoreDamaged as exc:
        return exc.why
    if real is None:
        raise FileNotFoundError(errno.ENOENT, "no results store", str(path))
    path = real
    size = path.stat().st_size
    if size == 0:
        return "the file is empty (0 bytes)"
    with open(path, "rb") as f:
        head = f.read(len(_SQLITE_HEADER))
    if head != _SQLITE_HEADER:
        text = all(32 <= b < 127 or b in b"\t\r\n" for b in head)
        kind = "a text file" if text else f"it starts with {head[:12]!r}"
        return f"not an SQLite file ({kind})"
    why = _wal_damage(path) or _check(path)
    if why is not None and Path(f"{path}-wal").exists():
        why = _wal_damage(path) or _check(path)   # a writer may have started meanwhile
    return why


def _wal_damage(path: Path) -> str | None:
    """What is wrong with the header of the store's write-ahead log, if it has one (SQLite
    would silently ignore a log whose header is not its own and then overwrite it)."""
    wal = Path(f"{path}-wal")
    try:
        with open(wal, "rb") as f:
            head = f.read(32)
    except FileNotFoundError:
        return None
    if not head:
        return None
    if len(head) < 32:
        return f"its write-ahead log {wal.name} is cut short ({len(head)} bytes)"
    words = struct.unpack(">8I", head)
    if words[0] not in _WAL_MAGIC or words[1] != 3007000:
        return f"its write-ahead log {wal.name} is not an SQLite log (starts with {head[:8]!r})"
    order = ">" if words[0] & 1 else "<"
    data = struct.unpack(f"{order}6I", head[:24])
    s0 = s1 = 0
    for i in range(0, 6, 2):
        s0 = (s0 + data[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + data[i + 1] + s0) & 0xFFFFFFFF
    if (s0, s1) != words[6:8]:
        return f"the header of its write-ahead log {wal.name} does not match its checksum"
    return None


@cache
def _declared() -> dict[str, dict[str, tuple]]:
    """{table: {column: (type, notnull, default, pk)}} of a store made by this harness."""
    with closing(sqlite3.connect(":memory:")) as db:
        _build(db)
        return {t: {r[1]: tuple(r[2:]) for r in db.execute(f'PRAGMA table_info("{t}")')}
                for t in _SEALED}


def _build(db: sqlite3.Connection) -> None:
    """The harness's tables, columns added later and checksum columns included (an older
    store gets the missing ones the same way, so every store ends with the same schema)."""
    db.executescript(_SCHEMA)
    columns = {row[1] for row in db.execute("PRAGMA table_info(jobs)")}
    for column in _ADDED_COLUMNS:
        if column not in columns:
            db.execute(f"ALTER TABLE jobs ADD COLUMN {column} REAL")
    for table in _SEALED:
        if _CHECKSUM not in {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}:
            db.execute(f'ALTER TABLE "{table}" ADD COLUMN {_CHECKSUM} TEXT')


def _schema_damage(db: sqlite3.Connection) -> str | None:
    for kind, name in db.execute("SELECT type, name FROM sqlite_master "
                                 "WHERE type IN ('trigger', 'view')"):
        return f"it has a {kind} {name!r} the harness did not create"
    for table in _REQUIRED:
        if not db.execute(f'PRAGMA table_info("{table}")').fetchall():
            return f"it has no {table} table"
    for table, declared in _declared().items():
        have = {r[1]: tuple(r[2:]) for r in db.execute(f'PRAGMA table_info("{table}")')}
        if not have:
            continue
        for column, decl in have.items():
            if column not in declared:
                return f"its {table} table has a column {column!r} the harness did not create"
            if decl != declared[column]:
                return f"its {table} table declares {column} as {decl}, not {declared[column]}"
        missing = set(declared) - set(have) - {*_ADDED_COLUMNS, _CHECKSUM}
        if missing:
            return f"its {table} table lacks {', '.join(sorted(missing))}"
        if _CHECKSUM in have and len(have) != len(declared):
            return f"its {table} table has checksums but lacks " \
                   f"{', '.join(sorted(set(declared) - set(have)))}"
    return None


def _matches(values: Iterable[Any], stored: Any) -> bool:
    """Whether a row's values match the checksum stored with them."""
    try:
        return checksum(values) == stored
    except TypeError:     # a value no harness column holds (a blob)
        return False


def _row_damage(db: sqlite3.Connection) -> str | None:
    """The first row of the harness's tables that does not match its checksum or whose JSON
    columns do not parse to the right type (checked even when the checksum matches: a row
    can be written with a checksum computed over text that is not JSON)."""
    for table, (columns, parsed) in _SEALED.items():
        have = {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}
        if not have:
            continue
        sealed = _CHECKSUM in have
        cols = [c for c in columns if c in have]
        at = {c: 1 + i for i, c in enumerate(cols)}
        extra = f", {_CHECKSUM}" if sealed else ""
        for row in db.execute(f'SELECT rowid, {", ".join(cols)}{extra} FROM "{table}"'):
            if sealed and row[-1] is not None and not _matches(row[1:-1], row[-1]):
                return f"row {row[0]} of its {table} table does not match its checksum"
            for column, want in parsed.items():   # a matching checksum vouches for no JSON
                why = _parse(row[at[column]], want)[1]
                if why is not None:
                    return f"the {column} of row {row[0]} of its {table} table is {why}"
    return None


def _check(path: Path) -> str | None:
    try:
        with closing(read_only_connection(path)) as db:
            db.text_factory = lambda b: b.decode("utf-8", "replace")  # its messages quote pages
            found = [r[0] for r in db.execute("PRAGMA integrity_check(3)")]
            if found != ["ok"]:
                return "integrity_check: " + "; ".join(found)
            db.text_factory = str
            return _schema_damage(db) or _row_damage(db)
    except (sqlite3.DatabaseError, ValueError) as exc:   # ValueError: text that is not UTF-8
        return str(exc)


def held_paths(path: str | Path) -> list[Path]:
    """Where records that could not be written wait for the next writer: beside the store,
    else (that disk is full too) in the temporary folder, named after the store's path."""
    path = Path(path)
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return [Path(f"{path}-held.jsonl"),
            Path(tempfile.gettempdir()) / f"gpc-harness-held-{digest}.jsonl"]


def held_records(path: str | Path) -> list[tuple[Path, list[dict[str, Any]]]]:
    """(side file, its records) of every side file of the store's held records (`held_paths`),
    read-only; a line cut short when the disk filled is left out (its job runs again)."""
    found = []
    for held in held_paths(path):
        if not held.is_file():
            continue
        records = []
        for line in held.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and _IDENTITY <= set(record):
                records.append(record)
        found.append((held, records))
    return found


def _create(path: Path) -> None:
    """A new, empty store at `path`, built under a temporary name and renamed into place
    only once complete: the tables are committed through a rollback journal (in the file,
    or the commit fails), then the file is switched to write-ahead logging, and it must then
    stand alone (no log left beside it) and pass `damage`. On any failure nothing is
    renamed and the temporary file and its journal, log and shared memory are removed."""
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}")
    leftovers = [tmp, *(Path(f"{tmp}{s}") for s in ("-journal", "-wal", "-shm"))]
    try:
        with _disk_writes(path):
            with closing(sqlite3.connect(tmp)) as db:
                _build(db)
                db.commit()
                mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            # (EIO: write_failure calls it a full disk when the disk is all but full)
            if mode != "wal" or any(f.exists() for f in leftovers[1:]):
                raise OSError(errno.EIO, "the new store could not be completed")
            why = damage(tmp)
            if why is not None:
                raise OSError(errno.EIO, f"the new store came out damaged: {why}")
            os.replace(tmp, path)
    finally:
        for f in leftovers:
            f.unlink(missing_ok=True)


class ResultStore:
    """A results database; safe to reopen and to read while a sweep writes (WAL).

    Opened for writing (the default), it takes the store's writer lock (StoreBusy if another
    process has it), refuses a damaged file (StoreDamaged) and creates a missing one;
    `read_only=True` checks the file and reads it, taking no lock and writing nothing.
    """

    def __init__(self, path: str | Path, read_only: bool = False):
        self.read_only = read_only
        self.lock: StoreLock | None = None
        real = store_file(path)          # a symlink resolved; not a regular file: refused
        self.path = real or Path(path)
        if read_only:
            if real is None:
                raise InputError("store", f"no results store at {self.path}",
                                 "run `python -m harness sweep` first or give --store PATH")
            self._refuse_damaged()
            self._db = read_only_connection(self.path)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _disk_writes(self.path):
            self.lock = StoreLock(self.path)
        try:
            if store_file(self.path) is not None:
                self._refuse_damaged()    # before anything is written
            else:
                _create(self.path)
            with _disk_writes(self.path):
                self._db = sqlite3.connect(self.path, timeout=30.0)
            with self._writing():
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                _build(self._db)
                self._seal_unsealed()
        except BaseException:
            if getattr(self, "_db", None) is not None:
                self._db.close()
            self.lock.release()
            raise

    def _seal(self, table: str, rowid: int | None) -> None:
        """Store the checksum of a row just written, computed from the row as stored."""
        columns = _SEALED[table][0]
        row = self._db.execute(f'SELECT {", ".join(columns)} FROM "{table}" WHERE rowid = ?',
                               (rowid,)).fetchone()
        self._db.execute(f'UPDATE "{table}" SET {_CHECKSUM} = ? WHERE rowid = ?',
                         (checksum(row), rowid))

    def _seal_unsealed(self) -> None:
        """Migration of a store written before checksums (or by an older harness): the rows
        without a checksum, already checked to parse at open, get one."""
        for table, (columns, _) in _SEALED.items():
            rows = self._db.execute(f'SELECT rowid, {", ".join(columns)} FROM "{table}" '
                                    f"WHERE {_CHECKSUM} IS NULL").fetchall()
            self._db.executemany(f'UPDATE "{table}" SET {_CHECKSUM} = ? WHERE rowid = ?',
                                 [(checksum(r[1:]), r[0]) for r in rows])

    def _refuse_damaged(self) -> None:
        why = damage(self.path)
        if why is not None:
            raise StoreDamaged(self.path, why)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One transaction; a failed write becomes StoreWriteFailed (the transaction rolled
        back)."""
        with _disk_writes(self.path), self._db:
            yield

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """The rows of a query; damage found while reading (a page, text that is not UTF-8)
        becomes StoreDamaged."""
        try:
            return self._db.execute(sql, tuple(params)).fetchall()
        except sqlite3.DatabaseError as exc:
            code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
            if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or \
                    "decode" in str(exc).lower():
                raise StoreDamaged(self.path, str(exc)) from None
            raise

    def _loads(self, text: str, want: type | None = dict) -> Any:
        value, why = _parse(text, want)
        if why is not None:
            raise StoreDamaged(self.path, f"a stored value is {why}")
        return value

    def close(self) -> None:
        try:
            self._db.close()
        finally:
            if self.lock is not None:
                self.lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- jobs ---------------------------------------------------------------------------
    def add_record(self, record: dict[str, Any]) -> None:
        """Store one finished job (replacing an earlier record with the same job_id)."""
        row = (
            record["job_id"], record.get("sweep"), record["problem"], record["method"],
            int(record["budget"]), record.get("replicate"), record["status"],
            record.get("reason", ""), record.get("log_marginal_likelihood"),
            record.get("cpu_seconds"), record.get("abs_log_error"), record.get("mape_percent"),
            record.get("mae"), record.get("finished_at") or datetime.now(UTC).isoformat(),
            _json(record), record.get("setup_cpu_seconds"),
        )
        with self._writing():
            cur = self._db.execute(f"INSERT OR REPLACE INTO jobs ({', '.join(_COLUMNS)}) "
                                   f"VALUES ({', '.join('?' * len(_COLUMNS))})", row)
            self._seal("jobs", cur.lastrowid)
            cur = self._db.execute(
                "INSERT INTO job_log (job_id, status, finished_at, stored_at) VALUES (?,?,?,?)",
                (record["job_id"], record["status"], row[13], datetime.now(UTC).isoformat()))
            self._seal("job_log", cur.lastrowid)

    def job_ids(self, statuses: Iterable[str] | None = None) -> set[str]:
        if statuses is None:
            return {r[0] for r in self._rows("SELECT job_id FROM jobs")}
        statuses = list(statuses)
        marks = ",".join("?" * len(statuses))
        return {r[0] for r in self._rows(f"SELECT job_id FROM jobs WHERE status IN ({marks})",
                                         statuses)}

    def job_log(self) -> list[dict[str, Any]]:
        """Every add_record so far, oldest first: seq, job_id, status, finished_at, stored_at."""
        cols = ("seq", "job_id", "status", "finished_at", "stored_at")
        return [dict(zip(cols, r, strict=True)) for r in
                self._rows(f"SELECT {', '.join(cols)} FROM job_log ORDER BY seq")]

    def status_counts(self, job_ids: Iterable[str] | None = None) -> dict[str, int]:
        """Number of stored jobs by status (of the given job ids only, if given)."""
        if job_ids is None:
            return dict(self._rows("SELECT status, COUNT(*) FROM jobs GROUP BY status"))
        counts: dict[str, int] = {}
        for status, _ in self.statuses(job_ids).values():
            counts[status] = counts.get(status, 0) + 1
        return counts

    def statuses(self, job_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """(status, reason) of each stored job of the given ids, by job id."""
        wanted = set(job_ids)
        return {job_id: (status, reason or "") for job_id, status, reason
                in self._rows("SELECT job_id, status, reason FROM jobs") if job_id in wanted}

    def records(self) -> list[dict[str, Any]]:
        return [self._loads(r[0]) for r in
                self._rows("SELECT record FROM jobs ORDER BY problem, method, budget")]

    # ---- records held back by a failed write-------------------------------------------
    def hold(self, records: list[dict[str, Any]]) -> Path | None:
        """Append records that could not be stored to a side file (JSON lines, `held_paths`);
        returns its path, or None if no side file could be written either."""
        text = "".join(_json(r) + "\n" for r in records)
        for path in held_paths(self.path):
            size = path.stat().st_size if path.exists() else None
            try:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                return path
            except OSError:   # no space here either: leave the file as it was, try the next
                try:
                    if size is None:
                        path.unlink()
                    else:
                        os.truncate(path, size)
                except OSError:
                    pass
        return None

    def import_held(self) -> tuple[int, list[Path]]:
        """Store the records a full disk held back (`hold`), then remove their side files;
        returns (records imported, side files read). A record already stored as it is is
        skipped."""
        imported, files = 0, []
        for path, records in held_records(self.path):
            files.append(path)
            for record in records:
                stored = self._rows("SELECT record FROM jobs WHERE job_id = ?",
                                    [record["job_id"]])
                if stored and stored[0][0] == _json(record):
                    continue
                self.add_record(record)
                imported += 1
            path.unlink()
        return imported, files

    # ---- parts of split jobs (harness.execution.parts) -------------------------------------------
    def add_part(self, job_id: str, part: int, record: dict[str, Any]) -> None:
        """Store one finished part of a split job (replacing an earlier one of that index)."""
        with self._writing():
            cur = self._db.execute(
                "INSERT OR REPLACE INTO parts (job_id, part, record, stored_at) VALUES (?,?,?,?)",
                (job_id, int(part), _json(record), datetime.now(UTC).isoformat()))
            self._seal("parts", cur.lastrowid)

    def parts_of(self, job_id: str) -> list[dict[str, Any]]:
        """The stored part records of a job, by part index (none in an older store)."""
        if self.read_only and not self._rows(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'parts'"):
            return []
        return [self._loads(r[0]) for r in self._rows(
            "SELECT record FROM parts WHERE job_id = ? ORDER BY part", (job_id,))]

    # ---- problems and metadata ----------------------------------------------------------
    def add_problem(self, summary: dict[str, Any]) -> None:
        with self._writing():
            cur = self._db.execute("INSERT OR REPLACE INTO problems (name, summary) VALUES (?, ?)",
                                   (summary["name"], _json(summary)))
            self._seal("problems", cur.lastrowid)

    def problems(self) -> dict[str, dict[str, Any]]:
        return {name: self._loads(s) for name, s in
                self._rows("SELECT name, summary FROM problems ORDER BY name")}

    def set_metadata(self, key: str, value: Any) -> None:
        with self._writing():
            cur = self._db.execute("INSERT OR REPLACE INTO metadata (key, value) VALUES (?, ?)",
                                   (key, _json(value)))
            self._seal("metadata", cur.lastrowid)

    def metadata(self) -> dict[str, Any]:
        return {k: self._loads(v, None) for k, v in
                self._rows("SELECT key, value FROM metadata")}

    # ---- reference values (harness.references.compute) -------------------------------------------
    def add_reference(self, record: dict[str, Any]) -> None:
        """Store a problem's reference record (replacing an earlier one of that problem)."""
        with self._writing():
            cur = self._db.execute(
                'INSERT OR REPLACE INTO "references" (problem, fingerprint, created_at, record) '
                "VALUES (?, ?, ?, ?)", (record["problem"], record["fingerprint"],
                                        record["created_at"], _json(record)))
            self._seal("references", cur.lastrowid)

    def references(self) -> dict[str, dict[str, Any]]:
        """{problem name: reference record} of every stored reference (none in a store made
        before the table existed and opened read-only)."""
        if not self._rows("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                          "name = 'references'"):
            return {}
        return {name: self._loads(r) for name, r in
                self._rows('SELECT problem, record FROM "references" ORDER BY problem')}


# ---- salvage: what a damaged store still holds ------------------------------------------
@dataclass
class Salvage:
    """The rows of a damaged store that could still be read (`salvage`)."""

    records: list[dict[str, Any]]
    problems: dict[str, dict[str, Any]]
    metadata: dict[str, Any]
    unreadable: int          # damaged stretches skipped and rows whose text was not JSON


def salvage(path: str | Path) -> Salvage:
    """Every row of the jobs, problems and metadata tables that can still be read, read-only.

    Rows are read one at a time in rowid order; where a read fails (a damaged or missing
    page), the next readable rowid is found by doubling the step and then bisecting back,
    so a damaged stretch of the table costs O(log rowid) reads and the rows on both sides are
    kept. A row is kept only if it matches its checksum (a row without one, from an older
    store: if its JSON parses to the right type). Bounded in time and memory: rowids must
    increase (a damaged page that answers with an earlier rowid ends the table's read), and
    no table yields more rows than the file's pages can hold. `writable_schema` (a setting
    of this connection only) lets SQLite open a file shorter than its header says (a
    truncated store). Raises StoreDamaged if nothing of the file can be read as SQLite.
    """
    path = store_file(path) or Path(path)
    try:
        size = path.stat().st_size
        # a write-ahead log that is not SQLite's: read the file alone (and create no -shm)
        db = read_only_connection(path, ignore_wal=_wal_damage(path) is not None)
        db.execute("PRAGMA writable_schema=ON")
        tables = {r[0] for r in
                  db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        page_size = db.execute("PRAGMA page_size").fetchone()[0] or 4096
    except sqlite3.DatabaseError as exc:
        raise StoreDamaged(path, f"nothing can be read ({exc})",
                           "restore it from a backup, or start a new store with --store") \
            from None
    # a cell of a table's leaf page takes at least 4 bytes of it, plus a 2-byte pointer
    most = max(1, size // page_size + 1) * (page_size // 6 + 1)
    unreadable = 0

    def values(table: str, key: str | None, value: str) -> Iterator[tuple[Any, Any]]:
        nonlocal unreadable
        if table not in tables:
            return
        have = {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}
        columns, parsed = _SEALED[table]
        columns = [c for c in columns if c in have]
        if (key is not None and key not in columns) or value not in columns:
            return
        if _CHECKSUM in have:
            columns.append(_CHECKSUM)
        rows, skipped = _readable_rows(db, table, ", ".join(columns), most)
        unreadable += skipped
        at = {c: i for i, c in enumerate(columns)}
        for row in rows:
            if _CHECKSUM in at and row[-1] is not None and not _matches(row[:-1], row[-1]):
                unreadable += 1
                continue
            parsed_value, why = _parse(row[at[value]], parsed[value])
            if why is not None or (key is not None and not isinstance(row[at[key]], str)):
                unreadable += 1
                continue
            yield (row[at[key]] if key else None), parsed_value

    with closing(db):
        records = [v for _, v in values("jobs", None, "record") if _IDENTITY <= set(v)]
        problems = dict(values("problems", "name", "summary"))
        metadata = dict(values("metadata", "key", "value"))
    return Salvage(records, problems, metadata, unreadable)


def _readable_rows(db: sqlite3.Connection, table: str, columns: str, most: int
                   ) -> tuple[list[tuple], int]:
    """(the readable rows of `table` as (columns...), damaged stretches skipped); at most
    `most` rows and as many damaged stretches, rowids strictly increasing."""
    sql = f'SELECT rowid, {columns} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT 1'
    largest = 2 ** 63 - 1

    def readable(after: int) -> tuple | None | bool:
        try:
            row = db.execute(sql, (after,)).fetchone()
        except (sqlite3.DatabaseError, ValueError):     # ValueError: text not UTF-8
            return False
        if row is not None and not (isinstance(row[0], int) and row[0] > after):
            return False    # a damaged page answering with an earlier rowid: never loop
        return row

    rows: list[tuple] = []
    skipped, after = 0, -(2 ** 63)
    while len(rows) < most and skipped < most:
        row = readable(after)
        if row is None:
            return rows, skipped
        if row is not False:
            rows.append(row[1:])
            after = row[0]
            if after >= largest:
                return rows, skipped
            continue
        skipped += 1
        bad, step = after, 1          # bad: a start that fails; find one that reads
        while readable(min(bad + step, largest)) is False:
            if bad + step >= largest:
                return rows, skipped
            bad, step = bad + step, step * 2
        good = min(bad + step, largest)
        while good - bad > 1:
            mid = (good + bad) // 2
            if readable(mid) is False:
                bad = mid
            else:
                good = mid
        after = good
    return rows, skipped
