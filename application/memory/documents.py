"""The memory documents as a kind of stream for the write pipeline (ADR 0030).

Four streams, `memory:<target>`, each replicated as one Markdown file. A hand edit of a file is
the person's change relative to the version they edited: a three-way merge against the version
its first line names (ADR 0022).
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, forget, target_of
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.errors import MarkdownUnreadable
from pi_hermes_memory.journal.pipeline import Imported
from pi_hermes_memory.journal.snapshots import decode_document, encode_document
from pi_hermes_memory.memory.replicas import MemoryReplicas
from pi_hermes_memory.ports.store import (
    Clock,
    DocumentFormat,
    IdFactory,
    MarkdownStore,
    UnitOfWork,
)

__all__ = ["MemoryDocuments", "MemoryReplicas"]


class MemoryDocuments:
    """`DocumentKind[MemoryDocument]`: fold, snapshots, rendering and the hand-edit merge."""

    def __init__(
        self,
        *,
        markdown: MarkdownStore,
        fmt: DocumentFormat,
        clock: Clock,
        ids: IdFactory,
    ) -> None:
        self.replicas = MemoryReplicas(markdown)
        self._markdown = markdown
        self._fmt = fmt
        self._clock = clock
        self._ids = ids

    def empty(self, stream: str) -> MemoryDocument:
        return MemoryDocument.empty(target_of(stream))

    def fold(self, state: MemoryDocument, events: Sequence[Event]) -> MemoryDocument:
        return fold(state, events)

    def encode(self, state: MemoryDocument) -> str:
        return encode_document(state)

    def decode(self, data: str) -> MemoryDocument:
        return decode_document(data)

    def render(self, state: MemoryDocument, store: str) -> bytes:
        """The bytes of `state`'s file: its entries under a version line naming this store and
        the version rendered (ADR 0022); an empty document is the version line alone."""
        line = VersionLine(target=state.target.value, version=state.version, store=store)
        return self._fmt.render(state.active, state.target, stamp=line).encode("utf-8")

    def import_edit(
        self,
        uow: UnitOfWork,
        state: MemoryDocument,
        data: bytes,
        recorded: tuple[int, str] | None,
        warnings: list[str],
    ) -> Imported:
        self._fmt.learn(data, state.target)
        where = self._markdown.describe(state.target)
        if not data.strip():
            if state.active:
                warnings.append(
                    f"{where} was emptied; it was rendered again from the journal. To delete "
                    "entries by hand, delete them and keep the first line."
                )
            return Imported(keep=False)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MarkdownUnreadable(
                f"{where} is not valid UTF-8 (byte {exc.start}); it was left untouched and no "
                "change was written to it. Fix the file by hand."
            ) from exc
        parsed = self._fmt.parse(text, state.target)
        base, based_on = self._merge_base(uow, state, parsed.version_line, recorded, warnings)
        # a purge blanked its entries' text in the past events: the base never holds them, so a
        # stale buffer's copy is new text to the merge, never "the same entry" (ADR 0026)
        purged_in_base = state.purged & {e.id for e in base.all_entries()}
        base = forget(base, purged_in_base)
        since = () if based_on is None else uow.journal.read(state.stream, after=based_on)
        # the three-way merge loads with the first hand edit, not with every write (ADR 0111)
        from pi_hermes_memory.domain.memory.reconcile import reconcile

        result = reconcile(
            base=base,
            parsed=parsed,
            head=state,
            new_id=self._ids.new_id,
            at=self._clock.now(),
            since_base=since,
            # the entries after the last render written to the file were never in it (a file
            # lagging its journal, ADR 0042): only a newer render could have shown them
            later_render=based_on is not None and recorded is not None and recorded[0] > based_on,
        )
        warnings.extend(result.warnings)
        if purged_in_base and result.added:
            warnings.append(
                f"{where} was loaded before a purge; if it still showed the text of a purged "
                "entry, that text was imported as a new hand-written entry (scanned like any "
                "hand edit): purge it again if it came back (ADR 0026)"
            )
        details = (
            ("target", state.target.value),
            ("added", result.added),
            ("revised", result.revised),
            ("removed", result.removed),
            ("retagged", result.retagged),
            ("flagged", result.flagged),
        )
        return Imported(events=tuple(result.events), details=details)

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
            if line.store != uow.ledger.store_id() or line.target != doc.target.value:
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
