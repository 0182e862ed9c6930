"""The stream ids of the memory documents: one event stream per Markdown document.

Kept apart from the document aggregate (`document.py`) so that code which only names streams
(a search proving its replicas unchanged, ADR 0105) does not load the events and the fold.
"""

from __future__ import annotations

from pi_hermes_memory.domain.memory.model import Target

__all__ = ["stream_for", "target_of"]


def stream_for(target: Target) -> str:
    """One event stream per Markdown document."""
    return f"memory:{target.value}"


def target_of(stream: str) -> Target:
    """The target of a memory stream (the inverse of `stream_for`)."""
    return Target(stream.split(":", 1)[1])
