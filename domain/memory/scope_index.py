"""The active rows of one document grouped the way the write rules ask for them (ADR 0024).

An add or a replace asks three questions of its scope: is this exact text already there, which
rows are candidates for the near-duplicate rule, and how many characters do the own rows hold.
Scanning every active row for each question made a batch of n adds cost O(n^2) even with
`force`. The index answers the first and the last in O(1) and hands out the rows of one group
for the near-duplicate scan, or (with `probe`) only the rows that scan could flag; it is kept
up to date row by row while a batch is decided (`document.WorkingDocument`) and, for adds,
from one write to the next (`document.fold`, ADR 0039).

A group is the namespace for the global targets (memory, user) and the project attribution for
the project and failure targets: `same_scope` and the capacity rules never mix groups.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterable, Set
from typing import Protocol

from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.search.similarity import JACCARD_THRESHOLD, token_set

__all__ = ["RowIndex", "ScopeIndex", "group_of"]

_NAMESPACED = frozenset({Target.MEMORY, Target.USER})
_NO_ROWS: frozenset[str] = frozenset()


def group_of(target: Target, entry: MemoryEntry) -> str | None:
    return entry.namespace if target in _NAMESPACED else entry.project


class RowIndex(Protocol):
    """What the write rules ask of a document's active rows (`ScopeIndex` answers it in
    memory; a persisted write index answers it from a storage's tables, ADR 0084)."""

    def near_candidates(self, group: str | None, tokens: frozenset[str]) -> list[MemoryEntry]: ...

    def rows(self, group: str | None) -> list[MemoryEntry]: ...

    def first(self, group: str | None) -> MemoryEntry | None: ...

    def exact(self, group: str | None, key: str) -> MemoryEntry | None: ...

    def entry(self, entry_id: str) -> MemoryEntry | None: ...

    def row(self, group: str | None, entry_id: str) -> MemoryEntry: ...

    def holds(self, group: str | None, entry_id: str) -> bool: ...

    def used(self, group: str | None) -> int: ...


