"""Ports: what the application needs from the world. Adapters satisfy them structurally."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# Signatures only: numpy loads only where vectors are used (bootstrap with embeddings on), and
# the value types with the modules that use them, so importing this port does not load every
# other port (issue 29, ADR 0080).
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from pi_hermes_memory.domain.history.transcripts import (
        FileProgress,
        MessageLine,
        SessionChunk,
        SessionFile,
    )
    from pi_hermes_memory.domain.memory.document import MemoryDocument
    from pi_hermes_memory.domain.memory.events import Event
    from pi_hermes_memory.domain.memory.markdown_doc import ParsedDocument, VersionLine
    from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
    from pi_hermes_memory.ports.history import (
        AnchorLine,
        AnchorQuery,
        IndexCounts,
        SessionHit,
        SessionQuery,
    )
    from pi_hermes_memory.ports.knowledge import (
        FileChunks,
        KnowledgeHit,
        KnowledgeQuery,
        KnownFile,
        SourceFile,
    )
    from pi_hermes_memory.ports.memory import RebuildReport, ScrubReport
    from pi_hermes_memory.ports.search import SearchHit, SearchQuery
    from pi_hermes_memory.ports.vectors import EmbeddingKind, VectorScope


__all__ = [
    "UNCHECKED",
    "AppendingMarkdown",
    "Clock",
    "DocumentFormat",
    "Embedder",
    "IdFactory",
    "Journal",
    "KnowledgeIndex",
    "KnowledgeSource",
    "MarkdownStore",
    "Projection",
    "RenderLedger",
    "ReplicaProofs",
    "Replicas",
    "SearchIndex",
    "SessionIndex",
    "SessionSource",
    "Storage",
    "UnitOfWork",
    "VectorStore",
    "WriteIndex",
]

#: `MarkdownStore.write(expected=...)` default: replace whatever the file holds
UNCHECKED: object = object()


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class IdFactory(Protocol):
    def new_id(self) -> str:
        """A new, unique, sortable entry id."""
        ...


class Journal(Protocol):
    """The durable, append-only event journal (inside a unit of work)."""

    def append(self, stream: str, expected_version: int, events: Sequence[Event]) -> None:
        """Append `events`; raise VersionConflict if the stream is not at `expected_version`."""
        ...

    def read(self, stream: str, after: int = 0, upto: int | None = None) -> Sequence[Event]:
        """Events of `stream` with after < version <= upto, in order."""
        ...

    def version(self, stream: str) -> int: ...

    def streams(self, prefix: str) -> Sequence[str]:
        """The streams with at least one event whose id starts with `prefix`, sorted."""
        ...

    def snapshot(self, stream: str) -> tuple[int, str] | None:
        """The stored snapshot of `stream`'s folded state: (version, data), or None.

        Snapshots are an opaque cache of the fold (`pi_hermes_memory.journal.snapshots`), kept
        for the head only: one per stream, replaced by `save_snapshot` (ADR 0024)."""
        ...

    def snapshot_version(self, stream: str) -> int | None:
        """The version of `stream`'s stored snapshot, or None: `snapshot`'s first item without
        reading its data (megabytes for a large document; ADR 0106)."""
        ...

    def save_snapshot(self, stream: str, version: int, data: str) -> None:
        """Store `data` as the snapshot of `stream` at `version`, replacing the previous one;
        in the unit of work's transaction, so it commits with the events it folds."""
        ...

    def redact(self, events: Sequence[Event]) -> None:
        """Overwrite stored events in place with these redacted copies (a purge, ADR 0026: the
        one exception to append-only). Each must have the stream, version and type of a stored
        event; raise VersionConflict (writing nothing) for one that has none."""
        ...


class Projection(Protocol):
    """Read models kept in the same transaction as the journal (SQLite tables, FTS)."""

    def apply(self, events: Sequence[Event]) -> None: ...

    def rebuild(self, documents: Sequence[MemoryDocument]) -> RebuildReport:
        """Make the rows of these documents' targets equal to their folded state (insert the
        missing, update the different, delete active rows the state lacks; superseded rows the
        state lacks are kept); see `pi_hermes_memory.memory.mirror`."""
        ...


