"""Typed results returned by the public API."""

from __future__ import annotations

from datetime import date

import attrs
from pi_hermes_memory.domain.status import Status

__all__ = ["BatchResult", "CandidateView", "EntryView", "WriteResult"]


@attrs.frozen(kw_only=True)
class CandidateView:
    entry_id: str
    text: str
    score: float
    basis: str


@attrs.frozen(kw_only=True)
class WriteResult:
    """Outcome of one write. `status` is one of the documented statuses (docs/tools.md)."""

    success: bool
    status: Status
    message: str
    target: str | None = None
    action: str | None = None
    entry_id: str | None = None
    candidates: tuple[CandidateView, ...] = ()
    matches: tuple[str, ...] = ()
    evicted: int = 0
    warnings: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class BatchResult:
    success: bool
    status: Status
    message: str
    results: tuple[WriteResult, ...]
    warnings: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class EntryView:
    id: str
    target: str
    text: str
    project: str | None
    category: str | None
    created: date
    last_referenced: date
    superseded_by: str | None = None
    superseded_at: date | None = None
    scope: str = "global"  # memory/user rows: global, agent:<id>, custom:<name>, user:<id>
    #: why a hand-edited entry failed the content scan; it stays out of search until fixed
    flagged: str | None = None
    #: the second seed's fields (ADR 0045); None: not set (importance then ranks as 0.7)
    importance: float | None = None
    kind: str | None = None
