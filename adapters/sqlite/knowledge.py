"""The knowledge-base index: its own SQLite file, `knowledge.db` beside `sessions.db`
(ADR 0048).

Derived data (the folders are the truth), so it lives in a file of its own that can be deleted
and rebuilt, never inside an indexed folder, with `synchronous=NORMAL` (WAL keeps each commit
atomic; a power loss may roll back the last batches, which the next run reads again).

Tables: `files` (real path, root, root-relative path, size, mtime_ns, SHA-256 of the content),
`chunks` (file, line range, heading, text, `grams`, optional vector and its model) and
`chunks_fts`, an external-content FTS5 table over (`text`, `grams`) with the tokenizer of
`memories_fts`; queries are built by memory_search's own `match_all` / `match_any` from
`pi_hermes_memory.domain.search.terms`, so English and CJK behave exactly as in memory_search. New
chunks reach the FTS table by one `INSERT ... SELECT` per batch; a delete trigger removes them.

Schema 2 (ADR 0063): chunk text arrives redacted (`domain.knowledge.redaction`); each chunk
keeps how many secrets were replaced (`redacted`). A schema-1 file may hold secrets verbatim:
opening it drops every table and vacuums the file (derived data: the next run reads the
folders again). `secure_delete` is on, so the pages of deleted chunks are overwritten rather
than left in the file.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import apsw
import attrs
from pi_hermes_memory.adapters.markdown.atomic import try_file_lock
from pi_hermes_memory.adapters.sqlite.connection import connect, enable_wal
from pi_hermes_memory.adapters.sqlite.failures import map_error
from pi_hermes_memory.adapters.sqlite.fts import grams
from pi_hermes_memory.adapters.sqlite.search import match_all, match_any
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.errors import CorruptData
from pi_hermes_memory.ports.knowledge import FileChunks, KnowledgeHit, KnowledgeQuery, KnownFile

APPLICATION_ID: Final = 0x50484B31  # "PHK1"
SCHEMA_VERSION: Final = 2
_CHUNK: Final = 500
#: rows a path-filtered tier ranks before filtering (at least; eight times the limit)
_FIRST_PASS: Final = 64
_SCHEMA: Final = (
    "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, root TEXT NOT NULL,"
    " rel TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
    " sha256 TEXT NOT NULL);"
    "CREATE TABLE chunks (id INTEGER PRIMARY KEY, file INTEGER NOT NULL REFERENCES files (id)"
    " ON DELETE CASCADE, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, heading TEXT,"
    " text TEXT NOT NULL, grams TEXT NOT NULL, model TEXT, vector BLOB,"
    " redacted INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX chunks_file ON chunks (file);"
    "CREATE INDEX chunks_model ON chunks (model);"
    "CREATE VIRTUAL TABLE chunks_fts USING fts5 (text, grams, content='chunks',"
    " content_rowid='id', tokenize='unicode61 remove_diacritics 2');"
    "CREATE TRIGGER chunks_deleted AFTER DELETE ON chunks BEGIN"
    " INSERT INTO chunks_fts (chunks_fts, rowid, text, grams)"
    " VALUES ('delete', old.id, old.text, old.grams); END;"
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
)
_HIT: Final = (
    "SELECT c.id, f.path, f.rel, f.root, c.start_line, c.end_line, c.heading, c.text, "
    "c.redacted "
    "FROM chunks AS c JOIN files AS f ON f.id = c.file"
)
_GLOB_CHARS: Final = frozenset("*?[")


def path_filter(path: str | None, roots: Sequence[str] | None = None) -> tuple[str, list[Any]]:
    """SQL over `f` for a path filter: an absolute filter (leading "/") is matched against the
    file's real path, any other against its path below its root; a filter holding `*`, `?` or
    `[` is a GLOB (`*` also matches "/"), any other a prefix. `roots`: only files whose real
    path lies below one of these folders."""
    if roots is not None:
        below = [r.rstrip("/") + "/" for r in roots]
        where, params = path_filter(path)
        anyof = " OR ".join("substr(f.path, 1, ?) = ?" for _ in below) or "0"
        return f" AND ({anyof}){where}", [*(x for r in below for x in (len(r), r)), *params]
    if path is None:
        return "", []
    wanted = path.strip()
    wanted = wanted[2:] if wanted.startswith("./") else wanted
    column = "f.path" if wanted.startswith("/") else "f.rel"
    if _GLOB_CHARS & set(wanted):
        return f" AND {column} GLOB ?", [wanted]
    return f" AND substr({column}, 1, ?) = ?", [len(wanted), wanted]


class SqliteKnowledgeIndex:
    """`KnowledgeIndex` over `path` (created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: apsw.Connection | None = None
        self._vectors: tuple[tuple[Any, ...], tuple[tuple[int, ...], Any]] | None = None

    # -- connection -----------------------------------------------------------------------

    def _db(self) -> apsw.Connection:
        if self._conn is not None:
            return self._conn
        try:
            conn = connect(self.path)
            try:
                self._prepare(conn)
            except BaseException:
                conn.close()
                raise
        except apsw.Error as exc:
            raise map_error(exc, self.path) from None
        self._conn = conn
        return conn

    def _prepare(self, conn: apsw.Connection) -> None:
        app_id = conn.execute("PRAGMA application_id").get
        version = conn.execute("PRAGMA user_version").get
        if app_id not in (0, APPLICATION_ID) or version > SCHEMA_VERSION:
            raise CorruptData(
                f"{self.path} is not a knowledge index of this pi-hermes-memory version; it "
                "is derived data: move it aside and run `knowledge index` again"
            )
        enable_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA secure_delete=ON")
        if version == 1:
            self._drop_unscanned(conn)
            version = 0
        if version == 0:
            with conn:
                conn.execute(_SCHEMA)
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    @staticmethod
    def _drop_unscanned(conn: apsw.Connection) -> None:
        """A schema-1 index was written before chunks were scanned: drop it all, vacuum the
        file and truncate the WAL so no page of it is left (the next run reads the folders)."""
        with conn:
            conn.execute(
                "DROP TRIGGER IF EXISTS chunks_deleted; DROP TABLE IF EXISTS chunks_fts;"
                " DROP TABLE IF EXISTS chunks; DROP TABLE IF EXISTS files;"
                " DROP TABLE IF EXISTS meta;"
            )
            conn.execute("PRAGMA user_version=0")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._vectors = None

    @contextlib.contextmanager
    def run_lock(self) -> Iterator[bool]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with try_file_lock(self.path.with_name(self.path.name + ".lock")) as taken:
            yield taken

    # -- writes ---------------------------------------------------------------------------

    def roots(self) -> frozenset[str]:
        return frozenset(r for (r,) in self._db().execute("SELECT DISTINCT root FROM files"))

    def known(self) -> dict[str, KnownFile]:
        rows = self._db().execute("SELECT path, size, mtime_ns, sha256, root, rel FROM files")
        return {
            p: KnownFile(size=s, mtime_ns=m, sha256=h, root=r, rel=rel)
            for p, s, m, h, r, rel in rows
        }

    def write(self, items: Sequence[FileChunks]) -> int:
        conn = self._db()
        written = 0
        with conn:
            for item in items:
                f = item.file
                if item.chunks is None:
                    conn.execute(
                        "UPDATE files SET size = ?, mtime_ns = ?, root = ?, rel = ? WHERE path = ?",
                        (f.size, f.mtime_ns, f.root, f.rel, f.path),
                    )
                    continue
                conn.execute("DELETE FROM files WHERE path = ?", (f.path,))
            last = conn.execute("SELECT COALESCE(MAX(id), 0) FROM chunks").get
            for item in items:
                if item.chunks is None:
                    continue
                f = item.file
                conn.execute(
                    "INSERT INTO files (path, root, rel, size, mtime_ns, sha256) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (f.path, f.root, f.rel, f.size, f.mtime_ns, item.sha256),
                )
                file_id = conn.last_insert_rowid()
                conn.executemany(
                    "INSERT INTO chunks (file, start_line, end_line, heading, text, grams, "
                    "redacted) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            file_id,
                            c.start_line,
                            c.end_line,
                            c.heading,
                            c.text,
                            "" if c.text.isascii() else grams(c.text),
                            int(getattr(c, "redacted", 0)),
                        )
                        for c in item.chunks
                    ],
                )
                written += len(item.chunks)
            conn.execute(
                "INSERT INTO chunks_fts (rowid, text, grams) "
                "SELECT id, text, grams FROM chunks WHERE id > ?",
                (last,),
            )
        return written

    def remove(self, paths: Sequence[str]) -> int:
        conn = self._db()
        removed = 0
        with conn:
            for start in range(0, len(paths), _CHUNK):
                part = list(paths[start : start + _CHUNK])
                marks = ", ".join("?" for _ in part)
                conn.execute(f"DELETE FROM files WHERE path IN ({marks})", part)
                removed += conn.changes()
        return removed

    def record_run(self, report: dict[str, Any]) -> None:
        with self._db() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_run', ?)",
                (json.dumps(report),),
            )

    def last_run(self) -> dict[str, Any] | None:
        value = self._db().execute("SELECT value FROM meta WHERE key = 'last_run'").get
        return None if value is None else dict(json.loads(str(value)))

    # -- vectors --------------------------------------------------------------------------

    def missing_vectors(self, model_id: str, limit: int) -> list[tuple[int, str]]:
        rows = self._db().execute(
            "SELECT id, text FROM chunks WHERE model IS NULL OR model != ? ORDER BY id LIMIT ?",
            (model_id, limit),
        )
        return [(int(i), str(t)) for i, t in rows]

    def put_vectors(self, model_id: str, ids: Sequence[int], matrix: Any) -> int:
        import numpy as np

        data = np.asarray(matrix, dtype="<f4")
        with self._db() as conn:
            conn.executemany(
                "UPDATE chunks SET model = ?, vector = ? WHERE id = ?",
                [(model_id, data[i].tobytes(), cid) for i, cid in enumerate(ids)],
            )
        return len(ids)

    def vectors(self, model_id: str) -> tuple[tuple[int, ...], Any]:
        import numpy as np

        conn = self._db()
        key = (
            model_id,
            *conn.execute(
                "SELECT COUNT(*), COALESCE(MAX(id), 0), COALESCE(SUM(id), 0) FROM chunks "
                "WHERE model = ?",
                (model_id,),
            ).fetchall()[0],
        )
        if self._vectors is not None and self._vectors[0] == key:
            return self._vectors[1]
        ids: list[int] = []
        blobs: list[bytes] = []
        for cid, blob in conn.execute(
            "SELECT id, vector FROM chunks WHERE model = ? ORDER BY id", (model_id,)
        ):
            ids.append(int(cid))
            blobs.append(bytes(blob))
        if not ids:
            result: tuple[tuple[int, ...], Any] = ((), np.zeros((0, 0), dtype=np.float32))
        else:
            width = len(blobs[0]) // 4
            matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), width)
            result = (tuple(ids), matrix.astype(np.float32))
        self._vectors = (key, result)
        return result

    # -- reads ----------------------------------------------------------------------------

    def counts(self, model_id: str | None) -> dict[str, int]:
        conn = self._db()
        files, size = conn.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files").fetchall()[
            0
        ]
        chunks, redacted = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(redacted), 0) FROM chunks"
        ).fetchall()[0]
        vectors = (
            0
            if model_id is None
            else conn.execute("SELECT COUNT(*) FROM chunks WHERE model = ?", (model_id,)).get
        )
        return {
            "files": int(str(files)),
            "chunks": int(str(chunks)),
            "bytes": int(str(size)),
            "vectors": int(str(vectors)),
            "redacted": int(str(redacted)),
        }

    def hits(self, ids: Sequence[int], query: KnowledgeQuery) -> list[KnowledgeHit]:
        where, params = path_filter(query.path, query.roots)
        found: list[KnowledgeHit] = []
        conn = self._db()
        for start in range(0, len(ids), _CHUNK):
            part = list(ids[start : start + _CHUNK])
            marks = ", ".join("?" for _ in part)
            for row in conn.execute(f"{_HIT} WHERE c.id IN ({marks}){where}", (*part, *params)):
                found.append(_hit(row, 0.0))
        return found

    def search(self, query: KnowledgeQuery) -> list[KnowledgeHit]:
        terms = plan_terms(query.text)
        if not terms or query.limit < 1:
            return []
        tiers = [e for e in dict.fromkeys((match_all(terms), match_any(terms, terms.weak))) if e]
        scored: dict[int, float] = {}
        for expression in tiers:
            if len(scored) >= query.limit:
                break
            for cid, score in self._tier(expression, query, scored):
                scored[cid] = score
        if not scored:
            return []
        by_id = {h.chunk_id: h for h in self.hits(list(scored), KnowledgeQuery(text=""))}
        return [attrs.evolve(by_id[cid], score=s) for cid, s in scored.items() if cid in by_id]

    def _tier(
        self, expression: str, query: KnowledgeQuery, seen: dict[int, float]
    ) -> list[tuple[int, float]]:
        """The best `limit - len(seen)` chunks of one tier not in `seen`, by bm25 (ties: the
        lower id). FTS5 ranks alone first (no join: the cost of ranking is bm25 over the
        matches); a path filter is then applied to the best `_FIRST_PASS` rows, and only
        when they do not fill the tier is it ranked again with the filter in its WHERE."""
        conn = self._db()
        wanted = query.limit - len(seen)
        filtered = query.path is not None or query.roots is not None
        first = wanted + len(seen) if not filtered else max(_FIRST_PASS, wanted * 8)
        ranked = [
            (int(cid), float(score))
            for cid, score in conn.execute(
                "SELECT rowid, -bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts "
                "MATCH ? ORDER BY bm25(chunks_fts), rowid LIMIT ?",
                (expression, first),
            )
        ]
        fresh = [(cid, score) for cid, score in ranked if cid not in seen]
        if not filtered or not fresh:
            return fresh[:wanted]
        allowed = {h.chunk_id for h in self.hits([cid for cid, _ in fresh], query)}
        kept = [(cid, score) for cid, score in fresh if cid in allowed]
        if len(kept) >= wanted or len(ranked) < first:
            return kept[:wanted]
        where, params = path_filter(query.path, query.roots)
        skip = list(seen)
        exclude = f" AND c.id NOT IN ({', '.join('?' for _ in skip)})" if skip else ""
        rows = conn.execute(
            "SELECT c.id, -bm25(chunks_fts) AS score FROM chunks_fts "
            "JOIN chunks AS c ON c.id = chunks_fts.rowid JOIN files AS f ON f.id = c.file "
            f"WHERE chunks_fts MATCH ?{where}{exclude} ORDER BY score DESC, c.id LIMIT ?",
            (expression, *params, *skip, wanted),
        )
        return [(int(cid), float(score)) for cid, score in rows]


def _hit(row: Sequence[Any], score: float) -> KnowledgeHit:
    cid, path, rel, root, start, end, heading, text, redacted = row
    return KnowledgeHit(
        chunk_id=int(cid),
        path=path,
        rel=rel,
        root=root,
        start_line=int(start),
        end_line=int(end),
        heading=heading,
        text=text,
        score=score,
        redacted=int(redacted),
    )


__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SqliteKnowledgeIndex", "path_filter"]
