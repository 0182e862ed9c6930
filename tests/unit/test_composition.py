"""The composition convention (ADR 0057): import-path providers in the config parser, the
factory/instance split of `open(...)`, wiring methods of `Memory` kept private."""

from __future__ import annotations

from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.composition import Backend, BackendKind, split_part
from pi_hermes_memory.config.settings import (
    EmbeddingProvider,
    LlmProvider,
    RerankProvider,
    parse_config,
)


def _parse(document: dict[str, object]) -> tuple[object, list[str]]:
    root = Path("/agent")
    config, warnings = parse_config(
        document, agent_root=root, cwd=root, environ={}, physical=lambda p: p
    )
    return config, [f"{w.field}: {w.message}" for w in warnings]


def test_an_import_path_names_a_custom_provider() -> None:
    config, warnings = _parse(
        {
            "embedding": {"provider": "my_pkg.my_module:MyEmbedder", "model": "m", "x": 1},
            "retrieval": {"rerank": {"provider": "my_pkg.rerank:Factory.build"}},
            "llm": {"provider": "my_llm:make"},
        }
    )
    assert warnings == []
    embedding = config.embedding  # type: ignore[attr-defined]
    assert embedding.provider is EmbeddingProvider.CUSTOM and embedding.enabled
    assert embedding.custom.path == "my_pkg.my_module:MyEmbedder"
    assert dict(embedding.custom.options) == {
        "provider": "my_pkg.my_module:MyEmbedder",
        "model": "m",
        "x": 1,
    }
    assert "options" not in repr(embedding.custom)
    rerank = config.retrieval.rerank  # type: ignore[attr-defined]
    assert rerank.provider is RerankProvider.CUSTOM and rerank.enabled
    assert rerank.custom.path == "my_pkg.rerank:Factory.build"
    llm = config.llm  # type: ignore[attr-defined]
    assert llm.provider is LlmProvider.CUSTOM and llm.custom.path == "my_llm:make"


@pytest.mark.parametrize("value", ["custom", "my_pkg.module", "my pkg:X", "pkg:", ":X"])
def test_anything_else_is_not_an_import_path(value: str) -> None:
    config, warnings = _parse({"embedding": {"provider": value}})
    assert config.embedding.provider is EmbeddingProvider.OFF  # type: ignore[attr-defined]
    assert any(w.startswith("embedding.provider: ") for w in warnings)


def test_a_callable_is_a_factory_and_anything_else_an_instance() -> None:
    storage = InMemoryStorage()
    assert split_part(storage) == (storage, None)
    assert split_part(None) == (None, None)
    make = InMemorySearchIndex
    assert split_part(make) == (None, make)


def test_factories_see_a_custom_backend_with_a_storage_instance(tmp_path: Path) -> None:
    storage = InMemoryStorage()
    seen: list[Backend] = []

    def index(backend: Backend) -> InMemorySearchIndex:
        seen.append(backend)
        assert isinstance(backend.storage, InMemoryStorage)
        return InMemorySearchIndex(backend.storage)

    with pi_hermes_memory.open(
        agent_root=tmp_path,
        cwd=tmp_path,
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        search_index=index,
    ) as memory:
        memory.add("The CI runs on Buildkite")
        assert memory.search("Buildkite").hits
    assert seen[0].kind is BackendKind.CUSTOM and seen[0].storage is storage
    assert seen[0].rows is None and seen[0].vector_store is None


def test_wiring_is_private() -> None:
    public = {name for name in dir(pi_hermes_memory.Memory) if not name.startswith("_")}
    assert not public & {"attach_llm", "attach_skills", "attach_governance", "check_writable"}
