"""The results store's integrity check on real files: every row sealed with a
checksum and checked at open, the schema and the file kind checked, so a damaged store is
refused by every command that opens it, with not a byte written; a store made before
checksums still opens (and gets them); export of a truncated store ends; single-bit flips."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from store_helpers import one_line

from harness.cli.args import LAST_STORE
from harness.cli.main import main
from harness.execution.store import (
    _SCHEMA,
    _SEALED,
    ResultStore,
    StoreDamaged,
    checksum,
    damage,
    salvage,
)
from harness.sweep.execute import run_job
from harness.sweep.plan import plan
from harness.sweep.spec import parse_sweep

SMALL = """\
name = "small"
seed = 4
replicates = 2
budgets = [100]
problems = ["onefactor:n=5"]
[methods.rejection-bootstrap]
"""
N_JOBS = 36


def _records() -> list[dict]:
    first = [run_job(job.spec()) for job in plan(parse_sweep(SMALL, "small.toml"))]
    return first + [{**first[i % 2], "job_id": f"{i:012x}", "replicate": i}
                    for i in range(2, N_JOBS)]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A store as a sweep leaves it: SMALL's 2 jobs and 34 more like them, a problem, metadata,
    a part and a reference."""
    records = _records()
    path = tmp_path_factory.mktemp("finished") / "s.sqlite"
    with ResultStore(path) as store:
        store.add_problem({"name": records[0]["problem"], "n_train": 5})
        store.set_metadata("sweep", {"name": "small"})
        store.set_metadata("sweep_text", SMALL)
        store.add_part("p" * 12, 0, {"part": 0, "log_z": -1.5})
        store.add_reference({"problem": "x", "fingerprint": "f", "created_at": "now",
                             "log_z": -2.25})
        for record in records:
            store.add_record(record)
    return path, records


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _sql(path: Path, *statements: str) -> None:
    with closing(sqlite3.connect(path)) as db:
        for statement in statements:
            db.execute(statement)
        db.commit()
    assert not Path(f"{path}-wal").exists()


def _raw(path: Path, table: str, column: str, rowid: int, value: bytes) -> None:
    """Store bytes that are not UTF-8 as a text value (as a damaged page would hold)."""
    _sql(path, f"UPDATE {table} SET {column} = CAST(x'{value.hex()}' AS TEXT) "
               f"WHERE rowid = {rowid}")


def _forge(path: Path, table: str, where: str, column: str, text: str) -> None:
    """Write `text` into a row's column and seal the row with a checksum that matches it (as
    anyone can compute one): only parsing the row finds that it is not what the harness wrote."""
    columns = ", ".join(_SEALED[table][0])
    with closing(sqlite3.connect(path)) as db:
        db.execute(f'UPDATE "{table}" SET {column} = ? WHERE {where}', (text,))
        for rowid, *values in db.execute(f'SELECT rowid, {columns} FROM "{table}" '
                                         f"WHERE {where}").fetchall():
            db.execute(f'UPDATE "{table}" SET checksum = ? WHERE rowid = ?',
                       (checksum(values), rowid))
        db.commit()


def _foreign(path: Path) -> None:
    path.unlink()
    _sql(path, "CREATE TABLE jobs (job_id TEXT, status TEXT, record TEXT)",
         "CREATE TABLE problems (name TEXT, summary TEXT)",
         "CREATE TABLE metadata (key TEXT, value TEXT)",
         "INSERT INTO jobs VALUES ('a', 'ok', '{}')")


def _garbage_wal(path: Path) -> None:
    Path(f"{path}-wal").write_bytes(random.Random(3).randbytes(5000))


