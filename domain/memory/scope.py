"""Which entries a session may see, deduplicate against, edit and maintain.

A session has a current project (or none) and the `projectMemorySharing` flag. The rules are the
seed's: project rows are isolated per project unless sharing is on; failures are the current
project's plus unattributed (global) ones; automatic maintenance (capacity, FIFO eviction,
consolidation) only ever touches the session's own rows, whatever the sharing flag says.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from pi_hermes_memory.domain.memory.model import GLOBAL_NAMESPACE, MemoryEntry, Target


@attrs.frozen(kw_only=True)
class SessionScope:
    """The session's view: current project, sharing flag and the namespaces it may use.

    `access` lists the namespaces of the memory/user layers this session may read and write:
    "global" (unnamespaced rows) plus any "agent:<id>", "custom:<name>", "user:<id>" its access
    map grants (ADR 0014). Project and failure rows follow the project rules instead.
    """

    project: str | None
    sharing: bool = False
    access: frozenset[str] = frozenset({GLOBAL_NAMESPACE})

    def can_use(self, namespace: str | None) -> bool:
        return (namespace or GLOBAL_NAMESPACE) in self.access

    def visible(self, entry: MemoryEntry) -> bool:
        """Rows that search, listing and explicit edits (replace/remove) may see."""
        if entry.target is Target.PROJECT:
            if entry.project is None:
                return False  # unattributed project rows stay in Markdown only
            return self.sharing or entry.project == self.project
        if entry.target is Target.FAILURE:
            return self.sharing or entry.project is None or entry.project == self.project
        return self.can_use(entry.namespace)

    def own_rows(self, rows: Sequence[MemoryEntry], target: Target) -> list[MemoryEntry]:
        """`own` over the rows of one target (global targets: all of them, without a scan)."""
        if target in (Target.USER, Target.MEMORY):
            return list(rows)
        return [e for e in rows if self.own(e)]

    def own(self, entry: MemoryEntry) -> bool:
        """Rows the session maintains itself: dedup on write, capacity, eviction."""
        if entry.target is Target.PROJECT:
            return entry.project is not None and entry.project == self.project
        if entry.target is Target.FAILURE:
            return entry.project is None or entry.project == self.project
        return True

    def attribution(self, target: Target) -> str | None:
        """The project a new row of `target` is recorded under: always the real one."""
        if target in (Target.PROJECT, Target.FAILURE):
            return self.project
        return None
