"""The keyword relevance of issue 27 (ADR 0068): stop terms, stems, weights, the score and
the MaxScore bound, as pure functions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.search import relevance as rel
from pi_hermes_memory.domain.search.terms import is_stop_term, keyword_stem, plan_terms
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.ports.search import SearchQuery


@pytest.mark.parametrize(
    "term",
    ["the", "what", "please", "der", "und", "les", "où", "ou", "para", "della", "и", "что",
     "的", "了", "我们", "什么", "の", "には", "은", "에서", "Está"],
)  # fmt: skip
def test_stop_terms_of_every_covered_language(term: str) -> None:
    assert is_stop_term(term)


@pytest.mark.parametrize(
    "term", ["deploy", "pizza", "war", "die", "son", "项目", "构建", "タワ", "서울", "café"]
)
def test_content_words_are_not_stop_terms(term: str) -> None:
    assert not is_stop_term(term)


def test_a_query_of_stop_words_has_no_keys() -> None:
    for query in ("the", "what is it", "的 了 是", "der und das", "и в не", "Hello, thanks!"):
        assert rel.query_keys(plan_terms(query)) == ()
    keys = rel.query_keys(plan_terms("does the user like pizza"))
    assert [k.text for k in keys] == ["user", "like", "pizza"]


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("deploys", "deploy"),
        ("deployed", "deploy"),
        ("deployment", "deploy"),
        ("deployments", "deploy"),
        ("deploy", "deploy"),  # no ending: its own prefix
        ("formatted", "format"),  # a doubled consonant undone
        ("configuration", "configur"),
        ("configure", "configur"),
        ("class", "class"),  # "ss" is not a plural
        ("policies", "polic"),
        ("uses", "uses"),  # "us"/"use" would be shorter than 4 letters
        ("tab", None),  # too short: as written
        ("café", None),  # not ASCII
        ("v2", None),
        ("the", None),
    ],
)
def test_keyword_stem(word: str, stem: str | None) -> None:
    assert keyword_stem(word) == stem


def test_two_inflections_are_one_key_and_cjk_is_untouched() -> None:
    keys = rel.query_keys(plan_terms("deploys deployment 构建命令"))
    assert [(k.kind, k.text, k.prefix) for k in keys] == [
        ("word", "deploy", True),
        ("gram", "构建", False),
        ("gram", "建命", False),
        ("gram", "命令", False),
    ]


def test_a_common_whole_word_is_searched_as_written() -> None:
    (key,) = rel.query_keys(plan_terms("deployments"))
    counts = {"deployments": rel.COMMON_CAP, "deploy": rel.COMMON_CAP}
    chosen, docs = rel.resolve_keys([key], lambda k: counts[k.text])
    assert [(k.text, k.prefix) for k in chosen] == [("deployments", False)]
    assert docs == [rel.COMMON_CAP]
    chosen, _ = rel.resolve_keys([key], lambda k: 3)
    assert [(k.text, k.prefix) for k in chosen] == [("deploy", True)]


def test_idf_is_positive_capped_and_tiny_stores_count_as_min_rows() -> None:
    assert rel.idf(0, 1_000) > rel.idf(1, 1_000) > rel.idf(100, 1_000) > 0
    assert rel.idf(rel.COMMON_CAP, 100_000) == rel.idf(50_000, 100_000)  # a capped count
    assert rel.idf(3, 3) == rel.idf(3, rel.MIN_ROWS)


def _weights(query: str, docs: int = 5, total: int = 1_000) -> rel.Weights:
    keys = rel.query_keys(plan_terms(query))
    return rel.Weights(
        keys=keys,
        idf=tuple(rel.key_weight(k, docs, total) for k in keys),
        average_length=6.0,
    )


def test_the_score_is_the_share_of_the_query_a_row_holds() -> None:
    w = _weights("corporate vpn deploy")
    full = rel.relevance(w, "the deploy script needs the corporate vpn")
    assert full == pytest.approx(1.0, abs=0.1)
    third = rel.relevance(w, "the corporate wiki lists every public holiday")
    assert third == pytest.approx(1 / 3, abs=0.05)
    assert rel.relevance(w, "nothing in common here") == 0.0
    assert rel.shown_score(3.7) == 1.0 and rel.shown_score(-1) == rel.shown_score(math.nan) == 0.0
    assert rel.shown_score(0.123456) == 0.1235


def test_an_absent_name_weighs_more() -> None:
    named = _weights("When did Caroline paint", docs=0)
    plain = _weights("when did caroline paint", docs=0)
    assert [k.named for k in named.keys] == [True, False]
    assert named.idf[0] == rel.NAMED_WEIGHT * plain.idf[0]
    present = _weights("When did Caroline paint", docs=5)
    assert present.idf == _weights("when did caroline paint", docs=5).idf


WORDS = ["deploy", "deploys", "staging", "vpn", "token", "the", "a", "cafe", "build",
         "pipeline", "pizza", "项目构建", "的", "redis", "cache"]  # fmt: skip
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@given(query=texts, text=texts, docs=st.lists(st.integers(0, 600), min_size=8, max_size=8))
def test_scores_are_finite_and_only_keys_count(query: str, text: str, docs: list[int]) -> None:
    keys = rel.query_keys(plan_terms(query))
    if not keys:
        return
    w = rel.Weights(
        keys=keys,
        idf=tuple(rel.key_weight(k, docs[i % 8], 10_000) for i, k in enumerate(keys)),
        average_length=5.0,
    )
    score = rel.relevance(w, text)
    assert math.isfinite(score) and score >= 0
    assert 0.0 <= rel.shown_score(score) <= 1.0
    assert (score > 0) is any(rel.matches(k, text) for k in keys)
    # MaxScore: a row holding only some keys never scores above their bound
    held = [k for k in keys if rel.matches(k, text)]
    assert score <= w.bound(held) + 1e-9


@given(
    scored=st.lists(
        st.tuples(st.floats(0, 3), st.text("abc", min_size=1, max_size=3), st.none()),
        max_size=30,
    ),
    floor=st.floats(0, 1),
    limit=st.integers(1, 10),
)
def test_best_keeps_the_floor_the_limit_and_the_order(
    scored: list[tuple[float, str, None]], floor: float, limit: int
) -> None:
    kept = rel.best(scored, floor, limit)
    assert len(kept) <= limit
    assert all(s >= floor and s > 0 for s, _, _ in kept)
    assert [(s, i) for s, i, _ in kept] == sorted(((s, i) for s, i, _ in kept), reverse=True)


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, True, "0.3"])
def test_a_bad_floor_is_refused(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="min_score"):
        SearchQuery(text="x", clauses=(), min_score=bad)  # type: ignore[arg-type]
    assert SearchQuery(text="x", clauses=()).floor == rel.KEYWORD_FLOOR
