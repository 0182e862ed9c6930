"""The server's store settings (ADR 0047): command line > environment > openclaw.json >
defaults, `${ENV}` keys, literal keys refused, malformed files, unknown keys."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.cli import server as cli_server
from pi_hermes_memory.adapters.server.config import read_plugin_config, resolve_store_options
from pi_hermes_memory.config.settings import EmbeddingProvider, RerankProvider
from pi_hermes_memory.errors import ServerConfigError

KEY = "sk-secret-value-123456"
SEED_EMBEDDING = {
    "apiKey": "${JINA_API_KEY}",
    "model": "jina-embeddings-v5-text-small",
    "baseURL": "https://api.jina.ai/v1",
    "dimensions": 1024,
    "taskQuery": "retrieval.query",
    "taskPassage": "retrieval.passage",
    "normalized": True,
}


def _openclaw(tmp: Path, config: Any) -> Path:
    path = tmp / "openclaw.json"
    document = {
        "plugins": {
            "load": {"paths": ["plugins/pi-memory"]},
            "entries": {"pi-memory": {"enabled": True, "config": config}},
            "slots": {"memory": "pi-memory"},
        }
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _args(tmp: Path, **given: object) -> argparse.Namespace:
    base: dict[str, object] = {
        "host": None,
        "port": None,
        "api_key": None,
        "no_http": False,
        "no_mcp": False,
        "allow_origin": None,
        "max_body": None,
        "project": None,
        "agent": None,
        "cwd": str(tmp),
        "config": None,
    }
    return argparse.Namespace(**{**base, **given})


def test_the_seed_example_maps_onto_the_embedding_section(tmp_path: Path) -> None:
    file, warnings = read_plugin_config(_openclaw(tmp_path, {"embedding": SEED_EMBEDDING}))
    options, more = resolve_store_options(file, {"JINA_API_KEY": KEY}, cwd=tmp_path)
    assert warnings == () and more == ()
    e = options.embedding
    assert e is not None and e.provider is EmbeddingProvider.OPENAI_COMPATIBLE
    assert (e.api_key_env, e.api_key, e.model, e.base_url) == (
        "JINA_API_KEY",
        KEY,
        "jina-embeddings-v5-text-small",
        "https://api.jina.ai/v1",
    )
    assert (e.dimensions, e.task_query, e.task_passage, e.normalized) == (
        1024,
        "retrieval.query",
        "retrieval.passage",
        True,
    )
    assert options.rerank is None and options.db_path is None
    assert options.knowledge_paths == ()


def test_nothing_configured_leaves_the_stores_own_configuration(tmp_path: Path) -> None:
    options, warnings = resolve_store_options({}, {}, cwd=tmp_path)
    assert (options.embedding, options.rerank, options.db_path) == (None, None, None)
    assert warnings == ()


def test_key_variable_unset_keeps_embeddings_off_with_a_warning(tmp_path: Path) -> None:
    options, warnings = resolve_store_options({"embedding": SEED_EMBEDDING}, {}, cwd=tmp_path)
    assert options.embedding is not None and not options.embedding.enabled
    assert any("embedding is configured but off" in w for w in warnings)


@pytest.mark.parametrize("section", ["embedding", "rerank"])
def test_a_literal_key_is_refused_without_echoing_it(tmp_path: Path, section: str) -> None:
    with pytest.raises(ServerConfigError) as caught:
        resolve_store_options({section: {"apiKey": KEY}}, {}, cwd=tmp_path)
    message = str(caught.value)
    assert KEY not in message and "${" in message and f"{section}.apiKey" in message


def test_environment_beats_the_file(tmp_path: Path) -> None:
    env = {
        "JINA_API_KEY": "file-key",
        "PI_MEMORY_EMBED_API_KEY": KEY,
        "PI_MEMORY_EMBED_BASE_URL": "http://127.0.0.1:9/v9",
        "PI_MEMORY_EMBED_MODEL": "env-model",
        "PI_MEMORY_EMBED_DIMENSIONS": "64",
        "PI_MEMORY_DB_PATH": "env-root",
        "PI_MEMORY_KNOWLEDGE_PATHS": '["/docs", "notes"]',
        "PI_MEMORY_RERANK_API_KEY": "rerank-key",
        "PI_MEMORY_RERANK_MODEL": "env-reranker",
        "PI_MEMORY_RERANK_ENDPOINT": "http://127.0.0.1:9/r/rerank",
        "PI_MEMORY_RERANK_PROVIDER": "jina",
    }
    file = {
        "embedding": SEED_EMBEDDING,
        "dbPath": "file-root",
        "knowledgePaths": ["/file"],
        "rerank": {"model": "file-reranker", "endpoint": "https://file.example/v1/rerank"},
    }
    options, _ = resolve_store_options(file, env, cwd=tmp_path)
    e = options.embedding
    assert e is not None and e.enabled
    assert (e.api_key_env, e.api_key, e.base_url, e.model, e.dimensions) == (
        "PI_MEMORY_EMBED_API_KEY",
        KEY,
        "http://127.0.0.1:9/v9",
        "env-model",
        64,
    )
    assert e.task_query == "retrieval.query"  # not overridden: still from the file
    assert options.db_path == str(tmp_path / "env-root")
    assert options.knowledge_paths == ("/docs", "notes")
    r = options.rerank
    assert r is not None and r.provider is RerankProvider.JINA_COMPATIBLE
    assert (r.api_key, r.model, r.base_url) == (
        "rerank-key",
        "env-reranker",
        "http://127.0.0.1:9/r",
    )


def test_file_values_apply_when_the_environment_is_silent(tmp_path: Path) -> None:
    file = {
        "dbPath": "~/store",
        "knowledgePaths": ["/file"],
        "rerank": {"model": "file-reranker", "endpoint": "https://file.example/v1/rerank/"},
    }
    options, _ = resolve_store_options(file, {"HOME": str(tmp_path / "home")}, cwd=tmp_path)
    assert options.db_path == str(tmp_path / "home" / "store")
    assert options.knowledge_paths == ("/file",)
    r = options.rerank
    assert r is not None and (r.model, r.base_url) == ("file-reranker", "https://file.example/v1")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PI_MEMORY_EMBED_DIMENSIONS", "many"),
        ("PI_MEMORY_EMBED_DIMENSIONS", "0"),
        ("PI_MEMORY_EMBED_BASE_URL", "ftp://host/v1"),
        ("PI_MEMORY_KNOWLEDGE_PATHS", "/a,/b"),
        ("PI_MEMORY_KNOWLEDGE_PATHS", '{"a": 1}'),
        ("PI_MEMORY_KNOWLEDGE_PATHS", '["", "/b"]'),
        ("PI_MEMORY_RERANK_PROVIDER", "cohere"),
        ("PI_MEMORY_RERANK_ENDPOINT", "not a url"),
    ],
)
def test_a_bad_variable_is_an_error_naming_it(tmp_path: Path, name: str, value: str) -> None:
    with pytest.raises(ServerConfigError, match=name):
        resolve_store_options({}, {name: value}, cwd=tmp_path)


@pytest.mark.parametrize(
    ("file", "needle"),
    [
        ({"embedding": {"dimensions": "big"}}, "embedding.dimensions"),
        ({"embedding": {"baseURL": "nope"}}, "embedding.baseURL"),
        ({"embedding": "jina"}, "embedding must be an object"),
        ({"dbPath": 3}, "dbPath"),
        ({"knowledgePaths": "/docs"}, "knowledgePaths"),
    ],
)
def test_a_bad_file_value_is_an_error_naming_the_key(
    tmp_path: Path, file: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ServerConfigError, match=needle):
        resolve_store_options(file, {}, cwd=tmp_path)


def test_unknown_keys_warn_and_do_not_stop_start(tmp_path: Path) -> None:
    file = {"noSuchKey": True, "embedding": {**SEED_EMBEDDING, "chunking": 1}}
    options, warnings = resolve_store_options(file, {"JINA_API_KEY": KEY}, cwd=tmp_path)
    assert options.embedding is not None and options.embedding.enabled
    assert any("noSuchKey is not a known key" in w for w in warnings)
    assert any("embedding.chunking" in w for w in warnings)


@pytest.mark.parametrize("text", ["{", '{"plugins": [}', "\ufeff{,}"])
def test_a_malformed_file_is_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ServerConfigError, match="not valid JSON"):
        read_plugin_config(path)


def test_a_file_without_the_plugin_entry_warns(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text('{"plugins": {"entries": {}}}', encoding="utf-8")
    assert read_plugin_config(path) == (
        {},
        (f'{path}: no plugins.entries["pi-memory"].config; nothing read from it',),
    )


@given(st.text(min_size=4).filter(lambda s: any(c.isdigit() for c in s)))
def test_no_literal_key_is_ever_echoed(key: str) -> None:
    # the refusal has no digits of its own, so a key with a digit can only appear if echoed
    with pytest.raises(ServerConfigError) as caught:
        resolve_store_options({"embedding": {"apiKey": key}}, {}, cwd=Path("/"))
    assert key not in str(caught.value)


# -- through resolve_settings: which file, and the command line on top ---------------------


def test_config_option_beats_the_variable_beats_the_home_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".openclaw").mkdir(parents=True)
    _openclaw(home / ".openclaw", {"dbPath": "/from-home"})
    (tmp_path / "env").mkdir()
    by_env = _openclaw(tmp_path / "env", {"dbPath": "/from-env"})
    (tmp_path / "cli").mkdir()
    by_cli = _openclaw(tmp_path / "cli", {"dbPath": "/from-cli"})
    env = {"HOME": str(home)}
    root = cli_server.resolve_settings(_args(tmp_path), env).store.db_path
    assert root == "/from-home"
    env["PI_MEMORY_CONFIG"] = str(by_env)
    assert cli_server.resolve_settings(_args(tmp_path), env).store.db_path == "/from-env"
    s = cli_server.resolve_settings(_args(tmp_path, config=str(by_cli)), env)
    assert s.store.db_path == "/from-cli"


def test_a_missing_home_default_is_silent_but_a_named_file_must_exist(tmp_path: Path) -> None:
    s = cli_server.resolve_settings(_args(tmp_path), {"HOME": str(tmp_path)})
    assert s.store.db_path is None and s.warnings == ()
    with pytest.raises(ServerConfigError, match="cannot read"):
        cli_server.resolve_settings(_args(tmp_path, config=str(tmp_path / "none.json")), {})


def test_the_command_line_still_beats_everything(tmp_path: Path) -> None:
    path = _openclaw(tmp_path, {"embedding": SEED_EMBEDDING})
    env = {"PI_MEMORY_CONFIG": str(path), "PI_MEMORY_HTTP_PORT": "8000", "JINA_API_KEY": KEY}
    s = cli_server.resolve_settings(_args(tmp_path, port=7000), env)
    assert s.port == 7000 and s.store.embedding is not None and s.store.embedding.enabled
    assert KEY not in repr(s)


def test_run_exits_2_on_a_literal_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _openclaw(tmp_path, {"embedding": {"apiKey": KEY}})
    monkeypatch.setenv("PI_MEMORY_CONFIG", str(path))
    args = _args(tmp_path, command="serve")
    assert cli_server.run_unopened(args) == 2
    err = capsys.readouterr().err
    assert "${ENV_NAME}" in err and KEY not in err


def test_a_reranker_without_its_key_or_without_embeddings_warns(tmp_path: Path) -> None:
    file = {"rerank": {"apiKey": "${RERANK_KEY}", "model": "r"}}
    options, warnings = resolve_store_options(file, {}, cwd=tmp_path)
    assert options.rerank is not None and not options.rerank.enabled
    assert any("key variable is unset" in w for w in warnings)
    assert any("only with embeddings" in w for w in warnings)


# -- every documented plugin key (ADR 0075) -------------------------------------------------


def test_the_seeds_plugin_keys_map_onto_this_librarys_settings(tmp_path: Path) -> None:
    file = {
        "autoCapture": False,
        "autoRecall": True,
        "autoRecallMaxItems": 5,
        "autoRecallMinLength": 20,
        "sessionMemory": {"enabled": True, "messageCount": 15},
        "scopes": {"default": "global", "agentAccess": {"bob": ["global", "agent:bob"]}},
        "enableManagementTools": True,
        "captureAssistant": True,
        "dreaming": {"enabled": True},
    }
    options, warnings = resolve_store_options(file, {}, cwd=tmp_path)
    assert options.settings == {
        "autoCapture": False,
        "autoRecall": True,
        "autoRecallMaxItems": 5,
        "adaptiveMinLength": 20,
        "sessionSummary": True,
        "scopes": {"agentAccess": {"bob": ["global", "agent:bob"]}},
        "tools": {"sets": ["hermes", "pi-memory"]},
    }
    text = "\n".join(warnings)
    assert "sessionMemory.messageCount is not honoured" in text
    assert "scopes.default is not honoured" in text
    assert "captureAssistant is not honoured: auto-capture stores the user's" in text
    assert "openclaw.json dreaming is not a known key" in text
    for key in ("autoCapture ", "autoRecall ", "enableManagementTools", "agentAccess"):
        assert key not in text, text
    # the mapped settings are the ones a store opened with them uses
    from pi_hermes_memory.config.settings import parse_config

    config, _ = parse_config(
        dict(options.settings), agent_root=tmp_path, cwd=tmp_path, environ={}, physical=Path
    )
    auto = config.auto_memory
    assert (auto.capture, auto.recall, auto.recall_max_items, auto.min_length) == (
        False,
        True,
        5,
        20,
    )
    assert auto.session_summary and config.agent_access["bob"] == {"global", "agent:bob"}
    assert config.tool_sets == ("hermes", "pi-memory")


def test_a_bad_plugin_value_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ServerConfigError, match=r"openclaw\.json autoRecallMaxItems"):
        resolve_store_options({"autoRecallMaxItems": 500}, {}, cwd=tmp_path)
    with pytest.raises(ServerConfigError, match="enableManagementTools"):
        resolve_store_options({"enableManagementTools": "yes"}, {}, cwd=tmp_path)


def test_the_db_path_is_the_databases_folder(tmp_path: Path) -> None:
    options, _ = resolve_store_options({}, {"PI_MEMORY_DB_PATH": "data/sessions.db"}, cwd=tmp_path)
    assert options.db_path == str(tmp_path / "data")
    assert options.settings == {"memoryDir": str(tmp_path / "data")}
    (tmp_path / "lancedb" / "memories.lance").mkdir(parents=True)
    with pytest.raises(ServerConfigError, match=r"pi-memory LanceDB directory.*migrate"):
        resolve_store_options({"dbPath": "lancedb"}, {}, cwd=tmp_path)
