"""The persisted write index of the memory documents (schema 10, ADR 0084).

The active rows of each memory stream, grouped as `ScopeIndex` groups them, with the token
postings of the near-duplicate rule: what an add decides on, kept in the tables below and
advanced in the transaction that appends the events (`SqliteProjection.apply`), so a new process
adds without decoding the snapshot, folding the document or tokenising every row.

`write_index.version` is the journal version the rows reflect. The index advances only from
exactly the version before an event; any other event (a write by an older library that does not
know these tables, a repair, a restore) leaves it behind, and a reader that finds it behind the
journal never uses it: the write path folds the document and `rebuild`s it.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

import apsw
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryEntry, MemoryKind, Target
from pi_hermes_memory.domain.memory.streams import target_of

if TYPE_CHECKING:
    # the events and the document fold: loaded by the first write (ADR 0105)
    from pi_hermes_memory.domain.memory.document import MemoryDocument
    from pi_hermes_memory.domain.memory.events import Event, MemoryEvent

__all__ = ["SCHEMA", "SqliteWriteIndex", "decode_entry", "encode_entry"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS write_index (
    stream TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    next_slot INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS write_rows (
    n INTEGER PRIMARY KEY,
    stream TEXT NOT NULL,
    id TEXT NOT NULL,
    grp TEXT NOT NULL,
    slot INTEGER NOT NULL,
    keyh INTEGER NOT NULL,
    chars INTEGER NOT NULL,
    entry TEXT NOT NULL,
    UNIQUE (stream, id)
);
CREATE INDEX IF NOT EXISTS write_rows_slot ON write_rows (stream, grp, slot);
CREATE INDEX IF NOT EXISTS write_rows_order ON write_rows (stream, slot);
CREATE INDEX IF NOT EXISTS write_rows_key ON write_rows (stream, grp, keyh, slot);
CREATE TABLE IF NOT EXISTS write_groups (
    stream TEXT NOT NULL,
    grp TEXT NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (stream, grp)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS write_tokens (
    t INTEGER PRIMARY KEY,
    stream TEXT NOT NULL,
    grp TEXT NOT NULL,
    token TEXT NOT NULL,
    holders INTEGER NOT NULL,
    UNIQUE (stream, grp, token)
);
CREATE TABLE IF NOT EXISTS write_postings (
    t INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (t, n)
) WITHOUT ROWID;
"""

_FIELDS = (
    "id",
    "target",
    "text",
    "project",
    "category",
    "created",
    "last_referenced",
    "superseded_by",
    "superseded_at",
    "namespace",
    "flagged",
    "importance",
    "kind",
    "memory_id",
    "version_no",
)


def _grp(group: str | None) -> str:
    """A group as stored: '' for None (the global group), '=' + the name otherwise."""
    return "" if group is None else "=" + group


