"""The keyword plan's pure parts (ADR 0081) equal the code they replaced, bit for bit."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.search import relevance as rel
from pi_hermes_memory.domain.search.terms import plan_terms, split_pieces, split_pieces_reference

_VOCABULARY = (
    "deploy", "deploys", "deployment", "Deployed", "payment", "payments", "invoice", "cache",
    "caching", "the", "is", "what", "café", "naïve", "sign", "signed", "2026", "a1b2",
    "支付", "服务", "发票", "的", "是", "用pytest运行", "東京", "タワー", "한국어", "e\u0301",
)  # fmt: skip
_TEXTS = st.lists(st.sampled_from(_VOCABULARY), max_size=14).map(" ".join) | st.lists(
    st.sampled_from(_VOCABULARY), min_size=1, max_size=6
).map("".join)


@given(st.text(st.characters(max_codepoint=127), max_size=60) | st.text(max_size=40))
def test_split_pieces_equals_the_character_walk(text: str) -> None:
    assert split_pieces(text) == split_pieces_reference(text)


def _weights(query: str, docs: list[int], rows: int, average: float) -> rel.Weights:
    keys = rel.query_keys(plan_terms(query))
    counts = [docs[i % len(docs)] for i in range(len(keys))]
    return rel.Weights.of(keys, counts, rows, average)


@given(
    query=_TEXTS,
    texts=st.lists(_TEXTS, min_size=1, max_size=8),
    docs=st.lists(st.integers(0, 400), min_size=1, max_size=4),
    rows=st.integers(0, 100_000),
    average=st.floats(1.0, 40.0),
)
def test_the_scorer_equals_relevance_bit_for_bit(
    query: str, texts: list[str], docs: list[int], rows: int, average: float
) -> None:
    weights = _weights(query, docs, rows, average)
    score = weights.scorer()
    for text in texts:
        assert score(text) == rel.relevance(weights, text)  # equal floats, not approximately


@given(
    query=_TEXTS,
    texts=st.lists(_TEXTS, min_size=0, max_size=30),
    docs=st.lists(st.integers(0, 400), min_size=1, max_size=4),
    floor=st.sampled_from([0.0, 0.05, 0.2, 0.6, 1.0]),
    limit=st.integers(1, 20),
)
def test_ranked_rows_equals_the_reference(
    query: str, texts: list[str], docs: list[int], floor: float, limit: int
) -> None:
    weights = _weights(query, docs, 5_000, 8.0)
    counts = [docs[i % len(docs)] for i in range(len(weights.keys))]
    rows = [(f"id{n:03d}", text, n) for n, text in enumerate(texts)]

    def rare(keys: object) -> list[rel.Candidate]:
        return rows[: len(rows) // 2 + 1]

    def common(keys: object, every: bool) -> list[rel.Candidate]:
        return rows[len(rows) // 3 :] if every else rows

    got = rel.ranked_rows(weights, counts, floor, limit, rare, common)
    want = rel.ranked_rows_reference(weights, counts, floor, limit, rare, common)
    assert got == want


@given(
    queries=st.lists(_TEXTS, min_size=2, max_size=4),
    texts=st.lists(_TEXTS, min_size=1, max_size=8),
    docs=st.lists(st.integers(0, 400), min_size=1, max_size=4),
    average=st.floats(1.0, 40.0),
)
def test_the_prefix_memo_keeps_every_score_equal_to_relevance(
    queries: list[str], texts: list[str], docs: list[int], average: float
) -> None:
    """ADR 0114: a prefix key's frequency is memoised in the row's counts, shared by every
    scorer (word and gram prefixes apart): scoring the same rows again, under other queries
    in between, gives `relevance` bit for bit every time."""
    scorers = [(w, w.scorer()) for w in (_weights(q, docs, 5_000, average) for q in queries)]
    for _ in range(2):
        for weights, score in scorers:
            for text in texts:
                assert score(text) == rel.relevance(weights, text)


def test_a_word_prefix_and_a_gram_prefix_keep_apart_in_the_memo() -> None:
    """The memo keys a gram prefix apart from a word prefix of the same text."""
    row = rel.row_counts("东京 东 东西")
    word = rel.Weights.of([rel.Key("word", "东", True, True)], [1], 100, 3.0)
    gram = rel.Weights.of([rel.Key("gram", "东", True, True)], [1], 100, 3.0)
    for weights in (word, gram, word, gram):
        assert weights.scorer()("东京 东 东西") == rel.relevance(weights, "东京 东 东西")
    assert set(row.prefix_tf) == {"东", "\0东"}
