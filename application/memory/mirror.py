"""What the searchable mirror (the `memories` read model) must hold, and what a rebuild changed.

The mirror is a projection of the journal (ADR 0002/0003): every active and superseded entry of
every document, except project entries without a project attribution, which stay in Markdown
only. `Projection.rebuild` compares the mirror with this and repairs it (ADR 0013).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.memory.rows import stored
from pi_hermes_memory.ports.memory import RebuildReport, TargetRepair


def mirrored(entry: MemoryEntry) -> bool:
    """Whether the mirror holds a row for `entry` (unattributed project entries: no)."""
    return stored(entry.target, entry.project)


@attrs.frozen(kw_only=True)
class MirrorPlan:
    """The rows the mirror must hold for `targets`, by id, and the active entries left out."""

    targets: frozenset[Target]
    rows: dict[str, MemoryEntry]
    skipped: tuple[MemoryEntry, ...]
    #: ids that occur twice in the documents (a broken journal); the first one is kept
    duplicates: tuple[str, ...] = ()


def plan_mirror(documents: Iterable[MemoryDocument]) -> MirrorPlan:
    rows: dict[str, MemoryEntry] = {}
    skipped: list[MemoryEntry] = []
    duplicates: list[str] = []
    targets: set[Target] = set()
    for doc in documents:
        targets.add(doc.target)
        for entry in doc.all_entries():
            if not mirrored(entry):
                if entry.active:
                    skipped.append(entry)
                continue
            if entry.id in rows:
                duplicates.append(entry.id)
                continue
            rows[entry.id] = entry
    return MirrorPlan(
        targets=frozenset(targets), rows=rows, skipped=tuple(skipped), duplicates=tuple(duplicates)
    )


class RepairTally:
    """Counts repairs per target while an adapter rebuilds (a small mutable helper)."""

    _KINDS = ("added", "updated", "removed", "skipped", "kept_history")

    def __init__(self, plan: MirrorPlan) -> None:
        self._counts: dict[Target, dict[str, int]] = {}
        for target in plan.targets:
            self._counts[target] = dict.fromkeys(self._KINDS, 0)
        for entry in plan.skipped:
            self.count(entry.target, "skipped")

    def count(self, target: Target | str, what: str) -> None:
        counts = self._counts.setdefault(Target(target), dict.fromkeys(self._KINDS, 0))
        counts[what] += 1

    def report(self, *, fts_rebuilt: bool = False) -> RebuildReport:
        return RebuildReport(
            targets=tuple(
                TargetRepair(target=t, **counts)
                for t, counts in sorted(self._counts.items(), key=lambda item: item[0].value)
            ),
            fts_rebuilt=fts_rebuilt,
        )


def in_scope(plan: MirrorPlan, row_id: str, row_target: str) -> bool:
    """Whether an existing mirror row is the business of a rebuild of `plan.targets`."""
    return row_id in plan.rows or row_target in {t.value for t in plan.targets}


__all__ = [
    "MirrorPlan",
    "RebuildReport",
    "RepairTally",
    "TargetRepair",
    "in_scope",
    "mirrored",
    "plan_mirror",
]