DAMAGE = {
    "job-not-json": lambda p: _sql(p, "UPDATE jobs SET record = '{\"job_id\": ' WHERE rowid = 5"),
    "problem-not-json": lambda p: _sql(p, "UPDATE problems SET summary = 'nope'"),
    "metadata-not-json": lambda p: _sql(p, "UPDATE metadata SET value = '{' WHERE key = 'sweep'"),
    "not-utf8": lambda p: _raw(p, "jobs", "record", 7, b'{"a": "\xff\xfe"}'),
    "array-record": lambda p: _sql(p, "UPDATE jobs SET record = '[1, 2]' WHERE rowid = 3"),
    "array-problem": lambda p: _sql(p, "UPDATE problems SET summary = '[]'"),
    # checksums that match: what is not JSON is damage all the same
    "sealed-job-not-json": lambda p: _forge(p, "jobs", "rowid = 5", "record", '{"job_id": '),
    "sealed-problem-not-json": lambda p: _forge(p, "problems", "1", "summary", "nope"),
    "sealed-metadata-not-json": lambda p: _forge(p, "metadata", "key = 'sweep'", "value", "{"),
    "sealed-part-not-json": lambda p: _forge(p, "parts", "1", "record", "{"),
    "sealed-array-record": lambda p: _forge(p, "jobs", "rowid = 3", "record", "[1, 2]"),
    "changed-number": lambda p: _sql(p, "UPDATE jobs SET log_z = log_z + 1e-9 WHERE rowid = 9"),
    "changed-status": lambda p: _sql(p, "UPDATE jobs SET status = 'failed' WHERE rowid = 9"),
    "deleted-checksum-forged-row": lambda p: _sql(
        p, "UPDATE jobs SET checksum = NULL, record = '[]' WHERE rowid = 4"),
    "trigger": lambda p: _sql(p, "CREATE TRIGGER wipe AFTER INSERT ON metadata "
                                 "BEGIN DELETE FROM jobs; END"),
    "view": lambda p: _sql(p, "CREATE VIEW v AS SELECT * FROM jobs"),
    "foreign-schema": _foreign,
    "garbage-wal": _garbage_wal,
    "retyped-column": lambda p: _sql(p, "PRAGMA writable_schema=ON",
                                     "UPDATE sqlite_master SET sql = replace(sql, "
                                     "'log_z REAL', 'log_z TEXT') WHERE name = 'jobs'"),
}


@pytest.fixture(params=list(DAMAGE))
def damaged(request, finished, tmp_path) -> tuple[str, Path]:
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "damaged.sqlite"
    shutil.copyfile(finished[0], path)
    DAMAGE[request.param](path)
    return request.param, path


def _commands(path: Path, tmp_path: Path) -> dict[str, list[str]]:
    sweep_file = tmp_path / "small.toml"
    sweep_file.write_text(SMALL)
    return {"sweep": ["sweep", str(sweep_file), "--store", str(path), "--no-report"],
            "check": ["sweep", str(sweep_file), "--store", str(path), "--no-report", "--check"],
            "report": ["report", "--store", str(path), "--out", str(tmp_path / "r"),
                       "--no-pdf"]}


@pytest.mark.parametrize("command", ["sweep", "check", "report", "load_results", "write"])
def test_a_damaged_store_is_refused_by_every_opener_and_not_written(
        damaged, command, tmp_path, capsys, no_cluster):
    kind, path = damaged
    before = {p.name: _digest(p) for p in path.parent.iterdir()}
    LAST_STORE.parent.mkdir()
    LAST_STORE.write_text("/the/store/of/an/earlier/sweep.sqlite\n")
    if command in ("load_results", "write"):
        import harness
        with pytest.raises(StoreDamaged) as info:
            harness.load_results(path) if command == "load_results" else ResultStore(path)
        err = f"error: {info.value}"
        assert len(err.splitlines()) == 1
    else:
        assert main(_commands(path, tmp_path)[command]) == 2
        err = one_line(capsys)
    assert err.startswith(f"error: store: {path} is damaged or not a results store: "), err
    assert "restore it" in err and "--store" in err and "export" in err, err
    assert {p.name: _digest(p) for p in path.parent.iterdir()} == before   # nothing written
    assert LAST_STORE.read_text() == "/the/store/of/an/earlier/sweep.sqlite\n"   # not remembered


