"""Skill governance (ADR 0031) on the in-memory adapters: promote, demote, restore, clear,
explain, status, reload and curation jobs."""

from __future__ import annotations

import threading

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.skill_folders import InMemorySkillFolders
from pi_hermes_memory.adapters.inmemory.skill_tables import InMemorySkillTables
from pi_hermes_memory.adapters.inmemory.storage import InMemoryStorage
from pi_hermes_memory.config.settings import PromotionConflictStrategy
from pi_hermes_memory.domain.skills.bundle import pack, unpack
from pi_hermes_memory.domain.skills.move import SkillContent
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import HermesMemoryError
from pi_hermes_memory.ports.skills import CurationKind, JobState
from pi_hermes_memory.skills.governance.policy import MoveBackup
from pi_hermes_memory.skills.stats import curation_limits

from tests.support.skill_world import DEPLOY_BODY, Failing, Slow, World, config

P, G = "project:web:deploy", "global:deploy"


@pytest.fixture
def world() -> World:
    lock = threading.RLock()
    return World(
        storage=InMemoryStorage(),
        folders=InMemorySkillFolders(),
        telemetry=InMemorySkillTables(),
        lock=lambda timeout: lock,
    )


def candidate(world: World) -> str:
    skill_id = world.create()
    world.use(skill_id, 3)
    return skill_id


# -- promote -----------------------------------------------------------------------------------


def test_a_candidate_is_promoted_with_its_support_files_and_its_evidence_stays(
    world: World,
) -> None:
    skill_id = candidate(world)
    skills, gov = world.session()
    assert skills.write_file(skill_id, "scripts/check.sh", "echo ok").success
    [row] = gov.status().skills
    assert row.skill_id == P and row.candidate and row.state == "none"
    done = gov.promote(P)
    assert done.success and done.status is Status.PROMOTED and done.moved_to == G
    skills, _ = world.session()
    assert skills.get(P) is None
    moved = skills.get(G)
    assert moved is not None and moved.body == DEPLOY_BODY and moved.project is None
    assert moved.files == (("scripts/check.sh", "echo ok"),)
    # the folders: the global one rendered, the project one gone
    assert set(unpack(world.folders.folders["skill:" + G])) == {"SKILL.md", "scripts/check.sh"}
    assert "skill:" + P not in world.folders.folders
    # usage evidence keeps counting under the id it was recorded with
    assert len(world.telemetry.usages(P)) == 3 and world.telemetry.usages(G) == []
    dest, source = world.telemetry.governance(G), world.telemetry.governance(P)
    assert dest.state == source.state == "promoted" and dest.task_domain == "deployment"
    assert dest.promoted_from == P and source.promoted_to == G and source.backup is None
    assert MoveBackup.decode(dest.backup).replaced is None


def test_a_skill_that_is_not_a_candidate_is_refused_unless_a_person_forces_it(world: World) -> None:
    world.create()
    world.use(P, 2)
    _, gov = world.session()
    refused = gov.promote(P)
    assert not refused.success and refused.status is Status.BLOCKED
    assert "same-domain-uses" in refused.message
    assert any(
        line.startswith("[NO] same-domain-uses: 2 (needs >= 3)") for line in refused.criteria
    )
    skills, gov = world.session()
    assert skills.get(P) is not None and skills.get(G) is None
    assert world.telemetry.governance(P) is None
    forced = gov.promote(P, force=True)
    assert forced.success and "forced by a person" in world.telemetry.governance(G).reason


def test_promotion_disabled_refuses_even_a_forced_promote(world: World) -> None:
    candidate(world)
    world.settings = config(promotion_enabled=False)
    _, gov = world.session()
    result = gov.promote(P, force=True)
    assert result.status is Status.FORBIDDEN and "promotionEnabled" in result.message
    assert world.session()[0].get(P) is not None


