"""The embedded result store: one SQLite file (standard library ``sqlite3``).

- WAL journal, ``synchronous=FULL``: every write is its own committed transaction, synced
  before the call returns, so a crash (even ``kill -9`` or a power cut) keeps every
  measurement already written. Readers (a report) never block the writer (a run).
- Documents are JSON in a ``doc`` column beside the key columns, the same shape the
  Firestore adapter stores: a field added to the model later needs no migration.
- ``schema_version`` records each migration applied; opening a file applies the missing
  ones in one transaction, and refuses a file written by a newer gatebench.
- One connection per store object, guarded by a lock, so the runner's threads can share it.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from gatebench.core.errors import GatebenchError, StoreError
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.store._common import (
    BaseStore,
    check_measurement,
    check_result,
    check_run_id,
    check_scores,
    no_such_run,
)
from gatebench.store._disk import FULL_BELOW_BYTES, free_bytes, no_space

Migration = tuple[int, str, tuple[str, ...]]
"""(version, what it does, statements)."""

MIGRATIONS: tuple[Migration, ...] = (
    (
        1,
        "runs, measurements and scores as JSON documents",
        (
            """CREATE TABLE runs (
                run_id TEXT PRIMARY KEY,
                created_at REAL NOT NULL,
                status TEXT NOT NULL,
                doc TEXT NOT NULL
            )""",
            "CREATE INDEX runs_newest_first ON runs (created_at DESC, run_id DESC)",
            """CREATE TABLE measurements (
                run_id TEXT NOT NULL REFERENCES runs (run_id),
                target TEXT NOT NULL,
                workload TEXT NOT NULL,
                repetition INTEGER NOT NULL,
                doc TEXT NOT NULL,
                PRIMARY KEY (run_id, target, workload, repetition)
            )""",
            """CREATE TABLE scores (
                run_id TEXT NOT NULL REFERENCES runs (run_id),
                target TEXT NOT NULL,
                doc TEXT NOT NULL,
                PRIMARY KEY (run_id, target)
            )""",
        ),
    ),
    (
        2,
        "results of other kinds of run (scale points, changes under load)",
        (
            """CREATE TABLE results (
                run_id TEXT NOT NULL REFERENCES runs (run_id),
                kind TEXT NOT NULL,
                key TEXT NOT NULL,
                doc TEXT NOT NULL,
                PRIMARY KEY (run_id, kind, key)
            )""",
        ),
    ),
    (
        3,
        "a capacity run's result is one of its results (it was a field of the run)",
        (
            """INSERT OR IGNORE INTO results (run_id, kind, key, doc)
                SELECT run_id, 'capacity', 'result', json_extract(doc, '$.capacity') FROM runs
                WHERE json_type(doc, '$.capacity') = 'object'""",
            # the kind stays known to a record that said it only by holding the result
            """UPDATE runs SET doc = json_set(json_remove(doc, '$.capacity'), '$.kind', 'capacity')
                WHERE json_type(doc, '$.capacity') = 'object'""",
            "UPDATE runs SET doc = json_remove(doc, '$.capacity') WHERE json_type(doc, '$.capacity') = 'null'",
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the schema to the last of ``migrations``; returns the version it is at.

    Runs in one ``BEGIN IMMEDIATE`` transaction, so two processes opening a new file at
    once apply each migration once.
    """
    latest = migrations[-1][0] if migrations else 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version INTEGER PRIMARY KEY, applied_at REAL NOT NULL, description TEXT NOT NULL)"
        )
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        current = int(row[0] or 0)
        if current > latest:
            raise StoreError(
                f"schema version {current} was written by a newer gatebench "
                f"(this one knows up to {latest}); upgrade gatebench to read it"
            )
        for version, description, statements in migrations:
            if version <= current:
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version (version, applied_at, description) VALUES (?, ?, ?)",
                (version, time.time(), description),
            )
            current = version
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return current


