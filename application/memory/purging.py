"""The result of a purge, and what a storage reports after scrubbing (ADR 0026)."""

from __future__ import annotations

from typing import Any

import attrs
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.ports.memory import ScrubReport
from pi_hermes_memory.results import CandidateView

__all__ = ["PurgeResult", "ScrubReport"]


@attrs.frozen(kw_only=True)
class PurgeResult:
    """Outcome of `Memory.purge`. status: `purged` (the chain's text is erased everywhere the
    store keeps it), `preview` (dry run: what would be purged), `not_found`, `ambiguous`
    (candidates listed; nothing was purged)."""

    success: bool
    status: Status
    message: str
    target: str | None = None
    action: str = "purge"
    #: the memory's stable id (ADR 0074), as every other command names it
    entry_id: str | None = None
    #: the id of the chain's newest version (ADR 0074's `version_id`)
    version_id: str | None = None
    #: every id of the purged supersede chain (one per version)
    entry_ids: tuple[str, ...] = ()
    versions: int = 0
    candidates: tuple[CandidateView, ...] = ()
    matches: tuple[str, ...] = ()
    leftovers: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "success": self.success,
            "status": self.status,
            "message": self.message,
            "action": self.action,
        }
        if self.target is not None:
            out["target"] = self.target
        if self.entry_id is not None:
            out["entry_id"] = self.entry_id
        if self.version_id is not None:
            out["version_id"] = self.version_id
        if self.entry_ids:
            out["entry_ids"] = list(self.entry_ids)
            out["versions"] = self.versions
        if self.candidates:
            out["candidates"] = [
                {"id": c.entry_id, "text": c.text, "score": c.score, "basis": c.basis}
                for c in self.candidates
            ]
        if self.matches:
            out["matches"] = list(self.matches)
        if self.leftovers:
            out["leftovers"] = list(self.leftovers)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out
