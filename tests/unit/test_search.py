"""memory_search on the in-memory adapters: query terms, arguments, scope, results, the tool."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.adapters.sqlite.search import match_all, match_any, quote
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.similarity import is_cjk
from pi_hermes_memory.domain.search.terms import (
    MAX_QUERY_TERMS,
    QueryTerms,
    index_grams,
    plan_terms,
)
from pi_hermes_memory.errors import ArgumentError
from pi_hermes_memory.ports.search import ScopeClause, SearchQuery
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.search.search_tool import MEMORY_SEARCH_TOOL, parse_search_arguments
from pi_hermes_memory.testing.contracts import HOSTILE_QUERIES

from tests.support.builders import service
from tests.support.fakes import SequentialIds, StepClock

# --- query terms ------------------------------------------------------------------------------


def test_words_are_lower_cased_runs_of_letters_and_digits() -> None:
    terms = plan_terms("Deploy the API-v2 to staging_eu!")
    assert terms.words == ("deploy", "the", "api", "v2", "to", "staging", "eu")
    assert terms.grams == () and terms.alt_words == ()


def test_cjk_runs_become_bigrams_and_a_lone_character_a_unigram() -> None:
    assert plan_terms("项目构建命令").grams == ("项目", "目构", "构建", "建命", "命令")
    assert plan_terms("猫").grams == ("猫",)
    assert plan_terms("東京タワー").grams == ("東京", "京タ", "タワ", "ワー")
    assert plan_terms("한국어 검색").grams == ("한국", "국어", "검색")


def test_mixed_text_gives_words_and_grams() -> None:
    terms = plan_terms("用pytest运行测试")
    assert terms.words == ("pytest",)
    assert terms.grams == ("用", "运行", "行测", "测试")


def test_compatibility_spellings_are_alternatives() -> None:
    terms = plan_terms("Straße ＡＢＣ ﬁle")
    assert terms.words == ("straße", "ａｂｃ", "ﬁle")
    assert terms.alt_words == ("strasse", "abc", "file")
    assert plan_terms("plain words").alt_words == ()


@pytest.mark.parametrize("query", ["", "   ", "!!!", "😀🚀", '"" * ( ) - ^ :', "\u200b\u00ad"])
def test_queries_without_letters_or_digits_have_no_terms(query: str) -> None:
    assert not plan_terms(query)
    assert len(plan_terms(query)) == 0


def test_operators_are_plain_words() -> None:
    terms = plan_terms('NEAR(a b) AND OR NOT -x ^y col:z "unbalanced')
    assert terms.words == ("near", "a", "b", "and", "or", "not", "x", "y", "col", "z", "unbalanced")


def test_long_queries_are_capped() -> None:
    words = " ".join(f"word{i}" for i in range(2_000))  # > 10 KB
    terms = plan_terms(words)
    assert len(terms) == MAX_QUERY_TERMS
    assert terms.words[:2] == ("word0", "word1")
    assert len(plan_terms("项目" * 5_000)) == 2  # 项目, 目项


def test_index_grams_include_words_glued_to_cjk() -> None:
    assert index_grams("The plain ASCII text") == []
    assert index_grams("用pytest运行") == ["用", "pytest", "运行"]
    assert index_grams("café 很好") == ["很好"]  # a separate word is in the text column already
    assert index_grams("Python很好") == ["Python", "很好"]


@given(st.text(max_size=300))
def test_terms_hold_only_letters_digits_marks_and_cjk(text: str) -> None:
    terms = plan_terms(text)
    assert len(terms) <= MAX_QUERY_TERMS
    for term in (*terms.words, *terms.alt_words, *terms.grams, *terms.alt_grams):
        assert term and any(ch.isalnum() for ch in term)
        for ch in term:
            assert ch.isalnum() or unicodedata.category(ch)[0] == "M" or is_cjk(ch), (term, ch)
        assert '"' not in term


def test_fts_expressions_quote_every_term() -> None:
    assert quote('say "hi"') == '"say ""hi"""'
    terms = plan_terms("deploy 构建 猫")
    assert match_all(terms) == ('{text grams} : "deploy" AND grams : "构建" AND grams : "猫"*')
    assert match_any(terms) == '{text grams} : "deploy" OR grams : "构建" OR grams : "猫"*'
    alt = plan_terms("ＡＢＣ")
    assert match_all(alt) == '{text grams} : "ａｂｃ"'
    assert match_any(alt) == '{text grams} : "ａｂｃ" OR {text grams} : "abc"'
    assert match_all(QueryTerms()) == ""


