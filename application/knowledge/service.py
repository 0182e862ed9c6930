"""The knowledge base: folders the user names, indexed for search (issue 15 §1, ADR 0048).

`KnowledgeBase.index` walks the configured roots (`KnowledgeSource`: hidden, `.gitignore`d,
binary and oversized files and symlinks leaving a root are skipped there) and brings the
`KnowledgeIndex` up to date incrementally: a file whose size and mtime are unchanged is not
read; a changed file is read, and re-chunked only when its content hash changed; files gone
from disk (deleted, renamed, now excluded) lose their chunks. Writes go in batches, each one
transaction, so an interrupted run keeps what it finished and the next run goes on from there.
A file that changes while it is read is read again once, else left for the next run (its old
chunks, if any, stay: never half a file). One run at a time (`KnowledgeIndex.run_lock`).

What is stored is scanned first (ADR 0063): every chunk goes through the memory write
scanner's secret rules, its secrets are replaced by markers before the index (its FTS table,
its vectors) sees them, and the run reports how many (`secrets_redacted`). What a search
returns (heading and snippet) goes through the whole scanner: instruction-like text and the
like is kept and the hit flagged (`flags`). A root that is `/`, the home directory, the agent
root, a memory folder or a system folder is refused (`KnowledgeRootRefused`, rules in
`domain.knowledge.roots`) before anything is read or searched. The index has a budget
(files, bytes): a run takes files in walk order while they fit, counts the rest, and its
report says what was left and how to raise it.

`KnowledgeBase.search` ranks chunks with FTS5 exactly like memory_search ranks memories (the
same terms for English and CJK); with embeddings on, the cosine ranking of the chunk vectors
is fused with it by the same weighted RRF and relevance floor (`HybridSettings`). Hits carry
path, line range, heading, snippet and score; presentation frames them as untrusted text.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.knowledge.chunks import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_FILE_BYTES,
    DEFAULT_INDEX_BYTES,
    DEFAULT_INDEX_FILES,
    chunk_text,
)
from pi_hermes_memory.domain.knowledge.redaction import redact_chunk, redact_private_keys
from pi_hermes_memory.domain.knowledge.roots import refused_root
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.errors import (
    InvalidArgument,
    KnowledgeBusy,
    KnowledgeNotConfigured,
    KnowledgeRootRefused,
)
from pi_hermes_memory.knowledge.hybrid import hybrid_knowledge_hits
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.ports.knowledge import (
    DEFAULT_KNOWLEDGE_LIMIT,
    FileChunks,
    KnowledgeHit,
    KnowledgeQuery,
    KnownFile,
    SourceFile,
)
from pi_hermes_memory.search.hybrid import HybridSettings

if TYPE_CHECKING:
    from pi_hermes_memory.ports.store import KnowledgeIndex, KnowledgeSource
    from pi_hermes_memory.search.embedding import EmbeddingService

MAX_KNOWLEDGE_LIMIT: Final = 20
#: files (or bytes of text) written per transaction
BATCH_FILES: Final = 64
BATCH_BYTES: Final = 8 * 1024 * 1024
#: chunks embedded per provider call
EMBED_BATCH: Final = 64
#: characters of a hit's snippet
SNIPPET_CHARS: Final = 240
#: files past the budget a run still counts (stat only) to say what was left out
COUNT_LEFT_FILES: Final = 100_000


@attrs.frozen(kw_only=True)
class ProtectedFolders:
    """The folders a knowledge root may not be (nor lie inside, nor hold: see
    `domain.knowledge.roots`), as configured."""

    home: str | None = None
    agent_root: str | None = None
    state_dirs: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class KnowledgeBudget:
    """The index's budget and, after a run, whether it was reached and what was left out."""

    max_files: int
    max_bytes: int
    exceeded: bool = False
    files_left: int = 0
    bytes_left: int = 0
    #: False when more files were left than `COUNT_LEFT_FILES` (the counts are then minimums)
    counted_all: bool = True

    def message(self, files: int, size: int) -> str:
        """What a person reads when the budget was reached (empty when it was not)."""
        if not self.exceeded:
            return ""
        more = "" if self.counted_all else "at least "
        return (
            f"The knowledge index reached its budget (knowledge.maxIndexFiles {self.max_files:,} "
            f"files, knowledge.maxIndexBytes {self.max_bytes:,} bytes): {files:,} files "
            f"({size:,} bytes) are indexed, {more}{self.files_left:,} files ({more}"
            f"{self.bytes_left:,} bytes) were left out. Raise knowledge.maxIndexFiles or "
            "knowledge.maxIndexBytes in the config file, or name narrower folders in "
            "knowledge.paths."
        )


