"""Auto-recall's relevance guards on a real SQLite store (issue 27 §3, ADR 0070): the issue's
unrelated questions inject nothing, a question about a stored fact still does and says why;
`retrieval.minScore` drops search hits below it; the server hands openclaw.json's `retrieval`
to every store it opens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.server.app import ServerSettings, StoreCache
from pi_hermes_memory.adapters.server.config import resolve_store_options

from tests.bench.recall_floor import FACTS, UNRELATED

VPN = FACTS[0]


def _open(root: Path, config: dict[str, Any] | None = None) -> Any:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(config or {}))
    return pi_hermes_memory.open(agent_root=root, cwd=Path("/"), environ={})


def test_unrelated_questions_inject_nothing(tmp_path: Path) -> None:
    with _open(tmp_path) as memory:
        for fact in FACTS:
            assert memory.add(fact).success
        session = memory.session("s1")
        injected = [q for q in UNRELATED if session.before_turn(q) is not None]
        assert injected == []
        status = session.review_status().auto
        assert status is not None and status.recalled_items == 0
        assert set(status.recall) <= {"below_threshold", "empty", "skipped"}


def test_a_question_about_a_fact_injects_it_and_says_why(tmp_path: Path) -> None:
    with _open(tmp_path) as memory:
        for fact in FACTS:
            memory.add(fact)
        session = memory.session("s1")
        block = session.before_turn("what does the deploy script need?")
        assert block is not None and VPN in block
        last = session.review_status().auto.last_recalls[-1]  # type: ignore[union-attr]
        assert last["outcome"] == "injected" and last["threshold"] == 0.5
        first = last["hits"][0]
        assert first["path"] == "keyword" and first["score"] >= 0.5
        assert {"deploy", "script", "need"} <= set(first["terms"])


def test_min_score_drops_search_hits_below_it(tmp_path: Path) -> None:
    with _open(tmp_path / "plain") as memory:
        for fact in FACTS:
            memory.add(fact)
        hits = memory.search("deploy script VPN and the logs").hits
    assert len(hits) >= 2
    cut = (hits[0].score + hits[-1].score) / 2
    with _open(tmp_path / "floored", {"retrieval": {"minScore": min(cut, 1.0)}}) as memory:
        for fact in FACTS:
            memory.add(fact)
        floored = memory.search("deploy script VPN and the logs").hits
    assert floored and all(h.score >= min(cut, 1.0) for h in floored)
    assert len(floored) < len(hits)


def test_the_server_hands_openclaw_retrieval_to_every_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    (tmp_path / "work").mkdir()
    file = {"retrieval": {"minScore": 0.25, "candidatePoolSize": 30, "rerank": "none"}}
    options, _ = resolve_store_options(file, {}, cwd=tmp_path)
    cache = StoreCache(ServerSettings(cwd=str(tmp_path / "work"), store=options))
    try:
        retrieval = cache.run("p1", None, lambda m: m.config.retrieval)
    finally:
        cache.close()
    assert retrieval.min_score == 0.25 and retrieval.candidate_pool_size == 30