# --- scope clauses ----------------------------------------------------------------------------


def test_default_scope_clauses() -> None:
    scope = SessionScope(project="web")
    assert search_clauses(scope) == (
        ScopeClause(Target.USER, namespaces=(None,)),
        ScopeClause(Target.MEMORY, namespaces=(None,)),
        ScopeClause(Target.PROJECT, ("web",)),
        ScopeClause(Target.FAILURE, ("web", None)),
    )
    assert search_clauses(scope, Target.PROJECT) == (ScopeClause(Target.PROJECT, ("web",)),)
    assert search_clauses(scope, None, FailureCategory.INSIGHT) == (
        ScopeClause(Target.FAILURE, ("web", None)),
    )


def test_target_memory_is_the_global_and_the_current_projects_memory() -> None:
    # the seed's `memory` (ADR 0027): global memory rows plus the visible project rows
    scope = SessionScope(project="web")
    assert search_clauses(scope, Target.MEMORY) == (
        ScopeClause(Target.MEMORY, namespaces=(None,)),
        ScopeClause(Target.PROJECT, ("web",)),
    )
    assert search_clauses(SessionScope(project=None), Target.MEMORY) == (
        ScopeClause(Target.MEMORY, namespaces=(None,)),
    )
    assert search_clauses(SessionScope(project="web", sharing=True), Target.MEMORY) == (
        ScopeClause(Target.MEMORY, namespaces=(None,)),
        ScopeClause(Target.PROJECT),
    )
    # user and failure stay their own documents; failure is this project's + global ones
    assert search_clauses(scope, Target.USER) == (ScopeClause(Target.USER, namespaces=(None,)),)
    assert search_clauses(scope, Target.FAILURE) == (ScopeClause(Target.FAILURE, ("web", None)),)


def test_the_tool_schema_lists_the_seeds_targets_first() -> None:
    target = MEMORY_SEARCH_TOOL.parameters["properties"]["target"]
    assert target["enum"] == ["memory", "user", "failure", "project"]
    assert "this project's memory only" in target["description"]


def test_scope_clauses_without_a_project_and_with_sharing() -> None:
    assert search_clauses(SessionScope(project=None), Target.PROJECT) == ()
    assert search_clauses(SessionScope(project=None), Target.FAILURE) == (
        ScopeClause(Target.FAILURE, (None,)),
    )
    shared = SessionScope(project="web", sharing=True)
    global_only = (None,)  # sharing widens projects, never namespaces
    assert search_clauses(shared) == tuple(
        ScopeClause(t, namespaces=global_only if t in (Target.USER, Target.MEMORY) else None)
        for t in Target
    )


def test_scope_clauses_follow_the_namespace_access_map() -> None:
    coder = SessionScope(
        project="web", access=frozenset({"global", "agent:coder", "custom:team", "user:ann"})
    )
    by_target = {c.target: c for c in search_clauses(coder)}
    assert by_target[Target.MEMORY].namespaces == ("agent:coder", "custom:team", None)
    assert by_target[Target.USER].namespaces == (None, "user:ann")
    only_agent = SessionScope(project="web", access=frozenset({"agent:coder"}))
    assert Target.USER not in {c.target for c in search_clauses(only_agent)}


# --- arguments --------------------------------------------------------------------------------


def test_parse_defaults_and_values() -> None:
    call = parse_search_arguments({"query": "deploy"})
    assert (call.query, call.target, call.category, call.limit, call.include_superseded) == (
        "deploy",
        None,
        None,
        10,
        False,
    )
    call = parse_search_arguments(
        {
            "query": "x",
            "target": "failure",
            "category": "tool-quirk",
            "limit": 20.0,
            "include_superseded": True,
        }
    )
    assert call.target is Target.FAILURE and call.category is FailureCategory.TOOL_QUIRK
    assert call.limit == 20 and call.include_superseded is True


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("deploy", "arguments must be a JSON object, got string"),
        ({}, "query is required"),
        ({"query": 3}, "query must be a string, got number"),
        ({"query": "x", "limit": 0}, "limit must be between 1 and 20, got 0"),
        ({"query": "x", "limit": 21}, "limit must be between 1 and 20, got 21"),
        ({"query": "x", "limit": True}, "limit must be an integer, got boolean"),
        ({"query": "x", "limit": "5"}, "limit must be an integer, got string"),
        ({"query": "x", "limit": 2.5}, "limit must be an integer, got number"),
        ({"query": "x", "target": "skills"}, "target must be one of memory, user, failure"),
        ({"query": "x", "category": "bug"}, "category must be one of failure, correction"),
        ({"query": "x", "target": "memory", "category": "insight"}, "category applies only"),
        ({"query": "x", "include_superseded": "yes"}, "include_superseded must be a boolean"),
        ({"query": "x", "action": "add"}, "unknown argument(s): action"),
    ],
)
def test_parse_errors_are_precise(arguments: Any, message: str) -> None:
    with pytest.raises(ArgumentError) as info:
        parse_search_arguments(arguments)
    assert message in str(info.value)


