"""Promotion of project skills: evidence thresholds, global-safe rules, conflicts, explanations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.skills.promotion import (
    DEFAULT_TASK_DOMAINS,
    ConflictStrategy,
    PromotionPolicy,
    ScopeVerdict,
    TaskDomain,
    UsageEvidence,
    classify_skill,
    infer_task_domain,
    task_domain_problem,
)
from pi_hermes_memory.domain.skills.skill import SkillState, skill_stream

T0 = datetime(2026, 7, 1, tzinfo=UTC)
ID = "project:app:run-pytest"


def skill(
    body: str = "## Procedure\n\n1. Run pytest with coverage.",
    *,
    description: str = "Run the unit tests with pytest and read the coverage report",
    skill_id: str = ID,
    files: tuple[tuple[str, str], ...] = (),
) -> SkillState:
    base = SkillState.empty(skill_stream(skill_id))
    return attrs.evolve(
        base,
        version=1,
        description=description,
        body=body,
        revision=1,
        created=T0,
        updated=T0,
        exists=True,
        files=files,
    )


def use(
    session: str,
    project: str | None = "app",
    *,
    domain: str | None = None,
    main: bool = True,
    skill_id: str = ID,
) -> UsageEvidence:
    return UsageEvidence(
        skill_id=skill_id,
        session_id=session,
        project=project,
        task_domain=domain,
        at=T0 + timedelta(hours=len(session)),
        main_session=main,
    )


ENOUGH = [use("s1"), use("s2"), use("s2")]
POLICY = PromotionPolicy()


def judged(
    s: SkillState | None = None,
    uses: list[UsageEvidence] | None = None,
    policy: PromotionPolicy = POLICY,
    global_slugs: frozenset[str] = frozenset(),
    projects: frozenset[str] = frozenset({"app"}),
):  # type: ignore[no-untyped-def]
    return policy.evaluate(s or skill(), ENOUGH if uses is None else uses, global_slugs, projects)


def criterion(verdict, name: str):  # type: ignore[no-untyped-def]
    return next(c for c in verdict.criteria if c.name == name)


# -- evidence --------------------------------------------------------------------------------


def test_enough_same_domain_evidence_makes_a_candidate() -> None:
    verdict = judged()
    assert verdict.candidate and verdict.reasons == ()
    assert verdict.task_domain == "testing"
    assert criterion(verdict, "same-domain-uses").actual == 3
    assert criterion(verdict, "sessions").actual == 2
    assert criterion(verdict, "projects").actual == 1


@pytest.mark.parametrize(
    ("uses", "reason"),
    [
        ([use("s1"), use("s2")], "same-domain-uses"),
        ([use("s1"), use("s1"), use("s1")], "sessions"),
        ([use("s1", None), use("s2", None), use("s2", None)], "projects"),
        ([use("s1"), use("s2"), use("s3", main=False)], "same-domain-uses"),
        ([use("s1"), use("s2"), use("s3", skill_id="project:app:other")], "same-domain-uses"),
        # three uses, but split over two recorded domains: no ONE domain has three
        ([use("s1"), use("s2"), use("s3", domain="deployment")], "same-domain-uses"),
    ],
)
def test_thresholds_fail_with_their_reason(uses: list[UsageEvidence], reason: str) -> None:
    verdict = judged(uses=uses)
    assert not verdict.candidate and reason in verdict.reasons


def test_recorded_domain_wins_over_the_inferred_one() -> None:
    uses = [use(f"s{n}", domain="deployment") for n in range(3)]
    verdict = judged(uses=uses)
    assert verdict.candidate and verdict.task_domain == "deployment"


def test_uses_without_any_domain_count_for_none_and_are_reported() -> None:
    plain = skill(body="Say hello.", description="Greets", skill_id="project:app:say-hello")
    verdict = judged(plain, [use(n, skill_id=plain.skill_id) for n in ("s1", "s2", "s3")])
    assert not verdict.candidate and verdict.task_domain is None
    assert (
        "3 main-session use(s) without a task domain"
        in criterion(verdict, "same-domain-uses").detail
    )


def test_child_session_uses_are_ignored_and_said_so() -> None:
    verdict = judged(uses=[*ENOUGH, use("c1", main=False)])
    assert verdict.candidate
    assert "1 child-session use(s) ignored" in criterion(verdict, "same-domain-uses").detail


def test_thresholds_come_from_the_policy() -> None:
    strict = PromotionPolicy(min_same_domain_usages=4, min_sessions=3, min_projects=2)
    verdict = judged(policy=strict)
    assert set(verdict.reasons) == {"same-domain-uses", "sessions", "projects"}
    uses = [use("s1", "a"), use("s2", "b"), use("s3", "a"), use("s3", "b")]
    assert judged(uses=uses, policy=strict).candidate


def test_disabled_policy_and_global_or_missing_skills_are_never_candidates() -> None:
    assert judged(policy=PromotionPolicy(enabled=False)).reasons == ("promotion-enabled",)
    global_skill = skill(skill_id="global:run-pytest")
    uses = [use(f"s{n}", skill_id="global:run-pytest") for n in range(3)]
    assert "project-skill" in judged(global_skill, uses).reasons
    deleted = attrs.evolve(skill(), exists=False, deleted=True)
    assert "project-skill" in judged(deleted).reasons


# -- conflicts -------------------------------------------------------------------------------


def test_conflict_blocks_or_overwrites() -> None:
    blocked = judged(global_slugs=frozenset({"run-pytest"}))
    assert not blocked.candidate and blocked.reasons == ("conflict",)
    assert not blocked.overwrite
    policy = PromotionPolicy(conflict_strategy=ConflictStrategy.OVERWRITE)
    overwrite = judged(policy=policy, global_slugs=frozenset({"run-pytest"}))
    assert overwrite.candidate and overwrite.overwrite
    assert not judged(policy=policy).overwrite


# -- global-safe rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("Works in the App repo only.", "project-name"),
        ("Open the billing-api dashboard.", "project-name"),
        ("Edit /home/alice/notes.txt", "absolute-path"),
        ("Look in /Users/bob/Library", "absolute-path"),
        ("Copy to C:\\Tools\\x.exe", "absolute-path"),
        ("Read ~/.config/tool.toml", "absolute-path"),
        ("Run $HOME/bin/x", "absolute-path"),
        ("Share \\\\fileserver\\docs", "absolute-path"),
        ("Edit src/app/main.py first.", "repository-path"),
        ("Run ./scripts/release.sh", "repository-path"),
        ("See ../shared/notes.md", "repository-path"),
        ("Run `make deploy-staging`.", "project-command"),
        ("```sh\njust build-all\n```", "project-command"),
        ("$ make lint", "project-command"),
        ("Then npm run build:prod.", "project-command"),
        ("Use pnpm run e2e", "project-command"),
        ("Connect to 10.1.2.3 port 5432", "private-network"),
        ("Ping 192.168.0.10", "private-network"),
        ("Ping 172.20.1.1", "private-network"),
        ("Open http://build.corp/jobs", "private-network"),
        ("ssh deploy@db1.internal", "private-network"),
    ],
)
def test_project_only_rules(text: str, rule: str) -> None:
    result = classify_skill(
        skill(body=text, description="A procedure"),
        POLICY,
        project_names=frozenset({"app", "billing-api"}),
    )
    assert result.scope_verdict is ScopeVerdict.PROJECT_ONLY
    assert any(r.startswith(rule + ":") for r in result.reasons), result.reasons


@pytest.mark.parametrize(
    "text",
    [
        "Make sure the tests pass; make it fast.",
        "Run `make install` after building, or `make check`.",
        "Open http://localhost:8000 or 127.0.0.1:5432.",
        "Edit /etc/hosts if DNS fails.",
        "Versions like 10.2.3 are fine, and 172.15.0.1 is public.",
        "Apples, happy applications and webapp are other words.",
        "Read https://example.com/home/page and https://x.y/Users/z",
        "Store settings.local.json next to the code.",
        "Run scripts/check.sh from this skill.",
    ],
)
def test_global_safe_texts(text: str) -> None:
    own = (("scripts/check.sh", "#!/bin/sh\necho ok\n"),)
    result = classify_skill(
        skill(body=text, description="A procedure", files=own),
        POLICY,
        project_names=frozenset({"web"}),
    )
    assert result.scope_verdict is ScopeVerdict.GLOBAL_SAFE, result.reasons


def test_skill_own_project_name_counts_and_domain_terms_exempt_it() -> None:
    s = skill(body="Deploy the app with care.")
    assert classify_skill(s, POLICY).scope_verdict is ScopeVerdict.PROJECT_ONLY
    general = PromotionPolicy(domain_terms=("app",))
    result = classify_skill(s, general)
    assert result.scope_verdict is ScopeVerdict.GLOBAL_SAFE
    assert "transferable terms: app" in result.reasons


def test_support_files_are_checked_too() -> None:
    s = skill(files=(("references/env.md", "Data lives in /home/ci/cache"),))
    assert classify_skill(s, POLICY).scope_verdict is ScopeVerdict.PROJECT_ONLY


def test_cjk_project_names_match_inside_cjk_text() -> None:
    s = skill(body="在 支付系统 仓库里运行测试", skill_id="project:支付系统:run-tests")
    assert classify_skill(s, POLICY).scope_verdict is ScopeVerdict.PROJECT_ONLY


def test_global_safe_requirement_can_be_switched_off() -> None:
    unsafe = skill(body="Run pytest in /home/alice/repo")
    assert "global-safe" in judged(unsafe).reasons
    relaxed = judged(unsafe, policy=PromotionPolicy(require_global_safe=False))
    assert relaxed.candidate
    assert criterion(relaxed, "global-safe").actual == "project-only"


# -- task domains ----------------------------------------------------------------------------


def test_infer_task_domain_defaults_and_configured_domains() -> None:
    assert {d.id for d in DEFAULT_TASK_DOMAINS} >= {
        "repo-workflow",
        "debugging",
        "testing",
        "deployment",
        "documentation",
        "data",
    }
    assert infer_task_domain(skill(), DEFAULT_TASK_DOMAINS) == "testing"
    rebase = skill(description="Rebase a branch onto main", body="git rebase -i")
    assert infer_task_domain(rebase, DEFAULT_TASK_DOMAINS) == "repo-workflow"
    custom = (TaskDomain(id="i18n", terms=("translation", "locale")),)
    assert infer_task_domain(skill(), custom) is None
    locales = skill(description="Add a translation", body="Update every locale file")
    assert infer_task_domain(locales, custom) == "i18n"
    policy = PromotionPolicy(task_domains=custom)
    assert classify_skill(locales, policy).task_domain == "i18n"


@pytest.mark.parametrize(
    ("domain_id", "terms", "ok"),
    [
        ("testing", ("pytest",), True),
        ("repo-workflow", ("git", "rebase"), True),
        ("Testing", ("x",), False),
        ("1st", ("x",), False),
        ("ok", (), False),
        ("ok", (" ",), False),
    ],
)
def test_task_domain_problem(domain_id: str, terms: tuple[str, ...], ok: bool) -> None:
    assert (task_domain_problem(domain_id, terms) is None) is ok


# -- explanations ----------------------------------------------------------------------------


def test_explain_lines_show_every_criterion_with_numbers() -> None:
    verdict = judged(uses=[use("s1"), use("s1")], global_slugs=frozenset({"run-pytest"}))
    lines = verdict.explain_lines()
    assert lines[0] == f"{ID}: not a promotion candidate (task domain testing)"
    assert len(lines) == 1 + len(verdict.criteria) == 8
    text = "\n".join(lines)
    assert "[NO] same-domain-uses: 2 (needs >= 3)" in text
    assert "[NO] sessions: 1 (needs >= 2)" in text
    assert "[ok] projects: 1 (needs >= 1)" in text
    assert "[NO] conflict: global skill exists (needs block)" in text
    assert "[ok] global-safe: global-safe (required)" in text
    assert verdict.reasons == ("same-domain-uses", "sessions", "conflict")


uses_strategy = st.lists(
    st.builds(
        use,
        st.sampled_from(["s1", "s2", "s3"]),
        st.sampled_from(["app", "web", None]),
        domain=st.sampled_from([None, "testing", "data"]),
        main=st.booleans(),
    ),
    max_size=10,
)


@given(uses_strategy)
def test_candidate_iff_every_criterion_passes_and_more_evidence_never_hurts(
    uses: list[UsageEvidence],
) -> None:
    verdict = judged(uses=uses)
    assert verdict.candidate == all(c.passed for c in verdict.criteria)
    assert verdict.reasons == tuple(c.name for c in verdict.criteria if not c.passed)
    if verdict.candidate:
        assert judged(uses=[*uses, use("s9")]).candidate
    main = [u for u in uses if u.main_session]
    assert criterion(verdict, "same-domain-uses").actual <= len(main)


@pytest.mark.parametrize(
    "body", ["`" * 200_000, "~" * 200_000, "\n" * 200_000 + " " * 100_000, "a." * 200_000]
)
def test_classifying_is_linear_on_pathological_text(body: str) -> None:
    """A line of 200,000 backticks took 10 s when the fence pattern backtracked."""
    result = classify_skill(skill(body=body), POLICY)
    assert result.scope_verdict is ScopeVerdict.GLOBAL_SAFE
