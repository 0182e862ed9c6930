"""The memory service: load state, import hand edits, decide, append, project, render.

Every write runs under the store-wide file lock (so Markdown writes of several processes never
interleave), inside one IMMEDIATE transaction (events, SQLite rows, FTS and the render ledger
commit together), and renders the touched Markdown documents before the lock is released
(ADR 0002). A crash anywhere leaves the journal authoritative; the next operation converges.
"""

from __future__ import annotations

import collections
import contextlib
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from pi_hermes_memory.domain.errors import InvariantViolation, VersionConflict
from pi_hermes_memory.domain.memory.capacity import OverflowStrategy
from pi_hermes_memory.domain.memory.model import GLOBAL_NAMESPACE, MemoryEntry, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.memory.streams import stream_for, target_of
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import ArgumentError, MarkdownUnreadable
from pi_hermes_memory.journal.replica_check import ReplicaCheck
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.memory.replicas import MemoryReplicas
from pi_hermes_memory.memory.write_side import commands, deciding, moves, purges, purging, restores
from pi_hermes_memory.ports.search import ScopeClause
from pi_hermes_memory.ports.store import (
    AppendingMarkdown,
    Clock,
    DocumentFormat,
    IdFactory,
    MarkdownStore,
    ReplicaProofs,
    Storage,
    UnitOfWork,
    WriteIndex,
)

if TYPE_CHECKING:
    # the document fold, the events, the pipeline and the indexed write path: imported when
    # the replicas are not proven unchanged or a write comes, so that opening a caught-up
    # store and searching it do not load them (ADR 0105)
    # the write side (commands, decide, move, purge, restore): `write_side` imports each on
    # first use, so that opening a store and searching do not load it (ADR 0099, ADR 0108)
    from pi_hermes_memory.domain.memory.commands import (
        AddMemory,
        MemoryCommand,
        MoveMemory,
        ReplaceMemory,
    )
    from pi_hermes_memory.domain.memory.decide import Decision, WritePolicy
    from pi_hermes_memory.domain.memory.document import MemoryDocument
    from pi_hermes_memory.domain.memory.events import Event
    from pi_hermes_memory.domain.memory.move import MoveDecision
    from pi_hermes_memory.domain.memory.purge import PurgeIndex, PurgePlan
    from pi_hermes_memory.domain.memory.restore import RemovedEntry
    from pi_hermes_memory.journal.pipeline import Pipeline, RenderLag
    from pi_hermes_memory.memory.purging import PurgeResult
    from pi_hermes_memory.results import EntryView, WriteResult

    # imports numpy: loaded by bootstrap only when embeddings are on
    from pi_hermes_memory.search.embedding import EmbeddingService, PreparedWrites

_R = TypeVar("_R")