class ScopeIndex:
    """Active rows by group: the rows, the rows by normalized text, and the characters used.

    Built in O(rows) from (slot, entry) pairs, where a slot orders rows as the file does;
    `add`/`discard` keep it current in O(1).
    """

    __slots__ = ("_by_key", "_groups", "_postings", "_probe", "_rows", "_target", "_used")

    def __init__(
        self,
        target: Target,
        rows: Iterable[tuple[int, MemoryEntry]] = (),
        *,
        probe: bool = False,
    ) -> None:
        self._target = target
        # `probe`: keep a token index for the near-duplicate rule, built on first use. Worth it
        # for an index that answers many adds: a batch's WorkingDocument, or a document's index
        # carried from one write to the next (ADR 0039); without it an add scans its group.
        self._probe = probe
        self._rows: dict[str | None, dict[str, MemoryEntry]] = {}
        self._by_key: dict[tuple[str | None, str], dict[int, MemoryEntry]] = {}
        self._used: dict[str | None, int] = {}
        self._groups: dict[str, str | None] = {}  # id -> group of every row
        # (group, token) -> ids of the group's rows holding that token (the near-duplicate
        # rule's candidates, see `near_candidates`); built on first use
        self._postings: dict[tuple[str | None, str], set[str]] | None = None
        for slot, entry in rows:
            self.add(slot, entry)

    def add(self, slot: int, entry: MemoryEntry) -> None:
        group = group_of(self._target, entry)
        self._rows.setdefault(group, {})[entry.id] = entry
        self._groups[entry.id] = group
        self._by_key.setdefault((group, entry.key), {})[slot] = entry
        self._used[group] = self._used.get(group, 0) + len(entry.text)
        if self._postings is not None:
            for token in token_set(entry.text):
                self._postings.setdefault((group, token), set()).add(entry.id)

    def discard(self, slot: int, entry: MemoryEntry) -> None:
        group = group_of(self._target, entry)
        rows = self._rows.get(group)
        if rows is None or rows.pop(entry.id, None) is None:
            return
        if not rows:
            del self._rows[group]
        del self._groups[entry.id]
        same = self._by_key[(group, entry.key)]
        del same[slot]
        if not same:
            del self._by_key[(group, entry.key)]
        self._used[group] -= len(entry.text)
        if self._postings is not None:
            for token in token_set(entry.text):
                holders = self._postings.get((group, token))
                if holders is not None:
                    holders.discard(entry.id)
                    if not holders:
                        del self._postings[(group, token)]

    def near_candidates(self, group: str | None, tokens: frozenset[str]) -> list[MemoryEntry]:
        """Every row of the group whose token set can reach the near-duplicate threshold with
        `tokens`, and usually few others (prefix filtering with a hit count, ADR 0039).

        Jaccard(A, B) >= t needs |A & B| >= t * |A| (the union is at least |A|), so B lacks at
        most `slack` = |A| - ceil(t * |A|) of A's tokens: among any m of A's tokens B holds at
        least m - slack. Probing the rarest slack + 1 tokens finds every such B (one hit
        each); probing a few more, while that costs at most twice as much, lets a row be
        dropped unless it holds m - slack of the m probed, without looking at the rest of the
        group or comparing any token sets.
        """
        if self._postings is None:
            if not self._probe:
                return self.rows(group)
            self._postings = {}
            for group_of_rows, rows in self._rows.items():
                for entry in rows.values():
                    for token in token_set(entry.text):
                        self._postings.setdefault((group_of_rows, token), set()).add(entry.id)
        if not tokens:
            return []
        # a hair under t*|A| so that float rounding can only widen the probe
        need = math.ceil(JACCARD_THRESHOLD * len(tokens) - 1e-9)
        slack = len(tokens) - need
        postings = self._postings
        holders: list[Set[str]] = sorted(
            (postings.get((group, token), _NO_ROWS) for token in tokens), key=len
        )
        probed = slack + 1
        cost = sum(len(h) for h in holders[:probed])
        budget = 2 * cost
        while probed < len(holders) and cost + len(holders[probed]) <= budget:
            cost += len(holders[probed])
            probed += 1
        hits = probed - slack
        ids: Iterable[str]
        if hits == 1:
            ids = set().union(*holders[:probed])
        else:
            counts: collections.Counter[str] = collections.Counter()
            for holder in holders[:probed]:
                counts.update(holder)
            ids = [entry_id for entry_id, count in counts.items() if count >= hits]
        rows = self._rows.get(group, {})
        return [rows[i] for i in ids]

    def __contains__(self, entry_id: object) -> bool:
        """Whether an active row has this id (O(1))."""
        return entry_id in self._groups

    def rows(self, group: str | None) -> list[MemoryEntry]:
        """The group's rows (file order for an index built from a document)."""
        return list(self._rows.get(group, {}).values())

    def first(self, group: str | None) -> MemoryEntry | None:
        rows = self._rows.get(group)
        return next(iter(rows.values())) if rows else None

    def exact(self, group: str | None, key: str) -> MemoryEntry | None:
        """The group's row with normalized text `key` (the first in file order)."""
        same = self._by_key.get((group, key))
        return same[min(same)] if same else None

    def entry(self, entry_id: str) -> MemoryEntry | None:
        """The active row with this id, in any group (O(1)); None when no active row has it."""
        if entry_id not in self._groups:
            return None
        return self._rows[self._groups[entry_id]].get(entry_id)

    def row(self, group: str | None, entry_id: str) -> MemoryEntry:
        return self._rows[group][entry_id]

    def holds(self, group: str | None, entry_id: str) -> bool:
        return entry_id in self._rows.get(group, {})

    def used(self, group: str | None) -> int:
        """Characters of entry text in the group (as `capacity.usage` counts them)."""
        return self._used.get(group, 0)