class SqliteStore(BaseStore):
    """The result store in one SQLite file (created with its folder on first use)."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    @property
    def location(self) -> str:
        return f"sqlite:{self.path}"

    # -- connection -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot open the result store: ") from None
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise no_space(self.path, f"the result store {self.path}") from None
            raise StoreError(f"{self.path}: cannot open the result store: {exc}") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: cannot use a write-ahead log (journal mode {mode})")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if _code(exc) in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
                raise StoreError(f"{self.path}: not a gatebench result store: {exc}") from None
            raise self._error(exc, "cannot open the result store: ") from None
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _error(self, exc: sqlite3.Error, doing: str = "") -> GatebenchError:
        """A full disk is said as such (gatebench.store._disk); anything else names the file."""
        code = _code(exc)
        if code == sqlite3.SQLITE_FULL or (
            code == sqlite3.SQLITE_IOERR and free_bytes(self.path) < FULL_BELOW_BYTES
        ):
            return no_space(self.path, f"the result store {self.path}")
        return StoreError(f"{self.path}: {doing}{exc}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One committed transaction; nothing is kept when the block raises."""
        with self._lock:
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._error(exc) from None
            try:
                yield conn
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if _code(exc) in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR):
                    raise self._error(exc) from None
                raise
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise self._error(exc, "the write was not committed: ") from None

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            conn = self._connect()
            try:
                return list(conn.execute(sql, params).fetchall())
            except sqlite3.Error as exc:
                raise self._error(exc) from None

    def schema_version(self) -> int:
        row = self._query("SELECT MAX(version) FROM schema_version")
        return int(row[0][0] or 0)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- runs -------------------------------------------------------------------------------

    @staticmethod
    def _load_run(doc: str) -> RunRecord:
        return RunRecord.from_dict(json.loads(doc))

    def _read_run(self, conn: sqlite3.Connection, run_id: str) -> RunRecord | None:
        row = conn.execute("SELECT doc FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return self._load_run(row[0]) if row else None

    def _write_run(self, conn: sqlite3.Connection, run: RunRecord) -> None:
        conn.execute(
            "UPDATE runs SET status = ?, doc = ? WHERE run_id = ?",
            (run.status.value, _dumps(run.to_dict()), run.run_id),
        )

    def create_run(self, run: RunRecord) -> bool:
        check_run_id(run.run_id)
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (run_id, created_at, status, doc) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (run_id) DO NOTHING",
                (run.run_id, run.created_at, RunStatus(run.status).value, _dumps(run.to_dict())),
            )
            return cursor.rowcount == 1

    def get_run(self, run_id: str) -> RunRecord | None:
        rows = self._query("SELECT doc FROM runs WHERE run_id = ?", (run_id,))
        return self._load_run(rows[0][0]) if rows else None

    def _change_run(
        self, run_id: str, what: str, change: Callable[[RunRecord], RunRecord]
    ) -> RunRecord:
        with self._transaction() as conn:
            run = self._read_run(conn, run_id)
            if run is None:
                raise no_such_run(run_id)
            new = change(run)
            self._write_run(conn, new)
            return new

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        rows = self._query(
            "SELECT doc FROM runs ORDER BY created_at DESC, run_id DESC LIMIT ?", (max(0, limit),)
        )
        return [self._load_run(r[0]) for r in rows]

    def unfinished_runs(self) -> list[RunRecord]:
        finished = tuple(s.value for s in RunStatus if s.finished)
        rows = self._query(
            "SELECT doc FROM runs WHERE status NOT IN (?, ?, ?) ORDER BY created_at, run_id",
            finished,
        )
        return [self._load_run(r[0]) for r in rows]

    # -- measurements -----------------------------------------------------------------------

    def put_measurement(self, measurement: Measurement) -> None:
        check_measurement(measurement)
        m = measurement
        with self._transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (m.run_id,)).fetchone() is None:
                raise no_such_run(m.run_id)
            conn.execute(
                "INSERT INTO measurements (run_id, target, workload, repetition, doc) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id, target, workload, repetition) "
                "DO UPDATE SET doc = excluded.doc",
                (m.run_id, m.target, m.workload, m.repetition, _dumps(m.to_dict())),
            )

    def measurements(self, run_id: str) -> list[Measurement]:
        rows = self._query(
            "SELECT doc FROM measurements WHERE run_id = ? ORDER BY target, workload, repetition",
            (run_id,),
        )
        return [Measurement.from_dict(json.loads(r[0])) for r in rows]

    # -- scores -----------------------------------------------------------------------------

    def put_scores(self, run_id: str, scores: Mapping[str, Mapping[str, Any]]) -> None:
        docs = {t: dict(d) for t, d in scores.items()}
        check_scores(run_id, docs)
        with self._transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
                raise no_such_run(run_id)
            conn.execute("DELETE FROM scores WHERE run_id = ?", (run_id,))
            conn.executemany(
                "INSERT INTO scores (run_id, target, doc) VALUES (?, ?, ?)",
                [(run_id, t, _dumps(d)) for t, d in sorted(docs.items())],
            )

    def scores(self, run_id: str) -> dict[str, dict[str, Any]] | None:
        rows = self._query(
            "SELECT target, doc FROM scores WHERE run_id = ? ORDER BY target", (run_id,)
        )
        if not rows:
            return None
        return {str(t): json.loads(d) for t, d in rows}

    # -- results of other kinds of run --------------------------------------------------------

    def put_result(self, run_id: str, kind: str, key: str, doc: Mapping[str, Any]) -> None:
        check_result(run_id, kind, key)
        with self._transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
                raise no_such_run(run_id)
            conn.execute(
                "INSERT INTO results (run_id, kind, key, doc) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (run_id, kind, key) DO UPDATE SET doc = excluded.doc",
                (run_id, kind, key, _dumps(doc)),
            )

    def results(self, run_id: str, kind: str) -> dict[str, dict[str, Any]]:
        rows = self._query(
            "SELECT key, doc FROM results WHERE run_id = ? AND kind = ? ORDER BY key",
            (run_id, kind),
        )
        return {str(k): json.loads(d) for k, d in rows}


def _code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of ``exc`` (its extended code's low byte)."""
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def _dumps(doc: Mapping[str, Any]) -> str:
    try:
        return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store the document: {exc}") from None