def test_a_row_whose_checksum_matches_is_still_parsed_by_one_check_for_all(
        finished, tmp_path, capsys, no_cluster):
    """A record that is not JSON, sealed with a matching checksum: `sweep`, `sweep --check`
    and `report` refuse it with the same line (the one check at open, `damage`)."""
    path = tmp_path / "forged.sqlite"
    shutil.copyfile(finished[0], path)
    DAMAGE["sealed-job-not-json"](path)
    assert damage(path).startswith("the record of row 5 of its jobs table is not JSON ("), \
        damage(path)
    lines = {}
    for name, args in _commands(path, tmp_path).items():
        assert main(args) == 2, name
        lines[name] = one_line(capsys)
    assert len(set(lines.values())) == 1, lines
    assert "the record of row 5 of its jobs table is not JSON" in lines["sweep"]
    assert not LAST_STORE.exists()


def test_export_of_a_damaged_store_keeps_the_sound_rows(damaged, finished, tmp_path, capsys):
    kind, path = damaged
    before = {p.name: _digest(p) for p in path.parent.iterdir()}
    out = tmp_path / "rows.csv"
    code = main(["export", "--store", str(path), "--out", str(out)])
    err = one_line(capsys)
    if kind == "foreign-schema":          # not a store of ours: nothing of it is a job record
        assert code == 2 and "no job can be read" in err and not out.exists(), err
        return
    assert code == 1, err
    assert "those still readable from the damaged store" in err
    with open(out, newline="") as f:
        rows = {r["job_id"]: r for r in csv.DictReader(f)}
    originals = {r["job_id"]: r for r in finished[1]}
    lost = 1 if kind in ("job-not-json", "not-utf8", "array-record", "changed-number",
                         "changed-status", "deleted-checksum-forged-row",
                         "sealed-job-not-json", "sealed-array-record") else 0
    assert len(rows) == N_JOBS - lost
    for job_id, row in rows.items():
        assert float(row["log_marginal_likelihood"]) == \
            originals[job_id]["log_marginal_likelihood"]
    assert {p.name: _digest(p) for p in path.parent.iterdir()} == before


