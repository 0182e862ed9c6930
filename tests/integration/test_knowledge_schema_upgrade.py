"""A knowledge index written before chunks were scanned (schema 1) may hold secrets verbatim:
opening it drops it whole, vacuums the file and truncates the WAL (ADR 0063)."""

from __future__ import annotations

from pathlib import Path

import apsw
from pi_hermes_memory.adapters.sqlite.knowledge import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    SqliteKnowledgeIndex,
)

from tests.support.secret_documents import secrets

_SCHEMA_1 = (
    "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, root TEXT NOT NULL,"
    " rel TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
    " sha256 TEXT NOT NULL);"
    "CREATE TABLE chunks (id INTEGER PRIMARY KEY, file INTEGER NOT NULL REFERENCES files (id)"
    " ON DELETE CASCADE, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, heading TEXT,"
    " text TEXT NOT NULL, grams TEXT NOT NULL, model TEXT, vector BLOB);"
    "CREATE VIRTUAL TABLE chunks_fts USING fts5 (text, grams, content='chunks',"
    " content_rowid='id', tokenize='unicode61 remove_diacritics 2');"
    "CREATE TRIGGER chunks_deleted AFTER DELETE ON chunks BEGIN"
    " INSERT INTO chunks_fts (chunks_fts, rowid, text, grams)"
    " VALUES ('delete', old.id, old.text, old.grams); END;"
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
)


def test_a_schema_1_index_is_dropped_whole(tmp_path: Path) -> None:
    token = secrets("upgrade").github
    path = tmp_path / "knowledge.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode=WAL")
    with conn:
        conn.execute(_SCHEMA_1)
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}; PRAGMA user_version=1")
        conn.execute("INSERT INTO files VALUES (1, '/d/a.md', '/d', 'a.md', 1, 1, 'x')")
        conn.execute(
            "INSERT INTO chunks (file, start_line, end_line, text, grams) VALUES (1, 1, 1, ?, '')",
            (f"token {token}",),
        )
        conn.execute(
            "INSERT INTO chunks_fts (rowid, text, grams) SELECT id, text, grams FROM chunks"
        )
    conn.close()
    assert token.encode() in path.read_bytes()
    index = SqliteKnowledgeIndex(path)
    try:
        assert index.known() == {}
        assert index.counts(None)["chunks"] == 0
        on_disk = b"".join(p.read_bytes() for p in tmp_path.glob("knowledge.db*") if p.is_file())
        assert token.encode() not in on_disk
        version = apsw.Connection(str(path)).execute("PRAGMA user_version").get
        assert version == SCHEMA_VERSION == 2
    finally:
        index.close()
