"""The read port on the shared PostgreSQL store through `pi_hermes_memory.open` (ADR 0057,
ADR 0050): a vector store written against the public ports alone serves hybrid search on
the team store, and a host's `backend.rows` sees what another host wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pi_hermes_memory
from pi_hermes_memory import Memory
from pi_hermes_memory.composition import Backend, BackendKind
from pi_hermes_memory.ports import MemoryRows, VectorScope

from tests.support.embedders import BagEmbedder
from tests.support.rows_vector_store import RowsVectorStore

CONFIG = {"storage": {"backend": "postgres", "dsnEnv": "TEAM_MEMORY_DSN"}}
DEPLOY = "The database runs on kubernetes"
#: no word in common, even by stem (issue 27): only the test embedder's synonyms relate them
QUESTION = "db k8s"


def host(tmp_path: Path, name: str, dsn: str, **parts: Any) -> Memory:
    root = tmp_path / name / "agent"
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    return pi_hermes_memory.open(
        agent_root=root,
        cwd=tmp_path / name,
        project="web",
        environ={"HOME": str(tmp_path / name), "TEAM_MEMORY_DSN": dsn},
        **parts,
    )


def texts(memory: Memory, query: str) -> list[str]:
    result = memory.search(query)
    assert result.success, result.message
    return [h.text for h in result.hits]


def test_a_rows_based_vector_store_serves_hybrid_search_on_postgres(
    tmp_path: Path, pg_dsn: str
) -> None:
    made: list[RowsVectorStore] = []

    def vectors(backend: Backend) -> RowsVectorStore:
        assert backend.kind is BackendKind.POSTGRES and backend.rows is not None
        made.append(RowsVectorStore(backend.rows))
        return made[-1]

    with host(tmp_path, "a", pg_dsn) as plain:  # full text alone: no shared word, no hit
        plain.add(DEPLOY)
        plain.add("The staging database is refreshed nightly")
        assert texts(plain, QUESTION) == []
    with host(tmp_path, "a", pg_dsn, embedder=BagEmbedder(), vector_store=vectors) as memory:
        found = texts(memory, QUESTION)  # backfilled, then found by its vector
        assert found[0] == DEPLOY
        assert made[0].calls > 0
        staging = texts(memory, "staging database")
        assert staging[0] == "The staging database is refreshed nightly"
        assert memory.reembed().total == 0
        model = memory.embeddings.model_id  # type: ignore[union-attr]
        assert made[0].count(VectorScope.everything(), model) == (2, 2)
    # the shipped vector store (vectors in the `memories` table) ranks alike
    with host(tmp_path, "b", pg_dsn, embedder=BagEmbedder()) as default:
        assert texts(default, QUESTION) == found
        assert texts(default, "staging database") == staging


def test_a_hosts_rows_see_what_another_host_wrote(tmp_path: Path, pg_dsn: str) -> None:
    seen: dict[str, MemoryRows] = {}

    def keep_rows(name: str) -> Any:
        def vectors(backend: Backend) -> RowsVectorStore:
            assert backend.rows is not None
            seen[name] = backend.rows
            return RowsVectorStore(backend.rows)

        return vectors

    with (
        host(tmp_path, "a", pg_dsn, embedder=BagEmbedder(), vector_store=keep_rows("a")) as a,
        host(tmp_path, "b", pg_dsn, embedder=BagEmbedder(), vector_store=keep_rows("b")) as b,
    ):
        rows_a, rows_b = seen["a"], seen["b"]
        cursor = rows_a.cursor()
        added = b.add("The build server is ci-3")
        assert added.status == "added"
        changes = rows_a.changed_since(cursor)
        assert changes.ids is not None
        [new_id] = [i for i in changes.ids if rows_a.by_id([i])[i].text.endswith("ci-3")]
        assert [r.text for r in rows_a.in_scope(VectorScope.everything())] == [
            "The build server is ci-3"
        ]
        # and back: host a removes it, host b's cursor names the removal
        cursor_b = rows_b.cursor()
        assert a.remove("ci-3").status == "removed"
        removed = rows_b.changed_since(cursor_b)
        assert removed.ids is not None and new_id in removed.ids
        assert rows_b.by_id([new_id]) == {}
        assert texts(a, "build server") == [] and texts(b, "build server") == []
