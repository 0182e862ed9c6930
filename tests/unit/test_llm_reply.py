"""The reply protocol parser (domain/learning/llm_reply.py): where the JSON is, what is kept,
what is dropped, and that no text makes it raise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pi_hermes_memory.domain.learning.llm_reply import (
    MAX_OPERATIONS,
    DropReason,
    MemoryAction,
    MemoryOperation,
    ParsedReply,
    ReplyShape,
    parse_reply,
)
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.skills.rules import SkillAction
from pi_hermes_memory.tools.registry import parse_operation

ADD = {"action": "add", "target": "project", "content": "The build runs `make all`"}


def envelope(*items: object) -> str:
    return json.dumps({"operations": list(items)})


def parse(text: str, **kw: Any) -> ParsedReply:
    kw.setdefault("skills", True)
    return parse_reply(text, **kw)


# --- where the JSON is ----------------------------------------------------------------------


def test_the_reply_as_is() -> None:
    reply = parse(f"  {envelope(ADD)}\n")
    assert reply.shape is ReplyShape.JSON and reply.dropped == {}
    assert reply.operations == (
        MemoryOperation(
            index=0, action=MemoryAction.ADD, target=Target.PROJECT, content=ADD["content"]
        ),
    )
    assert reply.note == "1 memory operation(s) (json)"


@pytest.mark.parametrize("fence", ["```json", "```JSON", "```", "``` json"])
def test_a_fenced_block(fence: str) -> None:
    text = f"Here is what I would save:\n{fence}\n{envelope(ADD)}\n```\nThat is all {{really}}."
    reply = parse(text)
    assert reply.shape is ReplyShape.FENCED and len(reply.operations) == 1


def test_the_first_fenced_block_that_decodes_wins() -> None:
    text = f"```python\nprint('hi')\n```\n\n```json\n{envelope(ADD)}\n```"
    assert parse(text).shape is ReplyShape.FENCED and len(parse(text).operations) == 1


def test_json_inside_prose_from_the_first_to_the_last_brace() -> None:
    reply = parse(f"Sure. {envelope(ADD)} Done.")
    assert reply.shape is ReplyShape.EMBEDDED and len(reply.operations) == 1


def test_the_first_object_that_decodes_when_prose_holds_more_braces() -> None:
    reply = parse(f"I found {envelope(ADD)} and ignored {{this}}.")
    assert reply.shape is ReplyShape.EMBEDDED and len(reply.operations) == 1


@pytest.mark.parametrize("text", ["", "nothing to save", "No new facts. [] ``` ```", "NONE"])
def test_a_reply_without_json_means_no_operations(text: str) -> None:
    reply = parse(text)
    assert reply.shape is ReplyShape.NONE and reply.readable
    assert reply.operations == () and reply.dropped == {}
    assert "nothing to save" in reply.note


@pytest.mark.parametrize("text", ["{", "oops { not json }", '{"operations": [}', "}{"])
def test_braces_without_a_readable_object_are_unreadable(text: str) -> None:
    reply = parse(text)
    assert reply.shape in (ReplyShape.UNREADABLE, ReplyShape.NONE)
    assert reply.operations == ()
    if "{" in text:
        assert reply.shape is ReplyShape.UNREADABLE and not reply.readable


def test_a_reply_over_the_length_limit_is_not_read() -> None:
    text = envelope(ADD) + " " * 100
    reply = parse(text, max_chars=len(text) - 1)
    assert reply.shape is ReplyShape.TOO_LONG and reply.operations == ()
    assert not reply.readable and "longer than" in reply.note


def test_a_bare_list_and_a_bare_operation_are_read() -> None:
    assert len(parse(json.dumps([ADD, ADD])).operations) == 2
    assert len(parse(json.dumps(ADD)).operations) == 1
    assert parse(json.dumps({"saved": 0})).operations == ()


def test_operations_that_are_not_a_list_are_counted() -> None:
    reply = parse(json.dumps({"operations": ADD}))
    assert reply.dropped == {DropReason.BAD_OPERATIONS: 1} and reply.operations == ()


# --- what is kept -------------------------------------------------------------------------------


def test_replace_and_remove_by_text_or_id() -> None:
    reply = parse(
        envelope(
            {"action": "replace", "target": "memory", "old_text": "old", "content": "new"},
            {"action": "remove", "target": "user", "old_text": "stale"},
            {
                "action": "replace",
                "target": "memory",
                "id": " m-1 ",
                "old_text": "x",
                "content": "y",
            },
            {"action": "remove", "target": "memory", "id": "m-2", "content": "ignored"},
        )
    )
    first, second, third, fourth = reply.operations
    assert (first.old_text, first.content, first.old_id) == ("old", "new", None)
    assert (second.action, second.old_text, second.content) == (MemoryAction.REMOVE, "stale", None)
    assert (third.old_id, third.old_text) == ("m-1", None)  # an id is exact: it wins
    assert (fourth.old_id, fourth.content) == ("m-2", None)


def test_words_are_matched_leniently() -> None:
    reply = parse(
        envelope({"action": " ADD ", "target": "Failure", "content": "x", "category": "tool_quirk"})
    )
    (op,) = reply.operations
    assert (op.action, op.target, op.category) == (
        MemoryAction.ADD,
        Target.FAILURE,
        FailureCategory.TOOL_QUIRK,
    )


def test_a_category_counts_only_for_failures() -> None:
    reply = parse(envelope({**ADD, "category": "not-a-category"}))
    assert reply.operations[0].category is None and reply.dropped == {}


def test_unnamed_keys_are_ignored_and_force_and_scope_never_taken() -> None:
    item = {**ADD, "reason": "user said so", "force": True, "scope": "custom:x", "confidence": 0.9}
    (op,) = parse(envelope(item)).operations
    assert op.tool_arguments() == ADD


def test_tool_arguments_pass_the_memory_tool_parser() -> None:
    reply = parse(
        envelope(
            ADD,
            {
                "action": "add",
                "target": "failure",
                "content": "pip needs --user",
                "category": "correction",
            },
            {"action": "replace", "target": "user", "old_text": "tabs", "content": "spaces"},
            {"action": "remove", "target": "memory", "id": "m-9"},
        )
    )
    for op in reply.operations:
        call = parse_operation(op.tool_arguments())
        assert (call.action, call.target) == (op.action.value, op.target.value)
        assert call.category == (op.category.value if op.category else None)


# --- what is dropped ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ("add memory x", DropReason.NOT_AN_OBJECT),
        (["add"], DropReason.NOT_AN_OBJECT),
        ({**ADD, "action": "purge"}, DropReason.UNKNOWN_ACTION),
        ({**ADD, "action": "promote"}, DropReason.UNKNOWN_ACTION),
        ({**ADD, "action": 1}, DropReason.UNKNOWN_ACTION),
        ({"target": "memory", "content": "x"}, DropReason.UNKNOWN_ACTION),
        ({**ADD, "target": "skills"}, DropReason.UNKNOWN_TARGET),
        ({**ADD, "target": None}, DropReason.UNKNOWN_TARGET),
        ({**ADD, "content": 42}, DropReason.BAD_FIELD),
        ({**ADD, "content": ["a"]}, DropReason.BAD_FIELD),
        ({"action": "remove", "target": "memory", "old_text": {"x": 1}}, DropReason.BAD_FIELD),
        ({"action": "add", "target": "memory"}, DropReason.INCOMPLETE),
        ({"action": "add", "target": "memory", "content": "  "}, DropReason.INCOMPLETE),
        ({"action": "replace", "target": "memory", "content": "new"}, DropReason.INCOMPLETE),
        ({"action": "replace", "target": "memory", "old_text": "old"}, DropReason.INCOMPLETE),
        ({"action": "remove", "target": "memory", "id": " "}, DropReason.INCOMPLETE),
        ({**ADD, "target": "failure", "category": "oops"}, DropReason.UNKNOWN_CATEGORY),
        ({**ADD, "tool": "session_search"}, DropReason.UNKNOWN_TOOL),
        ({**ADD, "tool": 7}, DropReason.UNKNOWN_TOOL),
    ],
)
def test_each_bad_item_is_dropped_and_counted(item: object, reason: DropReason) -> None:
    reply = parse(envelope(item, ADD))
    assert reply.dropped == {reason: 1}
    assert [op.index for op in reply.operations] == [1]
    assert f"dropped 1 {reason.value}" in reply.note


def test_targets_outside_the_allowed_set_are_dropped() -> None:
    failure = {"action": "add", "target": "failure", "content": "x"}
    reply = parse(envelope(ADD, failure), targets={Target.FAILURE})
    assert reply.dropped == {DropReason.TARGET_NOT_ALLOWED: 1}
    assert [op.target for op in reply.operations] == [Target.FAILURE]


def test_operations_beyond_the_limit_are_dropped_and_counted() -> None:
    reply = parse(envelope(*[ADD] * (MAX_OPERATIONS + 7)))
    assert len(reply.operations) == MAX_OPERATIONS
    assert reply.dropped == {DropReason.OVER_LIMIT: 7}
    assert len(parse(envelope(ADD, ADD, ADD), max_operations=2).operations) == 2


# --- skill operations -----------------------------------------------------------------------

CREATE = {
    "tool": "skill",
    "action": "create",
    "scope": "project",
    "name": "release",
    "description": "How to cut a release",
    "procedure_steps": ["bump", "tag"],
}


def test_skill_operations_keep_the_tool_arguments() -> None:
    reply = parse(
        envelope(
            CREATE,
            {
                "tool": "skill",
                "action": "patch",
                "skill_id": "project:app:release",
                "section": "Pitfalls",
                "content": "x",
            },
        )
    )
    create, patch = reply.skill_operations
    assert create.action is SkillAction.CREATE and create.index == 0
    assert dict(create.arguments) == {k: v for k, v in CREATE.items() if k != "tool"}
    assert patch.action is SkillAction.PATCH and patch.arguments["section"] == "Pitfalls"
    assert reply.operations == () and "2 skill operation(s)" in reply.note


def test_skill_operations_are_dropped_where_skill_review_is_off() -> None:
    reply = parse(envelope(CREATE, ADD), skills=False)
    assert reply.skill_operations == () and reply.dropped == {DropReason.SKILLS_OFF: 1}


@pytest.mark.parametrize(
    "item",
    [
        {**CREATE, "scope": "global"},
        {"tool": "skill", "action": "patch", "skill_id": "global:release", "section": "x"},
        {"tool": "skill", "action": "use", "skill_id": "project:app:release"},
        {"tool": "skill", "action": "delete", "skill_id": "project:app:release"},
        {"tool": "skill", "action": "visibility", "skill_ids": ["global:x"]},
        {"tool": "skill", "action": "view"},
    ],
)
def test_skill_actions_a_background_session_may_not_take_are_dropped(item: dict[str, Any]) -> None:
    reply = parse(envelope(item))
    assert reply.skill_operations == () and reply.dropped == {DropReason.SKILL_NOT_ALLOWED: 1}


def test_an_unknown_skill_action_is_dropped() -> None:
    reply = parse(envelope({"tool": "skill", "action": "rename"}))
    assert reply.dropped == {DropReason.UNKNOWN_ACTION: 1}


# --- properties ---------------------------------------------------------------------------------

_TEXT = st.text(min_size=1).filter(lambda s: s.strip())
_OPERATIONS = st.one_of(
    st.builds(
        lambda target, content: {"action": "add", "target": target, "content": content},
        st.sampled_from(["memory", "user", "project"]),
        _TEXT,
    ),
    st.builds(
        lambda category, content: {
            "action": "add",
            "target": "failure",
            "content": content,
            "category": category,
        },
        st.sampled_from([c.value for c in FailureCategory]),
        _TEXT,
    ),
    st.builds(
        lambda target, old, content: {
            "action": "replace",
            "target": target,
            "old_text": old,
            "content": content,
        },
        st.sampled_from([t.value for t in Target]),
        _TEXT,
        _TEXT,
    ),
    st.builds(
        lambda target, old: {"action": "remove", "target": target, "old_text": old},
        st.sampled_from([t.value for t in Target]),
        _TEXT,
    ),
)
_PROSE = st.text(alphabet=st.characters(blacklist_characters="{}`"), max_size=40)


@given(
    st.lists(_OPERATIONS, max_size=MAX_OPERATIONS),
    st.sampled_from(["plain", "fenced", "prose"]),
    _PROSE,
    _PROSE,
)
def test_a_valid_object_round_trips(
    items: list[dict[str, str]], wrapping: str, before: str, after: str
) -> None:
    text = envelope(*items)
    if wrapping == "fenced":
        text = f"{before}\n```json\n{text}\n```\n{after}"
    elif wrapping == "prose":
        text = f"{before} {text} {after}"
    reply = parse(text)
    assert reply.dropped == {} and reply.skill_operations == ()
    assert [op.tool_arguments() for op in reply.operations] == items
    assert [op.index for op in reply.operations] == list(range(len(items)))


_FRAGMENTS = st.sampled_from(
    ["{", "}", "[", "]", "```", "```json\n", '"operations"', ":", ",", '"action"', '"add"',
     '"tool"', '"skill"', "null", "1e999", "-", "\\", '"', "\n", "9" * 5000]
)  # fmt: skip


@given(st.one_of(st.text(), st.lists(_FRAGMENTS | st.text(max_size=5)).map("".join)))
@example("{" * 100_000)
@example("[" * 100_000)
@example('{"operations": ' + "[" * 50_000 + "}")
@example('{"operations": [' + "9" * 100_000 + "]}")
@example('{"operations": [{"action": "add", "target": "memory", "content": "\\ud800"}]}')
def test_no_text_makes_the_parser_raise(text: str) -> None:
    reply = parse(text)
    assert isinstance(reply.note, str) and reply.note
    assert len(reply.operations) + len(reply.skill_operations) <= MAX_OPERATIONS
    for op in reply.operations:
        assert op.action in MemoryAction and op.target in Target
