"""Schema of our SQLite file: ordered migration steps under `user_version` (ADR 0003).

The file is marked with `application_id`; a database that is not ours (another program's
`sessions.db`) or newer than this code is refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import cast

import apsw
from pi_hermes_memory.adapters.sqlite.write_index import SCHEMA as WRITE_INDEX_SCHEMA
from pi_hermes_memory.errors import ForeignDatabaseError

APPLICATION_ID = 0x50484D31  # "PHM1"

#: each step is SQL, or a function of the connection where SQL cannot say "only if missing"
MIGRATIONS: tuple[str | Callable[[apsw.Connection], None], ...] = (
    # 1: journal, memory read model with external-content FTS5, Markdown render ledger
    """
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        stream TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version > 0),
        tag TEXT NOT NULL,
        at TEXT NOT NULL,
        data TEXT NOT NULL,
        UNIQUE (stream, version)
    );
    CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        target TEXT NOT NULL CHECK (target IN ('user', 'memory', 'project', 'failure')),
        project TEXT,
        category TEXT,
        namespace TEXT,
        text TEXT NOT NULL,
        grams TEXT NOT NULL DEFAULT '',
        created TEXT NOT NULL,
        last_referenced TEXT NOT NULL,
        superseded_by TEXT,
        superseded_at TEXT,
        -- the vector cache (ADR 0015): the model id comes before the BLOB so that checking
        -- it never reads the BLOB's overflow pages
        embedding_model TEXT,
        embedding BLOB
    );
    CREATE INDEX memories_scope ON memories (target, project, namespace, superseded_by);
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        text, grams,
        content='memories', content_rowid='rowid',
        tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, text, grams) VALUES (new.rowid, new.text, new.grams);
    END;
    CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, text, grams)
        VALUES ('delete', old.rowid, old.text, old.grams);
    END;
    CREATE TRIGGER memories_au AFTER UPDATE OF text, grams ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, text, grams)
        VALUES ('delete', old.rowid, old.text, old.grams);
        INSERT INTO memories_fts (rowid, text, grams) VALUES (new.rowid, new.text, new.grams);
    END;
    CREATE TABLE markdown_ledger (
        stream TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        sha256 TEXT NOT NULL
    );
    """,
    # 2: the session history index (ADR 0020): derived data, rebuilt from the session files
    """
    CREATE TABLE session_files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        device INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        -- the end of the last complete line read, and how many complete lines that is
        read_to INTEGER NOT NULL,
        lines INTEGER NOT NULL,
        -- sha256 of the first head_len (<= 4096) bytes and of the <= 4096 bytes before offset
        head_len INTEGER NOT NULL,
        head_sha TEXT NOT NULL,
        tail_sha TEXT NOT NULL
    );
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        -- NULL for sessions recorded through the API (no JSONL file)
        file INTEGER UNIQUE REFERENCES session_files (id) ON DELETE CASCADE,
        headed INTEGER NOT NULL DEFAULT 0,
        cwd TEXT,
        project TEXT,
        started INTEGER  -- Unix milliseconds
    );
    CREATE INDEX sessions_by_id ON sessions (session_id);
    CREATE INDEX sessions_by_project ON sessions (project);
    CREATE TABLE session_messages (
        rowid INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn INTEGER NOT NULL,  -- ordinal among the session's indexed turns
        line INTEGER NOT NULL,  -- 1-based line in the file (the turn for recorded sessions)
        role TEXT NOT NULL,
        at INTEGER,  -- Unix milliseconds
        tools TEXT,  -- JSON array of tool names, NULL for none
        message_id TEXT,
        text TEXT NOT NULL,
        grams TEXT NOT NULL DEFAULT ''
    );
    CREATE UNIQUE INDEX session_messages_by_turn ON session_messages (session, turn);
    CREATE INDEX session_messages_by_time ON session_messages (at);
    CREATE VIRTUAL TABLE session_messages_fts USING fts5 (
        text, grams,
        content='session_messages', content_rowid='rowid',
        tokenize='unicode61 remove_diacritics 2'
    );
    -- no insert trigger: the writer adds each batch's FTS rows with one INSERT ... SELECT
    -- (ADR 0020): inside a multi-row statement a trigger makes FTS5 flush a segment per row.
    -- Each small commit writes a small segment; merging 16 at a time instead of 4 rewrites
    -- the index less often (a third less indexing time, no measurable cost to queries).
    INSERT INTO session_messages_fts (session_messages_fts, rank) VALUES ('automerge', 16);
    INSERT INTO session_messages_fts (session_messages_fts, rank) VALUES ('crisismerge', 64);
    CREATE TRIGGER session_messages_ad AFTER DELETE ON session_messages BEGIN
        INSERT INTO session_messages_fts (session_messages_fts, rowid, text, grams)
        VALUES ('delete', old.rowid, old.text, old.grams);
    END;
    """,
    # 3: the ids of a scope's rows with vectors, listed without reading a BLOB (ADR 0019): a
    # covering index with the scope columns first; it replaces memories_scope (its prefix)
    """
    CREATE INDEX memories_vector_scope
        ON memories (target, project, namespace, superseded_by, embedding_model, id);
    DROP INDEX memories_scope;
    """,
    # 4: data safety (ADR 0022): the render ledger per replica (one Markdown file of a stream;
    # several agent roots may replicate one journal), the scan finding that keeps a hand-edited
    # row out of search, folded-state snapshots so that open time follows the live state, and
    # the store's identity (written into every rendered file's version line)
    """
    CREATE TABLE markdown_replicas (
        stream TEXT NOT NULL,
        replica TEXT NOT NULL,  -- the file's resolved path; '' for a ledger row of schema 3
        version INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (stream, replica)
    );
    INSERT INTO markdown_replicas (stream, replica, version, sha256)
        SELECT stream, '', version, sha256 FROM markdown_ledger;
    DROP TABLE markdown_ledger;
    ALTER TABLE memories ADD COLUMN flagged TEXT;
    CREATE TABLE snapshots (
        stream TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        data TEXT NOT NULL
    );
    CREATE TABLE store_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    INSERT INTO store_meta (key, value) VALUES ('store_id', lower(hex(randomblob(8))));
    """,
    # 5: skill statistics and governance (issue 11; adapters/sqlite/skill_tables.py). Days are
    # UTC 'YYYY-MM-DD'; times are UTC 'YYYY-MM-DDTHH:MM:SS.ffffffZ' (fixed width: text order is
    # time order). skill_load_events is read-only history: nothing writes it but the cleanup's
    # deletes. The day/at indexes keep the bounded cleanup DELETE and windowed stats off full
    # scans; skill_usage_events is never cleaned.
    """
    CREATE TABLE skill_load_daily (
        rowid INTEGER PRIMARY KEY,
        skill_id TEXT NOT NULL,
        project TEXT NOT NULL,  -- '' for loads outside a project
        day TEXT NOT NULL,
        count INTEGER NOT NULL CHECK (count > 0),
        UNIQUE (skill_id, project, day)
    );
    CREATE INDEX skill_load_daily_by_day ON skill_load_daily (day);
    CREATE INDEX skill_load_daily_by_project ON skill_load_daily (project, day);
    CREATE TABLE skill_load_events (
        rowid INTEGER PRIMARY KEY,
        skill_id TEXT NOT NULL,
        project TEXT,  -- NULL or '' for loads outside a project
        at TEXT NOT NULL
    );
    CREATE INDEX skill_load_events_by_at ON skill_load_events (at);
    CREATE TABLE skill_usage_events (
        rowid INTEGER PRIMARY KEY,
        skill_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        project TEXT,
        task_domain TEXT,
        at TEXT NOT NULL,
        main_session INTEGER NOT NULL CHECK (main_session IN (0, 1))
    );
    CREATE INDEX skill_usage_events_by_skill ON skill_usage_events (skill_id, at);
    CREATE INDEX skill_usage_events_by_at ON skill_usage_events (at);
    CREATE TABLE skill_visibility (
        project TEXT NOT NULL,
        skill_id TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('hidden', 'shown')),
        PRIMARY KEY (project, skill_id)
    );
    CREATE TABLE skill_governance (
        skill_id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        task_domain TEXT,
        reason TEXT,
        updated_at TEXT NOT NULL,
        promoted_to TEXT,
        promoted_from TEXT,
        backup TEXT  -- a serialized copy of the skill for restore
    );
    CREATE TABLE skill_curation_jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        project TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('manual', 'auto')),
        state TEXT NOT NULL
            CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'timed-out')),
        reason TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX skill_curation_jobs_by_project ON skill_curation_jobs (project, state, id);
    CREATE TABLE skill_curation_skips (
        project TEXT NOT NULL,
        reason TEXT NOT NULL,
        count INTEGER NOT NULL,
        last_at TEXT NOT NULL,
        PRIMARY KEY (project, reason)
    );
    """,
    # 6: a project's curated promotion-policy words (skill_governance_curate, ADR 0031): JSON
    # of task-domain terms and scope-policy words; never timing parameters
    """
    CREATE TABLE skill_policy_overrides (
        project TEXT PRIMARY KEY,
        data TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    # 7: hybrid search after a write (ADR 0043). A log of changed `memories` rowids, written by
    # triggers in the writer's own transaction: commits are serialised, so `seq` order is
    # commit order, and a reader that saw the log up to `seq` S re-reads only the rows logged
    # after S (the vector cache, adapters/sqlite/vectors.py). Every insert, update (any
    # column) and delete is logged; the log keeps the last 4,096 to 4,351 entries, and a reader
    # whose S was trimmed away reads the scope afresh (ADR 0082). The scope index gains `flagged`
    # (schema 4), so listing a scope reads no table row; it replaces memories_vector_scope,
    # its prefix. IF [NOT] EXISTS: the step is also safe on a file that already holds it.
    """
    CREATE TABLE IF NOT EXISTS memories_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_rowid INTEGER NOT NULL
    );
    CREATE TRIGGER IF NOT EXISTS memories_changes_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_changes (memory_rowid) VALUES (new.rowid);
    END;
    CREATE TRIGGER IF NOT EXISTS memories_changes_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_changes (memory_rowid) VALUES (new.rowid);
        INSERT INTO memories_changes (memory_rowid)
            SELECT old.rowid WHERE old.rowid <> new.rowid;
    END;
    CREATE TRIGGER IF NOT EXISTS memories_changes_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_changes (memory_rowid) VALUES (old.rowid);
    END;
    CREATE TRIGGER IF NOT EXISTS memories_changes_trim AFTER INSERT ON memories_changes
    WHEN new.seq % 256 = 0 BEGIN
        DELETE FROM memories_changes WHERE seq <= new.seq - 4096;
    END;
    CREATE INDEX IF NOT EXISTS memories_visible_scope
        ON memories (target, project, namespace, superseded_by, flagged, embedding_model, id);
    DROP INDEX IF EXISTS memories_vector_scope;
    """,
    # 8: the dense relevance floor (ADR 0069). The vectors an embedding model gave the fixed
    # background sample (domain/search/background.py), one row per model: `sample` is the
    # sample's digest (a new sample replaces the row), `vectors` the (n, dimension) matrix as
    # little-endian float32. A cache like the row vectors: losing it costs one embedding call.
    """
    CREATE TABLE IF NOT EXISTS embedding_background (
        model_id TEXT PRIMARY KEY,
        sample TEXT NOT NULL,
        dimension INTEGER NOT NULL CHECK (dimension > 0),
        vectors BLOB NOT NULL
    );
    """,
    # 9: stable memory ids in the read model (ADR 0079, refining ADR 0074 §7). Each row's
    # memory id (its chain's stable id) and version number, written with the row, so a search
    # names a hit's memory without folding its document. NULL: not known (a row written before
    # this step); the search service then reads it from the documents, and a repair
    # (`rebuild_rows`) fills it.
    # Added only where missing (SQLite has no ADD COLUMN IF NOT EXISTS): the step is also safe
    # on a file that already holds it, as the others are.
    lambda conn: _add_columns(conn, "memories", (("memory_id", "TEXT"), ("version_no", "INTEGER"))),
    # 10: the persisted write index (ADR 0084): each memory stream's active rows, their groups'
    # used characters and the near-duplicate token postings, advanced with the journal, so a new
    # process adds without folding the document. Empty until a write builds a stream's index
    # (`write_index.version` behind the journal: never used, rebuilt from the fold).
    WRITE_INDEX_SCHEMA,
)
SCHEMA_VERSION = len(MIGRATIONS)


