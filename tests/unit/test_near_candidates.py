"""The token index never misses a near-duplicate (prefix filtering is exact), issue 9 §3."""

from __future__ import annotations

from datetime import date

from hypothesis import example, given
from hypothesis import strategies as st
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.memory.scope_index import ScopeIndex
from pi_hermes_memory.domain.search.similarity import JACCARD_THRESHOLD, jaccard, token_set

WORDS = st.sampled_from(
    ["deploy", "vpn", "staging", "needs", "the", "api", "port", "8080", "构建", "命令"]
)
TEXTS = st.lists(WORDS, min_size=1, max_size=12).map(" ".join)


def entry(i: int, text: str) -> MemoryEntry:
    return MemoryEntry.create(
        id=f"e{i:04d}",
        target=Target.MEMORY,
        text=text,
        project=None,
        category=None,
        created=date(2026, 1, 1),
    )


@given(pool=st.lists(TEXTS, max_size=40), query=TEXTS, removed=st.sets(st.integers(0, 39)))
@example(pool=["a b c d e"], query="a b c d e f", removed=set())
def test_every_row_at_the_threshold_is_a_candidate(
    pool: list[str], query: str, removed: set[int]
) -> None:
    entries = [entry(i, text) for i, text in enumerate(pool)]
    index = ScopeIndex(Target.MEMORY, enumerate(entries), probe=True)
    mine = token_set(query)
    index.near_candidates(None, mine)  # build the postings, then keep them current
    for i in sorted(removed):
        if i < len(entries):
            index.discard(i, entries[i])
    kept = [e for i, e in enumerate(entries) if i not in removed]
    extra = entry(99, query + " extra")
    index.add(99, extra)
    kept.append(extra)
    found = {e.id for e in index.near_candidates(None, mine)}
    must = {e.id for e in kept if jaccard(mine, token_set(e.text)) >= JACCARD_THRESHOLD}
    assert must <= found


def test_a_one_off_index_scans_its_group() -> None:
    entries = [entry(i, f"note {i}") for i in range(3)]
    index = ScopeIndex(Target.MEMORY, enumerate(entries))
    assert index.near_candidates(None, token_set("unrelated words")) == entries