def test_tool_definition() -> None:
    schema = MEMORY_SEARCH_TOOL.parameters
    assert MEMORY_SEARCH_TOOL.name == "memory_search"
    assert schema["required"] == ["query"] and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "query",
        "target",
        "category",
        "limit",
        "include_superseded",
    }
    assert schema["properties"]["limit"]["maximum"] == 20
    assert "Read-only" in MEMORY_SEARCH_TOOL.description


# --- the facade over in-memory adapters -------------------------------------------------------


class Store:
    """Shared in-memory storage and Markdown; `session()` opens a facade for one project."""

    def __init__(self) -> None:
        self.storage = InMemoryStorage()
        self.markdown = InMemoryMarkdown()
        self.n = 0

    def session(self, project: str | None = "app", *, sharing: bool = False) -> Memory:
        self.n += 1
        svc = service(
            self.storage,
            self.markdown,
            project=project,
            sharing=sharing,
            ids=SequentialIds(f"s{self.n}-"),
        )
        return Memory(
            service=svc,
            storage=self.storage,
            clock=StepClock(),
            ids=SequentialIds(f"m{self.n}-"),
            search_index=InMemorySearchIndex(self.storage),
        )


def texts(memory: Memory, query: str, **kw: Any) -> list[str]:
    return [h.text for h in memory.search(query, **kw).hits]


@pytest.fixture
def store() -> Store:
    return Store()


def test_projects_are_isolated_unless_sharing(store: Store) -> None:
    a, b = store.session("a"), store.session("b")
    assert a.add("Port 8080 serves the API of a", target="project").success
    assert b.add("Port 9090 serves the API of b", target="project").success
    assert a.add("Port numbers live in .env", target="memory").success
    assert sorted(texts(a, "port")) == [
        "Port 8080 serves the API of a",
        "Port numbers live in .env",
    ]
    assert "Port 9090 serves the API of b" not in texts(a, "port 9090")
    assert texts(b, "port", target="project") == ["Port 9090 serves the API of b"]
    shared = store.session("a", sharing=True)
    assert sorted(texts(shared, "port", target="project")) == [
        "Port 8080 serves the API of a",
        "Port 9090 serves the API of b",
    ]
    nobody = store.session(None)
    alone = nobody.search("port", target="project")
    assert alone.status == "no_results" and "no current project" in alone.message
    assert texts(nobody, "port") == ["Port numbers live in .env"]


def test_target_memory_finds_project_memory_and_project_narrows(store: Store) -> None:
    a, b = store.session("a"), store.session("b")
    a.add("Deploys of a go through the blue pipeline", target="project")
    b.add("Deploys of b go through the green pipeline", target="project")
    a.add("Deploys never run on Fridays", target="memory")
    a.add("I like short deploy notes", target="user")
    a.add("deploy pipeline broke on a missing token", target="failure")
    found = a.search("deploys pipeline", target="memory")
    assert sorted((h.target.value, h.project, h.text) for h in found.hits) == [
        ("memory", None, "Deploys never run on Fridays"),
        ("project", "a", "Deploys of a go through the blue pipeline"),
    ]
    assert "(project:a, " in found.message and "(memory, " in found.message
    assert texts(a, "deploys pipeline", target="project") == [
        "Deploys of a go through the blue pipeline"
    ]
    shared = store.session("a", sharing=True)
    assert len(texts(shared, "deploys pipeline", target="memory")) == 3
    assert texts(store.session(None), "deploys pipeline", target="memory") == [
        "Deploys never run on Fridays"
    ]
    tool = a.call_tool("memory_search", {"query": "deploys", "target": "memory"})
    assert {(r["target"], r["project"]) for r in tool["results"]} == {
        ("memory", None),
        ("project", "a"),
    }


