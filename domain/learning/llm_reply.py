"""The LLM's reply protocol (docs/llm-protocol.md): read operations out of free text.

The model answers with one JSON object `{"operations": [...]}`. Each item is a `memory` tool
operation (`action` add/replace/remove, `target`, `content`, `old_text` or `id`, `category`
for failures) or, where skill review is on, a `skill` tool call marked `"tool": "skill"`.

`parse_reply` is lenient about where the JSON is and strict about what it accepts:
- where: the reply as is, else each fenced ```json block, else the text from the first `{` to
  the last `}`, else the first object that decodes at one of the first `{`s; a reply with no
  JSON object at all ("nothing to save") means no operations;
- what: an item with an unknown action, target, category or tool, a field of the wrong type,
  or a missing text is dropped and counted by reason; so are the items beyond
  `max_operations`. Keys the protocol does not name (a model's "reason", "confidence") are
  ignored; `force` and `scope` are never taken from a model.
It never raises, whatever the text (bounded: a reply longer than `max_chars` is not read).
Whether an operation can be applied (scanner, near-duplicates, capacity, scopes) is decided
later, by the normal tool path: this module only decides what the reply asked for.

Pure: standard library and attrs only.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Collection, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.skills.rules import SkillAction, child_session_problem

__all__ = [
    "MAX_OPERATIONS",
    "MAX_REPLY_CHARS",
    "DropReason",
    "MemoryAction",
    "MemoryOperation",
    "ParsedReply",
    "ReplyShape",
    "SkillOperation",
    "locate_json",
    "parse_reply",
]

#: operations read from one reply; the rest are dropped as `over-limit`
MAX_OPERATIONS: Final = 50
#: characters of a reply that are read at all (1 MiB of ASCII, the default reply cap)
MAX_REPLY_CHARS: Final = 1 << 20
#: fenced blocks and `{` positions tried before giving up (bounds the work on garbage)
_MAX_TRIES: Final = 16
_FENCE: Final = "```"


class ReplyShape(enum.StrEnum):
    """Where the JSON object was found, or why none was read."""

    #: the reply is the JSON (surrounding whitespace allowed)
    JSON = "json"
    #: inside a fenced code block
    FENCED = "fenced"
    #: inside prose (first `{` to last `}`, or the first object that decodes)
    EMBEDDED = "embedded"
    #: no `{` at all: the model had nothing to save
    NONE = "none"
    #: braces, but no JSON object could be decoded
    UNREADABLE = "unreadable"
    #: longer than the limit; not read
    TOO_LONG = "too-long"


class DropReason(enum.StrEnum):
    NOT_AN_OBJECT = "not-an-object"
    #: `operations` is present but not a list
    BAD_OPERATIONS = "bad-operations"
    UNKNOWN_TOOL = "unknown-tool"
    UNKNOWN_ACTION = "unknown-action"
    UNKNOWN_TARGET = "unknown-target"
    TARGET_NOT_ALLOWED = "target-not-allowed"
    UNKNOWN_CATEGORY = "unknown-category"
    #: a field of the wrong JSON type (content not a string, ...)
    BAD_FIELD = "bad-field"
    #: a text the action needs is missing or blank (add without content, ...)
    INCOMPLETE = "incomplete"
    #: a skill operation where skill review is off
    SKILLS_OFF = "skills-off"
    #: a skill action a background session may not take (use, delete, visibility, global)
    SKILL_NOT_ALLOWED = "skill-not-allowed"
    #: beyond the operation limit of one reply
    OVER_LIMIT = "over-limit"


class MemoryAction(enum.StrEnum):
    ADD = "add"
    REPLACE = "replace"
    REMOVE = "remove"


@attrs.frozen(kw_only=True)
class MemoryOperation:
    """One memory operation the reply asked for. `index` is its position in the reply's
    operation list (the coordinate a result reports). replace/remove name the entry by
    `old_id` when the reply gave an id, else by `old_text`."""

    index: int
    action: MemoryAction
    target: Target
    content: str | None = None
    old_text: str | None = None
    old_id: str | None = None
    category: FailureCategory | None = None

    def tool_arguments(self) -> dict[str, str]:
        """The `memory` tool's arguments for this operation (one call, not a batch)."""
        args = {"action": self.action.value, "target": self.target.value}
        if self.content is not None:
            args["content"] = self.content
        if self.old_id is not None:
            args["id"] = self.old_id
        elif self.old_text is not None:
            args["old_text"] = self.old_text
        if self.category is not None:
            args["category"] = self.category.value
        return args


