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


#: `stream_for`'s inverse for every target, looked up (an enum call per lookup was measurable
#: on the add path, ADR 0119); anything else is parsed as before (and refused as before)
_TARGETS = {f"memory:{target.value}": target for target in Target}


def target_of(stream: str) -> Target:
    """The target of a memory stream (the inverse of `stream_for`)."""
    found = _TARGETS.get(stream)
    return found if found is not None else Target(stream.split(":", 1)[1])
