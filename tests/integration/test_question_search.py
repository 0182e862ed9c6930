"""Natural-language questions in memory_search (ADR 0016): weak function words, prefix words.

Keyword queries keep their exact-word behaviour (tests/unit/test_search.py and the contract);
a question's function words leave tiers 1-2, and its other ASCII words match by prefix, on the
SQLite FTS5 index and the in-memory index alike.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex, match_all, match_any
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.search.terms import STOP_WORDS, plan_terms, question_prefix
from pi_hermes_memory.ports.search import ScopeClause, SearchQuery
from pi_hermes_memory.testing.contracts import EventWriter

EVERYTHING = tuple(ScopeClause(t) for t in Target)

CORPUS = [
    "Melanie: Yeah, I painted that lake sunrise last year! It's special to me.",
    "Melanie: By the way, take a look at this painting of my kids.",
    "Caroline: The sunrise hike was early, but what a view.",
    "Caroline: What did you do with the kids this weekend?",
    "Jon: I'm opening my own dance studio after losing my job.",
    "Gina: When are you opening the studio?",
    "Jon: The studios downtown are too expensive.",
    "It was a quiet day; nothing to report.",
]

# --- planning ---------------------------------------------------------------------------------


def test_a_question_has_weak_words_and_prefix_words() -> None:
    terms = plan_terms("When did Melanie paint a sunrise?")
    assert terms.words == ("when", "did", "melanie", "paint", "a", "sunrise")  # unchanged
    assert terms.is_question and terms.weak == {"when", "did", "a"}
    assert terms.required == ("melanie", "paint", "sunrise")
    assert terms.prefixes == (("melanie", "melanie"), ("paint", "paint"), ("sunrise", "sunrise"))
    assert terms.prefix("painted") is None and terms.prefix("when") is None


@pytest.mark.parametrize(
    "query", ["deploy staging", "redis eviction", "what is it", "the", "构建命令", "的 猫"]
)
def test_keyword_queries_stay_exact(query: str) -> None:
    terms = plan_terms(query)
    assert not terms.is_question and terms.weak == frozenset() and terms.prefixes == ()
    assert terms.required == terms.primary


@pytest.mark.parametrize(
    ("word", "prefix"),
    [
        ("painted", "paint"),
        ("painting", "paint"),
        ("paints", "paint"),
        ("paintings", "painting"),  # one ending is cut
        ("sunrise", "sunrise"),
        ("studios", "studio"),
        ("classes", "class"),
        ("uses", "uses"),  # "us"/"use" would be shorter than 4 letters
        ("pets", "pets"),
        ("thing", "thing"),
        ("jon", None),  # too short: exact
        ("v2", None),  # digits: exact
        ("café", None),  # not ASCII: exact (unicode61 folds it)
        ("what", None),  # a function word
        ("", None),
    ],
)
def test_question_prefix(word: str, prefix: str | None) -> None:
    assert question_prefix(word) == prefix


def test_stop_words_are_lower_case_words() -> None:
    assert all(w == w.lower() and w.isascii() and w.isalpha() for w in STOP_WORDS)
    assert {"what", "did", "the", "s", "t"} <= STOP_WORDS


def test_question_expressions() -> None:
    terms = plan_terms("What painted painting did Ann's son sell?")
    assert match_all(terms) == (
        '{text grams} : "paint"* AND {text grams} : "ann" AND {text grams} : "son" AND '
        '{text grams} : "sell"*'
    )  # one part for "painted" and "painting"
    assert match_any(terms) == (
        '{text grams} : "what" OR {text grams} : "paint"* OR {text grams} : "did" OR '
        '{text grams} : "ann" OR {text grams} : "s" OR {text grams} : "son" OR '
        '{text grams} : "sell"*'
    )


# --- searching --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def indexes(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SqliteSearchIndex, InMemorySearchIndex, dict[str, str]]]:
    storage = SqliteStorage(tmp_path_factory.mktemp("questions") / "sessions.db")
    memory = InMemoryStorage()
    disk_rows, memory_rows = EventWriter(storage), EventWriter(memory)
    ids = {}
    for text in CORPUS:
        ids[disk_rows.add(text)] = text
        memory_rows.add(text)
    yield SqliteSearchIndex(storage), InMemorySearchIndex(memory), ids
    storage.close()


def _texts(
    index: SqliteSearchIndex | InMemorySearchIndex, query: str, limit: int = 10
) -> list[str]:
    return [h.text for h in index.search(SearchQuery(text=query, clauses=EVERYTHING, limit=limit))]


def test_inflected_forms_match_a_question(
    indexes: tuple[SqliteSearchIndex, InMemorySearchIndex, dict[str, str]],
) -> None:
    disk, memory, _ = indexes
    for index in (disk, memory):
        found = _texts(index, "When did Melanie paint a sunrise?")
        assert found[0] == CORPUS[0]  # "painted … sunrise", by Melanie
        assert set(found[1:3]) == {CORPUS[1], CORPUS[2]}  # painting / sunrise
        # rows holding only stop words ("what", "did", "the", "was", "a") never match
        # (issue 27; ADR 0016 returned them last)
        assert CORPUS[3] not in found and CORPUS[7] not in found
    # keywords match inflections too since issue 27: "paint" finds "painted", "painting"
    for index in (disk, memory):
        found = _texts(index, "paint sunrise")
        assert found[0] == CORPUS[0] and set(found) == {CORPUS[0], CORPUS[1], CORPUS[2]}
        assert _texts(index, "painted sunrise")[0] == CORPUS[0]


def test_a_question_about_a_studio(
    indexes: tuple[SqliteSearchIndex, InMemorySearchIndex, dict[str, str]],
) -> None:
    disk, memory, _ = indexes
    for index in (disk, memory):
        found = _texts(index, "Which studios did Jon open?")
        assert found[:1] == [CORPUS[4]]  # jon + studio + opening: every required word
        assert set(found[1:3]) == {CORPUS[5], CORPUS[6]}


WORDS = ["when", "did", "what", "the", "a", "is", "melanie", "paint", "painted", "sunrise",
         "jon", "studios", "opening", "kids", "hike", "view", "day", "xyz", "café"]  # fmt: skip


@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8))
def test_both_indexes_agree_on_questions(
    indexes: tuple[SqliteSearchIndex, InMemorySearchIndex, dict[str, str]], words: list[str]
) -> None:
    disk, memory = indexes[0], indexes[1]
    query = " ".join(words) + "?"
    found_disk = _texts(disk, query, limit=20)
    found_memory = _texts(memory, query, limit=20)
    assert found_disk == found_memory, query  # one relevance function: the same ranking