def test_failures_are_the_current_projects_and_unattributed(store: Store) -> None:
    a, b, glob = store.session("a"), store.session("b"), store.session(None)
    a.add("pip failed on old setuptools in a", target="failure")
    b.add("pip failed behind the proxy in b", target="failure")
    glob.add("pip failed without network anywhere", target="failure", category="tool-quirk")
    assert sorted(texts(a, "pip failed")) == [
        "pip failed on old setuptools in a",
        "pip failed without network anywhere",
    ]
    assert texts(a, "pip", category="tool-quirk") == ["pip failed without network anywhere"]
    assert texts(glob, "pip failed") == ["pip failed without network anywhere"]
    assert len(texts(store.session("a", sharing=True), "pip failed")) == 3


def test_unattributed_project_rows_never_appear(store: Store) -> None:
    a = store.session("a")
    a.add("Attributed project note about caching", target="project")
    store.markdown.files[Target.PROJECT] += b"\n\xc2\xa7\nA hand-written caching note\n"
    assert [e.text for e in a.entries("project")] == ["Attributed project note about caching"]
    imported = a._service.document(Target.PROJECT).active  # the hand edit is in the journal
    assert [e.project for e in imported if e.text == "A hand-written caching note"] == [None]
    for session in (a, store.session("a", sharing=True), store.session(None, sharing=True)):
        assert "A hand-written caching note" not in texts(session, "caching note")


def test_history_is_added_with_markers_but_never_crosses_scope(store: Store) -> None:
    a, b = store.session("a"), store.session("b")
    a.add("The API listens on port 8080", target="project")
    a.replace("8080", "The API listens on port 9090", target="project")
    b.add("The API of b listens on port 7070", target="project")
    b.replace("7070", "The API of b listens on port 6060", target="project")
    assert texts(a, "API port") == ["The API listens on port 9090"]
    result = a.search("API port", include_superseded=True)
    assert sorted(h.text for h in result.hits) == [
        "The API listens on port 8080",
        "The API listens on port 9090",
    ]
    old = next(h for h in result.hits if h.superseded_by is not None)
    new = next(h for h in result.hits if h.superseded_by is None)
    assert old.superseded_by == new.id and old.superseded_at is not None
    assert f"(superseded by {new.id} on {old.superseded_at.isoformat()})" in result.message
    assert texts(a, "8080") == []


def test_languages(store: Store) -> None:
    m = store.session("web")
    m.add("Deploys to staging need the VPN", target="project")
    m.add("项目构建命令是 make build，发布前要先跑类型检查", target="project")
    m.add("東京オフィスの会議室は予約が必要", target="memory")
    m.add("用pytest运行测试，覆盖率要求80%", target="project")
    assert texts(m, "staging VPN")[0] == "Deploys to staging need the VPN"
    assert texts(m, "构建命令")[0].startswith("项目构建命令")
    assert texts(m, "会議室の予約")[0].startswith("東京オフィス")
    assert texts(m, "pytest 测试")[0].startswith("用pytest")
    assert texts(m, "make build")[0].startswith("项目构建命令")


def test_limit_default_and_maximum(store: Store) -> None:
    m = store.session()
    m.batch(
        [
            {"action": "add", "target": "memory", "content": f"note {i} on flaky CI"}
            for i in range(25)
        ]
    )
    assert len(m.search("flaky").hits) == 10
    assert len(m.search("flaky", limit=20).hits) == 20
    with pytest.raises(ValueError, match="limit"):
        m.search("flaky", limit=21)
    with pytest.raises(ValueError, match="limit"):
        m.search("flaky", limit=0)
    with pytest.raises(ValueError, match="category applies only"):
        m.search("flaky", target="memory", category="insight")
    with pytest.raises(ValueError, match="target must be one of"):
        m.search("flaky", target="skills")


def test_search_writes_nothing(store: Store) -> None:
    m = store.session()
    m.add("The cache is warmed at boot", target="memory")
    m.search("cache")  # the first search syncs every document once
    files = dict(store.markdown.files)
    with store.storage.transaction() as uow:
        before = {t: uow.journal.version(f"memory:{t.value}") for t in Target}
    for _ in range(3):
        assert m.search("cache").status == "ok"
    with store.storage.transaction() as uow:
        after = {t: uow.journal.version(f"memory:{t.value}") for t in Target}
    assert before == after and store.markdown.files == files
    (hit,) = m.search("cache").hits
    assert hit.last_referenced == hit.created