class RenderLedger(Protocol):
    """What was last written to each replica of a document: (version, sha256 of the bytes).

    A replica is one Markdown file of a stream (`MarkdownStore.replica`): several agent roots
    may share one journal, each with its own files, and each file's renders are recorded on
    their own, so a render by one is never taken for a hand edit by another (ADR 0022).
    """

    def rendered(self, stream: str, replica: str) -> tuple[int, str] | None: ...

    def record(self, stream: str, replica: str, version: int, sha256: str) -> None: ...

    def store_id(self) -> str:
        """A stable identity of this journal, written into every rendered file: lowercase hex
        (the Markdown version line reads only hex; anything else makes the line unreadable)."""
        ...


class UnitOfWork(Protocol):
    @property
    def journal(self) -> Journal: ...

    @property
    def projection(self) -> Projection: ...

    @property
    def ledger(self) -> RenderLedger: ...


class WriteIndex(Protocol):
    """The persisted write index of the memory streams (ADR 0084): each stream's active rows
    grouped for the write rules, advanced by `Projection.apply` in the same transaction. A
    storage that keeps one exposes it as its unit of work's `write_index`;
    the others decide on the folded document."""

    def version(self, stream: str) -> int | None:
        """The journal version the rows reflect (None: never built). Only an index at the
        journal's version may be used; any other is rebuilt from the fold."""
        ...

    def rebuild(self, doc: MemoryDocument) -> None: ...

    def active(self, stream: str) -> list[MemoryEntry]: ...

    def rows(self, stream: str, group: str | None) -> list[MemoryEntry]: ...

    def first(self, stream: str, group: str | None) -> MemoryEntry | None: ...

    def exact(self, stream: str, group: str | None, key: str) -> MemoryEntry | None: ...

    def entry(self, stream: str, entry_id: str) -> MemoryEntry | None: ...

    def group_of_row(self, stream: str, entry_id: str) -> str | bool | None:
        """The group of the row `entry_id`; False when no active row has it."""
        ...

    def used(self, stream: str, group: str | None) -> int: ...

    def near_candidates(
        self, stream: str, group: str | None, tokens: frozenset[str]
    ) -> list[MemoryEntry]: ...


