"""`retrieval.rerank: "llm"` (ADR 0070) on a real SQLite store with a real child-process LLM
(tests/support/fake_llm.py): the LLM's scores reorder hybrid search; a failing, slow or
nonsensical LLM leaves the order the rerank stage gives without any reranker's score (the
cosine mix, i.e. `"lightweight"`); the offline path never needs the LLM."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.providers.command_llm import CommandCompleter
from pi_hermes_memory.adapters.providers.llm_reranker import CosineOnly, LlmReranker
from pi_hermes_memory.testing import RerankerContract

from tests.support.embedders import BagEmbedder
from tests.support.fake_llm import FAKE_LLM

NOTES = [
    "Deploy the web app with the blue deploy script",
    "Deploy the web app with the green script",
    "Deploy the docs site with the red deploy script and a deploy key",
]
QUERY = "deploy web app script"


def _open(root: Path, rerank: object, *llm_args: str, timeout_ms: int = 5000) -> Any:
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {"retrieval": {"stages": ["rerank"], "rerank": rerank}}
    if llm_args:
        config["llm"] = {"provider": "command", "command": [sys.executable, FAKE_LLM, *llm_args]}
        if isinstance(rerank, dict):
            config["retrieval"]["rerank"] = {**rerank, "timeoutMs": timeout_ms}
    (root / "hermes-memory-config.json").write_text(json.dumps(config))
    memory = pi_hermes_memory.open(
        agent_root=root, cwd=root, environ={"HOME": str(root)}, embedder=BagEmbedder()
    )
    for note in NOTES:
        assert memory.add(note).success
    return memory


def _order(memory: Any) -> list[str]:
    result = memory.search(QUERY)
    assert result.success, result.message
    return [h.text for h in result.hits]


@pytest.fixture
def lightweight(tmp_path: Path) -> list[str]:
    with _open(tmp_path / "light", "lightweight") as memory:
        assert isinstance(memory._search._reranker, CosineOnly)
        return _order(memory)


def test_the_llm_scores_reorder_the_hits(tmp_path: Path, lightweight: list[str]) -> None:
    with _open(tmp_path / "llm", "llm", "--rerank", "docs site") as memory:
        assert isinstance(memory._search._reranker, LlmReranker)
        order = _order(memory)
    # the cosine mix ranks the docs-site note last (it is about another site); the LLM's
    # score for it (1.0, the others 0.0) outweighs that
    assert lightweight[0] != NOTES[2]
    assert order[0] == NOTES[2]
    assert sorted(order) == sorted(lightweight)


@pytest.mark.parametrize(
    "llm_args",
    [
        ("--exit", "3"),  # the LLM fails
        ("--reply", "I think the second one is best."),  # prose, no JSON
        ("--reply", '{"scores": [1, 0]}'),  # a wrong count
        ("--reply", '{"scores": ["high", "low", "low"]}'),  # not numbers
        ("--reply", '{"scores": [NaN, 0, 0]}'),  # not finite
        ("--sleep", "30", "--reply", '{"scores": [0, 0, 1]}'),  # past the time budget
    ],
    ids=["exit", "prose", "count", "strings", "nan", "slow"],
)
def test_a_bad_answer_keeps_the_order_without_it(
    tmp_path: Path, lightweight: list[str], llm_args: tuple[str, ...]
) -> None:
    with _open(tmp_path / "llm", {"provider": "llm"}, *llm_args, timeout_ms=300) as memory:
        assert _order(memory) == lightweight


def test_llm_rerank_without_an_llm_is_a_warning_and_search_works(tmp_path: Path) -> None:
    with _open(tmp_path / "off", "llm") as memory:  # no llm section: the LLM is off
        assert memory._search._reranker is None
        assert any('retrieval.rerank is "llm"' in w for w in memory.warnings)
        assert len(_order(memory)) == len(NOTES)


# --- the provider contract (ADR 0058) -----------------------------------------------------------

CONTRACT_TIMEOUT_S = 0.5


def _llm_reranker(*args: str, timeout_s: float = 10.0) -> LlmReranker:
    completer = CommandCompleter([sys.executable, FAKE_LLM, *args], grace=1.0)
    return LlmReranker(completer, timeout_s=timeout_s)


class TestLlmReranker(RerankerContract):
    timeout_s = CONTRACT_TIMEOUT_S

    @pytest.fixture
    def reranker(self) -> LlmReranker:
        return _llm_reranker("--rerank", "deploy")

    @pytest.fixture
    def failing_reranker(self) -> LlmReranker:
        return _llm_reranker("--exit", "3", "--stderr", "model exploded")

    @pytest.fixture
    def slow_reranker(self) -> LlmReranker:
        return _llm_reranker("--sleep", "30", timeout_s=CONTRACT_TIMEOUT_S)