def test_block_refuses_a_promote_onto_an_existing_global_skill(world: World) -> None:
    candidate(world)
    world.create(scope="global", body="## Procedure\n1. The old way.")
    _, gov = world.session()
    result = gov.promote(P, force=True)
    assert result.status is Status.CONFLICT and "block" in result.message
    skills, _ = world.session()
    assert skills.get(P) is not None and skills.get(G).body == "## Procedure\n1. The old way."


def test_overwrite_replaces_the_global_skill_and_restore_brings_both_back(world: World) -> None:
    candidate(world)
    world.create(scope="global", body="## Procedure\n1. The old way.", description="Old way")
    skills, _ = world.session()
    assert skills.write_file(G, "references/old.md", "old notes").success
    before = skills.get(G)
    world.settings = config(promotion_conflict_strategy=PromotionConflictStrategy.OVERWRITE)
    _, gov = world.session()
    assert next(x for x in gov.explain(P).lines if "conflict" in x).startswith("[ok]")
    done = gov.promote(P)
    assert done.success and "replaced the previous global:deploy" in done.message
    skills, gov = world.session()
    now = skills.get(G)
    assert now.body == DEPLOY_BODY and now.files == () and now.revision == before.revision + 1
    assert now.created == before.created  # revised in place: the global skill's history stays
    restored = gov.restore(G)
    assert restored.success and restored.status is Status.RESTORED
    skills, gov = world.session()
    back = skills.get(G)
    assert back.body == before.body and back.description == "Old way"
    assert back.files == (("references/old.md", "old notes"),)
    assert skills.get(P).body == DEPLOY_BODY
    assert world.telemetry.governance(G).state == world.telemetry.governance(P).state == "restored"
    again = gov.restore(P)
    assert again.status is Status.NOT_FOUND  # one restore per move


def test_restore_from_either_id_and_refuses_to_lose_later_changes(world: World) -> None:
    candidate(world)
    _, gov = world.session()
    assert gov.promote(P).success
    skills, gov = world.session()
    assert skills.patch(G, section="Pitfalls", content="Never on Fridays.").success
    refused = gov.restore(P)
    assert refused.status is Status.CONFLICT and "changed since the promote" in refused.message
    assert world.session()[0].get(P) is None
    forced = gov.restore(P, force=True)
    assert forced.success
    skills, _ = world.session()
    assert skills.get(G) is None and skills.get(P).body == DEPLOY_BODY


def test_restore_refuses_when_the_source_was_created_again(world: World) -> None:
    candidate(world)
    _, gov = world.session()
    assert gov.promote(P).success
    world.create(body="## Procedure\n1. A new one.\n")
    _, gov = world.session()
    result = gov.restore(G)
    assert result.status is Status.CONFLICT and "exists again" in result.message


def test_demote_moves_a_global_skill_into_the_project_and_restore_undoes_it(world: World) -> None:
    world.create(scope="global")
    _, gov = world.session()
    assert gov.demote(P).status is Status.INVALID  # demote takes a global skill
    done = gov.demote(G)
    assert done.success and done.status is Status.DEMOTED and done.moved_to == P
    skills, gov = world.session()
    assert skills.get(G) is None and skills.get(P).body == DEPLOY_BODY
    assert world.telemetry.governance(P).state == "demoted"
    assert gov.restore(P).success
    skills, _ = world.session()
    assert skills.get(G) is not None and skills.get(P) is None


def test_demote_needs_a_project_and_respects_block(world: World) -> None:
    world.create(scope="global")
    _, nowhere = world.session(project=None)
    assert nowhere.demote(G).status is Status.INVALID
    world.create()
    _, gov = world.session()
    assert gov.demote(G).status is Status.CONFLICT


def test_moves_refuse_other_projects_missing_skills_and_bad_ids(world: World) -> None:
    world.create()
    _, gov = world.session(project="api")
    assert gov.promote(P, force=True).status is Status.INVALID
    _, gov = world.session()
    assert gov.promote("project:web:nothing", force=True).status is Status.NOT_FOUND
    assert gov.promote("not an id").status is Status.INVALID
    assert gov.promote(G).status is Status.INVALID
    assert gov.restore("global:nothing").status is Status.NOT_FOUND


