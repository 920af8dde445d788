"""SQLite specifics (the shared contract is tests/integration/test_store_contract.py):
journal mode, durability setting, schema versions and migrations; ``open_store`` parsing;
the Firestore adapter's encoding of nested arrays (pure, no server)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from gatebench.core.errors import StoreError
from gatebench.core.model import RunRecord
from gatebench.store import (
    DEFAULT_STORE,
    SCHEMA_VERSION,
    STORE_ENV,
    FirestoreStore,
    SqliteStore,
    open_store,
)
from gatebench.store._firestore import decode, encode
from gatebench.store._sqlite import MIGRATIONS, migrate


def test_a_new_file_gets_wal_full_sync_and_the_latest_schema(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "store.sqlite"
    with SqliteStore(path) as store:
        assert not path.exists()  # nothing happens until first use
        store.create_run(RunRecord("r", "file:///a", "0" * 64))
        assert store.schema_version() == SCHEMA_VERSION
        conn = store._connect()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    rows = (
        sqlite3.connect(path).execute("SELECT version, description FROM schema_version").fetchall()
    )
    assert rows == [
        (1, "runs, measurements and scores as JSON documents"),
        (2, "results of other kinds of run (scale points, changes under load)"),
        (3, "a capacity run's result is one of its results (it was a field of the run)"),
    ]


def test_opening_again_applies_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    SqliteStore(path).create_run(RunRecord("r", "file:///a", "0" * 64))
    with SqliteStore(path) as store:
        assert store.get_run("r") is not None
        assert store.schema_version() == SCHEMA_VERSION
    count = sqlite3.connect(path).execute("SELECT COUNT(*) FROM schema_version").fetchone()[0]
    assert count == len(MIGRATIONS)


def test_migrations_bring_an_older_file_up_to_date(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "s.sqlite", isolation_level=None)
    assert migrate(conn, MIGRATIONS[:1]) == 1
    conn.execute("INSERT INTO runs VALUES ('r', 1.0, 'received', '{}')")
    later = (*MIGRATIONS, (4, "a note column", ("ALTER TABLE runs ADD COLUMN note TEXT",)))
    assert migrate(conn, later) == 4
    assert conn.execute("SELECT run_id, note FROM runs").fetchall() == [("r", None)]
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone() == (0,)
    assert [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")] == [
        1,
        2,
        3,
        4,
    ]


def test_a_capacity_result_written_in_its_run_becomes_one_of_its_results(tmp_path: Path) -> None:
    """Files written before schema 3 kept a capacity run's result in the run's document."""
    path = tmp_path / "s.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, MIGRATIONS[:2]) == 2
    about = {"status": "done", "spec_uri": "s.yaml", "spec_sha256": "0" * 64}
    old = {"run_id": "c", **about, "capacity": {"endpoints": [], "stop": "decided"}}
    fixed = {"run_id": "f", **about, "kind": "fixed", "capacity": None}
    for doc in (old, fixed):
        conn.execute(
            "INSERT INTO runs VALUES (?, 1.0, 'done', ?)", (doc["run_id"], json.dumps(doc))
        )
    conn.close()
    with SqliteStore(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.results("c", "capacity") == {"result": old["capacity"]}
        assert store.results("f", "capacity") == {}
        run = store.get_run("c")
        assert run is not None and run.kind == "capacity"
        fixed_run = store.get_run("f")
        assert fixed_run is not None and fixed_run.kind == "fixed"
    docs = dict(sqlite3.connect(path).execute("SELECT run_id, doc FROM runs").fetchall())
    assert all("capacity" not in json.loads(doc) for doc in docs.values())


def test_a_failing_migration_changes_nothing(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "s.sqlite", isolation_level=None)
    migrate(conn, MIGRATIONS)
    broken = (
        *MIGRATIONS,
        (SCHEMA_VERSION + 1, "broken", ("ALTER TABLE runs ADD COLUMN x TEXT", "NOT SQL")),
    )
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, broken)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    assert "x" not in columns
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION


def test_a_file_from_a_newer_gatebench_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    SqliteStore(path).list_runs()
    sqlite3.connect(path).execute(
        "INSERT INTO schema_version VALUES (99, 0, 'future')"
    ).connection.commit()
    with pytest.raises(StoreError) as exc:
        SqliteStore(path).list_runs()
    assert str(exc.value) == (
        f"schema version 99 was written by a newer gatebench (this one knows up to {SCHEMA_VERSION}); "
        "upgrade gatebench to read it"
    )


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not SQLite\n" * 100)
    with pytest.raises(
        StoreError, match=r"notes\.txt: not a gatebench result store: file is not a database$"
    ):
        SqliteStore(path).list_runs()


# -- open_store ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("results/x.sqlite", "results/x.sqlite"),
        ("sqlite:results/x.sqlite", "results/x.sqlite"),
        ("sqlite://results/x.sqlite", "results/x.sqlite"),
        ("sqlite:///tmp/x.sqlite", "/tmp/x.sqlite"),
        ("/tmp/x.sqlite", "/tmp/x.sqlite"),
    ],
)
def test_open_store_sqlite_locations(location: str, path: str) -> None:
    store = open_store(location)
    assert isinstance(store, SqliteStore)
    assert store.path == Path(path)


def test_open_store_firestore_locations() -> None:
    store = open_store("firestore://my-proj")
    assert isinstance(store, FirestoreStore)
    assert (store.project, store.database) == ("my-proj", "(default)")
    store = open_store("firestore://my-proj/results")
    assert isinstance(store, FirestoreStore)
    assert (store.project, store.database) == ("my-proj", "results")
    assert store._client is None  # no client until first use


def test_open_store_default_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    store = open_store()
    assert isinstance(store, SqliteStore)
    assert store.path == Path(DEFAULT_STORE)
    monkeypatch.setenv(STORE_ENV, "firestore://p/d")
    assert isinstance(open_store(), FirestoreStore)


@pytest.mark.parametrize(
    ("location", "message"),
    [
        (
            "mysql://db/x",
            "store 'mysql://db/x': unknown kind 'mysql'; use a file path, sqlite:PATH or firestore://PROJECT[/DATABASE]",
        ),
        (
            "firestore://",
            "store 'firestore://': expected firestore://PROJECT or firestore://PROJECT/DATABASE",
        ),
        (
            "firestore://a/b/c",
            "store 'firestore://a/b/c': expected firestore://PROJECT or firestore://PROJECT/DATABASE",
        ),
        ("sqlite:", "store 'sqlite:': expected sqlite:PATH"),
    ],
)
def test_open_store_errors(location: str, message: str) -> None:
    with pytest.raises(StoreError) as exc:
        open_store(location)
    assert str(exc.value) == message


# -- Firestore encoding -------------------------------------------------------------------------


def _arrays_in_arrays(value: object, in_array: bool = False) -> bool:
    if isinstance(value, dict):
        return any(_arrays_in_arrays(v) for v in value.values())
    if isinstance(value, list):
        return in_array or any(_arrays_in_arrays(v, True) for v in value)
    return False


@pytest.mark.parametrize(
    "value",
    [
        {"errors": [["timeout", 3], ["409", 1]]},
        {"weights": (("p99", 2.0),), "deep": [[[1], []], {"x": [[2]]}]},
        {"plain": [1, 2, {"a": None}], "n": 1.5, "s": "x"},
    ],
)
def test_encode_removes_arrays_in_arrays_and_decode_restores_them(value: dict[str, object]) -> None:
    encoded = encode(value)
    assert not _arrays_in_arrays(encoded)
    expected = {k: _lists(v) for k, v in value.items()}
    assert decode(encoded) == expected


def _lists(value: object) -> object:
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value
