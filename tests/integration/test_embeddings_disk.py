"""Embeddings on the real adapters: the httpx embedder against the local fixture server, vectors
in SQLite on disk (ADR 0015)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import attrs
import numpy as np
import pytest
import structlog
from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.providers.openai_embedder import OpenAICompatibleEmbedder
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore, from_blob
from pi_hermes_memory.config.settings import EmbeddingConfig, EmbeddingProvider
from pi_hermes_memory.errors import EmbeddingFailed
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.embedding import EmbeddingService

from tests.support.builders import settings
from tests.support.embedding_server import FIXTURE_KEY, SECRET_PATH, EmbeddingServer, serve
from tests.support.fakes import SequentialIds, StepClock

PARAPHRASE_A = "Production deploys use the blue green script"
PARAPHRASE_B = "Prod deployments use the blue-green script"
MODEL = "fixture-embed-1"
_OPENS = itertools.count(1)


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with serve() as s:
        yield s


def embedding_config(server: EmbeddingServer, **kw: Any) -> EmbeddingConfig:
    values: dict[str, Any] = {
        "provider": EmbeddingProvider.OPENAI_COMPATIBLE,
        "requested_provider": EmbeddingProvider.OPENAI_COMPATIBLE,
        "base_url": server.url,
        "model": MODEL,
        "api_key": FIXTURE_KEY,
        "api_key_env": "FIXTURE_KEY",
        "timeout_ms": 2000,
        "disabled_reason": None,
    }
    values.update(kw)
    return EmbeddingConfig(**values)


@attrs.define
class Disk:
    memory: Memory
    service: MemoryService
    storage: SqliteStorage
    embedder: OpenAICompatibleEmbedder
    embeddings: EmbeddingService
    root: Path

    def row(self, entry_id: str) -> tuple[bytes | None, str | None]:
        conn = apsw.Connection(str(self.root / "pi-hermes-memory" / "sessions.db"))
        try:
            found = conn.execute(
                "SELECT embedding, embedding_model FROM memories WHERE id = ?", (entry_id,)
            ).fetchone()
        finally:
            conn.close()
        assert found is not None, entry_id
        return found[0], found[1]

    def close(self) -> None:
        self.embedder.close()
        self.storage.close()


def open_disk(root: Path, server: EmbeddingServer, project: str = "web", **kw: Any) -> Disk:
    memory_dir = root / "pi-hermes-memory"
    storage = SqliteStorage(memory_dir / "sessions.db")
    embedder = OpenAICompatibleEmbedder(embedding_config(server, **kw))
    embeddings = EmbeddingService(embedder=embedder, store=SqliteVectorStore(storage))
    clock, ids = StepClock(), SequentialIds(f"{project}-{next(_OPENS):03d}-")
    service = MemoryService(
        storage=storage,
        markdown=MarkdownFiles(memory_dir, root / "projects-memory"),
        fmt=MarkdownFormat(),
        clock=clock,
        ids=ids,
        settings=settings(project),
        embeddings=embeddings,
    )
    memory = Memory(service=service, storage=storage, clock=clock, ids=ids)
    return Disk(memory, service, storage, embedder, embeddings, root)


@pytest.fixture
def disk(tmp_path: Path, server: EmbeddingServer) -> Iterator[Disk]:
    d = open_disk(tmp_path / "agent", server)
    yield d
    d.close()


# --- the adapter against a real HTTP server ---------------------------------------------------


def test_the_embedder_talks_to_the_fixture_server(server: EmbeddingServer) -> None:
    embedder = OpenAICompatibleEmbedder(
        embedding_config(server, dimensions=32, task_query="retrieval.query")
    )
    try:
        vectors = embedder.embed(["alpha beta", "gamma", "alpha beta"], kind="query")
    finally:
        embedder.close()
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[0], vectors[2])
    (request,) = server.requests
    assert request["path"] == SECRET_PATH + "/embeddings"
    assert request["authorization"] == f"Bearer {FIXTURE_KEY}"
    assert request["body"] == {
        "model": MODEL,
        "input": ["alpha beta", "gamma", "alpha beta"],
        "dimensions": 32,
        "task": "retrieval.query",
    }


def test_answers_out_of_order_are_matched_by_index(server: EmbeddingServer) -> None:
    embedder = OpenAICompatibleEmbedder(embedding_config(server))
    try:
        texts = ["first text", "second one", "third entry here"]
        vectors = embedder.embed(texts, kind="passage")
    finally:
        embedder.close()
    for text, vector in zip(texts, vectors, strict=True):
        expected = server.vector(text)
        np.testing.assert_allclose(vector, expected / np.linalg.norm(expected), rtol=1e-6)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("wrong_count", "count"),
        ("wrong_dimension", "dimension"),
        ("malformed", "malformed"),
        ("non_finite", "non_finite"),
        ("status", "http_status"),
    ],
)
def test_server_misbehaviour(server: EmbeddingServer, mode: str, reason: str) -> None:
    server.mode, server.status = mode, 429
    embedder = OpenAICompatibleEmbedder(embedding_config(server))
    try:
        with pytest.raises(EmbeddingFailed) as caught:
            embedder.embed(["one", "two"], kind="passage")
    finally:
        embedder.close()
    assert caught.value.reason == reason


def test_a_slow_server_times_out_quickly(server: EmbeddingServer) -> None:
    server.mode, server.delay = "timeout", 5.0
    embedder = OpenAICompatibleEmbedder(embedding_config(server, timeout_ms=200))
    started = time.monotonic()
    try:
        with pytest.raises(EmbeddingFailed) as caught:
            embedder.embed(["slow"], kind="query")
    finally:
        embedder.close()
    assert caught.value.reason == "timeout"
    assert time.monotonic() - started < 2.0


def test_secrets_never_reach_messages_or_logs(server: EmbeddingServer) -> None:
    """The server echoes the sent key in its 401 body; nothing of it may show."""
    embedder = OpenAICompatibleEmbedder(embedding_config(server, api_key=FIXTURE_KEY + "-wrong"))
    try:
        with structlog.testing.capture_logs() as logs, pytest.raises(EmbeddingFailed) as caught:
            embedder.embed(["x"], kind="query")
    finally:
        embedder.close()
    assert caught.value.reason == "http_status" and "401" in str(caught.value)
    text = str(caught.value) + repr(caught.value) + json.dumps(logs, default=str)
    assert FIXTURE_KEY not in text and SECRET_PATH not in text and "s3cr3t" not in text
    assert str(server.port) not in text  # host only: no port, no path
    assert "http://127.0.0.1" in text


# --- vectors in SQLite ------------------------------------------------------------------------


def test_an_add_writes_a_little_endian_float32_blob_with_the_model_id(disk: Disk) -> None:
    entry = disk.memory.add("Web deploys use Docker Compose", target="project").entry_id
    assert entry is not None
    blob, model = disk.row(entry)
    assert model == f"openai-compatible/{MODEL}"
    assert blob is not None and len(blob) == 4 * 64
    vector = np.frombuffer(blob, dtype="<f4")
    expected = disk.embeddings.query_vector("Web deploys use Docker Compose")
    assert expected is not None
    np.testing.assert_allclose(vector, expected, rtol=1e-6)


def test_paraphrase_blocked_and_force_overrides(disk: Disk) -> None:
    first = disk.memory.add(PARAPHRASE_A, target="project")
    blocked = disk.memory.add(PARAPHRASE_B, target="project")
    assert blocked.status == "near_duplicate"
    assert [(c.entry_id, c.basis) for c in blocked.candidates] == [(first.entry_id, "cosine")]
    assert disk.memory.add(PARAPHRASE_B, target="project", force=True).status == "added"


def test_a_failing_provider_never_fails_a_write(disk: Disk, server: EmbeddingServer) -> None:
    server.mode, server.status = "status", 503
    added = disk.memory.add(PARAPHRASE_A, target="project")
    assert added.status == "added" and added.entry_id is not None
    assert disk.row(added.entry_id) == (None, None)
    # with the provider back, the paraphrase is still judged by tokens only (no vector there)
    server.mode = "ok"
    assert disk.memory.add(PARAPHRASE_B, target="project").status == "added"


def test_sync_markdown_keeps_vectors(disk: Disk) -> None:
    entry = disk.memory.add("Web deploys use Docker Compose", target="project").entry_id
    assert entry is not None
    before = disk.row(entry)
    report = disk.memory.sync_markdown()
    assert (report.imported, report.added, report.updated, report.removed) == (0, 0, 0, 0)
    assert disk.row(entry) == before
    # a damaged mirror row (its text changed behind our back) is repaired and loses its vector
    conn = apsw.Connection(str(disk.root / "pi-hermes-memory" / "sessions.db"))
    conn.execute("UPDATE memories SET text = 'garbled' WHERE id = ?", (entry,))
    conn.close()
    disk.memory.sync_markdown()
    assert disk.row(entry) == (None, None)
    assert disk.embeddings.backfill(VectorScope.everything()) == 1
    assert disk.row(entry) == before


def test_promote_and_demote_keep_the_vector_in_place(disk: Disk, server: EmbeddingServer) -> None:
    entry = disk.memory.add("Web deploys use Docker Compose", target="project").entry_id
    assert entry is not None
    before = disk.row(entry)
    requests = len(server.requests)
    assert disk.memory.promote("Docker Compose").status == "promoted"
    assert disk.row(entry) == before
    assert disk.memory.demote("Docker Compose").status == "demoted"
    assert disk.row(entry) == before
    assert len(server.requests) == requests  # the move path never calls the provider


def test_vectors_survive_a_reopen(tmp_path: Path, server: EmbeddingServer) -> None:
    root = tmp_path / "agent"
    first = open_disk(root, server)
    entry = first.memory.add(PARAPHRASE_A, target="project").entry_id
    first.close()
    second = open_disk(root, server)
    try:
        assert entry is not None and second.row(entry)[0] is not None
        assert second.memory.add(PARAPHRASE_B, target="project").status == "near_duplicate"
    finally:
        second.close()


def test_a_new_model_id_makes_every_vector_missing(tmp_path: Path, server: EmbeddingServer) -> None:
    root = tmp_path / "agent"
    first = open_disk(root, server)
    entry = first.memory.add(PARAPHRASE_A, target="project").entry_id
    first.close()
    second = open_disk(root, server, model="fixture-embed-2")
    try:
        assert entry is not None
        assert second.memory.add(PARAPHRASE_B, target="project").status == "added"
        assert second.embeddings.coverage() == (2, 1)
        report = second.memory.reembed()
        assert (report.total, report.embedded) == (1, 1)
        assert second.row(entry)[1] == "openai-compatible/fixture-embed-2"
    finally:
        second.close()


def test_hand_edited_rows_are_backfilled_by_search_scope(disk: Disk) -> None:
    disk.memory.add("Web deploys use Docker Compose", target="project")
    path = disk.root / "projects-memory" / "MEMORY.md"
    path.write_text(path.read_text() + "\n§\nWeb uses Postgres 16 <!-- project=web -->\n")
    disk.memory.entries()  # imports the hand edit: a new row without a vector
    scope = VectorScope.everything()
    assert disk.embeddings.coverage(scope) == (2, 1)
    assert disk.embeddings.backfill(scope) == 1
    assert disk.embeddings.coverage(scope) == (2, 2)


def test_partial_batch_failure_leaves_those_rows_empty(disk: Disk, server: EmbeddingServer) -> None:
    server.fail_texts = {"Uses pnpm"}
    result = disk.memory.batch(
        [
            {"action": "add", "target": "memory", "content": "Uses uv"},
            {"action": "add", "target": "memory", "content": "Uses pnpm"},
        ]
    )
    assert result.success
    assert all(disk.row(str(w.entry_id)) == (None, None) for w in result.results)
    server.fail_texts = set()
    report = disk.memory.reembed(batch_size=1)
    assert (report.embedded, report.failed) == (2, 0)
    stored = [from_blob(disk.row(str(w.entry_id))[0] or b"") for w in result.results]
    assert all(v.shape == (64,) for v in stored)


def test_moves_apply_the_cosine_rule_on_sqlite(disk: Disk, server: EmbeddingServer) -> None:
    """The stored-vector cosines of a move are read before its write transaction: read inside
    it, SQLite refused a nested transaction and the rule was silently skipped (issue 10 §3)."""
    assert disk.memory.add(PARAPHRASE_A).status == "added"  # global
    assert disk.memory.add(PARAPHRASE_B, target="project").status == "added"
    requests = len(server.requests)
    with structlog.testing.capture_logs() as logs:
        result = disk.memory.promote("blue-green")
    assert result.status == "near_duplicate", result.message
    assert [c.basis for c in result.candidates] == ["cosine"]
    assert not [log for log in logs if log["log_level"] in ("warning", "error")], logs
    assert disk.memory.promote("blue-green", force=True).status == "promoted"
    assert len(server.requests) == requests  # stored vectors only, no provider call
