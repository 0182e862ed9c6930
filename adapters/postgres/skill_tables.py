"""The `SkillTelemetry` port on PostgreSQL (issue 16, ADR 0050): the SQLite adapter's queries
(portable SQL, adapters/sqlite/skill_tables.py) run through a small shim that gives a psycopg
connection the few apsw calls they use: `?` parameters, `.get`, `changes()`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from pi_hermes_memory.adapters.postgres.connection import mapped
from pi_hermes_memory.adapters.postgres.storage import PgStorage
from pi_hermes_memory.adapters.sqlite.skill_tables import SqliteSkillTables


class _Rows:
    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    @property
    def get(self) -> Any:
        """The first column of the first row (apsw's `Cursor.get` for one value)."""
        row = self._cursor.fetchone()
        return None if row is None else row[0]

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor.fetchall() if self._cursor.description else [])


class _Connection:
    """The apsw-style calls of SqliteSkillTables over one psycopg connection. The SQL holds
    no `?` or `%` outside its parameters, so `?` becomes `%s` safely."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self._changes = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Rows:
        cursor = self._conn.execute(sql.replace("?", "%s"), tuple(params))
        self._changes = max(cursor.rowcount, 0)
        return _Rows(cursor)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = [tuple(r) for r in rows]
        self._changes = 0
        if not batch:
            return
        with self._conn.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), batch)
            self._changes = max(cursor.rowcount, 0)

    def changes(self) -> int:
        return self._changes


class PgSkillTables(SqliteSkillTables):
    _BY_AT = ""

    def __init__(self, storage: PgStorage) -> None:
        super().__init__(storage)

    @contextlib.contextmanager
    def _read(self) -> Iterator[Any]:
        with self._guard(), self._storage.read() as conn:
            yield _Connection(conn)

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        with self._guard(), self._storage.writing() as conn:
            yield _Connection(conn)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise mapped(exc, self._storage.where) from exc
