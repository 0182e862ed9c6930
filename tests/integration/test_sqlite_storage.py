"""The SQLite adapter on a real file: schema, foreign files, transactions, FTS projection."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from pi_hermes_memory.adapters.sqlite.schema import APPLICATION_ID, SCHEMA_VERSION
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.errors import DatabaseDamaged, ForeignDatabaseError
from pi_hermes_memory.testing.contracts import STREAM, added


def _raw(path: Path) -> apsw.Connection:
    return apsw.Connection(str(path))


def test_new_file_is_marked_ours_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    SqliteStorage(db).close()
    conn = _raw(db)
    assert conn.execute("PRAGMA application_id").get == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").get == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").get == "wal"
    assert conn.execute("PRAGMA integrity_check").get == "ok"
    conn.close()


def test_reopen_keeps_data(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    s = SqliteStorage(db)
    with s.transaction() as uow:
        uow.journal.append(STREAM, 0, [added(1, "a")])
    s.close()
    s = SqliteStorage(db)
    with s.transaction() as uow:
        assert uow.journal.version(STREAM) == 1
    s.close()


def test_foreign_sessions_db_is_refused_and_untouched(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    conn = _raw(db)
    conn.execute(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT);"
        "INSERT INTO sessions VALUES ('s1', '/x')"
    )
    conn.close()
    before = db.read_bytes()
    with pytest.raises(ForeignDatabaseError, match="not a pi-hermes-memory database"):
        SqliteStorage(db)
    assert db.read_bytes() == before
    conn = _raw(db)
    assert conn.execute("PRAGMA journal_mode").get == "delete"  # not even switched to WAL
    conn.close()


def test_other_application_id_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    conn = _raw(db)
    conn.execute("PRAGMA application_id=1234")
    conn.close()
    with pytest.raises(ForeignDatabaseError, match="another application"):
        SqliteStorage(db)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    SqliteStorage(db).close()
    conn = _raw(db)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(ForeignDatabaseError, match="newer"):
        SqliteStorage(db)


def test_not_a_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    db.write_bytes(b"this is a text file, not SQLite\n" * 100)
    with pytest.raises(DatabaseDamaged, match="recover") as caught:  # typed, ADR 0023
        SqliteStorage(db)
    assert isinstance(caught.value.__cause__, apsw.NotADBError)
    assert db.read_bytes().startswith(b"this is a text file")


def test_write_transactions_begin_immediate(tmp_path: Path) -> None:
    s = SqliteStorage(tmp_path / "sessions.db")
    seen: list[str] = []

    def tracer(cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
        if sql.strip().upper().startswith("BEGIN"):
            seen.append(sql.strip().upper())
        return True

    s.connection.exec_trace = tracer
    with s.transaction() as uow:
        uow.journal.append(STREAM, 0, [added(1, "a")])
    s.close()
    assert seen and all(stmt.startswith("BEGIN IMMEDIATE") for stmt in seen)


def test_fts_projection_follows_active_rows(tmp_path: Path) -> None:
    s = SqliteStorage(tmp_path / "sessions.db")
    events = [added(1, "a", "pytest runs the 项目构建 checks"), added(2, "b", "deploy on fridays")]
    with s.transaction() as uow:
        uow.journal.append(STREAM, 0, events)
        uow.projection.apply(events)
    conn = s.connection

    def match(q: str) -> list[str]:
        return [
            r[0]
            for r in conn.execute(
                "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
                "WHERE memories_fts MATCH ? ORDER BY m.id",
                (q,),
            )
        ]

    assert match("pytest") == ["a"]
    assert match('grams:"构建"') == ["a"]
    assert match("fridays") == ["b"]
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")
    s.close()