@attrs.frozen(kw_only=True)
class KnowledgeProgress:
    files_seen: int
    files_indexed: int
    bytes_read: int
    seconds: float

    @property
    def mb_per_second(self) -> float:
        return self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0


@attrs.frozen(kw_only=True)
class KnowledgeReport:
    roots: tuple[str, ...]
    files_seen: int
    files_new: int
    files_changed: int
    files_unchanged: int
    files_removed: int
    files_deferred: int  # changed while read: left for the next run
    chunks_written: int
    vectors_written: int
    bytes_read: int
    seconds: float
    skipped: dict[str, int]
    #: secrets replaced by markers in the chunks written, and the chunks that held them
    secrets_redacted: int = 0
    chunks_redacted: int = 0
    #: the files and bytes the index holds after the run (what the budget counts)
    files_indexed: int = 0
    bytes_indexed: int = 0
    budget: KnowledgeBudget | None = None

    @property
    def mb_per_second(self) -> float:
        return self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0

    @property
    def budget_message(self) -> str:
        if self.budget is None:
            return ""
        return self.budget.message(self.files_indexed, self.bytes_indexed)

    @property
    def redaction_message(self) -> str:
        if not self.secrets_redacted:
            return ""
        return (
            f"{self.secrets_redacted} secrets in {self.chunks_redacted} chunks were replaced by "
            "[REDACTED rule] markers in the index (the files are unchanged); move the secrets "
            "out of the documents"
        )

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["roots"] = list(self.roots)
        out["seconds"] = round(self.seconds, 3)
        out["mb_per_second"] = round(self.mb_per_second, 2)
        if self.budget is not None:
            out["budget"]["message"] = self.budget_message
        return out


@attrs.frozen(kw_only=True)
class KnowledgeStats:
    roots: tuple[str, ...]
    missing_roots: tuple[str, ...]
    files: int
    chunks: int
    bytes: int
    vectors: int
    embeddings: bool
    last_run: dict[str, Any] | None
    #: secrets replaced by markers in the indexed chunks
    secrets_redacted: int = 0

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["roots"] = list(self.roots)
        out["missing_roots"] = list(self.missing_roots)
        return out


def check_knowledge_query(query: str, limit: int, path: str | None) -> None:
    if not isinstance(query, str):
        raise InvalidArgument(f"query must be a string; got {type(query).__name__}")
    if (
        isinstance(limit, bool)
        or not isinstance(limit, int)
        or not 1 <= limit <= (MAX_KNOWLEDGE_LIMIT)
    ):
        raise InvalidArgument(
            f"limit must be an integer from 1 to {MAX_KNOWLEDGE_LIMIT}; got {shown(limit)}"
        )
    if path is not None and (not isinstance(path, str) or not path.strip() or "\x00" in path):
        raise InvalidArgument("path must be a non-empty string (a path prefix or a glob)")


