"""Loading the configuration from real files, directories and symlinks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs
import pytest
from pi_hermes_memory.adapters.files.config_file import (
    load_config,
    physical_path,
    read_config_document,
    resolve_agent_root,
)
from pi_hermes_memory.config.settings import (
    DOCUMENT_FIELD,
    Config,
    ConfigWarning,
    EmbeddingDisabledReason,
)
from pi_hermes_memory.errors import ConfigError


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def agent_root(home: Path) -> Path:
    path = home / ".pi" / "agent"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "my-app"
    path.mkdir(parents=True)
    return path


def write_config(agent_root: Path, document: object) -> None:
    (agent_root / "hermes-memory-config.json").write_text(json.dumps(document), "utf-8")


def load(home: Path, cwd: Path, **extra_env: str) -> tuple[Config, tuple[ConfigWarning, ...]]:
    return load_config(environ={"HOME": str(home), **extra_env}, cwd=cwd)


def fields(warnings: tuple[ConfigWarning, ...]) -> list[str]:
    return [warning.field for warning in warnings]


# --- the file ---------------------------------------------------------------------------------


def test_a_missing_file_gives_the_defaults_silently(home: Path, cwd: Path) -> None:
    config, warnings = load(home, cwd)
    assert warnings == ()
    assert config.agent_root == home / ".pi" / "agent"
    assert config.memory_dir == home / ".pi" / "agent" / "pi-hermes-memory"
    assert config.project == "my-app"


def test_a_missing_agent_root_is_also_silent(home: Path, cwd: Path) -> None:
    config, warnings = load(home, cwd, PI_CODING_AGENT_DIR=str(home / "absent"))
    assert warnings == ()
    assert config.agent_root == home / "absent"


def test_a_valid_file_is_applied(home: Path, agent_root: Path, cwd: Path) -> None:
    write_config(agent_root, {"memoryCharLimit": 1234, "projectName": "named", "unknown": 1})
    config, warnings = load(home, cwd)
    assert warnings == ()
    assert config.memory_char_limit == 1234
    assert config.project == "named"


def test_field_warnings_come_back_from_the_file(home: Path, agent_root: Path, cwd: Path) -> None:
    write_config(agent_root, {"memoryCharLimit": -1, "reviewEnabled": "yes"})
    config, warnings = load(home, cwd)
    assert config.memory_char_limit == 5000 and config.review_enabled is True
    assert fields(warnings) == ["memoryCharLimit", "reviewEnabled"]


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (b"", "empty"),
        (b"  \n\t", "empty"),
        (b'{"memoryCharLimit": 10,}', "not valid JSON"),
        (b"{", "not valid JSON"),
        (b"\xff\xfe{}", "UnicodeDecodeError"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_an_unusable_file_gives_the_defaults_with_a_warning(
    home: Path, agent_root: Path, cwd: Path, content: bytes, phrase: str
) -> None:
    (agent_root / "hermes-memory-config.json").write_bytes(content)
    config, warnings = load(home, cwd)
    assert config == Config.default(agent_root, cwd)
    assert fields(warnings) == [DOCUMENT_FIELD]
    assert phrase in warnings[0].message


@pytest.mark.parametrize("document", [[], "text", 3, None])
def test_a_file_whose_top_level_is_not_an_object_gives_the_defaults(
    home: Path, agent_root: Path, cwd: Path, document: object
) -> None:
    write_config(agent_root, document)
    config, warnings = load(home, cwd)
    assert config == Config.default(agent_root, cwd)
    assert fields(warnings) == [DOCUMENT_FIELD]


def test_an_unreadable_config_path_keeps_default_behaviour_but_not_the_data_s_place(
    home: Path, agent_root: Path, cwd: Path
) -> None:
    # A directory in place of the file: reading fails with an OSError even as root. What it
    # would say is unknown, so where the data lives is in doubt (ADR 0065).
    (agent_root / "hermes-memory-config.json").mkdir()
    config, warnings = load(home, cwd)
    assert attrs.evolve(config, location_unknown=None) == Config.default(agent_root, cwd)
    assert warnings == ()  # said once, by the store's read-only line
    assert config.location_unknown is not None and "is a folder" in config.location_unknown


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (b'{"storage": {"backend": "postgres", "dsnEnv": "TEAM_DSN"},}', "'storage'"),
        (b'{"memoryDir": "/srv/memory" "nudgeInterval": 3}', "'memoryDir'"),
        (b"{adapters: {}}", "'adapters'"),
        (b'{"\\u0073torage": {}', "a \\u escape"),
        (b'{"projectsMemoryDir": "\xff"}', "'projectsMemoryDir'"),
        (b'[{"storage": {"backend": "postgres"}}]', "'storage'"),
    ],
)
def test_a_file_that_may_name_the_store_and_cannot_be_parsed_puts_its_place_in_doubt(
    home: Path, agent_root: Path, cwd: Path, content: bytes, named: str
) -> None:
    (agent_root / "hermes-memory-config.json").write_bytes(content)
    config, warnings = load(home, cwd)
    assert config.storage.backend.value == "sqlite"  # the defaults for everything else
    assert config.location_unknown is not None and named in config.location_unknown
    assert str(agent_root / "hermes-memory-config.json") in config.location_unknown
    assert DOCUMENT_FIELD not in fields(warnings)  # not also "using defaults for every field"


def test_a_utf8_byte_order_mark_is_tolerated(home: Path, agent_root: Path, cwd: Path) -> None:
    (agent_root / "hermes-memory-config.json").write_bytes(b'\xef\xbb\xbf{"nudgeInterval": 3}')
    config, warnings = load(home, cwd)
    assert warnings == ()
    assert config.nudge_interval == 3


def test_read_config_document_returns_the_decoded_json(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"a": [1, 2.5, null]}', "utf-8")
    assert read_config_document(path) == ({"a": [1, 2.5, None]}, ())
    assert read_config_document(tmp_path / "missing.json") == ({}, ())


# --- agentRoot --------------------------------------------------------------------------------


def test_pi_coding_agent_dir_moves_the_agent_root(home: Path, tmp_path: Path, cwd: Path) -> None:
    other = tmp_path / "other-agent"
    other.mkdir()
    write_config(other, {"memoryDir": "mem"})
    config, warnings = load(home, cwd, PI_CODING_AGENT_DIR=str(other))
    assert warnings == ()
    assert config.agent_root == other
    assert config.memory_dir == other / "mem"
    assert config.projects_memory_dir == other / "projects-memory"


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_pi_coding_agent_dir_is_ignored(home: Path, cwd: Path, value: str) -> None:
    config, _ = load(home, cwd, PI_CODING_AGENT_DIR=value)
    assert config.agent_root == home / ".pi" / "agent"


def test_pi_coding_agent_dir_expands_tilde_with_home_from_environ(home: Path, cwd: Path) -> None:
    config, _ = load(home, cwd, PI_CODING_AGENT_DIR="~/custom/agent")
    assert config.agent_root == home / "custom" / "agent"


def test_a_relative_pi_coding_agent_dir_is_relative_to_the_cwd(home: Path, cwd: Path) -> None:
    config, _ = load(home, cwd, PI_CODING_AGENT_DIR="../agent")
    assert config.agent_root == cwd.parent / "agent"


def test_the_agent_root_needs_a_home_or_the_variable(cwd: Path) -> None:
    with pytest.raises(ConfigError, match="PI_CODING_AGENT_DIR"):
        resolve_agent_root({}, home=None, cwd=cwd)
    assert resolve_agent_root({"PI_CODING_AGENT_DIR": "/a/b/"}, home=None, cwd=cwd) == Path("/a/b")


def test_tilde_in_memory_dir_uses_home_from_environ(
    home: Path, agent_root: Path, cwd: Path
) -> None:
    write_config(agent_root, {"memoryDir": "~/memories"})
    config, warnings = load(home, cwd)
    assert warnings == ()
    assert config.memory_dir == home / "memories"
    assert config.db_path == home / "memories" / "sessions.db"


# --- physical roots ---------------------------------------------------------------------------


def test_a_memory_dir_symlinked_to_the_projects_root_falls_back(
    home: Path, agent_root: Path, cwd: Path
) -> None:
    (agent_root / "projects-memory").mkdir()
    (agent_root / "mem").symlink_to(agent_root / "projects-memory")
    write_config(agent_root, {"memoryDir": "mem"})
    config, warnings = load(home, cwd)
    assert config.memory_dir == agent_root / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]


def test_a_dangling_symlink_to_the_future_projects_root_is_a_conflict(
    home: Path, agent_root: Path, cwd: Path
) -> None:
    # projects-memory does not exist yet: writes through `mem` would create it.
    (agent_root / "mem").symlink_to(agent_root / "projects-memory")
    write_config(agent_root, {"memoryDir": "mem"})
    config, warnings = load(home, cwd)
    assert config.memory_dir == agent_root / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]


def test_a_memory_dir_below_a_symlinked_ancestor_is_checked(
    home: Path, tmp_path: Path, agent_root: Path, cwd: Path
) -> None:
    # memoryDir's tail does not exist; its deepest existing ancestor is a link to the projects
    # root, so the memory dir would live inside it.
    (agent_root / "projects-memory").mkdir()
    (tmp_path / "link").symlink_to(agent_root / "projects-memory")
    write_config(agent_root, {"memoryDir": str(tmp_path / "link" / "not" / "yet")})
    config, warnings = load(home, cwd)
    assert config.memory_dir == agent_root / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]


def test_a_default_memory_dir_that_is_a_link_to_the_projects_root_is_reported(
    home: Path, agent_root: Path, cwd: Path
) -> None:
    (agent_root / "projects-memory").mkdir()
    (agent_root / "pi-hermes-memory").symlink_to(agent_root / "projects-memory")
    config, warnings = load(home, cwd)
    assert config.memory_dir == agent_root / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]
    assert "still share" in warnings[0].message


def test_separate_existing_directories_are_accepted(
    home: Path, tmp_path: Path, agent_root: Path, cwd: Path
) -> None:
    (tmp_path / "real-mem").mkdir()
    (agent_root / "mem").symlink_to(tmp_path / "real-mem")
    write_config(agent_root, {"memoryDir": "mem", "projectsMemoryDir": "pm"})
    config, warnings = load(home, cwd)
    assert warnings == ()
    # The configured (lexical) path is kept; only the comparison is physical.
    assert config.memory_dir == agent_root / "mem"
    assert config.projects_memory_dir == agent_root / "pm"


def test_physical_path_resolves_the_existing_part_and_keeps_the_tail(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    resolved = physical_path(tmp_path / "link" / "a" / "b")
    assert resolved == (tmp_path / "real").resolve() / "a" / "b"


def test_physical_path_survives_a_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert physical_path(tmp_path / "loop" / "x") == tmp_path / "loop" / "x"


def test_physical_path_makes_relative_paths_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert physical_path(Path("sub/x")) == tmp_path.resolve() / "sub" / "x"


def test_physical_path_gives_the_lexical_path_when_lstat_is_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulates a permission error even when the tests run as root.
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")

    def denied(path: object) -> os.stat_result:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "lstat", denied)
    try:
        resolved = physical_path(tmp_path / "link" / "x")
    finally:
        monkeypatch.undo()
    assert resolved == tmp_path / "link" / "x"


# --- project and embedding through the loader -------------------------------------------------


def test_the_project_override_wins_over_the_file(home: Path, agent_root: Path, cwd: Path) -> None:
    write_config(agent_root, {"projectName": "from-file"})
    config, _ = load_config(environ={"HOME": str(home)}, cwd=cwd, project_override="cli")
    assert config.project == "cli"


def test_an_invalid_project_override_is_a_config_error(home: Path, cwd: Path) -> None:
    with pytest.raises(ConfigError):
        load_config(environ={"HOME": str(home)}, cwd=cwd, project_override="a/b")


def test_the_embedding_key_is_read_from_the_named_variable(
    home: Path, agent_root: Path, cwd: Path
) -> None:
    write_config(agent_root, {"embedding": {"provider": "openai-compatible", "apiKeyEnv": "K"}})
    config, warnings = load(home, cwd, K="secret-value")
    assert warnings == ()
    assert config.embedding.enabled and config.embedding.api_key == "secret-value"
    assert "secret-value" not in repr(config)
    off, _ = load(home, cwd)
    assert off.embedding_disabled_reason is EmbeddingDisabledReason.API_KEY_MISSING


def test_the_process_environment_and_cwd_are_the_defaults(
    home: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.chdir(cwd)
    config, warnings = load_config()
    assert warnings == ()
    assert config.agent_root == home / ".pi" / "agent"
    assert config.project == "my-app"
