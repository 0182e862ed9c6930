"""Moving a skill between scopes (domain/skills/move.py): whatever the destination held, the
events of `copy_events` leave it holding exactly the content; a backup round-trips."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory.events import Origin, stamp
from pi_hermes_memory.domain.skills.events import SkillCreated, SkillDeleted, SkillRevised
from pi_hermes_memory.domain.skills.move import SkillContent, copy_events, delete_events
from pi_hermes_memory.domain.skills.skill import SkillState, fold, skill_stream
from pi_hermes_memory.skills.governance.policy import MoveBackup

T0 = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)
T1 = datetime(2026, 7, 30, 12, 0, tzinfo=UTC)

_text = st.text(alphabet="ab c\n技", min_size=1, max_size=12)
_paths = st.sampled_from(["references/a.md", "scripts/run.sh", "assets/x.txt", "templates/t"])
_files = st.dictionaries(_paths, _text, max_size=4).map(lambda d: tuple(sorted(d.items())))
_content = st.builds(
    SkillContent,
    slug=st.just("deploy"),
    display_name=st.none() | st.just("Deploy"),
    description=_text,
    body=_text,
    extra_frontmatter=st.sampled_from(["", "license: MIT"]),
    files=_files,
)


def _apply(state: SkillState, events: tuple[object, ...]) -> SkillState:
    return fold(state, stamp(state.stream, state.version, events))  # type: ignore[arg-type]


def _holding(stream: str, content: SkillContent | None, deleted: bool) -> SkillState:
    state = SkillState.empty(stream)
    if content is not None:
        state = _apply(state, copy_events(state, content, at=T0, origin=Origin.TOOL))
        if deleted:
            state = _apply(state, delete_events(state, at=T0, origin=Origin.TOOL))
    return state


@given(before=st.none() | _content, deleted=st.booleans(), content=_content)
def test_copy_leaves_the_destination_holding_exactly_the_content(
    before: SkillContent | None, deleted: bool, content: SkillContent
) -> None:
    dest = _holding(skill_stream("global:deploy"), before, deleted)
    events = copy_events(dest, content, at=T1, origin=Origin.GOVERNANCE)
    after = _apply(dest, events)
    assert content.same_as(after)
    assert after.version == dest.version + len(events) >= dest.version
    if dest.exists:
        # an existing destination is revised, never re-created: its history and created date stay
        assert not any(isinstance(e, SkillCreated) for e in events)
        assert after.created == dest.created
        assert after.revision == dest.revision + any(isinstance(e, SkillRevised) for e in events)
    else:
        assert isinstance(events[0], SkillCreated) and after.revision == 1
    assert copy_events(after, content, at=T1, origin=Origin.GOVERNANCE) == ()


@given(content=_content, replaced=st.none() | _content)
def test_a_backup_round_trips(content: SkillContent, replaced: SkillContent | None) -> None:
    backup = MoveBackup(
        action="promote",
        source="project:web:deploy",
        dest="global:deploy",
        dest_version=7,
        content=content,
        replaced=replaced,
    )
    assert MoveBackup.decode(backup.encode()) == backup


def test_delete_of_a_missing_skill_is_nothing_and_a_slug_mismatch_is_a_bug() -> None:
    missing = SkillState.empty(skill_stream("global:deploy"))
    assert delete_events(missing, at=T0, origin=Origin.GOVERNANCE) == ()
    held = _holding(skill_stream("global:deploy"), _sample(), False)
    [event] = delete_events(held, at=T0, origin=Origin.GOVERNANCE)
    assert isinstance(event, SkillDeleted) and event.origin is Origin.GOVERNANCE
    with pytest.raises(InvariantViolation):
        copy_events(missing, attrs.evolve(_sample(), slug="other"), at=T0, origin=Origin.TOOL)
    with pytest.raises(InvariantViolation):
        SkillContent.of(missing)


def test_an_unknown_backup_is_refused() -> None:
    for text in ('{"v": 2}', "[]", '{"v": 1, "action": "promote"}'):
        with pytest.raises(ValueError):
            MoveBackup.decode(text)


def _sample() -> SkillContent:
    return SkillContent(
        slug="deploy",
        display_name=None,
        description="Deploy safely",
        body="## Procedure\n1. Ship it.",
        files=(("scripts/run.sh", "echo hi"),),
    )
