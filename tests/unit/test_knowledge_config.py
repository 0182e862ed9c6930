"""`knowledge` in the config file and PI_MEMORY_KNOWLEDGE_PATHS (ADR 0048)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pi_hermes_memory.config.settings import KnowledgeConfig, parse_config
from pi_hermes_memory.domain.knowledge.chunks import DEFAULT_CHUNK_CHARS, DEFAULT_FILE_BYTES

CWD = Path("/work/project")


def parse(raw: object, environ: dict[str, str] | None = None) -> tuple[KnowledgeConfig, list[str]]:
    config, warnings = parse_config(
        raw,
        agent_root=Path("/agent"),
        cwd=CWD,
        environ=environ or {},
        physical=lambda p: p,
        home=Path("/home/me"),
    )
    return config.knowledge, [f"{w.field}: {w.message}" for w in warnings]


def test_defaults_are_off() -> None:
    assert parse({}) == (KnowledgeConfig(), [])
    assert KnowledgeConfig().max_file_bytes == DEFAULT_FILE_BYTES
    assert KnowledgeConfig().max_chunk_chars == DEFAULT_CHUNK_CHARS


def test_paths_are_absolute_deduplicated_and_home_expanded() -> None:
    knowledge, warnings = parse(
        {"knowledge": {"paths": ["docs", "~/notes", "/abs/x/../y", "docs/"], "maxChunkChars": 500}}
    )
    assert warnings == []
    assert knowledge.paths == (CWD / "docs", Path("/home/me/notes"), Path("/abs/y"))
    assert knowledge.max_chunk_chars == 500


def test_the_environment_wins_over_the_file() -> None:
    knowledge, warnings = parse(
        {"knowledge": {"paths": ["docs"]}}, {"PI_MEMORY_KNOWLEDGE_PATHS": '["/kb", "more"]'}
    )
    assert warnings == [] and knowledge.paths == (Path("/kb"), CWD / "more")


@pytest.mark.parametrize(
    ("raw", "environ", "field"),
    [
        ({"knowledge": {"paths": "docs"}}, {}, "knowledge.paths"),
        ({"knowledge": {"paths": ["docs", ""]}}, {}, "knowledge.paths"),
        ({"knowledge": {"paths": [1]}}, {}, "knowledge.paths"),
        ({"knowledge": {"paths": ["~other/x"]}}, {}, "knowledge.paths"),
        ({"knowledge": {"paths": ["a\x00b"]}}, {}, "knowledge.paths"),
        ({"knowledge": ["docs"]}, {}, "knowledge"),
        ({}, {"PI_MEMORY_KNOWLEDGE_PATHS": "/a,/b"}, "PI_MEMORY_KNOWLEDGE_PATHS"),
        ({}, {"PI_MEMORY_KNOWLEDGE_PATHS": '{"a": 1}'}, "PI_MEMORY_KNOWLEDGE_PATHS"),
        ({}, {"PI_MEMORY_KNOWLEDGE_PATHS": '["", "/b"]'}, "PI_MEMORY_KNOWLEDGE_PATHS"),
    ],
)
def test_malformed_paths_are_a_clear_warning_and_the_base_stays_off(
    raw: object, environ: dict[str, str], field: str
) -> None:
    knowledge, warnings = parse(raw, environ)
    assert knowledge.paths == ()
    assert len(warnings) == 1 and warnings[0].startswith(f"{field}: expected")


@pytest.mark.parametrize(
    ("key", "value"), [("maxFileBytes", 0), ("maxChunkChars", 50), ("maxChunkChars", "big")]
)
def test_bad_caps_fall_back_to_the_defaults(key: str, value: object) -> None:
    knowledge, warnings = parse({"knowledge": {key: value}})
    assert knowledge == KnowledgeConfig()
    assert warnings and warnings[0].startswith(f"knowledge.{key}: expected")