def test_a_child_session_cannot_govern(world: World) -> None:
    candidate(world)
    _, child = world.session(child=True)
    for result in (child.promote(P), child.demote(G), child.restore(P), child.clear(P)):
        assert result.status is Status.FORBIDDEN and not result.success
    assert child.curate().status is Status.FORBIDDEN
    assert child.maybe_auto_curate().refusal == "child-session"
    assert world.telemetry.curation_status("web").active is None


def test_without_statistics_moves_are_refused_and_explain_says_so(world: World) -> None:
    candidate(world)
    _, gov = world.session(telemetry=None)
    assert gov.promote(P, force=True).status is Status.ERROR
    assert "usage evidence is off (no statistics store)" in gov.explain(P).lines
    assert gov.status().curation is None


def test_a_read_only_store_refuses_before_anything_changes(world: World) -> None:
    candidate(world)

    def read_only() -> None:
        raise HermesMemoryError("the store is read-only")

    _, gov = world.session(write_guard=read_only)
    with pytest.raises(HermesMemoryError):
        gov.promote(P)
    assert gov.maybe_auto_curate().refusal == "read-only"
    assert world.session()[0].get(P) is not None


# -- clear, explain, status, reload ------------------------------------------------------------


def test_clear_forgets_the_record_and_with_it_the_restore(world: World) -> None:
    candidate(world)
    _, gov = world.session()
    assert gov.promote(P).success
    cleared = gov.clear(G)
    assert cleared.status is Status.OK and world.telemetry.governance(G) is None
    assert gov.clear(G).status is Status.NOOP
    assert gov.restore(P).status is Status.NOT_FOUND


def test_explain_prints_every_criterion_with_its_numbers(world: World) -> None:
    world.create()
    world.use(P, 2, sessions=1)
    world.use(P, 1, domain=None, first=1)  # inferred from the text: deployment
    # a child session's use (the skill tool refuses `use` there; older data may hold one)
    world.telemetry.record_use(
        attrs.evolve(world.telemetry.usages(P)[0], session_id="c1", main_session=False)
    )
    _, gov = world.session()
    explained = gov.explain(P)
    assert explained.success and explained.candidate
    text = "\n".join(explained.lines)
    for name in ("promotion-enabled", "project-skill", "same-domain-uses", "sessions", "projects",
                 "global-safe", "conflict"):  # fmt: skip
        assert f"] {name}:" in text
    assert (
        "[ok] same-domain-uses: 3 (needs >= 3)" in text and "1 child-session use(s) ignored" in text
    )
    assert "[ok] sessions: 2 (needs >= 2)" in text
    assert explained.to_json()["lines"] == list(explained.lines)
    assert gov.explain("project:api:deploy").status is Status.INVALID
    missing = gov.explain("project:web:nothing")
    assert missing.success and not missing.candidate
    assert any(x.startswith("[NO] project-skill: missing (needs project)") for x in missing.lines)


def test_the_global_safe_rules_block_a_skill_naming_its_project(world: World) -> None:
    world.create(body="## Procedure\n1. Run ./deploy.sh in /home/alice/web.\n")
    world.use(P, 3)
    _, gov = world.session()
    result = gov.promote(P)
    assert result.status is Status.BLOCKED and "global-safe" in result.message
    line = next(c for c in result.criteria if "global-safe" in c)
    assert "absolute-path" in line and "repository-path" in line


def test_status_lists_project_skills_records_and_the_curation_section(world: World) -> None:
    candidate(world)
    world.create(name="notes", description="Project notes")
    skills, gov = world.session(project="api")
    assert skills.create(scope="project", name="other", description="x", content="y").success
    _, gov = world.session()
    status = gov.status()
    assert [r.skill_id for r in status.skills] == [P, "project:web:notes"]
    assert status.curation is not None and status.curation.active is None
    out = status.to_json()
    assert out["curation_jobs"]["skips"] == {} and out["skills"][0]["candidate"] is True
    assert "Curation Jobs:" in status.lines()
    assert gov.promote(P).success
    rows = {r.skill_id: r for r in gov.status().skills}
    assert rows[G].state == "promoted" and rows[G].exists
    assert rows[P].state == "promoted" and not rows[P].exists