def test_a_hand_edit_is_visible_to_the_next_search(store: Store) -> None:
    m = store.session()
    m.add("The cache is warmed at boot", target="memory")
    assert texts(m, "sourdough") == []
    store.markdown.files[Target.MEMORY] += "\n§\nThe office bakes sourdough on Fridays\n".encode()
    assert texts(m, "sourdough") == ["The office bakes sourdough on Fridays"]
    # and a hand deletion disappears from the results
    store.markdown.files[Target.MEMORY] = store.markdown.files[Target.MEMORY].split(
        b"\n\xc2\xa7\n"
    )[1]
    assert texts(m, "cache warmed") == []


def test_results_and_statuses(store: Store) -> None:
    m = store.session("web")
    m.add("Staging deploys need the VPN", target="project")
    m.add("pip install -e failed: old setuptools", target="failure", category="tool-quirk")
    ok = m.call_tool("memory_search", {"query": "staging VPN"})
    assert ok["success"] is True and ok["status"] == "ok"
    assert ok["message"].splitlines() == [
        '1 memory matches "staging VPN" (best first):',
        f"[1] (project:web, {ok['results'][0]['created']}) Staging deploys need the VPN",
    ]
    (row,) = ok["results"]
    assert set(row) == {
        "id",
        "target",
        "project",
        "category",
        "text",
        "created",
        "last_referenced",
        "score",
        "version",  # ADR 0074: `id` is the memory's, these two the version's
        "version_id",
    }
    assert row["target"] == "project" and row["project"] == "web" and row["score"] > 0
    quirk = m.call_tool("memory_search", {"query": "setuptools", "category": "tool-quirk"})
    assert quirk["results"][0]["category"] == "tool-quirk"
    assert "(failure:web tool-quirk, " in quirk["message"]
    none = m.call_tool("memory_search", {"query": "kubernetes"})
    assert none == {
        "success": True,
        "status": "no_results",
        "message": 'No memories match "kubernetes". Try other or fewer words.',
        "results": [],
    }
    empty = m.call_tool("memory_search", {"query": " ?! "})
    assert empty["success"] is False and empty["status"] == "invalid_arguments"
    assert "nothing to search for" in empty["message"] and "results" not in empty
    bad = m.call_tool("memory_search", {"query": "x", "limit": 50})
    assert bad == {
        "success": False,
        "status": "invalid_arguments",
        "message": "limit must be between 1 and 20, got 50",
    }
    assert "memory_search" in [t.name for t in m.tool_definitions()]


def test_long_texts_are_clipped_in_the_message_only(store: Store) -> None:
    m = store.session()
    long = "needle " + "word " * 200
    m.add(long.strip(), target="memory")
    result = m.call_tool("memory_search", {"query": "needle"})
    line = result["message"].splitlines()[1]
    assert line.endswith("…") and len(line) < 360
    assert result["results"][0]["text"] == long.strip()


def test_hostile_queries_through_the_tool(store: Store) -> None:
    m = store.session()
    m.add("deploy with make deploy", target="memory")
    for query in HOSTILE_QUERIES:
        result = m.call_tool("memory_search", {"query": query})
        assert result["status"] in ("ok", "no_results", "invalid_arguments"), (query, result)


def test_search_without_an_index_is_not_offered() -> None:
    svc = service()
    m = Memory(service=svc, storage=InMemoryStorage(), clock=StepClock(), ids=SequentialIds())
    assert [t.name for t in m.tool_definitions()] == ["memory"]
    assert m.call_tool("memory_search", {"query": "x"})["status"] == "unknown_tool"
    from pi_hermes_memory.errors import HermesMemoryError

    with pytest.raises(HermesMemoryError, match="search is not available"):
        m.search("x")


SEEDED = InMemoryStorage()


def _seed() -> InMemorySearchIndex:
    store = Store()
    store.storage = SEEDED
    m = store.session("p")
    if not SEEDED.rows:
        m.add("Deploys need the VPN; 项目构建命令 make build", target="project")
        m.add("東京の天気 and the café", target="memory")
    return InMemorySearchIndex(SEEDED)


@given(st.text(max_size=200))
def test_in_memory_index_never_raises(text: str) -> None:
    index = _seed()
    clauses = tuple(ScopeClause(t) for t in Target)
    hits = index.search(SearchQuery(text=text, clauses=clauses, include_superseded=True))
    assert len(hits) <= 10 and all(h.score > 0 for h in hits)