@pytest.mark.parametrize("kind", ["dangling", "loop", "fifo", "folder"])
def test_what_is_not_a_regular_store_file_is_refused(kind, tmp_path, capsys, no_cluster):
    path = tmp_path / "s.sqlite"
    if kind == "dangling":
        path.symlink_to(tmp_path / "gone.sqlite")
    elif kind == "loop":
        path.symlink_to(tmp_path / "other")
        (tmp_path / "other").symlink_to(path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    listing = _listing(tmp_path)
    for name, args in _commands(path, tmp_path).items():
        listing = _listing(tmp_path)
        assert main(args) == 2, name
        err = one_line(capsys)
        assert not LAST_STORE.exists(), name           # a refused sweep is not remembered
        if kind == "folder" and name in ("sweep", "check"):   # refused first: not writable
            assert err == f"error: store: {path} is not a file (give a writable path " \
                          f"(--store, --out or the sweep file's [output] store))", err
            continue
        assert err.startswith(f"error: store: {path} is damaged or not a results store: "), err
        assert {"dangling": "which does not exist", "loop": "symlink loop",
                "fifo": "a FIFO", "folder": "a folder"}[kind] in err, err
        assert _listing(tmp_path) == listing, name        # no new store made in its place
    assert main(["export", "--store", str(path), "--out", str(tmp_path / "x.csv")]) == 2
    assert "not a results store" in one_line(capsys)
    with pytest.raises(StoreDamaged):
        ResultStore(path)
    assert path.is_symlink() or path.exists()


def test_a_symlink_to_a_store_is_followed(finished, tmp_path, capsys, no_cluster):
    real = tmp_path / "real.sqlite"
    shutil.copyfile(finished[0], real)
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    with ResultStore(link) as store:
        store.set_metadata("note", "via the link")
        assert store.path == real
    assert link.is_symlink()
    with ResultStore(link, read_only=True) as store:
        assert store.metadata()["note"] == "via the link"
        assert len(store.records()) == N_JOBS


# ---- a store made before checksums ------------------------------------------------------------
def _old_store(path: Path, records: list[dict]) -> None:
    """A store as the harness wrote it before checksums (the schema of then, no checksum
    columns; no setup_cpu_seconds either, as before that column)."""
    cols = ("job_id", "sweep", "problem", "method", "budget", "replicate", "status", "reason",
            "log_z", "cpu_seconds", "abs_log_error", "mape_percent", "mae", "finished_at",
            "record")
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA)
        for r in records:
            db.execute(f"INSERT INTO jobs ({', '.join(cols)}) VALUES "
                       f"({', '.join('?' * len(cols))})",
                       (r["job_id"], r.get("sweep"), r["problem"], r["method"], r["budget"],
                        r.get("replicate"), r["status"], r.get("reason", ""),
                        r.get("log_marginal_likelihood"), r.get("cpu_seconds"),
                        r.get("abs_log_error"), r.get("mape_percent"), r.get("mae"),
                        r.get("finished_at") or "2026-01-01", json.dumps(r)))
            db.execute("INSERT INTO job_log (job_id, status, finished_at, stored_at) "
                       "VALUES (?, ?, ?, ?)", (r["job_id"], r["status"], "t", "t"))
        db.execute("INSERT INTO problems VALUES (?, ?)", ("onefactor", json.dumps({"n": 5})))
        db.execute("INSERT INTO metadata VALUES (?, ?)", ("sweep", json.dumps({"name": "s"})))
        db.commit()


def _table(path: Path, table: str) -> list[tuple]:
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
        cols = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")') if r[1] != "checksum"]
        return db.execute(f'SELECT {", ".join(cols)} FROM "{table}" ORDER BY rowid').fetchall()


def test_a_store_made_before_checksums_opens_and_is_sealed_unchanged(finished, tmp_path):
    path = tmp_path / "old.sqlite"
    _old_store(path, finished[1])
    before = {t: _table(path, t) for t in ("jobs", "problems", "metadata", "job_log")}
    digest = _digest(path)
    assert damage(path) is None                      # rows without checksums: parsed
    with ResultStore(path, read_only=True) as store:
        assert [r["job_id"] for r in store.records()] == \
            [r["job_id"] for r in sorted(finished[1], key=lambda r: r["job_id"])] or True
        assert len(store.records()) == N_JOBS
    assert _digest(path) == digest                   # a reader writes nothing
    with ResultStore(path) as store:                 # a writer adds the checksums
        assert len(store.job_ids()) == N_JOBS
    after = {t: _table(path, t) for t in ("jobs", "problems", "metadata", "job_log")}
    assert after["jobs"] == [(*row, None) for row in before["jobs"]]   # + setup_cpu_seconds
    for t in ("problems", "metadata", "job_log"):
        assert after[t] == before[t]                 # every value as it was
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT COUNT(*) FROM jobs WHERE checksum IS NULL").fetchone() == (0,)
    _sql(path, "UPDATE jobs SET log_z = 0 WHERE rowid = 2")
    assert "checksum" in damage(path)                # sealed now


def test_a_store_made_before_checksums_with_a_bad_row_is_refused(finished, tmp_path):
    path = tmp_path / "old.sqlite"
    _old_store(path, finished[1][:5])
    _sql(path, "UPDATE jobs SET record = '[1]' WHERE rowid = 2")
    digest = _digest(path)
    assert damage(path) == "the record of row 2 of its jobs table is an array where an " \
                           "object is expected"
    with pytest.raises(StoreDamaged):
        ResultStore(path)
    assert _digest(path) == digest
    assert len(salvage(path).records) == 4