def _keyh(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big", signed=True)


def encode_entry(entry: MemoryEntry) -> str:
    return json.dumps(
        [
            entry.id,
            entry.target.value,
            entry.text,
            entry.project,
            None if entry.category is None else entry.category.value,
            entry.created.isoformat(),
            entry.last_referenced.isoformat(),
            entry.superseded_by,
            None if entry.superseded_at is None else entry.superseded_at.isoformat(),
            entry.namespace,
            entry.flagged,
            entry.importance,
            None if entry.kind is None else entry.kind.value,
            entry.memory_id,
            entry.version_no,
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode_entry(data: str) -> MemoryEntry:
    v: list[Any] = json.loads(data)
    return MemoryEntry(
        id=v[0],
        target=Target(v[1]),
        text=v[2],
        project=v[3],
        category=None if v[4] is None else FailureCategory(v[4]),
        created=date.fromisoformat(v[5]),
        last_referenced=date.fromisoformat(v[6]),
        superseded_by=v[7],
        superseded_at=None if v[8] is None else date.fromisoformat(v[8]),
        namespace=v[9],
        flagged=v[10],
        importance=v[11],
        kind=None if v[12] is None else MemoryKind(v[12]),
        memory_id=v[13],
        version_no=v[14],
    )


def _one(row: Any) -> Any:
    """The first column of a row a statement always returns."""
    assert row is not None
    return row[0]


class _Table:
    """One stream's rows as `write_rows.RowTable`, over the connection."""

    def __init__(self, conn: apsw.Connection, stream: str, next_slot: int) -> None:
        self._conn = conn
        self._stream = stream
        self._target = target_of(stream)
        self.next = next_slot

    def get(self, entry_id: str) -> tuple[int, MemoryEntry] | None:
        row = self._conn.execute(
            "SELECT slot, entry FROM write_rows WHERE stream = ? AND id = ?",
            (self._stream, entry_id),
        ).fetchone()
        return None if row is None else (int(row[0]), decode_entry(str(row[1])))

    def next_slot(self) -> int:
        return self.next

    def put(self, slot: int, entry: MemoryEntry) -> None:
        if self.get(entry.id) is not None:
            self.delete(entry.id)
        from pi_hermes_memory.domain.memory.scope_index import group_of  # a write's (ADR 0110)
        from pi_hermes_memory.domain.search.similarity import token_set

        c = self._conn
        grp = _grp(group_of(self._target, entry))
        n = _one(
            c.execute(
                "INSERT INTO write_rows (stream, id, grp, slot, keyh, chars, entry) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING n",
                (
                    self._stream,
                    entry.id,
                    grp,
                    slot,
                    _keyh(entry.key),
                    len(entry.text),
                    encode_entry(entry),
                ),
            ).fetchone()
        )
        c.execute(
            "INSERT INTO write_groups (stream, grp, used) VALUES (?, ?, ?) "
            "ON CONFLICT (stream, grp) DO UPDATE SET used = used + excluded.used",
            (self._stream, grp, len(entry.text)),
        )
        # one prepared statement stepped per token, in `token_set`'s order (ADR 0119): the
        # same rows and token numbers as one execute per token, without a Python round trip
        # each; a RETURNING row per binding, in binding order
        stream = self._stream
        ts = [
            row[0]
            for row in c.executemany(
                "INSERT INTO write_tokens (stream, grp, token, holders) VALUES (?, ?, ?, 1) "
                "ON CONFLICT (stream, grp, token) DO UPDATE SET holders = holders + 1 "
                "RETURNING t",
                [(stream, grp, token) for token in token_set(entry.text)],
            )
        ]
        if ts:
            c.executemany("INSERT INTO write_postings (t, n) VALUES (?, ?)", [(t, n) for t in ts])
        self.next = max(self.next, slot + 1)

    def delete(self, entry_id: str) -> None:
        from pi_hermes_memory.domain.search.similarity import token_set  # a write's (ADR 0110)

        c = self._conn
        row = c.execute(
            "SELECT n, grp, entry FROM write_rows WHERE stream = ? AND id = ?",
            (self._stream, entry_id),
        ).fetchone()
        if row is None:
            return
        n, grp, entry = int(row[0]), str(row[1]), decode_entry(str(row[2]))
        c.execute("DELETE FROM write_rows WHERE n = ?", (n,))
        c.execute(
            "UPDATE write_groups SET used = used - ? WHERE stream = ? AND grp = ?",
            (len(entry.text), self._stream, grp),
        )
        for token in token_set(entry.text):
            t = c.execute(
                "UPDATE write_tokens SET holders = holders - 1 "
                "WHERE stream = ? AND grp = ? AND token = ? RETURNING t, holders",
                (self._stream, grp, token),
            ).fetchone()
            if t is None:
                continue
            c.execute("DELETE FROM write_postings WHERE t = ? AND n = ?", (t[0], n))
            if int(t[1]) <= 0:
                c.execute("DELETE FROM write_tokens WHERE t = ?", (t[0],))


class SqliteWriteIndex:
    """`ports.store.WriteIndex` over one connection, inside the caller's transaction."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    # -- keeping it -------------------------------------------------------------------------

    def version(self, stream: str) -> int | None:
        """The journal version the rows of `stream` reflect; None: never built."""
        row = self._conn.execute(
            "SELECT version FROM write_index WHERE stream = ?", (stream,)
        ).fetchone()
        return None if row is None else int(row[0])

    def apply(self, events: Sequence[Event]) -> None:
        """Advance the index of each memory stream by `events`, when it is at the version
        before them; otherwise leave it where it is (stale: it is rebuilt before any use)."""
        by_stream: dict[str, list[MemoryEvent]] = collections.defaultdict(list)
        for event in events:
            if event.stream.startswith("memory:"):
                by_stream[event.stream].append(event)  # type: ignore[arg-type]
        for stream, stream_events in by_stream.items():
            self._advance(stream, stream_events)

    def _advance(self, stream: str, events: Sequence[MemoryEvent]) -> None:
        from pi_hermes_memory.domain.memory.write_rows import advance

        c = self._conn
        row = c.execute(
            "SELECT version, next_slot FROM write_index WHERE stream = ?", (stream,)
        ).fetchone()
        if row is None:
            if events[0].version != 1:
                return  # a stream this index never saw from its start: built by `rebuild`
            version, next_slot = 0, 0
            c.execute(
                "INSERT INTO write_index (stream, version, next_slot) VALUES (?, 0, 0)", (stream,)
            )
        else:
            version, next_slot = int(row[0]), int(row[1])
        table = _Table(c, stream, next_slot)
        c.execute("SAVEPOINT write_index")
        for event in events:
            if event.version != version + 1 or not advance(table, event):
                # not the state before this event: left as it was, marked stale (rebuilt
                # from the fold before any use)
                c.execute("ROLLBACK TO write_index")
                version, table.next = -1, next_slot
                break
            version = event.version
        c.execute("RELEASE write_index")
        c.execute(
            "UPDATE write_index SET version = ?, next_slot = ? WHERE stream = ?",
            (version, table.next, stream),
        )

    def rebuild(self, doc: MemoryDocument) -> None:
        """Make the rows of `doc`'s stream exactly its active rows at its version."""
        c = self._conn
        stream = doc.stream
        c.execute(
            "DELETE FROM write_postings WHERE t IN (SELECT t FROM write_tokens WHERE stream = ?)",
            (stream,),
        )
        for table in ("write_tokens", "write_groups", "write_rows", "write_index"):
            c.execute(f"DELETE FROM {table} WHERE stream = ?", (stream,))
        from pi_hermes_memory.domain.memory.scope_index import group_of  # a write's (ADR 0110)
        from pi_hermes_memory.domain.search.similarity import token_set

        target = doc.target
        # row numbers and token numbers after every other stream's
        base = int(_one(c.execute("SELECT coalesce(max(n), 0) FROM write_rows").fetchone()))
        t_base = int(_one(c.execute("SELECT coalesce(max(t), 0) FROM write_tokens").fetchone()))
        rows: list[tuple[object, ...]] = []
        used: collections.Counter[str] = collections.Counter()
        postings: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
        for slot, entry in enumerate(doc.active):
            grp = _grp(group_of(target, entry))
            n = base + slot + 1
            key = _keyh(entry.key)
            rows.append((n, stream, entry.id, grp, slot, key, len(entry.text), encode_entry(entry)))
            used[grp] += len(entry.text)
            for token in token_set(entry.text):
                postings[(grp, token)].append(n)
        c.executemany(
            "INSERT INTO write_rows (n, stream, id, grp, slot, keyh, chars, entry) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        c.executemany(
            "INSERT INTO write_groups (stream, grp, used) VALUES (?, ?, ?)",
            [(stream, grp, u) for grp, u in used.items()],
        )
        tokens: list[tuple[object, ...]] = []
        pairs: list[tuple[int, int]] = []
        for t, ((grp, token), ns) in enumerate(sorted(postings.items()), start=t_base + 1):
            tokens.append((t, stream, grp, token, len(ns)))
            pairs.extend((t, n) for n in ns)
        c.executemany(
            "INSERT INTO write_tokens (t, stream, grp, token, holders) VALUES (?, ?, ?, ?, ?)",
            tokens,
        )
        pairs.sort()
        c.executemany("INSERT INTO write_postings (t, n) VALUES (?, ?)", pairs)
        c.execute(
            "INSERT INTO write_index (stream, version, next_slot) VALUES (?, ?, ?)",
            (stream, doc.version, len(doc.active)),
        )

    # -- reading it (a write's questions, `ScopeIndex`'s answers) -----------------------------

    def _entries(self, sql: str, params: Iterable[object]) -> list[MemoryEntry]:
        return [decode_entry(str(r[0])) for r in self._conn.execute(sql, tuple(params))]

    def active(self, stream: str) -> list[MemoryEntry]:
        """Every active row, in file order."""
        return self._entries(
            "SELECT entry FROM write_rows WHERE stream = ? ORDER BY slot", (stream,)
        )

    def rows(self, stream: str, group: str | None) -> list[MemoryEntry]:
        return self._entries(
            "SELECT entry FROM write_rows WHERE stream = ? AND grp = ? ORDER BY slot",
            (stream, _grp(group)),
        )

    def first(self, stream: str, group: str | None) -> MemoryEntry | None:
        found = self._entries(
            "SELECT entry FROM write_rows WHERE stream = ? AND grp = ? ORDER BY slot LIMIT 1",
            (stream, _grp(group)),
        )
        return found[0] if found else None

    def exact(self, stream: str, group: str | None, key: str) -> MemoryEntry | None:
        for entry in self._entries(
            "SELECT entry FROM write_rows WHERE stream = ? AND grp = ? AND keyh = ? ORDER BY slot",
            (stream, _grp(group), _keyh(key)),
        ):
            if entry.key == key:
                return entry
        return None

    def entry(self, stream: str, entry_id: str) -> MemoryEntry | None:
        found = self._entries(
            "SELECT entry FROM write_rows WHERE stream = ? AND id = ?", (stream, entry_id)
        )
        return found[0] if found else None

    def group_of_row(self, stream: str, entry_id: str) -> str | bool | None:
        """The group of the row `entry_id` (False: no such row)."""
        row = self._conn.execute(
            "SELECT grp FROM write_rows WHERE stream = ? AND id = ?", (stream, entry_id)
        ).fetchone()
        if row is None:
            return False
        grp = str(row[0])
        return None if grp == "" else grp[1:]

    def used(self, stream: str, group: str | None) -> int:
        row = self._conn.execute(
            "SELECT used FROM write_groups WHERE stream = ? AND grp = ?", (stream, _grp(group))
        ).fetchone()
        return 0 if row is None else int(row[0])

    def near_candidates(
        self, stream: str, group: str | None, tokens: frozenset[str]
    ) -> list[MemoryEntry]:
        """`ScopeIndex.near_candidates` over the persisted postings: the same prefix filter
        (the rarest tokens' holders, a hit count), so every row the near-duplicate rule could
        flag is among them."""
        # the near-duplicate rule: a write's, not loaded by open() and a search (ADR 0110)
        from pi_hermes_memory.domain.search.similarity import JACCARD_THRESHOLD

        if not tokens:
            return []
        grp = _grp(group)
        wanted = sorted(tokens)
        known: dict[str, tuple[int, int]] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for t, token, holders in self._conn.execute(
                f"SELECT t, token, holders FROM write_tokens "
                f"WHERE stream = ? AND grp = ? AND token IN ({marks})",
                (stream, grp, *chunk),
            ):
                known[str(token)] = (int(t), int(holders))
        need = math.ceil(JACCARD_THRESHOLD * len(tokens) - 1e-9)
        slack = len(tokens) - need
        sizes = sorted((known.get(tok, (0, 0))[1], tok) for tok in wanted)
        probed = slack + 1
        cost = sum(size for size, _ in sizes[:probed])
        budget = 2 * cost
        while probed < len(sizes) and cost + sizes[probed][0] <= budget:
            cost += sizes[probed][0]
            probed += 1
        hits = probed - slack
        counts: collections.Counter[int] = collections.Counter()
        for size, token in sizes[:probed]:
            if size:
                counts.update(
                    int(r[0])
                    for r in self._conn.execute(
                        "SELECT n FROM write_postings WHERE t = ?", (known[token][0],)
                    )
                )
        ns = sorted(n for n, count in counts.items() if count >= hits)
        found: list[MemoryEntry] = []
        for start in range(0, len(ns), 500):
            numbers = ns[start : start + 500]
            marks = ", ".join("?" for _ in numbers)
            sql = f"SELECT entry FROM write_rows WHERE n IN ({marks})"
            found.extend(self._entries(sql, numbers))
        return found
