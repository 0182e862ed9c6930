"""Importing a skill folder edited by hand (`domain/skills/hand_edits.py`): the version a
hand-written SKILL.md says, the scan of every field that is stored, and the three-way merge
of a folder whose render was cut short (`person_edit`). Each fixed bug is a test here; the
skill state machine (`tests/support/skill_machine.py`) found them."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.memory.events import Origin
from pi_hermes_memory.domain.skills.events import (
    SkillCreated,
    SkillFileRemoved,
    SkillFileWritten,
    SkillRevised,
    SkillScope,
)
from pi_hermes_memory.domain.skills.hand_edits import import_folder, person_edit
from pi_hermes_memory.domain.skills.skill import SkillState, fold, skill_stream
from pi_hermes_memory.domain.skills.skill_md import SKILL_FILE, render_skill
from pi_hermes_memory.errors import SkillFolderProblem
from pi_hermes_memory.journal.codec import decode, encode

T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
STREAM = skill_stream("global:deploy")
SECRET = "ghp_" + "A1b2" * 9  # a GitHub-token-shaped value the scanner refuses


def skill_md(front: str, body: str = "Build it.") -> bytes:
    return f"---\n{front}\n---\n\n{body}\n".encode()


def imported(files: dict[str, bytes], state: SkillState | None = None) -> SkillState:
    state = state or SkillState.empty(STREAM)
    result = import_folder(state, files, at=T0, where="deploy/SKILL.md")
    return fold(state, result.events)


def a_skill(**fields: object) -> SkillState:
    made = imported({SKILL_FILE: skill_md("name: deploy\ndescription: Deploy")})
    return attrs.evolve(made, **fields)  # type: ignore[arg-type]


def rendered(state: SkillState) -> dict[str, bytes]:
    files = {p: c.encode() for p, c in state.files}
    files[SKILL_FILE] = render_skill(state).encode()
    return files


# -- the version of a hand-written SKILL.md ---------------------------------------------------


def test_a_hand_written_version_is_kept() -> None:
    # was: imported as version 1, so the file a person wrote as version 5 went back to 1
    state = imported({SKILL_FILE: skill_md("name: deploy\ndescription: Deploy it\nversion: 5")})
    assert state.revision == 5 and "\nversion: 5\n" in render_skill(state)
    edited = imported({SKILL_FILE: skill_md("name: deploy\ndescription: Changed")}, state)
    assert edited.revision == 6  # a later hand edit counts on from there, whatever it says


def test_a_file_without_a_version_starts_at_one() -> None:
    state = imported({SKILL_FILE: skill_md("name: deploy\ndescription: Deploy it")})
    assert state.revision == 1


def test_a_created_event_stored_before_the_revision_field_reads_as_revision_one() -> None:
    event = SkillCreated(
        stream=STREAM,
        version=1,
        at=T0,
        skill_id="global:deploy",
        scope=SkillScope.GLOBAL,
        project=None,
        slug="deploy",
        display_name=None,
        description="Deploy it",
        body="x",
        extra_frontmatter="",
        origin=Origin.TOOL,
        revision=4,
    )
    tag, payload = encode(event)
    assert decode(tag, payload) == event
    old = payload.replace(',"revision":4', "").replace('"revision":4,', "")
    assert "revision" not in old
    assert decode(tag, old) == attrs.evolve(event, revision=1)


def test_a_created_event_below_revision_one_does_not_fold() -> None:
    event = SkillCreated(
        stream=STREAM,
        version=1,
        at=T0,
        skill_id="global:deploy",
        scope=SkillScope.GLOBAL,
        project=None,
        slug="deploy",
        display_name=None,
        description="d",
        body="b",
        extra_frontmatter="",
        origin=Origin.MARKDOWN,
        revision=0,
    )
    with pytest.raises(Exception, match="cannot create"):
        fold(SkillState.empty(STREAM), [event])


# -- everything stored is scanned ---------------------------------------------------------------


@pytest.mark.parametrize(
    "front",
    [
        # was: the keys we do not own were stored without a scan
        f"name: deploy\ndescription: Deploy it\nlicense: {SECRET}",
        f"name: deploy\ndescription: Deploy it\nmetadata:\n  token: {SECRET}",
        # was: a name that is not the folder's is stored as the display name, unscanned
        f"name: uses {SECRET}\ndescription: Deploy it",
        f"name: deploy\ndisplay_name: uses {SECRET}\ndescription: Deploy it",
        f"name: deploy\ndescription: uses {SECRET}",
    ],
)
def test_a_refused_secret_anywhere_stored_leaves_the_folder_unimported(front: str) -> None:
    for state in (SkillState.empty(STREAM), a_skill()):
        with pytest.raises(SkillFolderProblem, match="content scanner refuses") as caught:
            import_folder(state, {SKILL_FILE: skill_md(front)}, at=T0, where="deploy/SKILL.md")
        assert SECRET not in str(caught.value)


# -- a render cut short, and a person's edit of it ------------------------------------------------


def test_a_folder_that_is_a_mix_of_the_recorded_and_the_current_skill_is_no_edit() -> None:
    base = a_skill(files=(("references/a.md", "a"), ("scripts/b.sh", "b")))
    state = a_skill(files=(("references/a.md", "a2"), ("templates/c.txt", "c")), version=3)
    old, new = rendered(base), rendered(state)
    mixes = [
        {**old, "references/a.md": b"a2"},  # a written, the rest not yet
        {**new, "scripts/b.sh": b"b"},  # all written, b not deleted yet
        {k: v for k, v in old.items() if k != SKILL_FILE},  # SKILL.md deleted first...
    ]
    for files in mixes[:2]:
        assert person_edit(base, state, files) is None
    deleted = attrs.evolve(state, exists=False, deleted=True, files=())
    assert person_edit(base, deleted, mixes[2]) is None  # ...by a delete cut short


def test_a_respelled_skill_md_is_no_edit() -> None:
    state = a_skill()
    text = render_skill(state).replace("\n", "\r\n")
    text = "".join(line for line in text.splitlines(True) if not line.startswith("version:"))
    assert person_edit(state, state, {SKILL_FILE: text.encode()}) is None


def test_only_what_the_person_changed_is_theirs() -> None:
    base = a_skill(files=(("references/a.md", "a"),))
    state = a_skill(body="Committed body.", files=(("references/a.md", "a"),), version=3)
    person = rendered(base)
    person[SKILL_FILE] = person[SKILL_FILE].replace(b"description: Deploy", b"description: Mine")
    person["references/n.md"] = b"new"
    edit = person_edit(base, state, person)
    assert edit is not None
    after = imported(edit, state)
    assert after.description == "Mine" and after.body == "Committed body."
    assert dict(after.files) == {"references/a.md": "a", "references/n.md": "new"}


def test_a_deleted_folder_is_a_deletion_only_when_it_was_recorded() -> None:
    state = a_skill()
    assert person_edit(state, state, {}) == {}
    never = SkillState.empty(STREAM)  # the render of a new skill died before SKILL.md
    assert person_edit(never, state, {}) is None


def test_with_no_render_behind_the_journal_the_folder_is_the_persons() -> None:
    state = a_skill(files=(("references/a.md", "a"),))
    folder = {SKILL_FILE: skill_md("name: deploy\ndescription: Other"), "assets/x": b"x"}
    assert person_edit(state, state, folder) == folder
    events = import_folder(state, folder, at=T0, where="w").events
    assert [type(e) for e in events] == [SkillRevised, SkillFileWritten, SkillFileRemoved]


_PATHS = ("references/a.md", "scripts/b.sh", "templates/c.txt")
_files = st.dictionaries(st.sampled_from(_PATHS), st.sampled_from(["1", "2", "3"]), max_size=3)


@given(
    old=_files,
    new=_files,
    old_body=st.sampled_from(["One.", "Two."]),
    new_body=st.sampled_from(["One.", "Three."]),
    new_exists=st.booleans(),
    picks=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_any_mix_of_two_renders_is_no_edit(
    old: dict[str, str],
    new: dict[str, str],
    old_body: str,
    new_body: str,
    new_exists: bool,
    picks: list[bool],
) -> None:
    base = a_skill(body=old_body, files=tuple(sorted(old.items())))
    state = a_skill(body=new_body, files=tuple(sorted(new.items())), version=5)
    if not new_exists:
        state = attrs.evolve(state, exists=False, deleted=True, files=())
    before, after = rendered(base), rendered(state) if state.exists else {}
    mix: dict[str, bytes] = {}
    for pick, path in zip(picks, (SKILL_FILE, *_PATHS), strict=True):
        chosen = (after if pick else before).get(path)
        if chosen is not None:
            mix[path] = chosen
    assert person_edit(base, state, mix) is None