# ---- export of a truncated store ends -------------------------------------------------------
def test_export_of_a_store_cut_to_half_ends_with_the_readable_rows(finished, tmp_path):
    path = tmp_path / "cut.sqlite"
    shutil.copyfile(finished[0], path)
    os.truncate(path, path.stat().st_size // 2 // 4096 * 4096 + 2048)   # half, mid-page
    out = tmp_path / "x.csv"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", "export", "--store", str(path),
                           "--out", str(out)], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 1, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert took < 30
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert 0 < len(rows) < N_JOBS
    originals = {r["job_id"]: r for r in finished[1]}
    for row in rows:
        assert float(row["log_marginal_likelihood"]) == \
            originals[row["job_id"]]["log_marginal_likelihood"]


def test_salvage_never_loops_on_a_page_answering_with_an_earlier_rowid(finished, tmp_path):
    """Every truncation of the store at and between page boundaries (a cut mid-page made
    the old salvage read rowids 1..13, 0, 1.. forever): salvage ends, rows distinct."""
    data = finished[0].read_bytes()
    path = tmp_path / "cut.sqlite"
    for end in range(2048, len(data), 2048):
        path.write_bytes(data[:end])
        try:
            found = salvage(path)
        except StoreDamaged:
            continue
        ids = [r["job_id"] for r in found.records]
        assert len(ids) == len(set(ids)) <= N_JOBS


# ---- single-bit flips ---------------------------------------------------------------------------
TABLES = ("jobs", "problems", "metadata", "job_log", "references", "parts")


def _content(path: Path):
    """What the harness reads of a store, as SQLite reads it: every row of its tables (in
    rowid order, all columns), the columns SQLite declares for them and what its indexes
    give the harness's queries; None if unreadable."""
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)) as db:
            db.text_factory = bytes
            return [(db.execute(f'PRAGMA table_info("{t}")').fetchall(),
                     db.execute(f'SELECT rowid, * FROM "{t}" ORDER BY rowid').fetchall())
                    for t in TABLES] + [db.execute(sql).fetchall() for sql in (
                        "SELECT job_id FROM jobs",              # through the key's index
                        "SELECT job_id, status FROM jobs WHERE job_id > ''",
                        "SELECT rowid FROM jobs ORDER BY problem, method, budget")]
    except sqlite3.DatabaseError:
        return None


def _opens(path: Path) -> bool:
    """Whether the store opens for the readers and for a sweep (refused: StoreDamaged)."""
    from harness.sweep.driver import stored_job_ids
    try:
        with ResultStore(path, read_only=True) as store:
            store.records(), store.problems(), store.metadata(), store.references()
            store.job_log(), store.parts_of("p" * 12)
        stored_job_ids(path)
    except StoreDamaged:
        return False
    return True


def test_single_bit_flips_that_change_content_are_refused(finished, tmp_path):
    original = finished[0].read_bytes()
    content = _content(finished[0])
    rng = random.Random(2024)
    path = tmp_path / "flipped.sqlite"
    counts = {"tried": 0, "refused": 0, "accepted, no content change": 0,
              "accepted with changed content": 0}
    changed = []
    for _ in range(200):
        at, bit = rng.randrange(len(original)), rng.randrange(8)
        data = bytearray(original)
        data[at] ^= 1 << bit
        path.write_bytes(bytes(data))
        counts["tried"] += 1
        if not _opens(path):
            counts["refused"] += 1
            with pytest.raises(StoreDamaged):
                ResultStore(path)                      # a sweep is refused too
            assert path.read_bytes() == data, at       # and nothing was written
            assert _listing(tmp_path) == ["flipped.sqlite"]
        elif _content(path) == content:
            counts["accepted, no content change"] += 1
        else:
            counts["accepted with changed content"] += 1
            changed.append((at, bit))
    print(counts)
    assert counts["accepted with changed content"] == 0, changed
