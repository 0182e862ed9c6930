"""Capacity rules: per-target character limits and the overflow strategies."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

import attrs
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


#: a target as messages name it ("memory memory" read as a stutter)
_NAMES: dict[Target, str] = {
    Target.USER: "the user profile",
    Target.MEMORY: "memory",
    Target.PROJECT: "project memory",
    Target.FAILURE: "failure memory",
}


def usage(entries: Iterable[MemoryEntry]) -> int:
    """Characters of entry text (metadata comments and separators are not counted)."""
    return sum(len(e.text) for e in entries)


@attrs.frozen(kw_only=True)
class CapacityPlan:
    fits: bool
    evict: tuple[MemoryEntry, ...] = ()
    needs_consolidation: bool = False
    message: str = ""


def plan_capacity(
    *,
    target: Target,
    own: Sequence[MemoryEntry],
    adding: int,
    replacing: MemoryEntry | None,
    limit: int,
    strategy: OverflowStrategy,
    consolidation_available: bool,
) -> CapacityPlan:
    """Decide whether `adding` characters fit in the session's own rows of `target`.

    `own` are the rows that count against the limit and may be evicted (already filtered by
    scope); `replacing` is the row the new text replaces, which neither counts nor is evicted.
    """
    kept = [e for e in own if replacing is None or e.id != replacing.id]
    used = usage(kept)
    if used + adding <= limit:
        return CapacityPlan(fits=True)
    setting = LIMIT_SETTING[target]
    over = (
        f"{_NAMES.get(target, target.value)} would hold {used + adding} characters, over its "
        "limit of "
        f"{limit} ({setting}; {used} used now, this entry needs {adding})"
    )
    if strategy is OverflowStrategy.FIFO_EVICT:
        if adding > limit:
            return CapacityPlan(
                fits=False, message=f"Refused: {over}; the entry alone is too long."
            )
        evict: list[MemoryEntry] = []
        # Oldest first by created date; file order breaks ties (sorted() is stable).
        for entry in sorted(kept, key=lambda e: e.created):
            if used + adding <= limit:
                break
            evict.append(entry)
            used -= len(entry.text)
        return CapacityPlan(fits=True, evict=tuple(evict))
    if strategy is OverflowStrategy.AUTO_CONSOLIDATE:
        if consolidation_available:
            return CapacityPlan(fits=False, needs_consolidation=True, message=over)
        return CapacityPlan(
            fits=False,
            message=(
                f"Refused: {over}. memoryOverflowStrategy is auto-consolidate, but no LLM is "
                "configured for consolidation, so it behaves as reject: remove or replace "
                "entries first."
            ),
        )
    return CapacityPlan(fits=False, message=f"Refused: {over}. Remove or replace entries first.")