@attrs.frozen(kw_only=True)
class MemorySettings:
    scope: SessionScope
    limits: dict[Target, int]
    overflow: OverflowStrategy = OverflowStrategy.AUTO_CONSOLIDATE
    consolidation_available: bool = False

    def policy(self, target: Target) -> WritePolicy:
        return deciding.WritePolicy(
            scope=self.scope,
            char_limit=self.limits[target],
            overflow=self.overflow,
            consolidation_available=self.consolidation_available,
        )


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
        render_lag: RenderLag | None = None,
        proofs: ReplicaProofs | None = None,
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
        self._render_lag = render_lag
        self._proofs = proofs
        #: the replicas' proof and stamps (ADR 0105): `converge` and `refresh` answer from it
        #: alone while every replica is what the ledger recorded; the pipeline shares it
        self._check = ReplicaCheck(MemoryReplicas(markdown), proofs)
        # stream -> the active rows (only) as the last indexed render had them, and the events
        # appended since (ADR 0084): the next render folds those in instead of reading every
        # row again
        self._rows: dict[str, tuple[MemoryDocument, list[Event]]] = {}
        # the most recent warnings (hand-edit imports, …), bounded for long-running hosts
        self.warnings: collections.deque[str] = collections.deque(maxlen=200)

    @property
    def clock(self) -> Clock:
        return self._clock

    @functools.cached_property
    def _pipe(self) -> Pipeline[MemoryDocument]:
        """The write pipeline, built (and its modules imported) on first use: a write, or a
        read whose replicas the check could not prove unchanged (ADR 0105)."""
        from pi_hermes_memory.journal.pipeline import Pipeline
        from pi_hermes_memory.memory.documents import MemoryDocuments

        return Pipeline(
            storage=self._storage,
            kind=MemoryDocuments(
                markdown=self._markdown, fmt=self._fmt, clock=self._clock, ids=self._ids
            ),
            lock=self._markdown.lock,
            logger=self._log,
            lock_timeout=self._lock_timeout,
            lag=self._render_lag,
            proofs=self._proofs,
            check=self._check,
        )

    def _piped(self) -> bool:
        """Whether the pipeline was built (before it, nothing was written or folded)."""
        return "_pipe" in self.__dict__

    # -- the write path (application/journal/pipeline.py) ------------------------------------------

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
        first = stream_for(publish_first) if publish_first is not None else None
        streams = [stream_for(t) for t in wanted]
        with self._pipe.writing(streams, warnings, publish_first=first, defer=True) as batch:
            docs = _by_target(batch.states)
            if read is not None:  # what `plan` needs from the journal, in this transaction
                read(batch.uow, docs)
            decisions = list(plan(dict(docs)))
            for target in wanted:
                events: list[Event] = [e for t, d in decisions if t is target for e in d.events]
                batch.append(stream_for(target), events)
        self._note(warnings)
        return decisions, warnings

    # -- commands -------------------------------------------------------------------------

    def execute(self, command: MemoryCommand) -> WriteResult:
        from pi_hermes_memory.results import WriteResult

        target = command.target
        notes: tuple[str, ...] = ()
        # one check per kind: a union would build the replace's class for every add (ADR 0111)
        if isinstance(command, commands.AddMemory) or isinstance(  # noqa: SIM101
            command, commands.ReplaceMemory
        ):
            scanned, notes = self._scan(command)
            if isinstance(scanned, WriteResult):
                return scanned
            command = scanned
        prepared = self._prepare_embeddings([command])
        if prepared is not None:
            command = prepared.commands[0]
        if isinstance(command, commands.AddMemory):
            fast = self._indexed_add(command)
            if fast is not None:
                decision, entry, warnings = fast
                self._pipe.import_raced(warnings)  # a person's save its render stood back for
                self._note(warnings)
                self._embed_new_rows([decision], prepared)
                result = to_result(decision, command, (*notes, *warnings))
                if entry is None or result.entry_id != entry.id:
                    return attrs.evolve(result, version_id=result.entry_id)
                return attrs.evolve(
                    result, entry_id=entry.stable_id, version_id=entry.id, version=entry.version_no
                )

        before: dict[Target, MemoryDocument] = {}

        def plan(docs: dict[Target, MemoryDocument]) -> list[tuple[Target, Decision]]:
            before.update(docs)
            return [(target, deciding.decide(docs[target], command, self.settings.policy(target)))]

        decisions, warnings = self.run([target], plan)
        self._embed_new_rows([d for _, d in decisions], prepared)
        result = to_result(decisions[0][1], command, (*notes, *warnings))
        if isinstance(command, commands.AddMemory):
            self._keep_index(target)
        return self.identified(result, before=before)

    # -- the indexed add (ADR 0084) -------------------------------------------------------

    def _indexed_add(
        self, command: AddMemory
    ) -> tuple[Decision, MemoryEntry | None, list[str]] | None:
        """Decide and append an add on the persisted write index, when this process holds no
        folded state of its document (a new process: folding it is the cost this avoids), the
        index is at the journal's version and the file is the last render. None: take the
        write path on the folded document (same answers)."""
        from pi_hermes_memory.memory.indexed import IndexedDocument, write_index_of

        target = command.target
        stream = stream_for(target)
        folded = self._pipe.cached(stream) is not None
        if folded and self._pipe.may_lag(stream):
            # the folded document is at hand and its replica may lag unrendered: deciding on
            # it in memory is faster. A folded write that renders rewrites the whole file;
            # the indexed add appends to it (ADR 0088), so it goes first (ADR 0104)
            return None
        warnings: list[str] = []
        with self._pipe.locked():
            try:
                with self._storage.transaction() as uow:
                    index = write_index_of(uow)
                    version = uow.journal.version(stream)
                    if index is None or (index.version(stream) or 0) != version:
                        return None
                    if folded and self._pipe.snapshot_due(uow, stream, version + 1):
                        return None  # the fold stores the snapshot that is due (ADR 0104)
                    # a replica rendered recently by this process lags unread, as `writing` does
                    recent = self._pipe.may_lag(stream)
                    seen = None if recent else self._pipe.unedited(uow, stream)
                    if seen is None and not recent:
                        return None
                    doc = IndexedDocument(index, stream, version)
                    # raises NotImplementedError when it asks what only the fold knows
                    decision = deciding.decide(doc, command, self.settings.policy(target))
                    entry = None
                    render: bytes | None = None
                    tail: tuple[bytes, str] | None = None
                    if decision.events:
                        uow.journal.append(stream, version, decision.events)
                        uow.projection.apply(decision.events)
                        head = decision.events[-1].version
                        if index.version(stream) != head:  # rolled back: decided on the fold
                            raise NotImplementedError(f"{stream}: the write index fell behind")
                        self._tail(stream, version, decision.events)
                        size = 0 if seen is None else _size(seen[0])
                        if seen is not None and not self._pipe.may_lag_unread(stream, size):
                            tail = self._append_tail(uow, stream, head, appended=decision.events)
                            if tail is None:
                                state = self._indexed_rows(index, stream, head)
                                render = self._pipe.render(uow, state)
                    if decision.entry_id is not None:
                        entry = index.entry(stream, decision.entry_id)
            except NotImplementedError:
                self._rows.pop(stream, None)  # they may hold the events just rolled back
                return None
            except BaseException:
                self._rows.pop(stream, None)  # a failed commit: never render its events
                raise
            if decision.events:
                if tail is not None and seen is not None:
                    warnings.extend(self._publish_indexed(stream, head, seen, tail))
                elif render is None or seen is None:
                    self._pipe.lagging(stream)
                else:
                    warnings.extend(self._pipe.publish_unread(state, render, seen[0]))
        return decision, entry, warnings

    def _append_tail(
        self, uow: UnitOfWork, stream: str, version: int, *, appended: Sequence[Event] = ()
    ) -> tuple[bytes, str] | None:
        """In the transaction, the replica of `stream` found to be the last render: when the
        render at `version` only appends entries to it, our render of those entries alone
        under the version line of `version`, and the sha256 of the render on disk (the
        ledger's): `MarkdownFiles.append` writes from them what a full render writes (ADR
        0088). None: render in full. `appended`: the events this transaction appended (not
        read back when they are all the render lacks, ADR 0100)."""
        from pi_hermes_memory.domain.memory.document import MemoryDocument
        from pi_hermes_memory.memory.indexed import appended_entries

        recorded = self._pipe.recorded(uow, stream)
        if not isinstance(self._markdown, AppendingMarkdown) or recorded is None:
            return None
        added = appended_entries(uow, stream, recorded[0], version, appended)
        if added is None:
            return None
        tail = MemoryDocument(
            stream=stream, target=target_of(stream), version=version, active=tuple(added)
        )
        return self._pipe.render(uow, tail), recorded[1]

    def _publish_indexed(
        self, stream: str, version: int, seen: tuple[object, str], tail: tuple[bytes, str] | None
    ) -> list[str]:
        """After COMMIT, under the lock: write the render of `stream` at `version` over its
        replica, found to be the last render (`seen`), by appending `tail`'s entries (ADR
        0088), else (no tail, or the files are not what the append was planned on) in full
        from the write index's rows."""
        from pi_hermes_memory.memory.indexed import write_index_of

        if tail is not None:
            target, (new_blocks, rendered) = target_of(stream), tail

            def append(expected: object) -> tuple[str, int, object | None] | None:
                assert isinstance(self._markdown, AppendingMarkdown)
                return self._markdown.append(target, new_blocks, rendered, expected=expected)

            done = self._pipe.publish_appended(stream, version, append, seen[0])
            if done is not None:
                # rows kept from an earlier full render would only grow by these events: a
                # full render reads them again (appending never needs them)
                self._rows.pop(stream, None)
                return done
        with self._storage.snapshot() as uow:
            index = write_index_of(uow)
            if index is None or index.version(stream) != version:
                self._pipe.lagging(stream)  # rendered by the next write or open
                return []
            state = self._indexed_rows(index, stream, version)
            data = self._pipe.render(uow, state)
        return self._pipe.publish_unread(state, data, seen[0])

    def _tail(self, stream: str, before: int, events: Sequence[Event]) -> None:
        """Remember `events` (appended at version `before`) after the rows kept for `stream`'s
        next render; a gap (another writer) drops the rows."""
        kept = self._rows.get(stream)
        if kept is not None and kept[0].version + len(kept[1]) == before:
            kept[1].extend(events)
        else:
            self._rows.pop(stream, None)

    def _indexed_rows(self, index: WriteIndex, stream: str, version: int) -> MemoryDocument:
        """The active rows of `stream` at `version`, for a render: the rows this service kept
        from its last render with the later events folded in, else every row read from the
        index again (O(rows)). Only the active rows: a render needs no more."""
        from pi_hermes_memory.domain.memory.document import MemoryDocument, fold

        kept = self._rows.pop(stream, None)
        state: MemoryDocument | None = None
        if kept is not None and kept[0].version + len(kept[1]) == version:
            with contextlib.suppress(InvariantViolation, VersionConflict):
                state = fold(kept[0], kept[1])
        if state is None:
            state = MemoryDocument(
                stream=stream,
                target=target_of(stream),
                version=version,
                active=tuple(index.active(stream)),
            )
        self._rows[stream] = (state, [])
        return state

    def _keep_index(self, target: Target) -> None:
        """After a write on the folded document: rebuild the document's write index when it
        is behind the journal (a store written before ADR 0084, or by an older library), so
        the next process adds on it."""
        from pi_hermes_memory.memory.indexed import write_index_of

        stream = stream_for(target)
        doc = self._pipe.cached(stream)
        if doc is None:
            return
        with self._storage.snapshot() as uow:  # a read: no write transaction when it is current
            index = write_index_of(uow)
            if index is None or (index.version(stream) or 0) == doc.version:
                return
        with self._storage.transaction() as uow:
            index = write_index_of(uow)
            if index is None or uow.journal.version(stream) != doc.version:
                return
            if index.version(stream) != doc.version:
                index.rebuild(doc)

    def _indexed_flush(self) -> None:
        """Render the pending files from the write index where this process holds no folded
        state of them (their adds were indexed): the rows in file order, no fold (ADR 0084)."""
        from pi_hermes_memory.memory.indexed import write_index_of

        for stream in self._pipe.pending:
            if self._pipe.cached(stream) is not None:
                continue
            with self._pipe.locked():
                with self._storage.transaction() as uow:
                    index = write_index_of(uow)
                    version = uow.journal.version(stream)
                    if index is None or (index.version(stream) or 0) != version:
                        continue
                    seen = self._pipe.unedited(uow, stream)
                    if seen is None:
                        continue
                    tail = self._append_tail(uow, stream, version)
                self._note(self._publish_indexed(stream, version, seen, tail))

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
        from pi_hermes_memory.ports.vectors import VectorScope

        if self.embeddings is None or command.force:
            return command
        entry = moves.move_subject(source, command, self.settings.scope)
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
        """promote / demote one entry (domain/memory/move.py); both documents in one transaction."""
        from pi_hermes_memory.results import WriteResult

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
            result = moves.decide_move(
                docs[command.source],
                docs[command.destination],
                command,
                self.settings.policy(command.destination),
            )
            outcome.append(result)
            carrier = deciding.Decision(status=result.decision.status, message="")
            return [
                (command.source, attrs.evolve(carrier, events=result.source_events)),
                (command.destination, attrs.evolve(carrier, events=result.destination_events)),
            ]

        _, warnings = self.run(
            [command.source, command.destination], plan, publish_first=command.destination
        )
        decision = outcome[0].decision
        return self.identified(
            decision_result(
                decision,
                target=command.destination,
                action=command.direction.value,
                warnings=warnings,
            )
        )

    def removed(self, target: Target, *, every_scope: bool = False) -> list[RemovedEntry]:
        """The removed entries of `target` this session may see (`every_scope`: all of them,
        for export) and `restore` can bring back, most recently removed first (read from the
        journal)."""
        doc = self.document(target)
        # a read: the snapshot never waits for (nor blocks) a writer, as `stats` in a REST
        # reader process calls this beside the writer (ADR 0120)
        with self._storage.snapshot() as uow:
            events = uow.journal.read(doc.stream, upto=doc.version)
        scope = self.settings.scope
        return [
            r for r in restores.restorable(target, events) if every_scope or scope.visible(r.entry)
        ]

    def restore(self, target: Target, query: str) -> WriteResult:
        """Bring back a removed entry (by id, or a unique part of its text) with its old id."""
        removed: list[RemovedEntry] = []

        def read(uow: UnitOfWork, docs: dict[Target, MemoryDocument]) -> None:
            doc = docs[target]
            events = uow.journal.read(doc.stream, upto=doc.version)
            removed.extend(restores.restorable(target, events))

        def plan(docs: dict[Target, MemoryDocument]) -> list[tuple[Target, Decision]]:
            found = restores.select_restorable(removed, query, self.settings.scope)
            return [
                (target, restores.decide_restore(docs[target], found, query, self._clock.now()))
            ]

        decisions, warnings = self.run([target], plan, read=read)
        decision = decisions[0][1]
        return self.identified(
            decision_result(
                decision, target=target, action="restore", warnings=warnings, evicted=False
            )
        )

    def purge(self, target: Target, query: str, *, dry_run: bool = False) -> PurgeResult:
        """Erase an entry's text and its whole supersede chain's (ADR 0026): blank the text of
        the earlier events in place, append `MemoryPurged` to every stream holding a version,
        drop the rows, replace the snapshots, render the files, then let the storage scrub
        its older copies. `dry_run`: only say what would be purged."""
        from pi_hermes_memory.results import CandidateView

        warnings: list[str] = []
        outcome: PurgePlan | Decision
        leftovers: tuple[str, ...] = ()

        def finish(plan: PurgePlan) -> None:
            """After the render, under the lock: name what still holds the text, then let
            the storage erase its older copies."""
            nonlocal leftovers
            warnings.extend(self._still_holding(plan.texts))
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

        with self._pipe.writing(_ALL_STREAMS, warnings, erasing=True) as batch:
            docs = _by_target(batch.states)
            streams = {d.stream: batch.uow.journal.read(d.stream) for d in docs.values()}
            idx = purges.index(streams)
            chain = purges.select(idx, target, query, self.settings.scope)
            stable = {e.id: e.stable_id for d in docs.values() for e in d.all_entries()}
            if isinstance(chain, deciding.Decision) or dry_run:
                outcome = chain if isinstance(chain, deciding.Decision) else _preview(idx, chain)
            else:
                planned = outcome = purges.plan_purge(streams, idx, chain, self._clock.now())
                batch.uow.journal.redact(planned.redacted)
                for doc in docs.values():
                    event = planned.purges.get(doc.stream)
                    if event is not None:
                        # the stored snapshot folds the text in: replace it with the head's
                        self._pipe.replace_snapshot(batch.uow, batch.append(doc.stream, [event]))
                batch.after_publish(lambda: finish(planned))
        self._note(warnings)
        if isinstance(outcome, deciding.Decision):
            return purging.PurgeResult(
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
        return purging.PurgeResult(
            success=True,
            status=Status.PREVIEW if dry_run else Status.PURGED,
            message=message,
            target=target.value,
            # the memory's stable id, as add, update and get name it (ADR 0074): every
            # version holds it; a removed version is no row, so any version still a row says it
            entry_id=next((stable[i] for i in ids if i in stable), outcome.newest.id),
            version_id=outcome.newest.id,
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
        from pi_hermes_memory.domain.memory.document import WorkingDocument
        from pi_hermes_memory.results import WriteResult
        from pi_hermes_memory.tools.registry import MAX_BATCH_OPERATIONS

        if len(items) > MAX_BATCH_OPERATIONS:
            raise ArgumentError(
                f"a batch may hold at most {MAX_BATCH_OPERATIONS:,} operations, not "
                f"{len(items):,}; nothing was applied. Split it into several batches."
            )
        prepared: list[MemoryCommand | WriteResult] = []
        scan_notes: dict[int, tuple[str, ...]] = {}
        for index, item in enumerate(items):
            if isinstance(item, commands.AddMemory) or isinstance(  # noqa: SIM101 (as above)
                item, commands.ReplaceMemory
            ):
                scanned, scan_notes[index] = self._scan(item)
                prepared.append(scanned)
            else:
                prepared.append(item)
        vectors = self._prepare_embeddings(prepared)
        if vectors is not None:
            prepared = vectors.commands
        targets = {i.target for i in prepared if not isinstance(i, WriteResult)}

        before: dict[Target, MemoryDocument] = {}

        def plan(docs: dict[Target, MemoryDocument]) -> list[tuple[Target, Decision]]:
            before.update(docs)
            # one mutable, indexed copy per document: O(events) per decision, not O(entries)
            work = {t: WorkingDocument(doc) for t, doc in docs.items()}
            policies = {t: self.settings.policy(t) for t in docs}
            out: list[tuple[Target, Decision]] = []
            for item in prepared:
                if isinstance(item, WriteResult):
                    continue
                decision = deciding.decide(work[item.target], item, policies[item.target])
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
        rows: dict[str, dict[str, MemoryEntry]] = {}
        return [self.identified(r, rows, before=before) for r in results]

    def identified(
        self,
        result: WriteResult,
        rows: dict[str, dict[str, MemoryEntry]] | None = None,
        *,
        before: Mapping[Target, MemoryDocument] | None = None,
    ) -> WriteResult:
        """`result` naming its entry by the memory's stable id, with the version's id and
        number beside (ADR 0074), read from the document as this write left it, else as it
        was before (a removed row). `rows`: a cache of rows by id for a batch's results."""
        if result.entry_id is None or result.target is None:
            return result
        target = Target(result.target)
        cache = rows if rows is not None else {}
        after = self._pipe.cached(stream_for(target))
        entry = after.index.entry(result.entry_id) if after is not None else None
        for key, doc in (("after", after), ("before", (before or {}).get(target))):
            if entry is not None or doc is None:
                continue
            name = f"{key}:{target.value}"
            if name not in cache:
                cache[name] = {e.id: e for e in doc.all_entries()}
            entry = cache[name].get(result.entry_id)
        if entry is None:
            return attrs.evolve(result, version_id=result.entry_id)
        return attrs.evolve(
            result, entry_id=entry.stable_id, version_id=entry.id, version=entry.version_no
        )

    def _scan(
        self, command: AddMemory | ReplaceMemory
    ) -> tuple[AddMemory | ReplaceMemory | WriteResult, tuple[str, ...]]:
        """Scan new content; a refusal becomes a failed result, warnings become notes."""
        from pi_hermes_memory.domain.scanning.scanner import scan  # loaded by the first write
        from pi_hermes_memory.results import WriteResult

        result = scan(command.text)
        if result.blocked:
            refused = WriteResult(
                success=False,
                status=Status.BLOCKED,
                message=result.message(),
                target=command.target.value,
                action=command.action,
            )
            return refused, ()
        notes = (result.message(),) if result.warnings or result.stripped else ()
        return attrs.evolve(command, text=result.text), notes

    def entries(
        self, target: Target | None = None, *, include_history: bool = False
    ) -> list[EntryView]:
        targets = [target] if target else list(Target)
        warnings: list[str] = []
        docs = _by_target(self._pipe.read([stream_for(t) for t in targets], warnings))
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

    def converge(self) -> None:
        """Finish interrupted renders and import hand edits of every document, without reading
        any document when every file is what the ledger recorded (a hash check, ADR 0038):
        what `open` runs, so opening costs the files, not the history."""
        if not self._piped() and self._check.converged(self._storage, _ALL_STREAMS):
            return  # proven without the pipeline: nothing folded, nothing imported (ADR 0105)
        warnings: list[str] = []
        if self._piped():
            self._pipe.converge(_ALL_STREAMS, warnings)
        else:  # the check just failed: the write path, as `Pipeline.converge` takes it
            self._pipe.read(_ALL_STREAMS, warnings)
        self._note(warnings)

    @property
    def pending_renders(self) -> tuple[Target, ...]:
        """The documents whose Markdown file lags the journal by this process's writes: large
        files are rendered at most once per interval while a process writes (ADR 0042)."""
        if not self._piped():
            return ()  # only this process's writes leave a render pending
        return tuple(target_of(s) for s in self._pipe.pending)

    def flush(self) -> list[str]:
        """Render every pending Markdown file now (hand edits made meanwhile are merged first);
        returns the warnings (empty when every file was rendered)."""
        if not self._piped():
            return []  # nothing written by this process: nothing pending
        warnings: list[str] = []
        self._indexed_flush()
        self._pipe.flush(warnings)
        self._note(warnings)
        return warnings

    def maintain(
        self, step: Callable[[UnitOfWork, dict[Target, MemoryDocument], dict[Target, int]], _R]
    ) -> tuple[_R, list[str]]:
        """Run `step` under the store lock, in one transaction, on every document after its hand
        edits were imported (with the number of events each import appended), then render what
        is stale. For maintenance such as sync-markdown (`pi_hermes_memory.memory.sync`)."""
        warnings: list[str] = []
        with self._pipe.writing(_ALL_STREAMS, warnings, strict=False) as batch:
            # this batch's imports and those an earlier read of this session made (opening
            # the store imports a hand edit before `sync-markdown` runs)
            imported = {target_of(s): n for s, n in self._pipe.take_imported(_ALL_STREAMS).items()}
            result = step(batch.uow, _by_target(batch.states), imported)
        self._note(warnings)
        return result, warnings

    def refresh(self, targets: Iterable[Target] | None = None) -> None:
        """Import hand edits of documents whose file changed since this service last synced.

        Cheap when nothing changed (one stat per file), so read paths such as search call it
        first and see what a person typed into the Markdown without taking the write lock.
        """
        wanted = list(targets) if targets is not None else list(Target)
        for stream in self._check.changed([stream_for(t) for t in wanted]):
            self.entries(target_of(stream))

    def settled(self) -> bool:
        """Whether a read needs no write first: no Markdown file changed since this service
        last synced, or each changed one is what the ledger recorded for its head (no hand
        edit to import, no render to finish). One stat per file when nothing changed; used by
        the server's reader processes, which leave every write to the store's writer (ADR 0083).
        """
        changed = self._check.changed(_ALL_STREAMS)
        if not changed:
            return True
        if self._piped():
            return self._pipe.converged(changed)
        return self._check.converged(self._storage, changed)

    def _note(self, warnings: Sequence[str]) -> None:
        """Log warnings and keep them for the caller (`Memory.warnings`, a future doctor)."""
        for warning in warnings:
            self._log.warning("memory.warning", detail=warning)
        self.warnings.extend(warnings)

    def current(self, target: Target) -> MemoryDocument:
        """The current state of one document, caught up with the journal (other processes'
        writes too), without building entry views: for a read path such as search's
        importance lookup (ADR 0045)."""
        warnings: list[str] = []
        doc = self._pipe.read([stream_for(target)], warnings)[stream_for(target)]
        self._note(warnings)
        return doc

    def current_cached(self, target: Target) -> MemoryDocument:
        """`current`, answered from this pipeline's cached state when it is the journal's
        head and the file is as this pipeline last saw it (a stat and one read of the
        journal's head, no file read); else `current` (ADR 0103: a per-search lookup)."""
        stream = stream_for(target)
        cached = self._pipe.cached(stream) if self._piped() else None
        if cached is not None and not self._check.changed([stream]):
            with self._storage.snapshot() as uow:
                if uow.journal.version(stream) == cached.version:
                    return cached
        return self.current(target)

    def revision(self, target: Target) -> int:
        """The journal version of one document: one read of the journal's head, after
        importing a hand edit of its file if one is waiting (a stat per file otherwise); no
        fold and no render (ADR 0103)."""
        stream = stream_for(target)
        if self._check.changed([stream]):
            self.current(target)
        with self._storage.snapshot() as uow:
            return uow.journal.version(stream)

    def unattributed_projects(self) -> int:
        """How many active project entries carry no project= attribution (they live in
        Markdown only; `open()` warns about them). Read from the persisted write index when it
        is at the journal's head and nothing was folded yet (ADR 0105: an open proven caught
        up folds nothing), else from the document."""
        stream = stream_for(Target.PROJECT)
        if not self._piped():
            with self._storage.snapshot() as uow:
                head = uow.journal.version(stream)
                if head == 0:
                    return 0  # never written
                index: WriteIndex | None = getattr(uow, "write_index", None)
                if index is not None and index.version(stream) == head:
                    return len(index.rows(stream, None))  # the group of no project
        return sum(1 for e in self.document(Target.PROJECT).active if e.project is None)

    def document(self, target: Target) -> MemoryDocument:
        """The current state of one document (after catching up and importing hand edits)."""
        self.entries(target)
        doc = self._pipe.cached(stream_for(target))
        assert doc is not None  # entries() just read it
        return doc


_ALL_STREAMS = tuple(stream_for(t) for t in Target)


def _size(stamp: object) -> int:
    """The size a replica stamp records ((mtime_ns, size, inode, ctime_ns)); 0 when unknown."""
    if isinstance(stamp, tuple) and len(stamp) > 1 and isinstance(stamp[1], int):
        return stamp[1]
    return 0


def _by_target(states: dict[str, MemoryDocument]) -> dict[Target, MemoryDocument]:
    return {target_of(stream): doc for stream, doc in states.items()}


def _preview(idx: PurgeIndex, chain: frozenset[str]) -> PurgePlan:
    """A dry run's plan: the chain and its newest version, nothing to write."""
    return purges.PurgePlan(
        ids=chain, redacted=(), purges={}, newest=purges.newest_version(idx, chain).entry, texts=()
    )


def entry_view(e: MemoryEntry) -> EntryView:
    from pi_hermes_memory.results import EntryView

    return EntryView(
        id=e.stable_id,
        version=e.version_no,
        version_id=e.id,
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
        importance=e.importance,
        kind=e.kind.value if e.kind is not None else None,
    )


def to_result(
    decision: Decision, command: MemoryCommand, warnings: Sequence[str] = ()
) -> WriteResult:
    return decision_result(
        decision, target=command.target, action=command.action, warnings=warnings
    )


def decision_result(
    decision: Decision,
    *,
    target: Target,
    action: str,
    warnings: Sequence[str] = (),
    evicted: bool = True,
) -> WriteResult:
    """The write result of one decision (`evicted`: whether it reports the entries its
    capacity check evicted)."""
    from pi_hermes_memory.results import CandidateView, WriteResult

    return WriteResult(
        success=decision.success,
        status=decision.status,
        message=decision.message,
        target=target.value,
        action=action,
        entry_id=decision.entry_id,
        candidates=tuple(
            CandidateView(entry_id=c.entry_id, text=c.text, score=round(c.score, 3), basis=c.basis)
            for c in decision.candidates
        ),
        matches=decision.matches,
        evicted=len(decision.evicted) if evicted else 0,
        warnings=tuple(warnings),
    )


__all__ = ["MemoryService", "MemorySettings", "Status"]
