"""The `skill_governance_curate` tool (ADR 0031): only in child sessions; it records
classifications and curated policy words, and refuses any timing parameter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.inmemory.skill_tables import InMemorySkillTables
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.skills.governance.tool import CURATE_TOOL, timing_key
from pi_hermes_memory.tools.schemas import render, strict_problems

P = "project:web:deploy"
CLASSIFY = {"skill_id": P, "task_domain": "deployment", "scope_verdict": "global-safe",
            "reasons": ["no project paths"]}  # fmt: skip


def _open(root: Path, telemetry: InMemorySkillTables, *, child: bool) -> Memory:
    return pi_hermes_memory.open(
        agent_root=root,
        cwd=root / "web",
        environ={},
        storage=InMemoryStorage(),
        markdown=InMemoryMarkdown(),
        skill_telemetry=telemetry,
        child_session=child,
        session_id="child-1" if child else "main-1",
    )


@pytest.fixture
def telemetry() -> InMemorySkillTables:
    return InMemorySkillTables()


@pytest.fixture
def child(tmp_path: Path, telemetry: InMemorySkillTables) -> Iterator[Memory]:
    with _open(tmp_path, telemetry, child=True) as m:
        made = m.skills.create(
            scope="project",
            name="deploy",
            description="Ship a release",
            content="## Procedure\n1. Build the docker image.\n2. Roll it out.",
        )
        assert made.success, made.message
        yield m


def call(memory: Memory, arguments: Any) -> dict[str, Any]:
    return memory.call_tool("skill_governance_curate", arguments)


def test_the_tool_exists_only_in_child_sessions(tmp_path: Path, child: Memory) -> None:
    assert "skill_governance_curate" in [t.name for t in child.tool_definitions()]
    with _open(tmp_path / "main", InMemorySkillTables(), child=False) as main:
        assert "skill_governance_curate" not in [t.name for t in main.tool_definitions()]
        assert main.call_tool("skill_governance_curate", {"classifications": []})["status"] == (
            "unknown_tool"
        )


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "mcp", "openai-responses"])
def test_its_strict_schema_passes_the_checker(fmt: str) -> None:
    out = render(CURATE_TOOL, fmt, strict=True)
    schema = out.get("function", out).get("parameters") or out.get("input_schema")
    assert strict_problems(schema or out["inputSchema"]) == []


def test_a_submission_records_classifications_and_curated_words(
    child: Memory, telemetry: InMemorySkillTables
) -> None:
    result = call(
        child,
        {
            "classifications": [CLASSIFY],
            "task_domains": [
                {"id": "release-ops", "description": None, "terms": ["canary", "feature flag"]}
            ],
            "scope_policy_words": ["docker"],
        },
    )
    assert result["success"] and result["status"] == "ok", result
    assert result["recorded"] == [P] and result["refused"] == []
    assert result["task_domains"] == [{"id": "release-ops", "terms": ["canary", "feature flag"]}]
    record = telemetry.governance(P)
    assert record.state == "global-safe" and record.task_domain == "deployment"
    assert record.reason.startswith("curated: no project paths")
    policy = child.skill_governance.policy()
    assert "release-ops" in [d.id for d in policy.domains] and "docker" in policy.domain_terms
    # the words are the project's: a later submission replaces the words, keeps other domains
    again = call(child, {"classifications": [], "scope_policy_words": ["kubernetes"]})
    assert again["scope_policy_words"] == ["kubernetes"]
    assert [d["id"] for d in again["task_domains"]] == ["release-ops"]
    # a curated domain can now classify a skill
    tagged = call(child, {"classifications": [{**CLASSIFY, "task_domain": "release-ops"}]})
    assert tagged["status"] == "ok" and telemetry.governance(P).task_domain == "release-ops"


def test_unknown_skills_and_domains_are_refused_one_by_one(child: Memory) -> None:
    result = call(
        child,
        {
            "classifications": [
                CLASSIFY,
                {**CLASSIFY, "skill_id": "project:api:deploy"},
                {**CLASSIFY, "skill_id": "global:deploy"},
                {**CLASSIFY, "task_domain": "astrology"},
            ]
        },
    )
    assert result["status"] == "partial" and result["success"] and result["recorded"] == [P]
    refused = {(r["skill_id"], "unknown task domain" in r["message"]) for r in result["refused"]}
    assert refused == {("project:api:deploy", False), ("global:deploy", False), (P, True)}
    none = call(child, {"classifications": [{**CLASSIFY, "skill_id": "project:web:nothing"}]})
    assert none["status"] == "failed" and not none["success"]


NONE: dict[str, Any] = {"classifications": []}
TIMING = [
    ({**NONE, "curationTimeoutMs": 1}, "curationTimeoutMs"),
    ({**NONE, "autoCurationCooldownMs": 0}, "autoCurationCooldownMs"),
    ({**NONE, "autoCurationFailureCooldownMs": 0}, "autoCurationFailureCooldownMs"),
    ({**NONE, "curationMaxConsecutiveFailures": 99}, "curationMaxConsecutiveFailures"),
    ({**NONE, "timeouts": {"curation": 1}}, "timeouts"),
    ({**NONE, "cooldowns": []}, "cooldowns"),
    ({**NONE, "skillGovernance": {"curationTimeoutMs": 5}}, "curationTimeoutMs"),
    ({"classifications": [{**CLASSIFY, "timeout_ms": 9}]}, "timeout_ms"),
    ({**NONE, "task_domains": [{"id": "x", "terms": ["y"], "retry_delay": 1}]}, "retry_delay"),
]


@pytest.mark.parametrize("arguments, key", TIMING)
def test_any_timing_parameter_refuses_the_whole_submission(
    child: Memory, telemetry: InMemorySkillTables, arguments: dict[str, Any], key: str
) -> None:
    arguments = {**arguments, "scope_policy_words": ["docker"]}
    result = call(child, arguments)
    assert result["status"] == "forbidden" and not result["success"]
    assert key in result["message"] and key in result["refused_keys"]
    assert "static configuration" in result["message"]
    assert telemetry.policy_overrides("web") is None and telemetry.governance(P) is None
    # the same holds for the JSON text form
    assert call(child, json.dumps(arguments))["status"] == "forbidden"


def test_timing_words_do_not_catch_ordinary_keys() -> None:
    for key in ("classifications", "task_domains", "scope_policy_words", "terms", "reasons",
                "skill_id", "scope_verdict", "description", "id", "task_domain"):  # fmt: skip
        assert not timing_key(key), key
    for key in ("curationTimeoutMs", "auto_curation_cooldown_ms", "intervalSeconds", "staleAfter"):
        assert timing_key(key), key


MALFORMED = [
    ({}, "classifications is required"),
    ({**NONE, "limit": 3}, "unknown argument"),
    ({"classifications": [{**CLASSIFY, "scope_verdict": "maybe"}]}, "global-safe or project"),
    ({"classifications": [{"skill_id": P, "scope_verdict": "global-safe"}]}, "reasons is required"),
    ({"classifications": [{**CLASSIFY, "reasons": [""]}]}, "is empty"),
    ({**NONE, "task_domains": [{"id": "Bad Id", "terms": ["x"]}]}, "slug"),
    ({**NONE, "task_domains": [{"id": "ok", "terms": []}]}, "non-empty term"),
    ({**NONE, "scope_policy_words": "docker"}, "array of strings"),
    ({"classifications": [CLASSIFY] * 201}, "at most 200"),
    ("[]", "JSON object"),
]


@pytest.mark.parametrize("arguments, words", MALFORMED)
def test_malformed_submissions_are_invalid_arguments(
    child: Memory, arguments: Any, words: str
) -> None:
    result = call(child, arguments)
    assert result["status"] == "invalid_arguments" and words in result["message"], result


def test_a_secret_in_a_reason_is_blocked_and_nothing_is_stored(
    child: Memory, telemetry: InMemorySkillTables
) -> None:
    secret = "ghp_R8x2LmQ4vT7nK9pW3zY6bC1dF5gH0jS2aE4u"
    result = call(child, {"classifications": [{**CLASSIFY, "reasons": [f"token {secret}"]}]})
    assert result["status"] == "blocked" and secret not in result["message"]
    assert telemetry.governance(P) is None
