"""The reports a `Storage` returns: what a mirror rebuild repaired and what a scrub after a
purge left behind. They live with the ports, not with the services that read them
(ADR 0056)."""

from __future__ import annotations

import attrs
from pi_hermes_memory.domain.memory.model import Target

__all__ = ["RebuildReport", "ScrubReport", "TargetRepair"]


@attrs.frozen(kw_only=True)
class TargetRepair:
    """Changes to the mirror rows of one target. `kept_history`: superseded rows that the
    journal does not know, kept because history is never deleted by a repair."""

    target: Target
    added: int = 0
    updated: int = 0
    removed: int = 0
    skipped: int = 0
    kept_history: int = 0

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed


@attrs.frozen(kw_only=True)
class RebuildReport:
    targets: tuple[TargetRepair, ...]
    #: the full-text index did not match its rows and was rebuilt from them
    fts_rebuilt: bool = False

    def of(self, target: Target) -> TargetRepair:
        for repair in self.targets:
            if repair.target is target:
                return repair
        return TargetRepair(target=target)


@attrs.frozen(kw_only=True)
class ScrubReport:
    """What `Storage.scrub` did after a purge committed.

    `leftovers`: files the storage must not rewrite (backups of a damaged database, event logs
    of another history moved aside) that may still hold the erased text: delete them by hand.
    `warnings`: a copy that could not be scrubbed now (e.g. a reader kept the write-ahead log
    from being truncated; the next checkpoint does it)."""

    leftovers: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
