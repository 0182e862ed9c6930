"""The memory service: load state, import hand edits, decide, append, project, render.

Every write runs under the store-wide file lock (so Markdown writes of several processes never
interleave), inside one IMMEDIATE transaction (events, SQLite rows, FTS and the render ledger
commit together), and renders the touched Markdown documents before the lock is released
(ADR 0002). A crash anywhere leaves the journal authoritative; the next operation converges.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from pi_hermes_memory.domain.capacity import OverflowStrategy
from pi_hermes_memory.domain.commands import (
    AddMemory,
    MemoryCommand,
    MoveMemory,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.decide import Decision, WritePolicy, decide
from pi_hermes_memory.domain.document import (
    MemoryDocument,
    WorkingDocument,
    fold,
    forget,
    stream_for,
)
from pi_hermes_memory.domain.events import Event
from pi_hermes_memory.domain.markdown_doc import VersionLine
from pi_hermes_memory.domain.model import GLOBAL_NAMESPACE, MemoryEntry, Target
from pi_hermes_memory.domain.move import MoveDecision, decide_move, move_subject
from pi_hermes_memory.domain.purge import PurgeIndex, PurgePlan, newest_version, plan_purge
from pi_hermes_memory.domain.purge import index as purge_index
from pi_hermes_memory.domain.purge import select as select_purge
from pi_hermes_memory.domain.reconcile import reconcile
from pi_hermes_memory.domain.restore import (
    RemovedEntry,
    decide_restore,
    restorable,
    select_restorable,
)
from pi_hermes_memory.domain.scanning import scan
from pi_hermes_memory.domain.scope import SessionScope
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import MarkdownChanged, MarkdownUnreadable
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.ports import (
    UNCHECKED,
    Clock,
    DocumentFormat,
    IdFactory,
    MarkdownStore,
    Storage,
    UnitOfWork,
)
from pi_hermes_memory.purging import PurgeResult
from pi_hermes_memory.results import CandidateView, EntryView, WriteResult
from pi_hermes_memory.search import ScopeClause
from pi_hermes_memory.snapshot_codec import CorruptSnapshot, decode_document, encode_document
from pi_hermes_memory.tools import MAX_BATCH_OPERATIONS, ArgumentError
from pi_hermes_memory.vectors import VectorScope

if TYPE_CHECKING:  # imports numpy: loaded by bootstrap only when embeddings are on
    from pi_hermes_memory.embedding import EmbeddingService, PreparedWrites

_R = TypeVar("_R")
#: A stream's folded state is stored every this many events (ADR 0024).
SNAPSHOT_EVERY = 500


@attrs.frozen(kw_only=True)
class MemorySettings:
    scope: SessionScope
    limits: dict[Target, int]
    overflow: OverflowStrategy = OverflowStrategy.AUTO_CONSOLIDATE
    consolidation_available: bool = False

    def policy(self, target: Target) -> WritePolicy:
        return WritePolicy(
            scope=self.scope,
            char_limit=self.limits[target],
            overflow=self.overflow,
            consolidation_available=self.consolidation_available,
        )


#: the file of a document could not be read (`MarkdownUnreadable`): never rewritten
_BLOCKED = "<unreadable>"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class MemoryService:
    def __init__(
        self,
        *,
        storage: Storage,
        markdown: MarkdownStore,
        fmt: DocumentFormat,
        clock: Clock,
        ids: IdFactory,
        settings: MemorySettings,
        logger: Any = None,
        lock_timeout: float = 30.0,
        embeddings: EmbeddingService | None = None,
    ) -> None:
        self._storage = storage
        self._markdown = markdown
        self._fmt = fmt
        self._clock = clock
        self._ids = ids
        self.settings = settings
        self._log = logger or library_logger()
        self._lock_timeout = lock_timeout
        #: vectors of the rows (ADR 0015); None: embeddings are off, search is FTS-only
        self.embeddings = embeddings
        self._docs: dict[Target, MemoryDocument] = {}
        self._stamps: dict[Target, object] = {}  # file change tokens after our last sync
        self._store: str | None = None  # the journal's identity, read once
        self._seen: dict[Target, object] = {}  # file stamps as read by the last import
        self._snapshotted: dict[str, int] = {}  # stream -> version of its stored snapshot
        # the most recent warnings (hand-edit imports, …), bounded for long-running hosts
        self.warnings: collections.deque[str] = collections.deque(maxlen=200)

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- state ----------------------------------------------------------------------------

    def _catch_up(self, uow: UnitOfWork, target: Target) -> MemoryDocument:
        doc = self._docs.get(target) or self._from_snapshot(uow, target)
        return fold(doc, uow.journal.read(doc.stream, after=doc.version))

    def _from_snapshot(self, uow: UnitOfWork, target: Target) -> MemoryDocument:
        """The stream's stored snapshot, else the empty document (ADR 0024): opening costs
        the live state plus the events after the snapshot, not all history. A snapshot that
        does not decode, or does not fit the journal, is ignored: the events are the truth."""
        empty = MemoryDocument.empty(target)
        stored = uow.journal.snapshot(empty.stream)
        if stored is None:
            return empty
        version, data = stored
        try:
            doc = decode_document(data)
            if doc.stream != empty.stream or doc.version != version:
                raise CorruptSnapshot(f"it names {doc.stream} v{doc.version}")
            if version > uow.journal.version(empty.stream):
                raise CorruptSnapshot(f"it is ahead of the journal (v{version})")
        except CorruptSnapshot as exc:
            self._log.warning("snapshot.ignored", stream=empty.stream, error=str(exc))
            return empty
        self._snapshotted[empty.stream] = version
        return doc

    def _keep_snapshots(self, uow: UnitOfWork, docs: dict[Target, MemoryDocument]) -> None:
        """Inside the write transaction: store a document's folded state once
        SNAPSHOT_EVERY events have been appended since its last snapshot."""
        for doc in docs.values():
            last = self._snapshotted.get(doc.stream)
            if last is None:
                stored = uow.journal.snapshot(doc.stream)
                last = self._snapshotted[doc.stream] = stored[0] if stored else 0
            if doc.version - last >= SNAPSHOT_EVERY:
                uow.journal.save_snapshot(doc.stream, doc.version, encode_document(doc))
                self._snapshotted[doc.stream] = doc.version

    def _settled(self, targets: Sequence[Target]) -> dict[Target, MemoryDocument] | None:
        """The documents read on a snapshot, without the store lock, when every file is what
        the ledger recorded for the head: no hand edit to import, no render to finish. None
        when one needs the write path. Readers never wait for writers (ADR 0024)."""
        with self._storage.snapshot() as uow:
            docs = {t: self._catch_up(uow, t) for t in targets}
            for target, doc in docs.items():
                try:
                    data = self._markdown.read(target)
                except (MarkdownUnreadable, OSError):
                    return None  # the write path reports it
                if data is None:
                    return None
                replica = self._markdown.replica(target)
                if uow.ledger.rendered(doc.stream, replica) != (doc.version, sha256(data)):
                    return None
        self._docs.update(docs)
        self._remember_stamps(docs)
        return docs

    def _store_id(self, uow: UnitOfWork) -> str:
        if self._store is None:
            self._store = uow.ledger.store_id()
        return self._store

    def _render(self, uow: UnitOfWork, doc: MemoryDocument) -> bytes:
        """The bytes of `doc`'s file: its entries under a version line naming this store and
        the version rendered (ADR 0022); an empty document is the version line alone."""
        stamp = VersionLine(target=doc.target.value, version=doc.version, store=self._store_id(uow))
        return self._fmt.render(doc.active, doc.target, stamp=stamp).encode("utf-8")

    def _import_hand_edits(
        self, uow: UnitOfWork, doc: MemoryDocument, warnings: list[str]
    ) -> tuple[MemoryDocument, str | None]:
        """If the Markdown file changed behind our back, import the change as events first.

        Returns the document and the sha256 of the file as read (None when it is missing or
        emptied: either is rendered again from the journal, never read as "delete all").
        """
        # what the file was when read: a render replaces only that (never a save made since)
        self._seen[doc.target] = self._markdown.stamp(doc.target)
        data = self._markdown.read(doc.target)
        if data is None:
            return doc, None
        self._fmt.learn(data, doc.target)
        replica = self._markdown.replica(doc.target)
        digest = sha256(data)
        recorded = uow.ledger.rendered(doc.stream, replica)
        if recorded is not None and recorded[1] == digest:
            return doc, digest
        if sha256(self._render(uow, doc)) == digest:  # written, then crashed before the ledger
            uow.ledger.record(doc.stream, replica, doc.version, digest)
            return doc, digest
        if not data.strip():
            if doc.active:
                warnings.append(
                    f"{self._markdown.describe(doc.target)} was emptied; it was rendered again "
                    "from the journal. To delete entries by hand, delete them and keep the "
                    "first line."
                )
            return doc, None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MarkdownUnreadable(
                f"{self._markdown.describe(doc.target)} is not valid UTF-8 (byte {exc.start}); "
                "it was left untouched and no change was written to it. Fix the file by hand."
            ) from exc
        parsed = self._fmt.parse(text, doc.target)
        base, based_on = self._merge_base(uow, doc, parsed.version_line, recorded, warnings)
        # a purge blanked its entries' text in the past events: the base never holds them, so a
        # stale buffer's copy is new text to the merge, never "the same entry" (ADR 0026)
        purged_in_base = doc.purged & {e.id for e in base.all_entries()}
        base = forget(base, purged_in_base)
        since = () if based_on is None else uow.journal.read(doc.stream, after=based_on)
        result = reconcile(
            base=base,
            parsed=parsed,
            head=doc,
            new_id=self._ids.new_id,
            at=self._clock.now(),
            since_base=since,
        )
        warnings.extend(result.warnings)
        if purged_in_base and result.added:
            warnings.append(
                f"{self._markdown.describe(doc.target)} was loaded before a purge; if it still "
                "showed the text of a purged entry, that text was imported as a new hand-written "
                "entry (scanned like any hand edit): purge it again if it came back (ADR 0026)"
            )
        if result.events:
            uow.journal.append(doc.stream, doc.version, result.events)
            uow.projection.apply(result.events)
            doc = fold(doc, result.events)
            self._log.info(
                "markdown.imported",
                target=doc.target.value,
                added=result.added,
                revised=result.revised,
                removed=result.removed,
                retagged=result.retagged,
                flagged=result.flagged,
            )
        uow.ledger.record(doc.stream, replica, doc.version, digest)
        return doc, digest

    def _merge_base(
        self,
        uow: UnitOfWork,
        doc: MemoryDocument,
        line: VersionLine | None,
        recorded: tuple[int, str] | None,
        warnings: list[str],
    ) -> tuple[MemoryDocument, int | None]:
        """The version the person edited (ADR 0022): the one the file's version line names;
        without a usable line, the last render recorded for this replica; for a file this
        journal never rendered, nothing (the import only adds). With the version it is."""
        where = self._markdown.describe(doc.target)
        version: int | None = None
        if line is not None:
            if line.store != self._store_id(uow) or line.target != doc.target.value:
                warnings.append(
                    f"{where}: its version line names another store or document; its entries "
                    "were merged in as additions (nothing was deleted)"
                )
            elif line.version > doc.version:
                warnings.append(
                    f"{where}: its version line names v{line.version}, newer than the journal "
                    f"(v{doc.version}); its entries were merged in as additions"
                )
            else:
                version = line.version
        elif recorded is not None:
            version = recorded[0]
            if version < doc.version:
                warnings.append(
                    f"{where}: the version line is missing; the edit was merged against the "
                    f"last render (v{version}). Entries deleted by it can be brought back with "
                    "restore."
                )
        if version is None or version == 0:
            return MemoryDocument.empty(doc.target), version
        if version == doc.version:
            return doc, version
        past = uow.journal.read(doc.stream, upto=version)
        return fold(MemoryDocument.empty(doc.target), past), version

    def _stale(
        self, uow: UnitOfWork, docs: dict[Target, MemoryDocument], on_disk: dict[Target, str | None]
    ) -> list[tuple[MemoryDocument, bytes, str]]:
        """The documents whose file is not what their state renders to (inside the txn).

        A document whose file could not be read (`_BLOCKED`) is never rewritten: it holds
        something a person must fix first."""
        stale = []
        for target, doc in docs.items():
            if on_disk[target] == _BLOCKED:
                continue
            data = self._render(uow, doc)
            digest = sha256(data)
            if on_disk[target] != digest or uow.ledger.rendered(
                doc.stream, self._markdown.replica(target)
            ) != (doc.version, digest):
                stale.append((doc, data, digest))
        return stale

    def _publish(self, stale: Sequence[tuple[MemoryDocument, bytes, str]]) -> list[str]:
        """Write the stale documents atomically, then record what was written (one txn).

        Runs after COMMIT: the change is already durable in the journal. A file that cannot be
        written keeps its old bytes and is rewritten by the next operation, so the failure is a
        warning on a successful result, not an error (ADR 0011).
        """
        written: list[tuple[MemoryDocument, str]] = []
        warnings: list[str] = []
        for doc, data, digest in stale:
            try:
                self._markdown.write(
                    doc.target, data, expected=self._seen.pop(doc.target, UNCHECKED)
                )
            except MarkdownChanged:
                # a person saved the file after we read it: their save is imported by the next
                # operation, then rendered; replacing it now would lose it (ADR 0022)
                self._log.info("markdown.changed_meanwhile", target=doc.target.value)
            except OSError as exc:
                self._log.error("markdown.write_failed", target=doc.target.value, error=str(exc))
                warnings.append(
                    f"Saved in the journal, but {self._markdown.describe(doc.target)} could not "
                    f"be rewritten ({exc}); it will be rewritten by the next operation."
                )
            else:
                written.append((doc, digest))
        if written:
            try:
                with self._storage.transaction() as uow:
                    for doc, digest in written:
                        uow.ledger.record(
                            doc.stream, self._markdown.replica(doc.target), doc.version, digest
                        )
            except OSError as exc:  # the next operation recognises the files as rendered
                self._log.error("markdown.ledger_failed", error=str(exc))
                warnings.append(f"Saved; recording the Markdown render failed ({exc}).")
        return warnings

    def _open(
        self,
        uow: UnitOfWork,
        targets: Iterable[Target],
        warnings: list[str],
        *,
        strict: bool = True,
    ) -> tuple[dict[Target, MemoryDocument], dict[Target, str | None]]:
        """Catch up and import hand edits. `strict`: a file that cannot be read raises (a
        write to it must not proceed); otherwise that document is read from the journal, its
        file left untouched, and the others keep working."""
        docs: dict[Target, MemoryDocument] = {}
        on_disk: dict[Target, str | None] = {}
        for target in targets:
            caught = self._catch_up(uow, target)
            try:
                docs[target], on_disk[target] = self._import_hand_edits(uow, caught, warnings)
            except MarkdownUnreadable as exc:
                if strict:
                    raise
                warnings.append(str(exc))
                docs[target], on_disk[target] = caught, _BLOCKED
        return docs, on_disk

    def run(
        self,
        targets: Iterable[Target],
        plan: Callable[[dict[Target, MemoryDocument]], Sequence[tuple[Target, Decision]]],
        *,
        publish_first: Target | None = None,
        read: Callable[[UnitOfWork, dict[Target, MemoryDocument]], None] | None = None,
    ) -> tuple[list[tuple[Target, Decision]], list[str]]:
        """Run `plan` on fresh state of `targets` and commit the events of its decisions.

        `plan` sees the documents after the hand-edit import and returns decisions in order;
        decisions for the same target must chain versions (the batch path folds as it goes).
        """
        wanted = sorted(set(targets), key=lambda t: t.value)
        warnings: list[str] = []
        with self._markdown.lock(self._lock_timeout):
            with self._storage.transaction() as uow:
                docs, on_disk = self._open(uow, wanted, warnings)
                if read is not None:  # what `plan` needs from the journal, in this transaction
                    read(uow, docs)
                decisions = list(plan(dict(docs)))
                for target in wanted:
                    events: list[Event] = [e for t, d in decisions if t is target for e in d.events]
                    if not events:
                        continue
                    uow.journal.append(stream_for(target), docs[target].version, events)
                    uow.projection.apply(events)
                    docs[target] = fold(docs[target], events)
                self._keep_snapshots(uow, docs)
                stale = self._stale(uow, docs, on_disk)
            # a move writes its destination file before its source file (the seed's order)
            stale.sort(key=lambda item: item[0].target is not publish_first)
            self._docs.update(docs)
            warnings.extend(self._publish(stale))
            self._remember_stamps(docs)
        self._note(warnings)
        return decisions, warnings

    # -- commands -------------------------------------------------------------------------

    def execute(self, command: MemoryCommand) -> WriteResult:
        target = command.target
        notes: tuple[str, ...] = ()
        if isinstance(command, AddMemory | ReplaceMemory):
            scanned, notes = self._scan(command)
            if isinstance(scanned, WriteResult):
                return scanned
            command = scanned
        prepared = self._prepare_embeddings([command])
        if prepared is not None:
            command = prepared.commands[0]

        def plan(docs: dict[Target, MemoryDocument]) -> list[tuple[Target, Decision]]:
            return [(target, decide(docs[target], command, self.settings.policy(target)))]

        decisions, warnings = self.run([target], plan)
        self._embed_new_rows([d for _, d in decisions], prepared)
        return to_result(decisions[0][1], command, (*notes, *warnings))

    def _prepare_embeddings(self, items: Sequence[object]) -> PreparedWrites | None:
        """Before the write, outside the lock: vectors and cosines for the adds' near-duplicate
        check (ADR 0015). None when embeddings are off."""
        if self.embeddings is None:
            return None
        return self.embeddings.prepare_writes(items, self.settings.scope)

    def _embed_new_rows(
        self, decisions: Sequence[Decision], prepared: PreparedWrites | None
    ) -> None:
        """After COMMIT and the lock: store vectors of the new rows; never fails the write."""
        if self.embeddings is not None:
            self.embeddings.after_writes(decisions, prepared)

    def _with_move_cosines(self, command: MoveMemory, source: MemoryDocument) -> MoveMemory:
        """`command` with the cosines of the moved entry's stored vector to the destination
        rows (ADR 0019): read from the vector store only, never from the provider; none
        without embeddings, with force, or when the entry has no current vector."""
        if self.embeddings is None or command.force:
            return command
        entry = move_subject(source, command, self.settings.scope)
        if not isinstance(entry, MemoryEntry):
            return command
        project = self.settings.scope.project
        if command.destination is Target.PROJECT:
            clause = ScopeClause(Target.PROJECT, projects=(project,))
        else:
            clause = ScopeClause(Target.MEMORY, namespaces=(None,))
        cosines = self.embeddings.stored_cosines(entry.id, VectorScope(clauses=(clause,)))
        return attrs.evolve(command, cosines={entry.id: cosines}) if cosines else command

    def move(self, command: MoveMemory) -> WriteResult:
        """promote / demote one entry (see domain/move.py); both documents in one transaction."""
        if not self._markdown.distinct_roots():
            return WriteResult(
                success=False,
                status=Status.INVALID,
                message="Refused: memoryDir and projectsMemoryDir resolve to the same physical "
                "directory, so a move could not tell its source from its destination; nothing "
                "was written. Fix the configuration or the symlink.",
                action=command.direction.value,
            )
        outcome: list[MoveDecision] = []
        # read before the write transaction: the vector store reads in a transaction of its own
        # (inside ours SQLite refuses it). Keyed by the subject's id: if the subject is another
        # entry by the time the move decides, the cosines simply do not apply to it.
        command = self._with_move_cosines(command, self.document(command.source))

        def plan(docs: dict[Target, MemoryDocument]) -> list[tuple[Target, Decision]]:
            result = decide_move(
                docs[command.source],
                docs[command.destination],
                command,
                self.settings.policy(command.destination),
            )
            outcome.append(result)
            carrier = Decision(status=result.decision.status, message="")
            return [
                (command.source, attrs.evolve(carrier, events=result.source_events)),
                (command.destination, attrs.evolve(carrier, events=result.destination_events)),
            ]

        _, warnings = self.run(
            [command.source, command.destination], plan, publish_first=command.destination
        )
        decision = outcome[0].decision
        return WriteResult(
            success=decision.success,
            status=decision.status,
            message=decision.message,
            target=command.destination.value,
            action=command.direction.value,
            entry_id=decision.entry_id,
            candidates=tuple(
                CandidateView(
                    entry_id=c.entry_id, text=c.text, score=round(c.score, 3), basis=c.basis
                )
                for c in decision.candidates
            ),
            matches=decision.matches,
            evicted=len(decision.evicted),
            warnings=tuple(warnings),
        )

    def removed(self, target: Target) -> list[RemovedEntry]:
        """The removed entries of `target` this session may see and `restore` can bring back,
        most recently removed first (read from the journal)."""
        doc = self.document(target)
        with self._storage.transaction() as uow:
            events = uow.journal.read(doc.stream, upto=doc.version)
        scope = self.settings.scope
        return [r for r in restorable(target, events) if scope.visible(r.entry)]

    def restore(self, target: Target, query: str) -> WriteResult:
        """Bring back a removed entry (by id, or a unique part of its text) with its old id."""

        removed: list[RemovedEntry] = []

        def read(uow: UnitOfWork, docs: dict[Target, MemoryDocument]) -> None:
            doc = docs[target]
            events = uow.journal.read(doc.stream, upto=doc.version)
            removed.extend(restorable(target, events))

        def plan(docs: dict[Target, MemoryDocument]) -> list[tuple[Target, Decision]]:
            found = select_restorable(removed, query, self.settings.scope)
            return [(target, decide_restore(docs[target], found, query, self._clock.now()))]

        decisions, warnings = self.run([target], plan, read=read)
        decision = decisions[0][1]
        return WriteResult(
            success=decision.success,
            status=decision.status,
            message=decision.message,
            target=target.value,
            action="restore",
            entry_id=decision.entry_id,
            candidates=tuple(
                CandidateView(
                    entry_id=c.entry_id, text=c.text, score=round(c.score, 3), basis=c.basis
                )
                for c in decision.candidates
            ),
            matches=decision.matches,
            warnings=tuple(warnings),
        )

    def purge(self, target: Target, query: str, *, dry_run: bool = False) -> PurgeResult:
        """Erase an entry's text and its whole supersede chain's (ADR 0026): blank the text of
        the earlier events in place, append `MemoryPurged` to every stream holding a version,
        drop the rows, replace the snapshots, render the files, then let the storage scrub
        its older copies. `dry_run`: only say what would be purged."""
        warnings: list[str] = []
        outcome: PurgePlan | Decision
        with self._markdown.lock(self._lock_timeout):
            with self._storage.erasing() as uow:
                docs, on_disk = self._open(uow, Target, warnings)
                streams = {d.stream: uow.journal.read(d.stream) for d in docs.values()}
                idx = purge_index(streams)
                chain = select_purge(idx, target, query, self.settings.scope)
                if isinstance(chain, Decision) or dry_run:
                    outcome = chain if isinstance(chain, Decision) else _preview(idx, chain)
                else:
                    outcome = plan_purge(streams, idx, chain, self._clock.now())
                    uow.journal.redact(outcome.redacted)
                    for t, doc in docs.items():
                        event = outcome.purges.get(doc.stream)
                        if event is None:
                            continue
                        uow.journal.append(doc.stream, doc.version, [event])
                        uow.projection.apply([event])
                        docs[t] = fold(doc, [event])
                        # the stored snapshot folds the text in: replace it with the head's
                        if uow.journal.snapshot(doc.stream) is not None:
                            uow.journal.save_snapshot(
                                doc.stream, docs[t].version, encode_document(docs[t])
                            )
                            self._snapshotted[doc.stream] = docs[t].version
                self._keep_snapshots(uow, docs)
                stale = self._stale(uow, docs, on_disk)
            self._docs.update(docs)
            warnings.extend(self._publish(stale))
            self._remember_stamps(docs)
            leftovers: tuple[str, ...] = ()
            if isinstance(outcome, PurgePlan) and not dry_run:
                warnings.extend(self._still_holding(outcome.texts))
                try:
                    report = self._storage.scrub()
                except OSError as exc:  # committed: the next open of the store scrubs
                    warnings.append(
                        f"The purge is saved, but erasing older copies failed ({exc}); the "
                        "next open of the store finishes it."
                    )
                else:
                    warnings.extend(report.warnings)
                    leftovers = report.leftovers
        self._note(warnings)
        if isinstance(outcome, Decision):
            return PurgeResult(
                success=outcome.success,
                status=outcome.status,
                message=outcome.message,
                target=target.value,
                entry_id=outcome.entry_id,
                candidates=tuple(
                    CandidateView(entry_id=c.entry_id, text=c.text, score=c.score, basis=c.basis)
                    for c in outcome.candidates
                ),
                matches=outcome.matches,
                warnings=tuple(warnings),
            )
        ids = tuple(sorted(outcome.ids))
        shown = (
            outcome.newest.text
            if len(outcome.newest.text) <= 80
            else outcome.newest.text[:79] + "…"
        )
        if dry_run:
            message = (
                f"Would purge {outcome.versions} version(s) of {shown!r} ({', '.join(ids)}); "
                "nothing was changed."
            )
        else:
            message = (
                f"Purged {outcome.versions} version(s) of an entry: its text is erased from the "
                "journal, the event log, search, vectors, snapshots and the Markdown files."
            )
            if leftovers:
                message += f" Copies moved aside may still hold it: {', '.join(leftovers)}."
        return PurgeResult(
            success=True,
            status=Status.PREVIEW if dry_run else Status.PURGED,
            message=message,
            target=target.value,
            entry_id=outcome.newest.id,
            entry_ids=ids,
            versions=outcome.versions,
            leftovers=leftovers,
            warnings=tuple(warnings),
        )

    def _still_holding(self, texts: Sequence[str]) -> list[str]:
        """After the render: a Markdown file that still holds purged text (it could not be
        rewritten, or a person saved it meanwhile) is named, never reported as erased."""
        found = []
        for target in Target:
            try:
                data = self._markdown.read(target) or b""
            except (MarkdownUnreadable, OSError):
                continue
            if any(t.encode("utf-8") in data for t in texts):
                found.append(
                    f"{self._markdown.describe(target)} still holds purged text (it could not be "
                    "rewritten now); the next operation renders it again unless it was saved "
                    "by hand meanwhile: then delete the text from it"
                )
        return found

    def execute_batch(self, items: Sequence[MemoryCommand | WriteResult]) -> list[WriteResult]:
        """Apply commands in order with partial-commit semantics.

        Each command is decided against the state left by the ones before it; failed ones
        (and items that are already failed results, e.g. bad arguments) change nothing while
        the others proceed. All events commit in one transaction. At most
        MAX_BATCH_OPERATIONS items (ArgumentError above: nothing is applied).
        """
        if len(items) > MAX_BATCH_OPERATIONS:
            raise ArgumentError(
                f"a batch may hold at most {MAX_BATCH_OPERATIONS:,} operations, not "
                f"{len(items):,}; nothing was applied. Split it into several batches."
            )
        prepared: list[MemoryCommand | WriteResult] = []
        scan_notes: dict[int, tuple[str, ...]] = {}
        for index, item in enumerate(items):
            if isinstance(item, AddMemory | ReplaceMemory):
                scanned, scan_notes[index] = self._scan(item)
                prepared.append(scanned)
            else:
                prepared.append(item)
        vectors = self._prepare_embeddings(prepared)
        if vectors is not None:
            prepared = vectors.commands
        targets = {i.target for i in prepared if not isinstance(i, WriteResult)}

        def plan(docs: dict[Target, MemoryDocument]) -> list[tuple[Target, Decision]]:
            # one mutable, indexed copy per document: O(events) per decision, not O(entries)
            work = {t: WorkingDocument(doc) for t, doc in docs.items()}
            policies = {t: self.settings.policy(t) for t in docs}
            out: list[tuple[Target, Decision]] = []
            for item in prepared:
                if isinstance(item, WriteResult):
                    continue
                decision = decide(work[item.target], item, policies[item.target])
                if decision.events:
                    work[item.target].apply(decision.events)
                out.append((item.target, decision))
            return out

        decisions, warnings = self.run(targets, plan) if targets else ([], [])
        self._embed_new_rows([d for _, d in decisions], vectors)
        results: list[WriteResult] = []
        it = iter(decisions)
        for index, item in enumerate(prepared):
            if isinstance(item, WriteResult):
                results.append(item)
            else:
                results.append(to_result(next(it)[1], item, scan_notes.get(index, ())))
        if warnings and results:
            results[-1] = attrs.evolve(results[-1], warnings=(*results[-1].warnings, *warnings))
        return results

    def _scan(
        self, command: AddMemory | ReplaceMemory
    ) -> tuple[AddMemory | ReplaceMemory | WriteResult, tuple[str, ...]]:
        """Scan new content; a refusal becomes a failed result, warnings become notes."""
        result = scan(command.text)
        if result.blocked:
            refused = WriteResult(
                success=False,
                status=Status.BLOCKED,
                message=result.message(),
                target=command.target.value,
                action=_action(command),
            )
            return refused, ()
        notes = (result.message(),) if result.warnings or result.stripped else ()
        return attrs.evolve(command, text=result.text), notes

    def entries(
        self, target: Target | None = None, *, include_history: bool = False
    ) -> list[EntryView]:
        targets = [target] if target else list(Target)
        warnings: list[str] = []
        settled = self._settled(targets)
        if settled is not None:
            docs = settled
        else:
            with self._markdown.lock(self._lock_timeout):
                with self._storage.transaction() as uow:
                    docs, on_disk = self._open(uow, targets, warnings, strict=False)
                    self._keep_snapshots(uow, docs)
                    stale = self._stale(uow, docs, on_disk)
                self._docs.update(docs)
                warnings.extend(self._publish(stale))
                self._remember_stamps(docs)
        self._note(warnings)
        scope = self.settings.scope
        views: list[EntryView] = []
        for t in targets:
            doc = docs[t]
            rows: Iterable[MemoryEntry] = doc.active
            if include_history:
                rows = [*doc.active, *doc.history]
            views.extend(entry_view(e) for e in rows if scope.visible(e))
        return views

    def maintain(
        self, step: Callable[[UnitOfWork, dict[Target, MemoryDocument], dict[Target, int]], _R]
    ) -> tuple[_R, list[str]]:
        """Run `step` under the store lock, in one transaction, on every document after its hand
        edits were imported (with the number of events each import appended), then render what
        is stale. For maintenance such as sync-markdown (`pi_hermes_memory.sync`)."""
        warnings: list[str] = []
        with self._markdown.lock(self._lock_timeout):
            with self._storage.transaction() as uow:
                caught = {t: self._catch_up(uow, t) for t in Target}
                docs, on_disk = self._open(uow, Target, warnings, strict=False)
                imported = {t: docs[t].version - caught[t].version for t in Target}
                result = step(uow, dict(docs), imported)
                self._keep_snapshots(uow, docs)
                stale = self._stale(uow, docs, on_disk)
            self._docs.update(docs)
            warnings.extend(self._publish(stale))
            self._remember_stamps(docs)
        self._note(warnings)
        return result, warnings

    def _remember_stamps(self, docs: Iterable[Target]) -> None:
        for target in docs:
            self._stamps[target] = self._markdown.stamp(target)

    def refresh(self, targets: Iterable[Target] | None = None) -> None:
        """Import hand edits of documents whose file changed since this service last synced.

        Cheap when nothing changed (one stat per file), so read paths such as search call it
        first and see what a person typed into the Markdown without taking the write lock.
        """
        wanted = list(targets) if targets is not None else list(Target)
        changed = [
            t for t in wanted if t not in self._stamps or self._markdown.stamp(t) != self._stamps[t]
        ]
        for target in changed:
            self.entries(target)

    def _note(self, warnings: Sequence[str]) -> None:
        """Log warnings and keep them for the caller (`Memory.warnings`, a future doctor)."""
        for warning in warnings:
            self._log.warning("memory.warning", detail=warning)
        self.warnings.extend(warnings)

    def document(self, target: Target) -> MemoryDocument:
        """The current state of one document (after catching up and importing hand edits)."""
        self.entries(target)
        return self._docs[target]


def _preview(idx: PurgeIndex, chain: frozenset[str]) -> PurgePlan:
    """A dry run's plan: the chain and its newest version, nothing to write."""
    return PurgePlan(
        ids=chain, redacted=(), purges={}, newest=newest_version(idx, chain).entry, texts=()
    )


def _action(command: MemoryCommand) -> str:
    return {AddMemory: "add", ReplaceMemory: "replace", RemoveMemory: "remove"}[type(command)]


def entry_view(e: MemoryEntry) -> EntryView:
    return EntryView(
        id=e.id,
        target=e.target.value,
        text=e.text,
        project=e.project,
        category=e.category.value if e.category else None,
        created=e.created,
        last_referenced=e.last_referenced,
        superseded_by=e.superseded_by,
        superseded_at=e.superseded_at,
        scope=e.namespace or GLOBAL_NAMESPACE,
        flagged=e.flagged,
    )


def to_result(
    decision: Decision, command: MemoryCommand, warnings: Sequence[str] = ()
) -> WriteResult:
    return WriteResult(
        success=decision.success,
        status=decision.status,
        message=decision.message,
        target=command.target.value,
        action=_action(command),
        entry_id=decision.entry_id,
        candidates=tuple(
            CandidateView(entry_id=c.entry_id, text=c.text, score=round(c.score, 3), basis=c.basis)
            for c in decision.candidates
        ),
        matches=decision.matches,
        evicted=len(decision.evicted),
        warnings=tuple(warnings),
    )


__all__ = ["MemoryService", "MemorySettings", "Status"]