def snippet(text: str, query: str, size: int = SNIPPET_CHARS) -> str:
    """About `size` characters of `text` around the first query term it holds, on one line."""
    flat = " ".join(text.split())
    if len(flat) <= size:
        return flat
    terms = plan_terms(query)
    lower = flat.lower()
    at = min(
        (i for i in (lower.find(t.lower()) for t in (*terms.words, *terms.grams)) if i >= 0),
        default=0,
    )
    start = max(0, min(at - size // 3, len(flat) - size))
    piece = flat[start : start + size]
    return ("…" if start else "") + piece + ("…" if start + size < len(flat) else "")


def returned_flags(hit: KnowledgeHit) -> tuple[str, ...]:
    """The scanner's categories, secrets aside, in what a hit returns (heading and snippet):
    the text stays, the hit says what it holds (ADR 0063)."""
    from pi_hermes_memory.domain.scanning.scanner import ScanCategory, scan

    found = scan(f"{hit.heading or ''}\n{hit.snippet}").findings
    skip = (ScanCategory.SECRET, ScanCategory.OVERSIZE)
    return tuple(sorted({f.category.value for f in found if f.category not in skip}))


class _Batch:
    def __init__(self, index: KnowledgeIndex) -> None:
        self._index = index
        self.items: list[FileChunks] = []
        self.size = 0
        self.chunks = 0

    def add(self, item: FileChunks, size: int) -> None:
        self.items.append(item)
        self.size += size
        if len(self.items) >= BATCH_FILES or self.size >= BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.items:
            self.chunks += self._index.write(self.items)
            self.items, self.size = [], 0


class KnowledgeBase:
    """Index, search and describe the knowledge folders (see the module docstring)."""

    def __init__(
        self,
        *,
        roots: Sequence[str],
        source: KnowledgeSource,
        index: KnowledgeIndex,
        embeddings: EmbeddingService | None = None,
        hybrid: HybridSettings | None = None,
        max_file_bytes: int = DEFAULT_FILE_BYTES,
        max_chunk_chars: int = DEFAULT_CHUNK_CHARS,
        max_index_files: int = DEFAULT_INDEX_FILES,
        max_index_bytes: int = DEFAULT_INDEX_BYTES,
        protected: ProtectedFolders | None = None,
        logger: Any = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.roots = tuple(roots)
        self._max_index_files = max_index_files
        self._max_index_bytes = max_index_bytes
        self._protected = protected or ProtectedFolders()
        self._source = source
        self._index = index
        self._embeddings = embeddings
        self._hybrid = hybrid
        self._max_file_bytes = max_file_bytes
        self._max_chunk_chars = max_chunk_chars
        self._log = logger or library_logger()
        self._monotonic = monotonic

    def close(self) -> None:
        self._index.close()

    def _check_configured(self) -> None:
        if not self.roots:
            raise KnowledgeNotConfigured(
                "no knowledge folders are configured: set knowledge.paths in the config file "
                "or PI_MEMORY_KNOWLEDGE_PATHS (a JSON array of folders)"
            )
        self._check_roots()

    def _check_roots(self) -> None:
        """Raise KnowledgeRootRefused naming the first refused root and its rule."""
        guard = self._protected
        real = self._source.real_path

        def both(path: str | None) -> str | None:
            return real(path) if path else None

        for position, root in enumerate(self.roots):
            refusal = refused_root(
                root,
                real(root),
                home=guard.home,
                agent_root=guard.agent_root,
                state_dirs=guard.state_dirs,
                real_home=both(guard.home),
                real_agent_root=both(guard.agent_root),
                real_state_dirs=tuple(real(d) for d in guard.state_dirs),
            )
            if refusal is not None:
                raise KnowledgeRootRefused(
                    f"knowledge folder {shown(root, 200)} (entry {position + 1} of knowledge.paths"
                    f" / PI_MEMORY_KNOWLEDGE_PATHS) is refused by the rule {refusal.rule}: "
                    f"{refusal.reason}. Remove it from the configuration; nothing is indexed or "
                    "searched until then"
                )

    # -- indexing -------------------------------------------------------------------------

    def index(self, progress: Callable[[KnowledgeProgress], None] | None = None) -> KnowledgeReport:
        """Bring the index up to date with the folders (see the module docstring). Raises
        KnowledgeBusy when another process is indexing."""
        self._check_configured()
        with self._index.run_lock() as taken:
            if not taken:
                raise KnowledgeBusy(
                    "another process is indexing the knowledge base; try again when it is done"
                )
            report = self._run(progress)
        self._index.record_run(report.to_json())
        return report

    def _run(self, progress: Callable[[KnowledgeProgress], None] | None) -> KnowledgeReport:
        started = self._monotonic()
        skipped: Counter[str] = Counter()
        known = self._index.known()
        kept: set[str] = set()
        counts: Counter[str] = Counter()
        batch = _Batch(self._index)
        read = 0
        taken_files = taken_bytes = 0
        left_files = left_bytes = 0
        for file in self._source.scan(self.roots, skipped):
            if left_files or (
                taken_files + 1 > self._max_index_files
                or taken_bytes + file.size > self._max_index_bytes
            ):
                # over the budget: this file and every one after it are left out, counted
                left_files += 1
                left_bytes += file.size
                if left_files >= COUNT_LEFT_FILES:
                    break
                continue
            counts["seen"] += 1
            previous = known.get(file.path)
            if previous is not None and (previous.size, previous.mtime_ns) == (
                file.size,
                file.mtime_ns,
            ):
                kept.add(file.path)
                counts["unchanged"] += 1
                taken_files += 1
                taken_bytes += file.size
                if (previous.root, previous.rel) != (file.root, file.rel):
                    # the same file under another configured folder: its path below it changed
                    batch.add(FileChunks(file=file, sha256=previous.sha256, chunks=None), 0)
                continue
            outcome = self._read(file)
            if isinstance(outcome, str):
                skipped[outcome] += 1
                if outcome == "changing" and previous is not None:
                    kept.add(file.path)  # its old chunks stay until a read that stands still
                continue
            current, data, text = outcome
            kept.add(file.path)
            read += len(data)
            taken_files += 1
            taken_bytes += len(data)
            sha = hashlib.sha256(data).hexdigest()
            if previous is not None and previous.sha256 == sha:
                batch.add(FileChunks(file=current, sha256=sha, chunks=None), 0)
                counts["unchanged"] += 1
            else:
                chunks = tuple(
                    redact_chunk(c)
                    for c in chunk_text(
                        redact_private_keys(text), file.kind, max_chars=self._max_chunk_chars
                    )
                )
                for chunk in chunks:
                    counts["secrets"] += chunk.redacted
                    counts["chunks_redacted"] += chunk.redacted > 0
                batch.add(FileChunks(file=current, sha256=sha, chunks=chunks), len(data))
                counts["changed" if previous is not None else "new"] += 1
            if progress is not None:
                progress(
                    KnowledgeProgress(
                        files_seen=counts["seen"],
                        files_indexed=counts["new"] + counts["changed"],
                        bytes_read=read,
                        seconds=self._monotonic() - started,
                    )
                )
        batch.flush()
        # a configured folder that is missing now (an unmounted disk) keeps its chunks
        missing = {self._source.real_path(r) for r in self.roots if not self._source.is_dir(r)}
        gone = [p for p, f in known.items() if p not in kept and f.root not in missing]
        removed = self._index.remove(gone) if gone else 0
        vectors = self._embed_missing()
        deferred = skipped.pop("changing", 0)
        budget = KnowledgeBudget(
            max_files=self._max_index_files,
            max_bytes=self._max_index_bytes,
            exceeded=left_files > 0,
            files_left=left_files,
            bytes_left=left_bytes,
            counted_all=left_files < COUNT_LEFT_FILES,
        )
        if budget.exceeded:
            self._log.warning(
                "knowledge_budget_reached",
                files_indexed=taken_files,
                files_left=left_files,
                max_files=self._max_index_files,
                max_bytes=self._max_index_bytes,
            )
        return KnowledgeReport(
            roots=self.roots,
            files_seen=counts["seen"],
            files_new=counts["new"],
            files_changed=counts["changed"],
            files_unchanged=counts["unchanged"],
            files_removed=removed,
            files_deferred=deferred,
            chunks_written=batch.chunks,
            vectors_written=vectors,
            bytes_read=read,
            seconds=self._monotonic() - started,
            skipped=dict(sorted(skipped.items())),
            secrets_redacted=counts["secrets"],
            chunks_redacted=counts["chunks_redacted"],
            files_indexed=taken_files,
            bytes_indexed=taken_bytes,
            budget=budget,
        )

    def _read(self, file: SourceFile) -> tuple[SourceFile, bytes, str] | str:
        """The file's bytes and text, read while it stood still (two tries), or why not:
        too_large, unreadable, binary (a NUL byte in the first 8 KiB, or not UTF-8) or
        changing (it changed during both reads)."""
        if file.size > self._max_file_bytes:
            return "too_large"
        for _ in range(2):
            got = self._source.read(file, self._max_file_bytes)
            if got is None:
                return "unreadable"
            current, data = got
            if current is None:
                continue  # it changed while read
            if current.size > self._max_file_bytes:
                return "too_large"
            if b"\x00" in data[:8192]:
                return "binary"
            try:
                return current, data, data.decode("utf-8-sig")
            except UnicodeDecodeError:
                return "binary"
        return "changing"

    def _embed_missing(self) -> int:
        embeddings = self._embeddings
        if embeddings is None:
            return 0
        written = 0
        model = embeddings.model_id
        while True:
            rows = self._index.missing_vectors(model, EMBED_BATCH)
            if not rows:
                return written
            matrix = embeddings.try_embed([text for _, text in rows], "passage")
            if matrix is None:  # the provider failed: logged; the next run goes on
                return written
            written += self._index.put_vectors(model, [cid for cid, _ in rows], matrix)

    # -- search ---------------------------------------------------------------------------

    def search(
        self, query: str, *, limit: int = DEFAULT_KNOWLEDGE_LIMIT, path: str | None = None
    ) -> list[KnowledgeHit]:
        """The best `limit` chunks for `query` (see the module docstring)."""
        check_knowledge_query(query, limit, path)
        self._check_configured()
        if not plan_terms(query):
            raise InvalidArgument(
                "query has nothing to search for: it must contain at least one word (letters "
                "or digits)"
            )
        wanted = KnowledgeQuery(
            text=query, limit=limit, path=self._real_filter(path), roots=self._stale_roots()
        )
        hits = self._ranked(wanted)
        shown = [attrs.evolve(h, snippet=snippet(h.text, query)) for h in hits]
        return [attrs.evolve(h, flags=returned_flags(h)) for h in shown]

    def _stale_roots(self) -> tuple[str, ...] | None:
        """The configured folders' real paths when the index still holds files of a folder no
        longer configured (until the next run removes them, a search leaves them out), else
        None (no restriction: the usual case costs nothing in the search)."""
        configured = {self._source.real_path(r) for r in self.roots}
        if self._index.roots() <= configured:
            return None
        return tuple(sorted(configured))

    def _real_filter(self, path: str | None) -> str | None:
        """An absolute filter written below a configured folder that is (or passes through) a
        symlink, rewritten below its real path: the index keeps real paths. A relative filter
        loses a leading "./" (`./docs/` is `docs/`)."""
        if path is None:
            return None
        if not path.startswith("/"):
            while path.startswith("./") and len(path) > 2:
                path = path[2:].lstrip("/")
            return path
        for root in self.roots:
            base = root.rstrip("/")
            if not base or not (path == base or path.startswith(base + "/")):
                continue
            real = self._source.real_path(root).rstrip("/")
            if real != base:
                return real + path[len(base) :]
        return path

    def _ranked(self, query: KnowledgeQuery) -> list[KnowledgeHit]:
        embeddings = self._embeddings
        if embeddings is None:
            return self._index.search(query)

        return hybrid_knowledge_hits(
            query,
            index=self._index,
            embeddings=embeddings,
            settings=self._hybrid or HybridSettings(),
        )

    # -- stats ----------------------------------------------------------------------------

    def stats(self) -> KnowledgeStats:
        self._check_configured()
        counts = self._index.counts(self._embeddings.model_id if self._embeddings else None)
        return KnowledgeStats(
            roots=self.roots,
            missing_roots=tuple(r for r in self.roots if not self._source.is_dir(r)),
            files=counts["files"],
            chunks=counts["chunks"],
            bytes=counts["bytes"],
            vectors=counts["vectors"],
            embeddings=self._embeddings is not None,
            last_run=self._index.last_run(),
            secrets_redacted=counts.get("redacted", 0),
        )


__all__ = [
    "DEFAULT_KNOWLEDGE_LIMIT",
    "MAX_KNOWLEDGE_LIMIT",
    "FileChunks",
    "KnowledgeBase",
    "KnowledgeBudget",
    "KnowledgeBusy",
    "KnowledgeHit",
    "KnowledgeNotConfigured",
    "KnowledgeProgress",
    "KnowledgeQuery",
    "KnowledgeReport",
    "KnowledgeRootRefused",
    "KnowledgeStats",
    "KnownFile",
    "ProtectedFolders",
    "SourceFile",
    "snippet",
]
