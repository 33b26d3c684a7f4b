"""Results store: SQLite, written only by the client, one transaction per finished job.

Plain data only (numbers, text, JSON), so opening a store from elsewhere runs no code.
Tables:
  jobs(job_id PRIMARY KEY, sweep, problem, method, budget, replicate, status, reason,
       log_z, cpu_seconds, abs_log_error, mape_percent, mae, finished_at, record JSON,
       setup_cpu_seconds)  -- the set-up (Method.prepare) CPU time, apart from cpu_seconds;
                              added to older stores when they are opened
  problems(name PRIMARY KEY, summary JSON)     -- Problem.summary(), truth arrays included
  metadata(key PRIMARY KEY, value JSON)        -- environment facts, sweep file text, ...;
                                               tune_reference:<problem name>: the exact log Z
                                               surface, optimum and posterior of a tuning
                                               sweep's problem (harness.sweep.references)
  job_log(seq, job_id, status, finished_at, stored_at)  -- every add_record, append-only
                                               (an audit trail: which job was stored when)
  parts(job_id, part, record JSON, stored_at)  -- each finished part of a job split into parts
                                               (harness.split), committed as it arrives; the
                                               job's record is stored once all are here
A record is the dict of harness.runner.run_one plus the job's identity fields; a tuning job's
record (kind "tune", harness.tuning.job) fills the same columns: log_z is the chosen point's
log Ẑ, cpu_seconds the CPU time of the whole tuning.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


def _json(value: Any) -> str:
    return json.dumps(value, allow_nan=False, default=str)


class ResultStore:
    """A results database; safe to reopen and to read while a sweep writes (WAL)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}
        for column in _ADDED_COLUMNS:
            if column not in columns:
                self._db.execute(f"ALTER TABLE jobs ADD COLUMN {column} REAL")
        self._db.commit()

    def close(self) -> None:
        self._db.close()

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
        with self._db:
            self._db.execute(f"INSERT OR REPLACE INTO jobs ({', '.join(_COLUMNS)}) VALUES "
                             f"({', '.join('?' * len(_COLUMNS))})", row)
            self._db.execute(
                "INSERT INTO job_log (job_id, status, finished_at, stored_at) VALUES (?,?,?,?)",
                (record["job_id"], record["status"], row[13], datetime.now(UTC).isoformat()))

    def job_ids(self, statuses: Iterable[str] | None = None) -> set[str]:
        if statuses is None:
            rows = self._db.execute("SELECT job_id FROM jobs")
        else:
            statuses = list(statuses)
            marks = ",".join("?" * len(statuses))
            rows = self._db.execute(f"SELECT job_id FROM jobs WHERE status IN ({marks})",
                                    statuses)
        return {r[0] for r in rows}

    def job_log(self) -> list[dict[str, Any]]:
        """Every add_record so far, oldest first: seq, job_id, status, finished_at, stored_at."""
        cols = ("seq", "job_id", "status", "finished_at", "stored_at")
        return [dict(zip(cols, r, strict=True)) for r in
                self._db.execute(f"SELECT {', '.join(cols)} FROM job_log ORDER BY seq")]

    def status_counts(self, job_ids: Iterable[str] | None = None) -> dict[str, int]:
        """Number of stored jobs by status (of the given job ids only, if given)."""
        if job_ids is None:
            rows = self._db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status")
            return dict(rows.fetchall())
        wanted = set(job_ids)
        counts: dict[str, int] = {}
        for job_id, status in self._db.execute("SELECT job_id, status FROM jobs"):
            if job_id in wanted:
                counts[status] = counts.get(status, 0) + 1
        return counts

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in
                self._db.execute("SELECT record FROM jobs ORDER BY problem, method, budget")]

    # ---- parts of split jobs (harness.split) --------------------------------------------
    def add_part(self, job_id: str, part: int, record: dict[str, Any]) -> None:
        """Store one finished part of a split job (replacing an earlier one of that index)."""
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO parts VALUES (?, ?, ?, ?)",
                             (job_id, int(part), _json(record), datetime.now(UTC).isoformat()))

    def parts_of(self, job_id: str) -> list[dict[str, Any]]:
        """The stored part records of a job, by part index."""
        return [json.loads(r[0]) for r in self._db.execute(
            "SELECT record FROM parts WHERE job_id = ? ORDER BY part", (job_id,))]

    # ---- problems and metadata ----------------------------------------------------------
    def add_problem(self, summary: dict[str, Any]) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO problems VALUES (?, ?)",
                             (summary["name"], _json(summary)))

    def problems(self) -> dict[str, dict[str, Any]]:
        return {name: json.loads(s) for name, s in
                self._db.execute("SELECT name, summary FROM problems ORDER BY name")}

    def set_metadata(self, key: str, value: Any) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO metadata VALUES (?, ?)", (key, _json(value)))

    def metadata(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM metadata")}
