"""Auto-recall is stricter than search (issue 27 §3, ADR 0070), on the in-memory adapters:
only hits whose shown score reaches `autoRecallMinScore` are injected; each recall records
why it fired (scores, the threshold, the query terms found, the path) or why it injected
nothing (`below_threshold` with the best score seen).

The scores come from a scripted index: the real in-memory index, with each hit's score set
from a table keyed by the hit's text, so the threshold is tested at exact values on the
contract scale (0..1) whatever the index's own scoring."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pi_hermes_memory
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.config.settings import DEFAULT_RECALL_MIN_SCORE, parse_config
from pi_hermes_memory.lifecycle.auto_memory import matched_terms

VPN = "The deploy script needs the corporate VPN"
TABS = "The user prefers tabs over spaces"
PNPM = "We use pnpm as the javascript package manager"


class ScoredIndex:
    """The in-memory index's rows, every in-scope row a hit whatever the query, with its score
    taken from `scores` (by text; a row not in it is no hit): the threshold logic is tested
    apart from any matching."""

    def __init__(
        self, inner: InMemorySearchIndex, storage: InMemoryStorage, scores: Mapping[str, float]
    ) -> None:
        self._inner = inner
        self._storage = storage
        self.scores = dict(scores)

    def search(self, query: Any) -> Any:
        every = self._inner.rows(list(self._storage.rows), query)
        hits = [attrs.evolve(h, score=self.scores[h.text]) for h in every if h.text in self.scores]
        return sorted(hits, key=lambda h: -h.score)[: query.limit]

    def rows(self, ids: Any, query: Any) -> Any:
        return self._inner.rows(ids, query)


def _open(root: Path, config: dict[str, Any], scores: Mapping[str, float]) -> Memory:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(config))
    storage = InMemoryStorage()
    return pi_hermes_memory.open(
        agent_root=root,
        cwd=Path("/"),
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        search_index=ScoredIndex(InMemorySearchIndex(storage), storage, scores),
    )


def _recalls(memory: Memory) -> tuple[dict[str, Any], ...]:
    status = memory.session("s1").review_status().auto
    assert status is not None
    return status.last_recalls


def test_only_hits_at_or_above_the_threshold_are_injected(tmp_path: Path) -> None:
    scores = {VPN: 0.51, TABS: 0.5, PNPM: 0.49}
    with _open(tmp_path, {}, scores) as memory:
        for text in scores:
            memory.add(text)
        session = memory.session("s1")
        block = session.before_turn("the deploy script, the tabs and the package manager?")
        assert block is not None
        assert VPN in block and TABS in block and PNPM not in block
        last = session.review_status().auto.last_recalls[-1]  # type: ignore[union-attr]
        assert last["outcome"] == "injected" and last["threshold"] == DEFAULT_RECALL_MIN_SCORE
        assert [h["score"] for h in last["hits"]] == [0.51, 0.5]
        assert last["below"] == 1


def test_nothing_above_the_threshold_injects_nothing_and_says_so(tmp_path: Path) -> None:
    scores = {VPN: 0.31, TABS: 0.12}
    with _open(tmp_path, {}, scores) as memory:
        memory.add(VPN)
        memory.add(TABS)
        session = memory.session("s1")
        assert session.before_turn("Can you summarize the plot of the novel for me please?") is None
        status = session.review_status().auto
        assert status is not None
        assert status.recall == {"below_threshold": 1} and status.recalled_items == 0
        last = status.last_recalls[-1]
        assert last["outcome"] == "below_threshold" and last["items"] == []
        assert last["best_score"] == 0.31 and last["below"] == 2 and last["threshold"] == 0.5


def test_a_keyword_hit_on_stop_words_only_is_never_injected(tmp_path: Path) -> None:
    # the index scored it high (the scripted 0.95), but only "the" and "for" matched
    with _open(tmp_path, {}, {VPN: 0.95, PNPM: 0.95}) as memory:
        memory.add(VPN)
        memory.add(PNPM)
        session = memory.session("s1")
        assert session.before_turn("Can you summarize the plot of the novel for me please?") is None
        last = session.review_status().auto.last_recalls[-1]  # type: ignore[union-attr]
        assert last["outcome"] == "below_threshold"
        assert last["stop_words_only"] == 2 and last["below"] == 0 and last["best_score"] is None


def test_a_search_without_hits_is_empty_not_below_threshold(tmp_path: Path) -> None:
    with _open(tmp_path, {}, {}) as memory:  # the index finds nothing
        memory.add(VPN)
        session = memory.session("s1")
        assert session.before_turn("which football club won cup 1998?") is None
        assert session.review_status().auto.recall == {"empty": 1}  # type: ignore[union-attr]


def test_the_threshold_is_configurable(tmp_path: Path) -> None:
    scores = {VPN: 0.45, TABS: 0.2}
    with _open(tmp_path, {"autoRecallMinScore": 0.4}, scores) as memory:
        memory.add(VPN)
        memory.add(TABS)
        block = memory.session("s1").before_turn("what does the deploy script need?")
        assert block is not None and VPN in block and TABS not in block


def test_why_it_fired_names_the_query_terms_and_the_path(tmp_path: Path) -> None:
    with _open(tmp_path, {}, {VPN: 0.83}) as memory:
        entry = memory.add(VPN)
        session = memory.session("s1")
        assert session.before_turn("what do our deploys need?") is not None
        (hit,) = session.review_status().auto.last_recalls[-1]["hits"]  # type: ignore[union-attr]
        # embeddings are off: every hit was found by keyword
        assert hit == {
            "id": entry.entry_id,
            "score": 0.83,
            "path": "keyword",
            "terms": ["deploys", "need"],
        }


def test_the_threshold_still_leaves_the_max_items_cap(tmp_path: Path) -> None:
    texts = [f"Kubernetes rollout note number {i}" for i in range(5)]
    with _open(tmp_path, {"autoRecallMaxItems": 2}, dict.fromkeys(texts, 0.9)) as memory:
        for text in texts:
            memory.add(text)
        block = memory.session("s1").before_turn("how does the kubernetes rollout work?")
        assert block is not None and block.count("\n- [") == 2


# --- matched_terms ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "text", "terms"),
    [
        ("does the user like pizza", VPN, ()),  # stop words never count
        ("what does the deploy script need?", VPN, ("deploy", "script", "need")),
        ("deployment", "we deploy on fridays", ("deployment",)),  # forms of one word
        ("replies", "keep each reply short", ("replies",)),
        ("rust", "the run is slow", ()),
        ("deploys", "the deployment runs nightly", ("deploys",)),
        ("VPN", VPN, ("vpn",)),
        ("部署脚本", "部署脚本需要公司的VPN", ("部署", "署脚", "脚本")),
        ("部署脚本", "测试需要公司的VPN", ()),
    ],
)
def test_matched_terms(query: str, text: str, terms: tuple[str, ...]) -> None:
    assert matched_terms(query, text) == terms


@given(st.text(max_size=80), st.text(max_size=200))
def test_matched_terms_never_raises_and_holds_no_stop_word(query: str, text: str) -> None:
    from pi_hermes_memory.domain.search.terms import STOP_WORDS

    found = matched_terms(query, text)
    assert not set(found) & STOP_WORDS


# --- the configuration key ------------------------------------------------------------------


def _parse(raw: dict[str, object]) -> Any:
    return parse_config(
        raw, agent_root=Path("/a"), cwd=Path("/w"), environ={}, physical=lambda path: path
    )


def test_auto_recall_min_score_defaults_above_search() -> None:
    config, warnings = _parse({})
    assert warnings == ()
    assert config.auto_memory.recall_min_score == DEFAULT_RECALL_MIN_SCORE == 0.5
    assert config.auto_memory.recall_min_score > config.retrieval.hard_min_score


@pytest.mark.parametrize("value", [-0.1, 1.01, "0.7", True, float("nan")])
def test_a_bad_auto_recall_min_score_is_a_warning_and_the_default(value: object) -> None:
    config, warnings = _parse({"autoRecallMinScore": value, "autoRecallMaxItems": 4})
    assert [w.field for w in warnings] == ["autoRecallMinScore"]
    assert config.auto_memory.recall_min_score == 0.5
    assert config.auto_memory.recall_max_items == 4  # the rest of the file still applies