def test_reload_imports_hand_edits_and_lists_what_discovery_offers(world: World) -> None:
    candidate(world)
    world.create(name="hidden-one", scope="global", description="Hide me")
    skills, gov = world.session()
    assert skills.set_visibility("hide", ["global:hidden-one"]).success
    stream = "skill:" + P
    files = unpack(world.folders.folders[stream])
    files["SKILL.md"] = files["SKILL.md"].replace(b"docker image", b"container image")
    world.folders.folders[stream] = pack(files)
    reloaded = gov.reload()
    assert reloaded.success and reloaded.imported == 1 and reloaded.total == 2
    assert reloaded.visible == (P,)
    assert "container image" in world.session()[0].get(P).body


# -- curation ----------------------------------------------------------------------------------


def test_curate_records_each_classification_under_the_lease(world: World) -> None:
    candidate(world)
    world.create(
        name="local", description="Local paths", body="## Procedure\n1. Open /home/bob/x.\n"
    )
    _, gov = world.session()
    result = gov.curate()
    assert result.success and result.state == "succeeded" and result.reason_code == "ok"
    assert result.classified == 2 and result.kind == "manual"
    assert world.telemetry.governance(P).state == "candidate"
    local = world.telemetry.governance("project:web:local")
    assert local.state == "project-only" and "absolute-path" in local.reason
    last = gov.status().curation.last
    assert last.state is JobState.SUCCEEDED and last.reason == "ok" and last.job_id == result.job_id


def test_curate_keeps_the_restore_backup_of_a_demoted_skill(world: World) -> None:
    world.create(scope="global")
    _, gov = world.session()
    assert gov.demote(G).success
    assert gov.curate().success
    record = world.telemetry.governance(P)
    assert record.state == "global-safe" and record.backup is not None
    assert gov.restore(P).success


def test_a_manual_curate_is_told_to_retry_while_a_job_holds_the_lease(world: World) -> None:
    world.create()
    limits = curation_limits(world.settings)
    held = world.telemetry.begin_curation("web", CurationKind.AUTO, world.clock.now(), limits)
    _, gov = world.session()
    busy = gov.curate()
    assert busy.status is Status.BUSY and not busy.success and "try again later" in busy.message
    assert gov.status().curation.skips == {"busy": 1}
    world.telemetry.finish_curation(held.job_id, JobState.SUCCEEDED, "ok", world.clock.now())
    assert gov.curate().success  # manual runs ignore the cooldowns


def test_a_stale_job_is_cleared_before_the_run(world: World) -> None:
    world.create()
    limits = curation_limits(world.settings)
    world.telemetry.begin_curation("web", CurationKind.MANUAL, world.clock.now(), limits)
    world.clock.advance(milliseconds=world.settings.curation_timeout_ms * 2 + 1)
    _, gov = world.session()
    result = gov.curate()
    assert result.success and result.cleared_stale == 1 and "1 stale job(s)" in result.message


def test_a_classifier_past_the_timeout_ends_the_job_timed_out(world: World) -> None:
    world.create()
    ticks = [0.0]
    _, gov = world.session(classifier=Slow(ticks), monotonic=lambda: ticks[0])
    result = gov.curate()
    assert not result.success and result.status is Status.FAILED
    assert result.state == "timed-out" and result.reason_code == "timeout"
    last = gov.status().curation.last
    assert last.state is JobState.TIMED_OUT and last.reason == "timeout"


def test_the_rule_based_classifier_stops_at_its_deadline(world: World) -> None:
    for name in ("one", "two", "three"):
        world.create(name=name, description=f"Skill {name}")
    ticks = iter(range(100))
    world.settings = config(curation_timeout_ms=1500)
    _, gov = world.session(monotonic=lambda: float(next(ticks)))
    result = gov.curate()
    assert result.reason_code == "timeout" and world.telemetry.governance("project:web:one") is None


