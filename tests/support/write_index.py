"""Compare the persisted write index (ADR 0084) with the folded document it stands for."""

from __future__ import annotations

from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.domain.memory.scope_index import ScopeIndex, group_of
from pi_hermes_memory.domain.search.similarity import token_set


def check_write_index(storage: SqliteStorage, doc: MemoryDocument, probes: list[str]) -> None:
    """The index of `doc`'s stream, when it is at `doc`'s version, answers every question of
    the write rules exactly as the in-memory `ScopeIndex` of the fold does."""
    with storage.transaction() as uow:
        index = uow.write_index
        version = index.version(doc.stream) or 0
        if version != doc.version:
            assert version < doc.version or version == -1, (version, doc.version)
            return
        assert index.active(doc.stream) == list(doc.active)
        memory = ScopeIndex(doc.target, enumerate(doc.active), probe=True)
        groups = {group_of(doc.target, e) for e in doc.active} | {None, "alpha", "agent:x"}
        for group in groups:
            assert index.rows(doc.stream, group) == memory.rows(group)
            assert index.first(doc.stream, group) == memory.first(group)
            assert index.used(doc.stream, group) == memory.used(group)
            for entry in memory.rows(group):
                assert index.exact(doc.stream, group, entry.key) == memory.exact(group, entry.key)
                assert index.entry(doc.stream, entry.id) == entry
            for text in [*probes, *(e.text for e in doc.active[:5])]:
                tokens = token_set(text)
                found = {e.id for e in index.near_candidates(doc.stream, group, tokens)}
                # both filters keep every row the rule can flag; compare what the rule keeps
                expected = {e.id for e in memory.near_candidates(group, tokens)}
                assert _flaggable(text, found, doc) == _flaggable(text, expected, doc)


def _flaggable(text: str, ids: set[str], doc: MemoryDocument) -> set[str]:
    from pi_hermes_memory.domain.search.similarity import near_duplicates

    rows = [(e.id, e.text) for e in doc.active if e.id in ids]
    return {c.entry_id for c in near_duplicates(text, rows, limit=10_000)}
