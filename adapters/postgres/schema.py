"""The PostgreSQL schema: ordered migration steps, recorded in `store_meta.schema_version`.

The same tables as the SQLite store (adapters/sqlite/schema.py) for the journal and its read
models, less the session history (it stays in each host's local sessions.db, ADR 0050).
Dates stay ISO text, as there, so both stores compare and order them alike. Full-text keys
are a `tsvector` of the words and CJK bigrams cut in Python (adapters/postgres/search.py),
never PostgreSQL's own parser. Migrations run under a session advisory lock, so hosts that
open a fresh database at once migrate it once.
"""

from __future__ import annotations

from typing import Any

from pi_hermes_memory.errors import StorageFailed

SCHEMA_VERSION = 4
#: pg_advisory_lock key held while migrating (an arbitrary constant: "phm-schema")
_MIGRATION_LOCK = 0x70686D2D736368

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE events (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        stream TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version > 0),
        tag TEXT NOT NULL,
        at TEXT NOT NULL,
        data TEXT NOT NULL,
        UNIQUE (stream, version)
    );
    CREATE SEQUENCE memories_changed;
    CREATE TABLE memories (
        id TEXT COLLATE "C" PRIMARY KEY,
        target TEXT NOT NULL CHECK (target IN ('user', 'memory', 'project', 'failure')),
        project TEXT,
        category TEXT,
        namespace TEXT,
        text TEXT NOT NULL,
        keys TSVECTOR NOT NULL,
        nkeys INTEGER NOT NULL,
        created TEXT NOT NULL,
        last_referenced TEXT NOT NULL,
        superseded_by TEXT,
        superseded_at TEXT,
        flagged TEXT,
        embedding_model TEXT,
        embedding BYTEA,
        dims INTEGER GENERATED ALWAYS AS (octet_length(embedding) / 4) STORED,
        -- bumped by every insert or update: the vector cache's change detector
        changed BIGINT NOT NULL DEFAULT nextval('memories_changed'),
        CHECK ((embedding IS NULL) = (embedding_model IS NULL))
    );
    CREATE INDEX memories_keys ON memories USING gin (keys);
    -- the scope columns first; with the vector columns included, listing a scope's vectors
    -- state (the cache check, the rows lacking a vector) is an index-only scan
    CREATE INDEX memories_scope
        ON memories (target, project, namespace, superseded_by, flagged, embedding_model)
        INCLUDE (dims, changed, id);
    CREATE FUNCTION memories_touch() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.changed := nextval('memories_changed');
        RETURN NEW;
    END $$;
    CREATE TRIGGER memories_touch BEFORE UPDATE ON memories
        FOR EACH ROW EXECUTE FUNCTION memories_touch();
    -- the transactions that changed `memories` (one row each): a reader that saw every
    -- transaction below its snapshot's xmin knows nothing changed while no row at or above
    -- it appears (the vector store's cache check, one index probe); rows older than an hour
    -- are trimmed, skipping locked ones, so writers never wait for each other here
    CREATE TABLE memories_log (
        xid XID8 PRIMARY KEY,
        at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE INDEX memories_log_at ON memories_log (at);
    CREATE FUNCTION memories_logged() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO memories_log (xid) VALUES (pg_current_xact_id()) ON CONFLICT DO NOTHING;
        IF random() < 0.01 THEN
            DELETE FROM memories_log WHERE xid IN (
                SELECT xid FROM memories_log WHERE at < now() - interval '1 hour'
                FOR UPDATE SKIP LOCKED);
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_logged AFTER INSERT OR UPDATE OR DELETE ON memories
        FOR EACH STATEMENT EXECUTE FUNCTION memories_logged();
    CREATE TABLE markdown_replicas (
        stream TEXT NOT NULL,
        replica TEXT NOT NULL,
        version INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (stream, replica)
    );
    CREATE TABLE snapshots (
        stream TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        data TEXT NOT NULL
    );
    CREATE TABLE store_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    INSERT INTO store_meta (key, value)
        VALUES ('store_id', substr(md5(gen_random_uuid()::text), 1, 16));
    """,
    # 2: skill statistics and governance: the SQLite tables of schema steps 5 and 6
    # (adapters/sqlite/schema.py), with identity columns for SQLite's rowids
    """
    CREATE TABLE skill_load_daily (
        rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        skill_id TEXT NOT NULL,
        project TEXT NOT NULL,
        day TEXT NOT NULL,
        count INTEGER NOT NULL CHECK (count > 0),
        UNIQUE (skill_id, project, day)
    );
    CREATE INDEX skill_load_daily_by_day ON skill_load_daily (day);
    CREATE INDEX skill_load_daily_by_project ON skill_load_daily (project, day);
    CREATE TABLE skill_load_events (
        rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        skill_id TEXT NOT NULL,
        project TEXT,
        at TEXT NOT NULL
    );
    CREATE INDEX skill_load_events_by_at ON skill_load_events (at);
    CREATE TABLE skill_usage_events (
        rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
        backup TEXT
    );
    CREATE TABLE skill_curation_jobs (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
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
    CREATE TABLE skill_policy_overrides (
        project TEXT PRIMARY KEY,
        data TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    # 3: the change log of the read port `MemoryRows` (adapters/postgres/rows.py): the id of
    # every row inserted, updated or deleted, with the writing transaction's id. Transaction
    # ids, not a sequence: a sequence value is drawn before its transaction commits, so a
    # smaller one can become visible after a larger one (another host's slower commit);
    # a reader whose cursor is its snapshot's xmin never skips such a row. Statement
    # triggers over transition tables: one INSERT per statement, also for a bulk load.
    # Trimmed to the newest 4,096 entries, as SQLite's (schema 7), by whichever writer gets
    # the try-lock (never a wait); `changes_trimmed_below` is the xid below which the log no
    # longer reaches: it starts at this step's own transaction, as nothing before is logged.
    """
    CREATE TABLE memories_changes (
        xid XID8 NOT NULL DEFAULT pg_current_xact_id(),
        id TEXT COLLATE "C" NOT NULL
    );
    CREATE INDEX memories_changes_xid ON memories_changes (xid);
    INSERT INTO store_meta (key, value) VALUES (
        'changes_trimmed_below', (pg_current_xact_id()::text::bigint + 1)::text);
    CREATE FUNCTION memories_changes_trim(keep integer) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
        cut xid8;
    BEGIN
        IF NOT pg_try_advisory_xact_lock(31640015513806951) THEN
            RETURN;  -- another writer trims (the key: "phm-chg")
        END IF;
        SELECT xid INTO cut FROM memories_changes ORDER BY xid DESC OFFSET keep LIMIT 1;
        IF cut IS NULL THEN
            RETURN;
        END IF;
        DELETE FROM memories_changes WHERE xid <= cut;
        UPDATE store_meta
            SET value = greatest(value::bigint, cut::text::bigint + 1)::text
            WHERE key = 'changes_trimmed_below';
    END $$;
    CREATE FUNCTION memories_changes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO memories_changes (id) SELECT id FROM new_rows;
        IF random() < 0.01 THEN
            PERFORM memories_changes_trim(4096);
        END IF;
        RETURN NULL;
    END $$;
    CREATE FUNCTION memories_changes_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO memories_changes (id)
            SELECT id FROM new_rows UNION SELECT id FROM old_rows;
        IF random() < 0.01 THEN
            PERFORM memories_changes_trim(4096);
        END IF;
        RETURN NULL;
    END $$;
    CREATE FUNCTION memories_changes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO memories_changes (id) SELECT id FROM old_rows;
        IF random() < 0.01 THEN
            PERFORM memories_changes_trim(4096);
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_changes_inserted AFTER INSERT ON memories
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION memories_changes_inserted();
    CREATE TRIGGER memories_changes_updated AFTER UPDATE ON memories
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION memories_changes_updated();
    CREATE TRIGGER memories_changes_deleted AFTER DELETE ON memories
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION memories_changes_deleted();
    """,
    # the dense relevance floor (ADR 0069): the background sample's vectors per embedding
    # model, as SQLite's schema 8
    """
    CREATE TABLE embedding_background (
        model_id TEXT COLLATE "C" PRIMARY KEY,
        sample TEXT NOT NULL,
        dimension INTEGER NOT NULL CHECK (dimension > 0),
        vectors BYTEA NOT NULL
    );
    """,
)


def migrate(conn: Any, where: str) -> None:
    """Bring the database to SCHEMA_VERSION (autocommit connection); refuse a newer one."""
    conn.execute("SELECT pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
    try:
        version = _version(conn)
        if version > SCHEMA_VERSION:
            raise StorageFailed(
                f"{where} holds schema version {version}, newer than this version of "
                f"pi-hermes-memory understands ({SCHEMA_VERSION}); upgrade the library."
            )
        for step in range(version, SCHEMA_VERSION):
            with conn.transaction():
                conn.execute(MIGRATIONS[step])
                conn.execute(
                    "INSERT INTO store_meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(step + 1),),
                )
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))


def _version(conn: Any) -> int:
    exists = conn.execute("SELECT to_regclass('store_meta') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    row = conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise StorageFailed(f"{where_of(conn)} has a store_meta table that is not ours")
    return int(row[0])


def where_of(conn: Any) -> str:
    return f"PostgreSQL database {conn.info.dbname}"
