"""The `adapters` section (ADR 0060): storage-side factories named by import path, parsed into
`Config.adapters`, loaded by `open()`; a keyword given to `open()` wins over its entry, and
anything that cannot be used is a ConfigError naming the field, never the default instead."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.inmemory.history import InMemorySessionFiles
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.composition import Backend, BackendKind
from pi_hermes_memory.config.adapters import ADAPTER_KEYS, AdaptersConfig
from pi_hermes_memory.config.settings import Config, parse_config
from pi_hermes_memory.errors import ConfigError

ROOT = Path("/home/u/.pi/agent")


def parse(raw: object) -> Config:
    config, _ = parse_config(
        raw, agent_root=ROOT, cwd=Path("/work/app"), environ={}, physical=lambda p: p
    )
    return config


def test_no_section_names_no_part() -> None:
    assert parse({}).adapters == AdaptersConfig()
    assert parse({"adapters": None}).adapters == AdaptersConfig()
    assert parse({"adapters": {}}).adapters == AdaptersConfig()


def test_every_part_is_named_by_its_camel_case_key() -> None:
    document = {key: f"host.parts:{key}" for key in ADAPTER_KEYS}
    adapters = parse({"adapters": {**document, "storage": None}}).adapters
    assert adapters.problem is None
    assert adapters.paths == {
        "search_index": "host.parts:searchIndex",
        "vector_store": "host.parts:vectorStore",
        "session_index": "host.parts:sessionIndex",
        "session_source": "host.parts:sessionSource",
        "skill_telemetry": "host.parts:skillTelemetry",
    }  # JSON null is "unset"
    assert adapters.field("vector_store") == "adapters.vectorStore"


@pytest.mark.parametrize(
    ("section", "says"),
    [
        (["host:make"], "adapters: expected an object"),
        ({"vector_store": "host:make"}, "adapters.vector_store: names no part (expected one of"),
        ({"vectorStore": "host.make"}, "adapters.vectorStore: expected an import path"),
        ({"vectorStore": "host:"}, "adapters.vectorStore: expected an import path"),
        ({"searchIndex": 3}, "adapters.searchIndex: expected an import path 'package.module:"),
        ({"storage": "custom"}, "adapters.storage: expected an import path"),
    ],
)
def test_a_section_that_cannot_be_used_is_a_problem_naming_the_field(
    section: object, says: str
) -> None:
    adapters = parse({"adapters": section}).adapters
    assert adapters.paths == {}
    assert adapters.problem is not None and says in adapters.problem


def test_every_problem_is_named_at_once() -> None:
    problem = parse({"adapters": {"vectorstore": "a:b", "searchIndex": "x"}}).adapters.problem
    assert problem is not None
    assert "adapters.vectorstore" in problem and "adapters.searchIndex" in problem


# --- open() ------------------------------------------------------------------------------


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A host's module of factories, importable as `host_parts`; each records its backend."""
    module = types.ModuleType("host_parts")
    module.seen = []  # type: ignore[attr-defined]

    def search_index(backend: Backend) -> InMemorySearchIndex:
        module.seen.append(("search_index", backend))  # type: ignore[attr-defined]
        return InMemorySearchIndex(backend.storage)

    def session_source(backend: Backend) -> InMemorySessionFiles:
        module.seen.append(("session_source", backend))  # type: ignore[attr-defined]
        return InMemorySessionFiles()

    def broken(backend: Backend) -> Any:
        raise RuntimeError("no index here")

    def nothing(backend: Backend) -> None:
        return None

    module.search_index = search_index  # type: ignore[attr-defined]
    module.session_source = session_source  # type: ignore[attr-defined]
    module.broken = broken  # type: ignore[attr-defined]
    module.nothing = nothing  # type: ignore[attr-defined]
    module.not_callable = 42  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "host_parts", module)
    return module


def _write(root: Path, document: dict[str, Any]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(document), encoding="utf-8")


def _open(root: Path, **parts: Any) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(
        agent_root=root,
        cwd=root.parent,
        environ={},
        storage=InMemoryStorage(),
        markdown=InMemoryMarkdown(),
        **parts,
    )


def test_open_calls_the_configured_factories_with_the_backend(
    tmp_path: Path, host: types.ModuleType
) -> None:
    root = tmp_path / "agent"
    _write(
        root,
        {
            "adapters": {
                "searchIndex": "host_parts:search_index",
                "sessionSource": "host_parts:session_source",
            }
        },
    )
    with _open(root) as memory:
        memory.add("The CI runs on Buildkite")
        assert memory.search("Buildkite").hits  # the configured index: the instance has none
    assert [name for name, _ in host.seen] == ["search_index", "session_source"]
    assert all(backend.kind is BackendKind.CUSTOM for _, backend in host.seen)


def test_a_keyword_wins_over_its_entry(tmp_path: Path, host: types.ModuleType) -> None:
    root = tmp_path / "agent"
    _write(root, {"adapters": {"searchIndex": "host_parts:broken"}})
    storage = InMemoryStorage()
    with pi_hermes_memory.open(
        agent_root=root,
        cwd=tmp_path,
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        search_index=InMemorySearchIndex(storage),
    ) as memory:
        memory.add("The CI runs on Buildkite")
        assert memory.search("Buildkite").hits


def test_a_session_source_factory_given_to_open_is_called(tmp_path: Path) -> None:
    seen: list[Backend] = []

    def source(backend: Backend) -> InMemorySessionFiles:
        seen.append(backend)
        return InMemorySessionFiles()

    with _open(tmp_path / "agent", session_source=source):
        pass
    assert len(seen) == 1 and seen[0].kind is BackendKind.CUSTOM


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("host_parts:missing", "has no attribute 'missing'"),
        ("no_such_host_module:make", "cannot import the module 'no_such_host_module'"),
        ("host_parts:not_callable", "is not a class or a function"),
        ("host_parts:broken", "failed to build the adapter: RuntimeError: no index here"),
        ("host_parts:nothing", "returned None instead of an adapter"),
    ],
)
def test_a_wrong_entry_is_a_config_error_naming_field_and_path(
    tmp_path: Path, host: types.ModuleType, path: str, says: str
) -> None:
    root = tmp_path / "agent"
    _write(root, {"adapters": {"searchIndex": path}})
    with pytest.raises(ConfigError) as raised:
        _open(root)
    assert str(raised.value).startswith("adapters.searchIndex: ")
    assert says in str(raised.value) and path in str(raised.value)


def test_an_unreadable_section_stops_open(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    _write(root, {"adapters": {"vectorstore": "host_parts:search_index"}})
    with pytest.raises(ConfigError, match=r"adapters\.vectorstore: names no part"):
        _open(root)


def test_a_failing_factory_closes_the_default_storage_it_opened(
    tmp_path: Path, host: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage

    closed: list[SqliteStorage] = []
    close = SqliteStorage.close

    def recording_close(self: SqliteStorage) -> None:
        closed.append(self)
        close(self)

    monkeypatch.setattr(SqliteStorage, "close", recording_close)
    root = tmp_path / "agent"
    _write(root, {"adapters": {"vectorStore": "host_parts:broken"}})
    with pytest.raises(ConfigError, match=r"^adapters\.vectorStore: .*no index here"):
        pi_hermes_memory.open(agent_root=root, cwd=tmp_path, environ={})
    assert len(closed) == 1
