"""`Memory.skill_stats` and the `memory_skill_stats` tool on the in-memory statistics store:
UTC-day windows, usage evidence, governance records, promotion verdicts from the configured
policy, strict argument checks, and a tool that is offered only with a statistics store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.skill_tables import InMemorySkillTables
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.skills.promotion import PromotionPolicy, UsageEvidence
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import HermesMemoryError, InvalidArgument
from pi_hermes_memory.ports.skills import GovernanceRecord
from pi_hermes_memory.skills.stats import promotion_policy
from pi_hermes_memory.skills.stats_tool import LOAD_NOTE, SKILL_STATS_TOOL, skill_stats
from pi_hermes_memory.tools.schemas import strict_problems, strict_schema

from tests.support.fakes import StepClock

NOW = datetime(2026, 12, 4, 20, 0, tzinfo=UTC)
TODAY = NOW.date()


def _open(
    root: Path, *, telemetry: InMemorySkillTables | None, config: dict[str, Any] | None = None
) -> Memory:
    root.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (root / "hermes-memory-config.json").write_text(json.dumps(config))
    storage = InMemoryStorage()
    return pi_hermes_memory.open(
        agent_root=root,
        cwd=root / "shop",
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        skill_telemetry=telemetry,
        clock=StepClock(NOW, timedelta(0)),
        session_id="s1",
    )


@pytest.fixture
def tables() -> InMemorySkillTables:
    return InMemorySkillTables()


@pytest.fixture
def memory(tmp_path: Path, tables: InMemorySkillTables) -> Iterator[Memory]:
    with _open(tmp_path / "agent", telemetry=tables) as m:
        yield m


def _create(memory: Memory, scope: str, name: str, description: str, step: str) -> str:
    made = memory.skills.create(
        scope=scope,
        name=name,
        description=description,
        when_to_use=f"When you {description.lower()}",
        procedure_steps=[step, "Check the output"],
    )
    assert made.success, made.message
    assert made.skill_id is not None
    return made.skill_id


def _use(tables: InMemorySkillTables, skill_id: str, at: datetime, **kw: Any) -> None:
    tables.record_use(
        UsageEvidence(
            skill_id=skill_id,
            session_id=kw.get("session", "s1"),
            project=kw.get("project", "shop"),
            task_domain=kw.get("domain", "testing"),
            at=at,
            main_session=kw.get("main", True),
        )
    )


def test_windows_are_utc_days_and_loads_are_labelled(
    memory: Memory, tables: InMemorySkillTables
) -> None:
    bisect = _create(memory, "global", "Git bisect", "Find a breaking commit", "Run git bisect")
    for days_ago, n in ((0, 2), (1, 3), (6, 5), (7, 7)):
        for _ in range(n):
            tables.record_loads([bisect], "shop", TODAY - timedelta(days=days_ago))
    _use(tables, bisect, datetime(2026, 12, 3, 23, 59, tzinfo=UTC))  # yesterday, UTC
    _use(tables, bisect, datetime(2026, 12, 4, 0, 30, tzinfo=UTC))
    loads = {n: memory.skill_stats(n).skills[0].loads for n in (1, 2, 7, 8, None)}
    assert loads == {1: 2, 2: 5, 7: 10, 8: 17, None: 17}
    today = memory.skill_stats(1)
    assert (today.first_day, today.last_day) == (TODAY, TODAY)
    assert today.skills[0].usage.count == 1
    assert today.note == LOAD_NOTE and "never that it was used" in LOAD_NOTE
    assert "never that it was used or that it worked" in today.message
    # a caller in another zone: 01:00 on Dec 5 at +05:00 is still Dec 4 in UTC
    east = datetime(2026, 12, 5, 1, 0, tzinfo=timezone(timedelta(hours=5)))
    report = skill_stats(memory.skills, PromotionPolicy(), now=east, since_days=1)
    assert report.last_day == TODAY and report.skills[0].loads == 2


def test_usage_evidence_per_domain_and_project_filter(
    memory: Memory, tables: InMemorySkillTables
) -> None:
    deploy = _create(memory, "project", "Deploy shop", "Ship it to staging", "Run the deploy")
    _use(tables, deploy, NOW - timedelta(hours=3), domain="deployment")
    _use(tables, deploy, NOW - timedelta(hours=2), domain="deployment", session="s2")
    _use(tables, deploy, NOW - timedelta(hours=1), domain=None, session="s2")
    tables.record_loads([deploy], "shop", TODAY)
    tables.record_loads([deploy], "web", TODAY)
    (row,) = memory.skill_stats().skills
    assert row.loads == 2
    assert (row.usage.count, row.usage.sessions, row.usage.projects) == (3, 2, 1)
    assert row.usage.last_used == NOW - timedelta(hours=1)
    assert row.usage.task_domains == (("deployment", 2), (None, 1))
    (web,) = memory.skill_stats(project="web").skills
    assert (web.loads, web.usage.count, web.usage.last_used) == (1, 0, None)


def test_the_skills_reported(memory: Memory, tables: InMemorySkillTables) -> None:
    bisect = _create(memory, "global", "Git bisect", "Find a breaking commit", "Run git bisect")
    gone = _create(memory, "project", "Old deploy", "Ship it the old way", "Run the old deploy")
    memory.skills.set_visibility("hide", [bisect])
    _use(tables, gone, NOW - timedelta(days=2))
    assert memory.skills.delete(gone).success
    tables.record_loads(["project:web:other", "global:ghost"], "web", TODAY)
    rows = {r.skill_id: r for r in memory.skill_stats().skills}
    # live skills, and deleted ones of this session that have figures; never another project's
    assert sorted(rows) == ["global:ghost", bisect, gone]
    assert rows[bisect].hidden and rows[bisect].exists
    assert not rows[gone].exists and rows[gone].name is None and rows[gone].usage.count == 1
    assert rows[gone].promotion is None and "does not exist" in rows[gone].promotion_note
    assert rows[bisect].promotion is None and "global skill" in rows[bisect].promotion_note
    # outside the window the deleted skill has no figures and is not listed
    assert [r.skill_id for r in memory.skill_stats(1).skills] == ["global:ghost", bisect]
    only = memory.skill_stats(skill_id="global:nothing-here")
    assert [(r.skill_id, r.exists, r.loads) for r in only.skills] == [
        ("global:nothing-here", False, 0)
    ]


def test_governance_and_promotion_from_the_configured_policy(
    tmp_path: Path, tables: InMemorySkillTables
) -> None:
    config = {"skillGovernance": {"promotionMinSameDomainUsages": 2, "promotionMinSessions": 2}}
    with _open(tmp_path / "agent", telemetry=tables, config=config) as memory:
        lint = _create(memory, "project", "Lint python", "Run the linter", "Run ruff check")
        _use(tables, lint, NOW - timedelta(days=40), session="a")  # outside any short window
        (row,) = memory.skill_stats(1).skills
        assert row.promotion is not None and not row.promotion.candidate
        assert row.promotion.reasons == ("same-domain-uses", "sessions")
        _use(tables, lint, NOW - timedelta(hours=1), session="b")
        (row,) = memory.skill_stats(1).skills
        assert row.usage.count == 1  # the window counts today's use only ...
        assert row.promotion is not None and row.promotion.candidate  # ... promotion all
        assert row.promotion.task_domain == "testing"
        assert row.governance is None
        record = GovernanceRecord(
            skill_id=lint, state="candidate", updated_at=NOW, reason="ready", task_domain="testing"
        )
        tables.set_governance(record)
        assert memory.skill_stats(skill_id=lint).skills[0].governance == record
        out = memory.call_tool("memory_skill_stats", {"skill_id": lint})
        assert out["skills"][0]["governance"] == {
            "state": "candidate",
            "updated": "2026-12-04T20:00:00Z",
            "task_domain": "testing",
            "reason": "ready",
            "promoted_to": None,
            "promoted_from": None,
        }
        promotion = out["skills"][0]["promotion"]
        assert promotion["status"] == "candidate" and promotion["task_domain"] == "testing"
        assert {c["name"]: c["required"] for c in promotion["criteria"]}["sessions"] == 2


def test_promotion_policy_follows_every_config_field(tmp_path: Path) -> None:
    config = {
        "skillGovernance": {
            "promotionEnabled": False,
            "promotionMinSameDomainUsages": 5,
            "promotionMinSessions": 4,
            "promotionMinProjects": 3,
            "promotionTaskDomains": [{"id": "ops", "terms": ["pager"]}],
            "promotionDomainTerms": ["shop"],
            "promotionRequireGlobalSafe": False,
            "promotionConflictStrategy": "overwrite",
        }
    }
    with _open(tmp_path / "agent", telemetry=None, config=config) as memory:
        assert memory.config is not None
        policy = promotion_policy(memory.config.skill_governance)
    assert (policy.min_same_domain_usages, policy.min_sessions, policy.min_projects) == (5, 4, 3)
    assert [(d.id, d.terms) for d in policy.domains] == [("ops", ("pager",))]
    assert policy.domain_terms == ("shop",)
    assert not policy.enabled and not policy.require_global_safe
    assert policy.conflict_strategy.value == "overwrite"
    with _open(tmp_path / "other", telemetry=None) as memory:
        assert memory.config is not None
        assert promotion_policy(memory.config.skill_governance) == PromotionPolicy()


def test_the_tool_is_offered_only_with_a_statistics_store(memory: Memory, tmp_path: Path) -> None:
    names = [t.name for t in memory.tool_definitions()]
    assert names[-2:] == ["skill", "memory_skill_stats"]
    assert SKILL_STATS_TOOL.read_only and SKILL_STATS_TOOL.idempotent
    assert strict_problems(strict_schema(dict(SKILL_STATS_TOOL.parameters))) == []
    with _open(tmp_path / "bare", telemetry=None) as bare:
        assert "memory_skill_stats" not in [t.name for t in bare.tool_definitions()]
        assert bare.call_tool("memory_skill_stats", {})["status"] == Status.UNKNOWN_TOOL
        with pytest.raises(HermesMemoryError, match="skill statistics are off"):
            bare.skill_stats()


def test_empty_store_answers_no_results(memory: Memory) -> None:
    out = memory.call_tool("memory_skill_stats", {"since_days": 7.0, "project": None})
    assert out["success"] and out["status"] == Status.NO_RESULTS and out["skills"] == []
    assert out["window"]["since_days"] == 7 and out["note"] == LOAD_NOTE


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"since_days": 0}, "since_days must be from 1 to 36500"),
        ({"since_days": 36501}, "since_days must be from 1 to 36500"),
        ({"since_days": 1.5}, "since_days must be an integer, got number"),
        ({"skill_id": "global:"}, "is not a skill id"),
        ({"skill_id": "project:web:x"}, "belongs to another project"),
        ({"project": ""}, "is not a valid project name"),
    ],
)
def test_typed_api_refuses_bad_options(memory: Memory, kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidArgument, match=says):
        memory.skill_stats(**kwargs)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    args=st.dictionaries(
        st.sampled_from(["since_days", "skill_id", "project", "x"]), _JSON, max_size=3
    )
)
def test_any_arguments_answer_a_result_or_invalid_arguments(
    memory: Memory, args: dict[str, Any]
) -> None:
    out = memory.call_tool("memory_skill_stats", args)
    assert out["status"] in (Status.OK, Status.NO_RESULTS, Status.INVALID_ARGUMENTS), out
    assert out["success"] is (out["status"] != Status.INVALID_ARGUMENTS)
    if out["success"]:
        assert set(out) == {"success", "status", "message", "note", "window", "skills"}
