"""Capacity rules: per-target character limits and the overflow strategies (the plan a write
makes against them is `decide`'s: opening a store and searching do not build it)."""

from __future__ import annotations

import enum
from collections.abc import Iterable

from pi_hermes_memory.domain.memory.model import MemoryEntry, Target


class OverflowStrategy(enum.StrEnum):
    AUTO_CONSOLIDATE = "auto-consolidate"
    REJECT = "reject"
    FIFO_EVICT = "fifo-evict"


LIMIT_SETTING: dict[Target, str] = {
    Target.MEMORY: "memoryCharLimit",
    Target.USER: "userCharLimit",
    Target.PROJECT: "projectCharLimit",
    Target.FAILURE: "memoryCharLimit",
}


def usage(entries: Iterable[MemoryEntry]) -> int:
    """Characters of entry text (metadata comments and separators are not counted)."""
    return sum(len(e.text) for e in entries)
