"""No driver exception crosses a port: every apsw error reaches callers as a typed
`HermesMemoryError` (issue 10 §6, style rule 31), on the real SQLite adapters."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from pi_hermes_memory import HermesMemoryError, StorageFailed, StoreReadOnly
from pi_hermes_memory.adapters.sqlite.failures import map_error
from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage


def test_an_unexpected_sql_error_inside_a_transaction_is_a_storage_failure(
    tmp_path: Path,
) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        with pytest.raises(StorageFailed) as caught, storage.transaction():
            storage.connection.execute("SELECT * FROM no_such_table")
        assert not isinstance(caught.value, apsw.Error)
        assert "SQLError" in str(caught.value)
        with pytest.raises(StorageFailed), storage.read() as conn:
            conn.execute("INSERT INTO no_such_table VALUES (1)")
    finally:
        storage.close()


def test_a_session_index_that_cannot_be_opened_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "sessions.db").mkdir()  # a folder where the database file should be
    index = SqliteSessionIndex(tmp_path / "sessions.db")
    with pytest.raises(HermesMemoryError) as caught:
        index.files()
    assert not isinstance(caught.value, apsw.Error)


def test_a_session_index_sql_failure_is_a_typed_error(tmp_path: Path) -> None:
    index = SqliteSessionIndex(tmp_path / "sessions.db")
    try:
        index.files()  # creates the schema
        with pytest.raises(StorageFailed), index._write() as conn:
            conn.execute("INSERT INTO session_files (no_such_column) VALUES (1)")
    finally:
        index.close()


@pytest.mark.parametrize(
    "error",
    [apsw.SQLError("x"), apsw.ConstraintError("x"), apsw.InterruptError("x"), apsw.Error("x")],
    ids=lambda e: type(e).__name__,
)
def test_map_error_is_total(tmp_path: Path, error: apsw.Error) -> None:
    mapped = map_error(error, tmp_path / "sessions.db")
    assert isinstance(mapped, StorageFailed) and not isinstance(mapped, apsw.Error)


def test_a_read_only_database_maps_to_store_read_only(tmp_path: Path) -> None:
    mapped = map_error(apsw.ReadOnlyError("attempt to write"), tmp_path / "sessions.db")
    assert isinstance(mapped, StoreReadOnly)