def _user_tables(conn: apsw.Connection) -> list[str]:
    return [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        )
    ]


_HEADER_SQL = (
    "SELECT (SELECT application_id FROM pragma_application_id),"
    " (SELECT user_version FROM pragma_user_version)"
)


def check_ours(conn: apsw.Connection, path: Path) -> int:
    """Return the schema version of our file (0 = new); refuse a foreign or newer one."""
    # one statement, one read of the header: two PRAGMAs could straddle another process's
    # first migration (the old application_id 0 with the new user_version: "foreign")
    app_id, version = cast("tuple[int, int]", conn.execute(_HEADER_SQL).fetchall()[0])
    if app_id == 0 and version == 0:
        tables = _user_tables(conn)
        if tables:
            raise ForeignDatabaseError(
                f"{path} is not a pi-hermes-memory database (it holds tables "
                f"{', '.join(sorted(tables)[:5])}); it was left untouched. Move it aside or set "
                "memoryDir to another folder, then run sync-markdown to rebuild from Markdown."
            )
        return 0
    if app_id != APPLICATION_ID:
        raise ForeignDatabaseError(
            f"{path} belongs to another application (application_id {app_id:#x}); it was left "
            "untouched."
        )
    if version > SCHEMA_VERSION:
        raise ForeignDatabaseError(
            f"{path} has schema version {version}, newer than this pi-hermes-memory "
            f"(knows {SCHEMA_VERSION}); upgrade the package. The file was left untouched."
        )
    return int(version)


def _add_columns(conn: apsw.Connection, table: str, columns: tuple[tuple[str, str], ...]) -> None:
    have = {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}
    for name, kind in columns:
        if name not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


def migrate(conn: apsw.Connection, path: Path) -> None:
    """Bring our file to SCHEMA_VERSION, each step in its own IMMEDIATE transaction."""
    if check_ours(conn, path) == SCHEMA_VERSION:
        return  # no write transaction: opening never waits for a writer (ADR 0024)
    with conn:
        current = check_ours(conn, path)  # re-checked under the write lock
        for step, sql in enumerate(MIGRATIONS[current:], start=current + 1):
            if callable(sql):
                sql(conn)
            else:
                conn.execute(sql)
            conn.execute(f"PRAGMA user_version={step}")
        if current < SCHEMA_VERSION:
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