@attrs.frozen(kw_only=True)
class SkillOperation:
    """One `skill` tool call the reply asked for: `arguments` are the tool's arguments as the
    model wrote them (`tool` removed); the skill tool checks them when it runs."""

    index: int
    action: SkillAction
    arguments: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class ParsedReply:
    operations: tuple[MemoryOperation, ...] = ()
    skill_operations: tuple[SkillOperation, ...] = ()
    #: dropped items by reason (only reasons that occurred)
    dropped: Mapping[DropReason, int] = attrs.field(factory=dict)
    shape: ReplyShape = ReplyShape.NONE
    #: one line for logs and review status: what was read and what was dropped
    note: str = ""

    @property
    def dropped_count(self) -> int:
        return sum(self.dropped.values())

    @property
    def readable(self) -> bool:
        """False when the reply had braces but no JSON could be read, or was too long: the
        model tried to answer and failed (a "parse error"), unlike a reply without JSON."""
        return self.shape not in (ReplyShape.UNREADABLE, ReplyShape.TOO_LONG)


# --- finding the JSON ---------------------------------------------------------------------------


def _decode(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # bad JSON, huge integers, deep nesting
        return None


def _fenced_blocks(text: str) -> Iterator[str]:
    """The bodies of ``` fenced blocks, in order (the opener's info string, e.g. `json`,
    is skipped with the rest of its line)."""
    start = text.find(_FENCE)
    tries = 0
    while start != -1 and tries < _MAX_TRIES:
        tries += 1
        body_start = text.find("\n", start + len(_FENCE))
        if body_start == -1:
            return
        end = text.find(_FENCE, body_start)
        if end == -1:
            return
        yield text[body_start + 1 : end]
        start = text.find(_FENCE, end + len(_FENCE))


def _first_objects(text: str) -> Iterator[object]:
    """The first JSON value that decodes at each of the first `{` positions."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    tries = 0
    while start != -1 and tries < _MAX_TRIES:
        tries += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            yield value
        start = text.find("{", start + 1)


def _usable(value: object) -> bool:
    return isinstance(value, dict | list)


def _locate(text: str) -> tuple[ReplyShape, object]:
    value = _decode(text.strip())
    if _usable(value):
        return ReplyShape.JSON, value
    for block in _fenced_blocks(text):
        value = _decode(block.strip())
        if _usable(value):
            return ReplyShape.FENCED, value
    first, last = text.find("{"), text.rfind("}")
    if first == -1:
        return ReplyShape.NONE, None
    if first < last:
        value = _decode(text[first : last + 1])
        if isinstance(value, dict):
            return ReplyShape.EMBEDDED, value
    for value in _first_objects(text):
        return ReplyShape.EMBEDDED, value
    return ReplyShape.UNREADABLE, None


def locate_json(text: str, *, max_chars: int = MAX_REPLY_CHARS) -> tuple[ReplyShape, object]:
    """The JSON value a reply holds, found as `parse_reply` finds it (as is, a fenced block,
    first `{` to last `}`); `(shape, None)` when there is none. Never raises."""
    if not isinstance(text, str):
        return ReplyShape.UNREADABLE, None
    if len(text) > max_chars:
        return ReplyShape.TOO_LONG, None
    return _locate(text)


# --- reading the operations ---------------------------------------------------------------------


def _word(value: object) -> str | None:
    return value.strip().lower().replace("_", "-") if isinstance(value, str) else None


def _choice(value: object, kind: type[enum.StrEnum]) -> Any:
    word = _word(value)
    for member in kind:
        if word is not None and word == member.value.replace("_", "-"):
            return member
    return None


def _text(item: Mapping[str, Any], key: str) -> str | DropReason | None:
    value = item.get(key)
    if value is None or isinstance(value, str):
        return value
    return DropReason.BAD_FIELD


def _filled(value: str | None) -> bool:
    return value is not None and bool(value.strip())


def _memory(
    item: Mapping[str, Any], index: int, targets: Collection[Target] | None
) -> MemoryOperation | DropReason:
    action = _choice(item.get("action"), MemoryAction)
    if action is None:
        return DropReason.UNKNOWN_ACTION
    target = _choice(item.get("target"), Target)
    if target is None:
        return DropReason.UNKNOWN_TARGET
    if targets is not None and target not in targets:
        return DropReason.TARGET_NOT_ALLOWED
    content, old_text, old_id = (_text(item, key) for key in ("content", "old_text", "id"))
    if (
        isinstance(content, DropReason)
        or isinstance(old_text, DropReason)
        or isinstance(old_id, DropReason)
    ):
        return DropReason.BAD_FIELD
    category = None
    if target is Target.FAILURE and item.get("category") is not None:
        category = _choice(item.get("category"), FailureCategory)
        if category is None:
            return DropReason.UNKNOWN_CATEGORY
    if action is not MemoryAction.ADD:
        old_id = old_id.strip() if old_id is not None and old_id.strip() else None
        if old_id is None and not _filled(old_text):
            return DropReason.INCOMPLETE
    if action is not MemoryAction.REMOVE and not _filled(content):
        return DropReason.INCOMPLETE
    return MemoryOperation(
        index=index,
        action=action,
        target=target,
        content=None if action is MemoryAction.REMOVE else content,
        old_text=None if action is MemoryAction.ADD or old_id is not None else old_text,
        old_id=None if action is MemoryAction.ADD else old_id,
        category=category,
    )


def _skill_scope(item: Mapping[str, Any], action: SkillAction) -> str | None:
    if action is SkillAction.CREATE:
        return _word(item.get("scope"))
    skill_id = item.get("skill_id")
    if isinstance(skill_id, str):
        prefix = skill_id.strip().split(":", 1)[0].lower()
        return prefix if prefix in ("global", "project") else None
    return None


def _skill(item: Mapping[str, Any], index: int) -> SkillOperation | DropReason:
    action = _choice(item.get("action"), SkillAction)
    if action is None:
        return DropReason.UNKNOWN_ACTION
    if action is SkillAction.VIEW:  # reads nothing back into the reply: pointless here
        return DropReason.SKILL_NOT_ALLOWED
    if child_session_problem(action, _skill_scope(item, action)) is not None:
        return DropReason.SKILL_NOT_ALLOWED
    arguments = {key: value for key, value in item.items() if key != "tool"}
    arguments["action"] = action.value
    return SkillOperation(index=index, action=action, arguments=MappingProxyType(arguments))


def _items(value: object) -> list[Any] | DropReason:
    if isinstance(value, list):
        return value
    assert isinstance(value, dict)
    operations = value.get("operations")
    if operations is None:
        # one bare operation instead of the envelope: read it as a list of one
        return [value] if "action" in value else []
    return operations if isinstance(operations, list) else DropReason.BAD_OPERATIONS


def _note(shape: ReplyShape, parsed: ParsedReply, total: int) -> str:
    if shape is ReplyShape.NONE:
        return "no JSON in the reply: nothing to save"
    if shape is ReplyShape.UNREADABLE:
        return "the reply holds braces but no readable JSON object; nothing was read"
    if shape is ReplyShape.TOO_LONG:
        return f"the reply is longer than {total:,} characters; nothing was read"
    parts = [f"{len(parsed.operations)} memory operation(s)"]
    if parsed.skill_operations:
        parts.append(f"{len(parsed.skill_operations)} skill operation(s)")
    if parsed.dropped:
        counts = ", ".join(f"{n} {reason.value}" for reason, n in sorted(parsed.dropped.items()))
        parts.append(f"dropped {counts}")
    return f"{'; '.join(parts)} ({shape.value})"


def parse_reply(
    text: str,
    *,
    skills: bool,
    targets: Collection[Target] | None = None,
    max_operations: int = MAX_OPERATIONS,
    max_chars: int = MAX_REPLY_CHARS,
) -> ParsedReply:
    """The operations `text` asks for. `skills`: whether skill operations are accepted (else
    dropped as `skills-off`); `targets`: the memory targets accepted (None: all), others are
    dropped as `target-not-allowed`. Never raises."""
    if not isinstance(text, str) or len(text) > max_chars:
        shape = ReplyShape.TOO_LONG if isinstance(text, str) else ReplyShape.UNREADABLE
        empty = ParsedReply(shape=shape)
        return attrs.evolve(empty, note=_note(shape, empty, max_chars))
    shape, value = _locate(text)
    if value is None:
        empty = ParsedReply(shape=shape)
        return attrs.evolve(empty, note=_note(shape, empty, max_chars))
    dropped: dict[DropReason, int] = {}
    memory: list[MemoryOperation] = []
    skill: list[SkillOperation] = []
    items = _items(value)
    if isinstance(items, DropReason):
        dropped[items] = 1
        items = []
    limit = max(0, max_operations)
    if len(items) > limit:
        dropped[DropReason.OVER_LIMIT] = len(items) - limit
    for index, item in enumerate(items[:limit]):
        result: MemoryOperation | SkillOperation | DropReason
        tool = item.get("tool", "memory") if isinstance(item, dict) else None
        tool = "memory" if tool is None else _word(tool)
        if not isinstance(item, dict):
            result = DropReason.NOT_AN_OBJECT
        elif tool == "memory":
            result = _memory(item, index, targets)
        elif tool != "skill":
            result = DropReason.UNKNOWN_TOOL
        elif not skills:
            result = DropReason.SKILLS_OFF
        else:
            result = _skill(item, index)
        if isinstance(result, DropReason):
            dropped[result] = dropped.get(result, 0) + 1
        elif isinstance(result, MemoryOperation):
            memory.append(result)
        else:
            skill.append(result)
    parsed = ParsedReply(
        operations=tuple(memory), skill_operations=tuple(skill), dropped=dropped, shape=shape
    )
    return attrs.evolve(parsed, note=_note(shape, parsed, max_chars))
