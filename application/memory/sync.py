"""sync-markdown: import Markdown changes, then verify and repair the searchable mirror (ADR 0013).

Under the store lock, in one transaction: every document's hand edits are imported (origin
`markdown`, the same path every write takes), then the `memories` rows are compared with the
folded journal state and repaired (missing rows inserted, different rows updated, active rows the
state lacks deleted; superseded history is never deleted). Project entries without a project
attribution stay in Markdown only and are reported. Retired `MEMORY.md.migrated` files are never
read: only the four documents are. A second run reports zeros.
"""

from __future__ import annotations

import attrs
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.memory.mirror import plan_mirror
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.memory import RebuildReport
from pi_hermes_memory.ports.store import UnitOfWork

__all__ = ["SyncReport", "TargetSync", "sync_markdown"]

_PREVIEW_CHARS = 60


@attrs.frozen(kw_only=True)
class TargetSync:
    """One document: Markdown changes imported as events, then mirror repairs.

    `removed`: rows deleted from the mirror (not from Markdown). `skipped`: active entries the
    mirror does not hold (project entries without attribution). `kept_history`: superseded rows
    the journal does not know, kept.
    """

    target: str
    imported: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    skipped: int = 0
    kept_history: int = 0

    @property
    def repaired(self) -> int:
        return self.added + self.updated + self.removed


@attrs.frozen(kw_only=True)
class SyncReport:
    targets: tuple[TargetSync, ...]
    fts_rebuilt: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def imported(self) -> int:
        return sum(t.imported for t in self.targets)

    @property
    def added(self) -> int:
        return sum(t.added for t in self.targets)

    @property
    def updated(self) -> int:
        return sum(t.updated for t in self.targets)

    @property
    def removed(self) -> int:
        return sum(t.removed for t in self.targets)

    @property
    def skipped(self) -> int:
        return sum(t.skipped for t in self.targets)

    @property
    def changed(self) -> bool:
        """Whether anything was imported or repaired (skips and warnings do not count)."""
        return self.fts_rebuilt or any(t.imported or t.repaired for t in self.targets)

    def to_json(self) -> dict[str, object]:
        """The report as plain JSON values, totals first (the CLI's `--json`)."""
        return {
            "success": True,
            "changed": self.changed,
            "imported": self.imported,
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "skipped": self.skipped,
            "fts_rebuilt": self.fts_rebuilt,
            "targets": [attrs.asdict(t) for t in self.targets],
            "warnings": list(self.warnings),
        }

    def target(self, target: Target | str) -> TargetSync:
        for item in self.targets:
            if item.target == Target(target).value:
                return item
        raise KeyError(target)


def sync_markdown(service: MemoryService) -> SyncReport:
    """Import every document's Markdown changes, then verify and repair the mirror."""

    def step(
        uow: UnitOfWork, docs: dict[Target, MemoryDocument], imported: dict[Target, int]
    ) -> tuple[RebuildReport, dict[Target, int], tuple[MemoryEntry, ...]]:
        documents = [docs[t] for t in Target]
        skipped = plan_mirror(documents).skipped
        return uow.projection.rebuild(documents), imported, skipped

    (rebuilt, imported, skipped), notes = service.maintain(step)
    warnings = [*notes, *(_unattributed(entry) for entry in skipped)]
    targets = tuple(
        TargetSync(
            target=t.value,
            imported=imported.get(t, 0),
            added=rebuilt.of(t).added,
            updated=rebuilt.of(t).updated,
            removed=rebuilt.of(t).removed,
            skipped=rebuilt.of(t).skipped,
            kept_history=rebuilt.of(t).kept_history,
        )
        for t in Target
    )
    return SyncReport(targets=targets, fts_rebuilt=rebuilt.fts_rebuilt, warnings=tuple(warnings))


def _unattributed(entry: MemoryEntry) -> str:
    text = " ".join(entry.text.split())
    preview = text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"
    return (
        f"a {entry.target.value} entry has no project= attribution: kept in Markdown, skipped "
        f"for search (add project=<name> to its metadata comment): {preview!r}"
    )