def test_a_failing_classifier_fails_the_job_and_releases_the_lease(world: World) -> None:
    world.create()
    _, gov = world.session(classifier=Failing())
    result = gov.curate()
    assert result.state == "failed" and result.reason_code == "classifier-error"
    assert "the model went away" in result.message
    assert gov.status().curation.active is None
    assert world.session()[1].curate().success


def test_a_project_without_skills_succeeds_with_its_reason_code(world: World) -> None:
    _, gov = world.session()
    result = gov.curate()
    assert result.success and result.reason_code == "no-skills" and result.classified == 0


def test_auto_curation_shares_the_lease_and_waits_out_the_cooldowns(world: World) -> None:
    world.create()
    _, gov = world.session()
    first = gov.maybe_auto_curate()
    assert first.success and first.kind == "auto"
    world.clock.advance(hours=23)
    skipped = gov.maybe_auto_curate()
    assert skipped.status is Status.SKIPPED and skipped.refusal == "cooldown"
    assert skipped.until == first_until(world, hours=1)
    world.clock.advance(hours=2)
    assert gov.maybe_auto_curate().success
    status = gov.status().curation
    assert status.skips == {"cooldown": 1} and status.last.kind is CurationKind.AUTO
    assert world.session(project=None)[1].maybe_auto_curate().refusal == "no-project"


def test_auto_curation_stops_at_the_failure_cap(world: World) -> None:
    world.create()
    world.settings = config(
        curation_max_consecutive_failures=1, auto_curation_failure_cooldown_ms=0
    )
    _, gov = world.session(classifier=Failing())
    assert gov.maybe_auto_curate().state == "failed"
    capped = gov.maybe_auto_curate()
    assert capped.refusal == "failure-cap" and "curationMaxConsecutiveFailures" in capped.message


def first_until(world: World, **delta: float) -> object:
    from datetime import timedelta

    return world.clock.now() + timedelta(**delta)


_bodies = st.sampled_from(
    ["## Procedure\n1. Build it.", "## Procedure\n1. Test it.\n2. Ship it.", "Just do it well."]
)
_files = st.dictionaries(
    st.sampled_from(["references/a.md", "scripts/check.sh", "assets/logo.txt"]),
    st.sampled_from(["one", "two\nlines", "三"]),
    max_size=3,
)


@settings(max_examples=25, deadline=None)
@given(
    body=_bodies,
    files=_files,
    existing=st.none() | st.tuples(_bodies, _files),
    demote=st.booleans(),
)
def test_a_move_then_restore_gives_back_both_skills_exactly(
    body: str, files: dict[str, str], existing: tuple[str, dict[str, str]] | None, demote: bool
) -> None:
    lock = threading.RLock()
    world = World(
        storage=InMemoryStorage(),
        folders=InMemorySkillFolders(),
        telemetry=InMemorySkillTables(),
        lock=lambda timeout: lock,
        settings=config(promotion_conflict_strategy=PromotionConflictStrategy.OVERWRITE),
    )
    source, dest = (G, P) if demote else (P, G)
    world.create(scope=source.split(":")[0], body=body)
    skills, _ = world.session()
    for path, text in files.items():
        assert skills.write_file(source, path, text).success
    if existing is not None:
        world.create(scope=dest.split(":")[0], body=existing[0], description="Another one")
        for path, text in existing[1].items():
            assert skills.write_file(dest, path, text).success
    skills, gov = world.session()
    before = {i: skills.get(i) for i in (P, G)}
    moved = gov.demote(G) if demote else gov.promote(P, force=True)
    assert moved.success, moved.message
    skills, gov = world.session()
    assert skills.get(source) is None
    assert SkillContent.of(skills.get(dest)) == SkillContent.of(before[source])
    assert gov.restore(dest).success
    skills, _ = world.session()
    for skill_id, old in before.items():
        now = skills.get(skill_id)
        assert (now is None) == (old is None)
        if old is not None and now is not None:
            assert SkillContent.of(now) == SkillContent.of(old)
