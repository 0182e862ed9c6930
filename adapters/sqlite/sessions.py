"""The session history index in our SQLite file (ADR 0020, ADR 0021; ranking: ADR 0041).

Tables (schema step 2): `session_files` (each file's identity and read progress),
`sessions` (one per file, or per recorded session id), `session_messages` (one row per indexed
turn) and `session_messages_fts`, an external-content FTS5 table with the same columns and
tokenizer as `memories_fts` (`text`, `grams`; unicode61; ADR 0005), filled by the writer (one
`INSERT ... SELECT` per chunk, not a trigger: see `_INDEX_NEW`) and emptied by a delete trigger.
Queries
are built from `pi_hermes_memory.domain.search.terms` exactly like memory_search's, so CJK text and
questions behave the same way.

The index is derived data: the session files are the truth and a lost commit is simply read
again. Its own connection therefore runs with `synchronous=NORMAL` (no fsync per commit; WAL
keeps every commit atomic, a power loss may roll back the last ones, progress rows included),
opened lazily on first use, so memory-only commands never pay for it. Each `apply` is one
short IMMEDIATE transaction; the memory store's writers wait at most one of them.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
from pi_hermes_memory.adapters.sqlite.connection import connect, enable_wal
from pi_hermes_memory.adapters.sqlite.failures import map_error, map_os_error
from pi_hermes_memory.adapters.sqlite.fts import grams
from pi_hermes_memory.adapters.sqlite.schema import check_ours, migrate
from pi_hermes_memory.adapters.sqlite.search import match_all, match_any, quote
from pi_hermes_memory.domain.history.transcripts import (
    FileProgress,
    MessageLine,
    SessionChunk,
    normalize_cwd,
)
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.errors import InvalidArgument, StaleProgress
from pi_hermes_memory.ports.history import (
    AnchorLine,
    AnchorQuery,
    IndexCounts,
    SessionHit,
    SessionInfo,
    SessionQuery,
    Turn,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_CHUNK = 500  # parameters per IN (...) list
#: The scratch FTS5 table `_matched_any` matches candidate turns in (temp schema: never in the
#: file); contentless, emptied with 'delete-all' before each use.
_MATCH_NAME = "pi_hermes_memory_session_match"
_MATCH = f"temp.{_MATCH_NAME}"
_MATCH_TABLE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {_MATCH} USING fts5 (text, grams, content='', "
    "tokenize='unicode61 remove_diacritics 2')"  # session_messages_fts's (schema step 2)
)
_SLICE = 256  # ranked matches looked up at first when filters apply (then twice as many)
#: Ranking (ADR 0041): a tier matching at most this many turns is ranked by bm25 over all of
#: them (every rare word and CJK term of the 1M-message bench: at most ~13k); above it, ...
EXHAUSTIVE_MATCHES = 16_384
#: ... in blocks of this many matching turns, newest block first, bm25 within a block.
RANK_BLOCK = 4_096
#: Page cache of the session connection (SQLite's default is 2 MiB).
CACHE_KIB = 64 * 1024

_FILE_COLUMNS = (
    "f.path, f.size, f.mtime_ns, f.device, f.inode, f.read_to, f.lines, f.head_len, "
    "f.head_sha, f.tail_sha, COALESCE(s.headed, 0)"
)
_FILES = f"SELECT {_FILE_COLUMNS} FROM session_files AS f LEFT JOIN sessions AS s ON s.file = f.id"
_SESSION_INFO = (
    "SELECT s.id, s.session_id, s.project, s.cwd, s.started, f.path FROM sessions AS s "
    "LEFT JOIN session_files AS f ON f.id = s.file WHERE s.id IN ({marks})"
)
_INSERT_MESSAGE = (
    "INSERT INTO session_messages (rowid, session, turn, line, role, at, tools, message_id, "
    "text, grams) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The FTS rows of the turns just inserted (rowid > the largest before them), in one statement.
# Not a trigger: a trigger on a multi-row insert opens a statement savepoint per row, and FTS5
# flushes its pending terms to a new segment at every savepoint (3x slower indexing).
_INDEX_NEW = (
    "INSERT INTO session_messages_fts (rowid, text, grams) "
    "SELECT rowid, text, grams FROM session_messages WHERE rowid > ?"
)
_LAST_ROWID = "SELECT COALESCE(MAX(rowid), 0) FROM session_messages"


def to_ms(value: datetime | None) -> int | None:
    return None if value is None else (value - _EPOCH) // _MS


def from_ms(value: object) -> datetime | None:
    if value is None:
        return None
    try:
        return _EPOCH + (value if type(value) is int else int(str(value))) * _MS
    except (ValueError, OverflowError):
        return None


def _progress(row: Sequence[Any]) -> FileProgress:
    path, size, mtime, device, inode, read_to, lines, head_len, head_sha, tail_sha, headed = row
    return FileProgress(
        path=path,
        size=size,
        mtime_ns=mtime,
        device=device,
        inode=inode,
        offset=read_to,
        lines=lines,
        head_len=head_len,
        head_sha=head_sha,
        tail_sha=tail_sha,
        headed=bool(headed),
    )


def _tools_json(tools: tuple[str, ...]) -> str | None:
    """The `tools` column: a JSON array of names (None for none). Names that JSON would not
    escape are joined directly (json.dumps costs a microsecond per turn)."""
    if not tools:
        return None
    if all(t.isprintable() and '"' not in t and "\\" not in t for t in tools):
        return '["' + '", "'.join(tools) + '"]'
    return json.dumps(list(tools), ensure_ascii=False)


def _row(rowid: int, session: int, turn: int, line: int, m: MessageLine) -> tuple[Any, ...]:
    text = m.text
    return (
        rowid,
        session,
        turn,
        line,
        m.role,
        to_ms(m.at),
        _tools_json(m.tools),
        m.message_id,
        text,
        "" if text.isascii() else grams(text),
    )


def _tools(value: object) -> tuple[str, ...]:
    if not value:
        return ()
    try:
        names = json.loads(str(value))
    except ValueError:
        return ()
    return tuple(str(n) for n in names) if isinstance(names, list) else ()


def term_expression(term: str) -> str:
    """An anchors term: every word of it (in `text` or `grams`) and every CJK pair of it
    (a lone CJK character: the pairs it starts). "" when the term has nothing to search."""
    terms = plan_terms(term)
    parts = ["{text grams} : " + quote(w) for w in terms.words]
    parts += ["grams : " + quote(g) + ("*" if len(g) == 1 else "") for g in terms.grams]
    return "(" + " AND ".join(parts) + ")" if parts else ""


def anchor_match(query: AnchorQuery) -> tuple[str, str]:
    """(positive expression, exclusion expression) of an anchors query; either may be ""."""
    every = [e for e in (term_expression(t) for t in query.all_terms) if e]
    anyone = [e for e in (term_expression(t) for t in query.any_terms) if e]
    if anyone:
        every.append("(" + " OR ".join(anyone) + ")")
    excluded = [e for e in (term_expression(t) for t in query.exclude_terms) if e]
    return " AND ".join(every), " OR ".join(excluded)


def _slices(first: int, *, filtered: bool) -> Iterator[int]:
    """How many ranked turns to look up before each `enough` check: unfiltered, the best
    `first`, then up to max(first, 256) in all; filtered, max(first, 256); then twice as many
    each time. The schedule of the ranking before ADR 0041 (it looked up the best `first`, then
    started again with slices of 256, 512, ...), kept so that where every match is ranked the
    lookups stop at the same turn and a session shows the same turns."""
    base = max(first, _SLICE)
    if filtered:
        yield base
    else:
        yield first
        if base > first:
            yield base - first
    size = base
    while True:
        size *= 2
        yield size


class SqliteSessionIndex:
    """The `SessionIndex` port over our SQLite file, on a connection of its own."""

    def __init__(
        self, path: Path, *, exhaustive: int = EXHAUSTIVE_MATCHES, block: int = RANK_BLOCK
    ) -> None:
        if exhaustive < 1 or block < 1:
            raise InvalidArgument("exhaustive and block must be at least 1")
        self.path = path
        #: ranking (ADR 0041): every match by bm25 up to `exhaustive` matches, else blocks
        self.exhaustive = exhaustive
        self.block = block
        self._conn: apsw.Connection | None = None
        self._lock = threading.RLock()

    # -- connection ---------------------------------------------------------------------------

    def _connection(self) -> apsw.Connection:
        if self._conn is None:
            try:
                conn = connect(self.path)
            except OSError as exc:
                raise map_os_error(exc, self.path) from exc
            except apsw.Error as exc:
                raise map_error(exc, self.path) from exc
            try:
                check_ours(conn, self.path)
                enable_wal(conn)
                migrate(conn, self.path)
                conn.execute("PRAGMA synchronous=NORMAL")  # derived data (module docstring)
                # ranking looks turns up by rowid: keep their pages cached between queries
                conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            except apsw.Error as exc:
                errno = conn.system_errno
                conn.close()
                raise map_error(exc, self.path, errno) from exc
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    @contextlib.contextmanager
    def _write(self) -> Iterator[apsw.Connection]:
        with self._lock:
            conn = self._connection()
            try:
                with conn:
                    yield conn
            except apsw.Error as exc:  # no driver exception crosses the port (style rule 31)
                raise map_error(exc, self.path, conn.system_errno) from exc

    @contextlib.contextmanager
    def _read(self) -> Iterator[apsw.Connection]:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN DEFERRED")
                try:
                    yield conn
                finally:
                    conn.execute("COMMIT")
            except apsw.Error as exc:
                raise map_error(exc, self.path, conn.system_errno) from exc

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- progress -----------------------------------------------------------------------------

    def files(self) -> dict[str, FileProgress]:
        with self._read() as c:
            return {row[0]: _progress(row) for row in c.execute(_FILES)}

    def progress_of(self, path: str) -> FileProgress | None:
        with self._read() as c:
            row = c.execute(f"{_FILES} WHERE f.path = ?", (path,)).fetchone()
        return None if row is None else _progress(row)

    def apply(self, chunk: SessionChunk) -> None:
        p = chunk.progress
        with self._write() as c:
            if chunk.reset:
                c.execute("DELETE FROM session_files WHERE path = ?", (p.path,))
            else:
                stored = c.execute(
                    "SELECT read_to FROM session_files WHERE path = ?", (p.path,)
                ).get
                if (stored or 0) != chunk.start:
                    raise StaleProgress(p.path)
            c.execute(
                "INSERT INTO session_files (path, device, inode, size, mtime_ns, read_to, lines, "
                "head_len, head_sha, tail_sha) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (path) DO UPDATE SET device = excluded.device, "
                "inode = excluded.inode, size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "read_to = excluded.read_to, lines = excluded.lines, "
                "head_len = excluded.head_len, head_sha = excluded.head_sha, "
                "tail_sha = excluded.tail_sha",
                (
                    p.path,
                    p.device,
                    p.inode,
                    p.size,
                    p.mtime_ns,
                    p.offset,
                    p.lines,
                    p.head_len,
                    p.head_sha,
                    p.tail_sha,
                ),
            )
            file_id = c.execute("SELECT id FROM session_files WHERE path = ?", (p.path,)).get
            session = c.execute("SELECT id FROM sessions WHERE file = ?", (file_id,)).get
            header = chunk.header
            if header is not None:
                values = (header.session_id, header.cwd, chunk.project, to_ms(header.started))
                if session is None:
                    c.execute(
                        "INSERT INTO sessions (session_id, cwd, project, started, file, headed) "
                        "VALUES (?, ?, ?, ?, ?, 1)",
                        (*values, file_id),
                    )
                    session = c.last_insert_rowid()
                else:
                    c.execute(
                        "UPDATE sessions SET session_id = ?, cwd = ?, project = ?, "
                        "started = COALESCE(?, started), headed = 1 WHERE id = ?",
                        (*values, session),
                    )
            if not chunk.messages:
                return
            first_at = next((to_ms(m.at) for _, m in chunk.messages if m.at), None)
            if session is None:
                c.execute(
                    "INSERT INTO sessions (session_id, started, file) VALUES (?, ?, ?)",
                    (chunk.fallback_id, first_at, file_id),
                )
                session = c.last_insert_rowid()
            elif first_at is not None:
                c.execute(
                    "UPDATE sessions SET started = ? WHERE id = ? AND started IS NULL",
                    (first_at, session),
                )
            turn = c.execute(
                "SELECT COALESCE(MAX(turn), 0) FROM session_messages WHERE session = ?",
                (session,),
            ).get
            last = c.execute(_LAST_ROWID).get
            c.executemany(
                _INSERT_MESSAGE,
                [
                    _row(last + i, session, turn + i, line, m)
                    for i, (line, m) in enumerate(chunk.messages, start=1)
                ],
            )
            c.execute(_INDEX_NEW, (last,))

    def forget(self, paths: Sequence[str]) -> int:
        removed = 0
        with self._write() as c:
            for start in range(0, len(paths), _CHUNK):
                part = list(paths[start : start + _CHUNK])
                marks = ", ".join("?" for _ in part)
                c.execute(f"DELETE FROM session_files WHERE path IN ({marks})", part)
                removed += c.changes()
        return removed

    def record(
        self, *, session_id: str, cwd: str | None, project: str | None, message: MessageLine
    ) -> int:
        with self._write() as c:
            session = c.execute(
                "SELECT id FROM sessions WHERE file IS NULL AND session_id = ?", (session_id,)
            ).get
            if session is None:
                c.execute(
                    "INSERT INTO sessions (session_id, cwd, project, started) VALUES (?, ?, ?, ?)",
                    (session_id, cwd, project, to_ms(message.at)),
                )
                session = c.last_insert_rowid()
            turn = (
                1
                + c.execute(
                    "SELECT COALESCE(MAX(turn), 0) FROM session_messages WHERE session = ?",
                    (session,),
                ).get
            )
            last = c.execute(_LAST_ROWID).get
            c.execute(_INSERT_MESSAGE, _row(last + 1, session, turn, turn, message))
            c.execute(_INDEX_NEW, (last,))
            return int(turn)

    def unrecord(self, *, session_id: str, keep: int) -> int:
        with self._write() as c:
            session = c.execute(
                "SELECT id FROM sessions WHERE file IS NULL AND session_id = ?", (session_id,)
            ).get
            if session is None:
                return 0
            # the AFTER DELETE trigger takes each turn out of the FTS index too
            c.execute(
                "DELETE FROM session_messages WHERE session = ? AND turn > ?", (session, keep)
            )
            dropped = c.changes()
            if keep == 0:
                c.execute("DELETE FROM sessions WHERE id = ?", (session,))
            return int(dropped)

    def reproject(self, project_of: Callable[[str | None], str | None]) -> int:
        with self._read() as c:
            pairs = list(
                c.execute("SELECT DISTINCT cwd, project FROM sessions WHERE file IS NOT NULL")
            )
        changes = [(project_of(cwd), cwd, old) for cwd, old in pairs if project_of(cwd) != old]
        if not changes:
            return 0
        changed = 0
        with self._write() as c:
            for new, cwd, old in changes:
                c.execute(
                    "UPDATE sessions SET project = ? WHERE file IS NOT NULL AND cwd IS ? "
                    "AND project IS ?",
                    (new, cwd, old),
                )
                changed += c.changes()
        return changed

    def counts(self) -> IndexCounts:
        with self._read() as c:
            return IndexCounts(
                files=c.execute("SELECT count(*) FROM session_files").get,
                sessions=c.execute("SELECT count(*) FROM sessions").get,
                messages=c.execute("SELECT count(*) FROM session_messages").get,
            )

    # -- ranked candidates --------------------------------------------------------------------

    def _ranked(
        self,
        c: apsw.Connection,
        expression: str,
        where: Sequence[str],
        params: Sequence[Any],
        enough: Callable[[list[tuple[Any, ...]]], bool],
        first: int,
        *,
        enough_recent: Callable[[list[tuple[Any, ...]]], bool] | None = None,
    ) -> list[tuple[Any, ...]]:
        """The turns matching `expression`, in ranking order (ADR 0041), that pass `where`
        (over `m`, the turn, and `s`, its session), as (rowid, score, session, turn, line, at,
        project): at least until `enough(rows)` holds, else all of them.

        The order: best bm25 first (ties: lower rowid first), exactly as before ADR 0041,
        when at most `exhaustive` turns match or a filter (`where`) applies. When more match
        and no filter applies (a common word), the matches are cut into blocks of `block`
        turns in index order, newest block first, each block in bm25 order (the scores are
        the full index's bm25: idf and average length come from the whole table), and
        reading stops when `enough_recent(rows)` (default: `enough`) holds. Finding a block
        walks rowids only (~0.05 µs per match); bm25 (~1 µs per match) is paid only for the
        blocks read, so a common word costs one block instead of every match.

        FTS5 scores a block's matches without touching the turn rows, and the turns are
        looked up (and filtered) in that order in growing slices until enough: joining every
        match to its turn costs 3-5 µs per match (ADR 0021)."""
        rows: list[tuple[Any, ...]] = []
        blocks = (
            not where and self._nth_newest(c, expression, None, self.exhaustive + 1) is not None
        )
        stop = (enough_recent or enough) if blocks else enough
        sizes = _slices(first, filtered=bool(where))
        ceiling: int | None = None
        while True:
            floor = self._nth_newest(c, expression, ceiling, self.block) if blocks else None
            bounds = [(" AND rowid >= ?", floor), (" AND rowid < ?", ceiling)]
            ranked = c.execute(
                "SELECT rowid, bm25(session_messages_fts) AS score FROM session_messages_fts "
                "WHERE session_messages_fts MATCH ?"
                + "".join(sql for sql, value in bounds if value is not None)
                + " ORDER BY score, rowid",
                (expression, *(value for _, value in bounds if value is not None)),
            )
            try:
                for size in sizes:
                    part = [(rowid, -score) for rowid, score in itertools.islice(ranked, size)]
                    rows += self._eligible(c, part, where, params)
                    if stop(rows):
                        return rows
                    if len(part) < size:
                        break
            finally:
                ranked.close()
            if floor is None:
                return rows
            ceiling = floor

    @staticmethod
    def _nth_newest(c: apsw.Connection, expression: str, below: int | None, n: int) -> int | None:
        """The rowid of the `n`-th newest turn matching `expression` with a rowid below
        `below` (None: no bound), or None when fewer match. Walks rowids only (no bm25)."""
        bound, values = ("", ()) if below is None else (" AND rowid < ?", (below,))
        value = c.execute(
            "SELECT rowid FROM session_messages_fts "
            f"WHERE session_messages_fts MATCH ?{bound} ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (expression, *values, n - 1),
        ).get
        return None if value is None else int(value)

    def _eligible(
        self,
        c: apsw.Connection,
        top: Sequence[tuple[Any, ...]],
        where: Sequence[str],
        params: Sequence[Any],
    ) -> list[tuple[Any, ...]]:
        found: dict[int, tuple[Any, ...]] = {}
        clause = "".join(f" AND {w}" for w in where)
        for start in range(0, len(top), _CHUNK):
            part = [int(rowid) for rowid, _ in top[start : start + _CHUNK]]
            marks = ", ".join("?" for _ in part)
            for row in c.execute(
                "SELECT m.rowid, m.session, m.turn, m.line, m.at, s.project "
                "FROM session_messages AS m JOIN sessions AS s ON s.id = m.session "
                f"WHERE m.rowid IN ({marks}){clause}",
                (*part, *params),
            ):
                found[int(row[0])] = row
        return [
            (int(rowid), float(score), *found[int(rowid)][1:])
            for rowid, score in top
            if int(rowid) in found
        ]

    # -- legacy search ------------------------------------------------------------------------

    def search(self, query: SessionQuery) -> list[SessionHit]:
        terms = plan_terms(query.text)
        if not terms or query.limit < 1:
            return []
        tiers = [e for e in dict.fromkeys((match_all(terms), match_any(terms, terms.weak))) if e]
        where: list[str] = []
        params: list[Any] = []
        if query.role is not None:
            where.append("m.role = ?")
            params.append(query.role)
        if query.project is not None:
            where.append("s.project = ?")
            params.append(query.project)
        # per group (the preferred project's sessions, then the others) and tier, in order:
        # session -> (its best score, its best turns -> score)
        groups: list[dict[int, tuple[float, dict[int, float]]]] = [{} for _ in range(4)]
        first = max(64, query.limit * query.per_session * 4)

        def preferred(project: object) -> bool:
            return query.prefer is None or project == query.prefer

        def enough(found: list[dict[int, Any]]) -> bool:  # (all sessions count without prefer)
            return sum(len(g) for g in found[0::2]) >= query.limit

        with self._read() as c:
            for tier, expression in enumerate(tiers):
                if enough(groups):
                    break
                seen = {sid for g in groups for sid in g}

                def full(rows: list[tuple[Any, ...]], seen: set[int] = seen) -> bool:
                    fresh = {r[2] for r in rows if r[2] not in seen and preferred(r[6])}
                    return len(fresh) + sum(len(g) for g in groups[0::2]) >= query.limit

                def recent(rows: list[tuple[Any, ...]], seen: set[int] = seen) -> bool:
                    fresh = {r[2] for r in rows if r[2] not in seen}
                    return len(fresh) + len(seen) >= query.limit

                for _, score, sid, turn, _, _, project in self._ranked(
                    c, expression, where, params, full, first, enough_recent=recent
                ):
                    if sid in seen:
                        continue
                    group = groups[tier * 2 + (0 if preferred(project) else 1)]
                    best = group.setdefault(sid, (score, {}))[1]
                    if len(best) < query.per_session:
                        best[turn] = score
            order = [groups[0], groups[2], groups[1], groups[3]]
            chosen = [(sid, found) for g in order for sid, found in g.items()][: query.limit]
            if not chosen:
                return []
            infos = self._infos(c, [sid for sid, _ in chosen])
            hits = []
            for sid, (top, scores) in chosen:
                wanted = {
                    t + d
                    for t in scores
                    for d in range(-query.window, query.window + 1)
                    if t + d > 0
                }
                turns = self._turns(c, sid, sorted(wanted), scores)
                hits.append(SessionHit(session=infos[sid], score=top, turns=turns))
        return hits

    def _infos(self, c: apsw.Connection, ids: Sequence[int]) -> dict[int, SessionInfo]:
        out: dict[int, SessionInfo] = {}
        for start in range(0, len(ids), _CHUNK):
            part = list(ids[start : start + _CHUNK])
            sql = _SESSION_INFO.format(marks=", ".join("?" for _ in part))
            for sid, session_id, project, cwd, started, path in c.execute(sql, part):
                out[int(sid)] = SessionInfo(
                    session_id=session_id,
                    project=project,
                    cwd=cwd,
                    started=from_ms(started),
                    path=path,
                )
        return out

    def _turns(
        self, c: apsw.Connection, sid: int, wanted: Sequence[int], scores: dict[int, float]
    ) -> tuple[Turn, ...]:
        marks = ", ".join("?" for _ in wanted)
        rows = c.execute(
            "SELECT turn, line, role, text, tools, at FROM session_messages "
            f"WHERE session = ? AND turn IN ({marks}) ORDER BY turn",
            (sid, *wanted),
        )
        return tuple(
            Turn(
                line=line,
                turn=turn,
                role=role,
                text=text,
                tools=_tools(tools),
                at=from_ms(at),
                match=turn in scores,
                score=scores.get(turn, 0.0),
            )
            for turn, line, role, text, tools, at in rows
        )

    # -- anchors ------------------------------------------------------------------------------

    def anchor_lines(self, query: AnchorQuery) -> list[AnchorLine]:
        positive, excluded = anchor_match(query)
        if (query.all_terms or query.any_terms) and not positive:
            return []  # terms with nothing to search for match nothing
        where: list[str] = []
        params: list[Any] = []
        if query.start is not None:
            where.append("m.at >= ?")
            params.append(to_ms(query.start))
        if query.end is not None:
            where.append("m.at <= ?")
            params.append(to_ms(query.end))
        if query.cwd is not None:
            cwd = normalize_cwd(query.cwd)
            below = cwd.rstrip("/") + "/"  # case-sensitive, unlike LIKE
            where.append("(s.cwd = ? OR substr(s.cwd, 1, ?) = ?)")
            params += [cwd, len(below), below]
        with self._read() as c:
            if positive:
                expression = f"({positive}) NOT ({excluded})" if excluded else positive
                rows = self._ranked(
                    c,
                    expression,
                    where,
                    params,
                    lambda rows: len(rows) >= query.limit,
                    max(query.limit, 16),
                )[: query.limit]
            else:
                if excluded:
                    where.append(
                        "m.rowid NOT IN (SELECT rowid FROM session_messages_fts "
                        "WHERE session_messages_fts MATCH ?)"
                    )
                    params.append(excluded)
                rows = [
                    (int(rowid), 0.0, int(sid), turn, line, at, project)
                    for rowid, sid, turn, line, at, project in c.execute(
                        "SELECT m.rowid, m.session, m.turn, m.line, m.at, s.project "
                        "FROM session_messages AS m JOIN sessions AS s ON s.id = m.session"
                        + (" WHERE " + " AND ".join(where) if where else "")
                        + " ORDER BY m.at DESC, m.rowid DESC LIMIT ?",
                        (*params, query.limit),
                    )
                ]
            if not rows:
                return []
            infos = self._infos(c, sorted({r[2] for r in rows}))
            matched = self._matched_any(c, query.any_terms, [r[0] for r in rows])
        return [
            AnchorLine(
                session=infos[sid],
                line=line,
                turn=turn,
                at=from_ms(at),
                score=score,
                matched_any=tuple(matched.get(rowid, ())),
            )
            for rowid, score, sid, turn, line, at, _ in rows
        ]

    def _matched_any(
        self, c: apsw.Connection, terms: Sequence[str], ids: Sequence[int]
    ) -> dict[int, list[str]]:
        """Which of `terms` each of the turns `ids` matches.

        The turns are copied into a private FTS5 table in the connection's temp schema (same
        columns and tokenizer, so a term matches exactly the same turns) and each term is
        matched there: asking the index about a list of rowids costs a seek per rowid and
        segment (~60 µs per turn with 30 segments), copying and tokenizing a turn ~5 µs."""
        expressions = [(t, e) for t, e in ((t, term_expression(t)) for t in terms) if e]
        if not expressions or not ids:
            return {}
        c.execute(_MATCH_TABLE)
        c.execute(f"INSERT INTO {_MATCH} ({_MATCH_NAME}) VALUES ('delete-all')")
        for start in range(0, len(ids), _CHUNK):
            part = list(ids[start : start + _CHUNK])
            marks = ", ".join("?" for _ in part)
            c.execute(
                f"INSERT INTO {_MATCH} (rowid, text, grams) SELECT rowid, text, grams "
                f"FROM session_messages WHERE rowid IN ({marks})",
                part,
            )
        matched: dict[int, list[str]] = {}
        for term, expression in expressions:
            for (rid,) in c.execute(
                f"SELECT rowid FROM {_MATCH} WHERE {_MATCH_NAME} MATCH ?",
                (expression,),
            ):
                matched.setdefault(int(rid), []).append(term)
        return matched
