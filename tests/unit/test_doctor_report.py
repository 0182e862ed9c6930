"""The doctor's report: exact counts, the first 50 candidates shown, the wording (ADR 0036)."""

from __future__ import annotations

import json

from pi_hermes_memory.doctor.cross_scope import GLOBAL_SCOPE, ScanRow, cross_scope_pairs
from pi_hermes_memory.doctor.report import (
    SHOWN_PAIRS,
    DoctorReport,
    EmbeddingState,
    PathsState,
    SessionState,
    SkillsState,
    TargetState,
    brute_force_pairs,
    near_duplicates_section,
)


def report(near, problems=()) -> DoctorReport:
    return DoctorReport(
        paths=PathsState(
            agent_root="/a",
            config_file="/a/hermes-memory-config.json",
            config_file_exists=False,
            memory_dir="/a/m",
            projects_memory_dir="/a/p",
            database="/a/m/sessions.db",
            project="web",
            same_root=None,
            warnings=(),
            embedding=EmbeddingState(
                provider="off",
                requested="openai-compatible",
                model=None,
                api_key_env="MY_KEY",
                off_reason="api-key-missing",
            ),
        ),
        targets=(TargetState(target="memory", markdown_active=1, sqlite_active=1, superseded=2),),
        unattributed=0,
        coverage_rows=1,
        coverage=(),
        sessions=SessionState(
            root="/a/sessions", files=0, indexed=0, stale=0, gone=0, database_bytes=0
        ),
        skills=SkillsState(skills=0, unreadable=(), shadowed=(), hidden={}),
        near_duplicates=near,
        problems=tuple(problems),
    )


def rows(projects: int) -> list[ScanRow]:
    text = "the deploy uses the blue green script on friday"
    out = [ScanRow(entry_id="g", scope=GLOBAL_SCOPE, text=text)]
    out += [ScanRow(entry_id=f"p{k:02d}", scope=f"project:{k}", text=text) for k in range(projects)]
    return out


def test_counts_are_exact_and_the_rendering_stops_at_50() -> None:
    scan = rows(12)  # 13 scopes, one identical text: 13 * 12 / 2 = 78 pairs
    pairs = cross_scope_pairs(scan)
    near = near_duplicates_section(
        pairs, rows=len(scan), rows_with_vector=0, scope_sizes=[1] * 13, seconds=0.0
    )
    assert near.total == 78 and len(near.shown) == SHOWN_PAIRS and near.truncated
    assert near.suspected_duplicates == 12 and near.promotion_candidates == 66
    text = report(near).render()
    assert "Total candidates: 78 (66 promotion candidates, 12 suspected duplicates)" in text
    assert f"output truncated: showing the first {SHOWN_PAIRS} of 78" in text
    global_pairs = [d for d in near.shown if GLOBAL_SCOPE in (d.left_scope, d.right_scope)]
    assert all(d.right_scope == GLOBAL_SCOPE for d in global_pairs)  # project x global
    data = json.loads(json.dumps(report(near).to_json()))
    assert data["near_duplicates"]["truncated"] is True
    assert data["near_duplicates"]["shown"][0]["suggestion"]


def test_an_empty_full_scan_says_so() -> None:
    near = near_duplicates_section(
        cross_scope_pairs(rows(0)), rows=1, rows_with_vector=0, scope_sizes=[1], seconds=0.0
    )
    text = report(near).render()
    assert "no cross-scope near-duplicates" in text and "truncated" not in text
    assert report(near).healthy


def test_problems_decide_health_and_the_key_is_named_not_shown() -> None:
    near = near_duplicates_section([], rows=0, rows_with_vector=0, scope_sizes=[], seconds=0.0)
    sick = report(near, problems=["embedding.apiKeyEnv names MY_KEY, which is unset or empty"])
    assert not sick.healthy and sick.to_json()["healthy"] is False
    assert "apiKeyEnv MY_KEY" in sick.render()
    assert "superseded 2" in sick.render()


def test_brute_force_pairs_counts_only_cross_scope_pairs() -> None:
    assert brute_force_pairs([]) == 0
    assert brute_force_pairs([3]) == 0
    assert brute_force_pairs([2, 3]) == 6
    assert brute_force_pairs([400] * 50) == 20_000 * 19_999 // 2 - 50 * (400 * 399 // 2)
