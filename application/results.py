"""Typed results returned by the public API.

One write's result is defined here; `BatchResult`, `EntryView` and `ToolOutcome` live in
`pi_hermes_memory.call_results` and are handed out from here on first use (ADR 0111): a CLI
`add` builds none of their classes."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import attrs
from pi_hermes_memory.domain.status import Status

if TYPE_CHECKING:
    from pi_hermes_memory.call_results import BatchResult as BatchResult
    from pi_hermes_memory.call_results import EntryView as EntryView
    from pi_hermes_memory.call_results import ToolOutcome as ToolOutcome

__all__ = ["BatchResult", "CandidateView", "EntryView", "ToolOutcome", "WriteResult"]


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
    #: ADR 0074: `entry_id` is the memory's stable id (the same for all its versions); the
    #: version written (or found) has this id and number
    version_id: str | None = None
    version: int | None = None


#: the results defined in `pi_hermes_memory.call_results`
_ELSEWHERE = frozenset({"BatchResult", "EntryView", "ToolOutcome"})


def __getattr__(name: str) -> object:
    """`BatchResult`, `EntryView` or `ToolOutcome`, imported (built) on first use."""
    if name not in _ELSEWHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found: object = getattr(importlib.import_module("pi_hermes_memory.call_results"), name)
    globals()[name] = found
    return found