class Storage(Protocol):
    """The transactional store: one `transaction()` is one BEGIN IMMEDIATE … COMMIT."""

    def transaction(self) -> AbstractContextManager[UnitOfWork]: ...

    def snapshot(self) -> AbstractContextManager[UnitOfWork]:
        """A read-only unit of work on one consistent state that never waits for a writer
        (SQLite: a deferred read transaction on the WAL snapshot). Nothing may be written
        through it (ADR 0024)."""
        ...

    def erasing(self) -> AbstractContextManager[UnitOfWork]:
        """A write transaction (like `transaction()`) whose deletions and overwrites leave no
        readable remains in the storage's files (SQLite: `secure_delete`), for a purge."""
        ...

    def scrub(self) -> ScrubReport:
        """After an `erasing()` transaction committed: remove the older copies of what it
        erased that the storage keeps (index segments, the write-ahead log, its own copies of
        the journal), and name the copies it must not touch (ADR 0026)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class AppendingMarkdown(Protocol):
    """A `MarkdownStore` that can write a render appending entries to the one on disk
    without rewriting it from the rows (ADR 0088; `MarkdownFiles`)."""

    def append(
        self, target: Target, tail: bytes, rendered: str, *, expected: object = UNCHECKED
    ) -> tuple[str, int, object | None] | None:
        """Write the render that is the one on disk (whose sha256 is `rendered`) with the
        entries of `tail` (our render of them alone under the new version line) appended,
        byte for byte what `write` writes for it; (its sha256, its size, the file's `stamp`
        when it is provably the file just written, else None: ADR 0100), or None with
        nothing written when the files on disk are not that render (render it in full)."""
        ...


class MarkdownStore(Protocol):
    """The Markdown documents, one per target, and the store-wide write lock."""

    def read(self, target: Target) -> bytes | None: ...

    def write(self, target: Target, data: bytes, *, expected: object = UNCHECKED) -> None:
        """Replace the document's bytes. `expected`: the `stamp` the file had when it was read;
        if it changed since (a person saved meanwhile), raise `MarkdownChanged` and leave the
        file alone, checking as late as possible (just before the replace)."""
        ...

    def lock(self, timeout: float = 30.0) -> AbstractContextManager[object]: ...

    def describe(self, target: Target) -> str:
        """A human-readable location of the document (for messages)."""
        ...

    def replica(self, target: Target) -> str:
        """The identity of this document's file among every replica of the journal (e.g. its
        resolved path): two stores on one journal must name their files differently."""
        ...

    def distinct_roots(self) -> bool:
        """Whether the global and the project documents live under different physical roots."""
        ...

    def stamp(self, target: Target) -> object:
        """A cheap change token (e.g. mtime, size, inode); equal tokens mean "unchanged"."""
        ...


class DocumentFormat(Protocol):
    """Renders and parses the Markdown byte format."""

    def render(
        self, entries: Sequence[MemoryEntry], target: Target, *, stamp: VersionLine | None = None
    ) -> str:
        """The file content; with `stamp`, a first line naming what it was rendered from."""
        ...

    def parse(self, text: str, target: Target) -> ParsedDocument: ...

    def learn(self, data: bytes, target: Target) -> None:
        """The file's bytes as read, before any render: a format may keep the spelling it
        finds there (the TypeScript extension's `project64=`, ADR 0027)."""
        ...


class SearchIndex(Protocol):
    """Full-text search over the memory read model (SQLite FTS5, or in memory); read-only.

    Returns the best `query.limit` rows that match at least one term of `query.text` and the
    scope predicate of `query` (clauses, category, active unless include_superseded), applied
    before the limit; rows matching every term first, then by score (> 0, higher is better),
    ties: the larger id first. Any text is a valid query: it never raises for what was typed.
    See `pi_hermes_memory.testing.SearchIndexContract`.
    """

    def search(self, query: SearchQuery) -> list[SearchHit]: ...

    def rows(self, ids: Iterable[str], query: SearchQuery) -> list[SearchHit]:
        """The rows with these ids that `query`'s scope predicate admits (its text and limit
        are ignored), in `ids` order, score 0.0: the hybrid search reads the rows only the
        cosine ranking found this way. Unknown or out-of-scope ids are left out."""
        ...


class Embedder(Protocol):
    """Turns texts into vectors (an embedding provider, or a local model).

    `embed` returns a float32 matrix of shape (len(texts), dimension), row i for texts[i],
    L2-normalised; it raises `pi_hermes_memory.errors.EmbeddingFailed` (never anything else for
    a provider problem) with a message that carries no secret. `model_id` is the identity stored
    with every vector (`openai-compatible/<model>`); `dimension` is None until known.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int | None: ...

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind) -> NDArray[np.float32]: ...


class VectorStore(Protocol):
    """The vector cache of the memory rows (ADR 0015): one optional vector per row id, stored
    with the model id that made it. Not journaled: writing a vector is no domain event.

    A row's vector is *current* when it was stored with `model_id`, has `dimension` components
    (when given), and the row still holds the text it was computed from; anything else counts
    as missing. Every method applies `scope` (the search predicate) itself. Row ids are
    time-ordered, so "newest first" is descending id order.
    """

    def missing(
        self,
        scope: VectorScope,
        model_id: str,
        *,
        dimension: int | None = None,
        limit: int,
        before: str | None = None,
        everything: bool = False,
    ) -> list[tuple[str, str]]:
        """(id, text) of up to `limit` in-scope rows lacking a current vector, newest first,
        only ids < `before` when given; `everything`: every in-scope row, current or not."""
        ...

    def count(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[int, int]:
        """(in-scope rows, of which with a current vector)."""
        ...

    def put(
        self, rows: Sequence[tuple[str, str]], vectors: NDArray[np.float32], model_id: str
    ) -> int:
        """Store `vectors[i]` for `rows[i]` = (id, text), only where the row still exists and
        holds that text (a row rewritten meanwhile keeps no stale vector); returns how many
        were stored. One short write transaction; never called under the store lock."""
        ...

    def vectors(
        self, ids: Iterable[str], model_id: str, *, dimension: int | None = None
    ) -> dict[str, NDArray[np.float32]]:
        """The current vectors of these ids (ids without one are absent)."""
        ...

    def candidates(
        self, scope: VectorScope, model_id: str, *, dimension: int | None = None
    ) -> tuple[tuple[str, ...], NDArray[np.float32]]:
        """Ids and the (n, dimension) matrix of the in-scope rows with a current vector (of
        one dimension: `dimension`, else the first row's), in no particular order. May be
        served from a cache that any write to the rows invalidates; callers must not modify
        the matrix."""
        ...

    def background(
        self, model_id: str, sample: str, *, dimension: int | None = None
    ) -> NDArray[np.float32] | None:
        """The (n, dimension) vectors of the background sample `sample` (its digest) that
        `model_id` made (ADR 0069), or None when none are stored for that model and sample
        (or they have another dimension than `dimension`, when given)."""
        ...

    def put_background(self, model_id: str, sample: str, vectors: NDArray[np.float32]) -> None:
        """Store the background sample's vectors for `model_id`, replacing what was stored
        for that model (another sample's or another dimension's). One short write
        transaction; never called under the store lock."""
        ...


class SessionSource(Protocol):
    """Where session files come from (default: the Pi sessions tree, ADR 0020). Paths are
    the source's canonical spelling of a file: `files()` and `stat()` agree on it."""

    def files(self) -> Iterable[SessionFile]:
        """Every session file now present, with its identity (size, mtime, device, inode)."""
        ...

    def stat(self, path: str) -> SessionFile | None:
        """The file at `path` (any spelling; the result carries the canonical one), or None
        when it does not exist or is not a regular file."""
        ...

    def read(self, path: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes from `offset` (fewer at the end of the file); OSError when the
        file cannot be read."""
        ...


class SessionIndex(Protocol):
    """The derived index of session turns (SQLite FTS5, or in memory).

    Each `apply` is atomic: a file's progress and its new turns commit together, so the stored
    progress always describes exactly what was indexed. Searches never raise for what was
    typed. See `pi_hermes_memory.testing.SessionIndexContract`.
    """

    def files(self) -> dict[str, FileProgress]:
        """The progress of every indexed file, by path."""
        ...

    def progress_of(self, path: str) -> FileProgress | None: ...

    def apply(self, chunk: SessionChunk) -> None:
        """Store one chunk: drop the file's session and turns first when `chunk.reset`;
        otherwise raise `StaleProgress` (writing nothing) unless the stored offset of the file
        (0 when it is not indexed) equals `chunk.start`; save
        `chunk.progress`; create the file's session (id from the header, else
        `chunk.fallback_id`) when it has a header or turns; let a header set the session's
        id, cwd, project and start; append the turns with the next turn ordinals."""
        ...

    def forget(self, paths: Sequence[str]) -> int:
        """Drop these files with their sessions and turns; returns how many were indexed."""
        ...

    def record(
        self, *, session_id: str, cwd: str | None, project: str | None, message: MessageLine
    ) -> int:
        """Append a turn to the recorded (file-less) session `session_id`, creating it with
        `cwd`/`project` when new; returns the turn's ordinal (also its line)."""
        ...

    def unrecord(self, *, session_id: str, keep: int) -> int:
        """Drop the turns of the recorded (file-less) session `session_id` past its first
        `keep` (with 0, the session too): they leave search. Returns how many were dropped;
        0 for an unknown session."""
        ...

    def reproject(self, project_of: Callable[[str | None], str | None]) -> int:
        """Set the project of every file session to `project_of(cwd)`; returns how many
        changed. Recorded sessions keep theirs."""
        ...

    def search(self, query: SessionQuery) -> list[SessionHit]:
        """The `prefer` project's sessions first, then the others; within each, sessions with
        a turn matching every required term first, then sessions with a turn matching any
        other (non-weak) term, each group by best turn score. Filters (project, role) apply
        before the limit. A session's matching turns are its best among the query's best
        turns (at least one)."""
        ...

    def anchor_lines(self, query: AnchorQuery) -> list[AnchorLine]: ...

    def counts(self) -> IndexCounts: ...


class KnowledgeSource(Protocol):
    """The knowledge folders on disk (ADR 0048)."""

    def scan(self, roots: Sequence[str], skipped: Counter[str]) -> Iterator[SourceFile]:
        """Every document below `roots` (real paths, each once), counting what was left out
        by reason in `skipped` (hidden, gitignored, unsupported, symlink_outside, …)."""
        ...

    def read(self, file: SourceFile, max_bytes: int) -> tuple[SourceFile | None, bytes] | None:
        """At most `max_bytes + 1` bytes of the file with its size and mtime after the read
        (None in place of the file when they differ from before it: it changed while read);
        None when it cannot be read (gone, no permission)."""
        ...

    def is_dir(self, path: str) -> bool: ...

    def real_path(self, path: str) -> str: ...


class KnowledgeIndex(Protocol):
    """The derived, rebuildable index of the knowledge chunks (ADR 0048)."""

    def run_lock(self) -> AbstractContextManager[bool]:
        """Taken without waiting; yields whether it was taken (one indexer at a time)."""
        ...

    def known(self) -> dict[str, KnownFile]:
        """Every indexed file by real path."""
        ...

    def roots(self) -> frozenset[str]:
        """The (real) folders the indexed files were found under."""
        ...

    def write(self, items: Sequence[FileChunks]) -> int:
        """Replace the chunks of these files (or only their size/mtime where `chunks` is
        None), in one transaction; returns the chunks written."""
        ...

    def remove(self, paths: Sequence[str]) -> int:
        """Drop these files and their chunks; returns how many were indexed."""
        ...

    def search(self, query: KnowledgeQuery) -> list[KnowledgeHit]:
        """Chunks matching every required term first, then any informative term, each tier
        by bm25; the path filter applies before the limit."""
        ...

    def hits(self, ids: Sequence[int], query: KnowledgeQuery) -> list[KnowledgeHit]:
        """These chunks (score 0), those passing the query's path filter."""
        ...

    def missing_vectors(self, model_id: str, limit: int) -> list[tuple[int, str]]: ...

    def put_vectors(
        self, model_id: str, ids: Sequence[int], matrix: NDArray[np.float32]
    ) -> int: ...

    def vectors(self, model_id: str) -> tuple[tuple[int, ...], NDArray[np.float32]]: ...

    def counts(self, model_id: str | None) -> dict[str, int]:
        """files, chunks, bytes, vectors (of `model_id`) and redacted (the secrets replaced in
        the chunks, summed)."""
        ...

    def record_run(self, report: dict[str, Any]) -> None: ...

    def last_run(self) -> dict[str, Any] | None: ...

    def close(self) -> None: ...


class ReplicaProofs(Protocol):
    """Proofs, kept outside the store, that a replica is unchanged since it was last read and
    hashed (ADR 0089): the digest recorded for the replica's exact current stamp saves reading
    and hashing it again. A hint only: None always means "read it"."""

    def token(self, stream: str) -> object | None:
        """The replica's full change stamp, taken before a read; None when it has none."""
        ...

    def proven(self, stream: str) -> str | None:
        """The sha256 recorded for the replica's current stamp, or None."""
        ...

    def prove(self, stream: str, token: object, digest: str) -> None:
        """Record that the replica read as `digest` while it had `token` (when it still has it
        and is old enough to trust its stamp); failures are silent."""
        ...


class Replicas(Protocol):
    """The files of one kind of document, addressed by stream: one replica per stream, as
    bytes (a document of several files is one byte string the adapter maps onto its files)."""

    def read(self, stream: str) -> bytes | None:
        """The replica's bytes, or None when it does not exist (a kind whose empty document
        means "absent", such as a skill folder, may answer its empty document, ``b""``).
        Raises `MarkdownUnreadable` when it exists but cannot be used (too large, …)."""
        ...

    def write(self, stream: str, data: bytes, *, expected: object = UNCHECKED) -> None:
        """Replace the replica; with `expected` (a `stamp`), raise `MarkdownChanged` and leave
        it alone when it changed since it was read."""
        ...

    def stamp(self, stream: str) -> object:
        """A cheap change token; equal tokens mean "unchanged"."""
        ...

    def describe(self, stream: str) -> str:
        """A human-readable location (for messages)."""
        ...

    def replica(self, stream: str) -> str:
        """This replica's identity among every replica of the journal (the render ledger key)."""
        ...
