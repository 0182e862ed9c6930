"""The `learn` guide is generated from the tool definitions (ADR 0037), and STANDING.md is
known only to modules that read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.history.tool import SESSION_SEARCH_ANCHORS_TOOL, SESSION_SEARCH_LEGACY_TOOL
from pi_hermes_memory.search.search_tool import MEMORY_SEARCH_TOOL
from pi_hermes_memory.skills.governance.tool import CURATE_TOOL
from pi_hermes_memory.skills.stats_tool import SKILL_STATS_TOOL
from pi_hermes_memory.skills.tool import SKILL_TOOL
from pi_hermes_memory.tools.guide import tool_guide
from pi_hermes_memory.tools.registry import MEMORY_TOOL

EVERY_TOOL = [
    MEMORY_TOOL,
    MEMORY_SEARCH_TOOL,
    SESSION_SEARCH_LEGACY_TOOL,
    SESSION_SEARCH_ANCHORS_TOOL,
    SKILL_TOOL,
    SKILL_STATS_TOOL,
    CURATE_TOOL,
]


@pytest.mark.parametrize("definition", EVERY_TOOL, ids=lambda d: d.name)
def test_every_action_and_parameter_of_every_tool_is_in_the_guide(definition: object) -> None:
    guide = tool_guide([definition])  # type: ignore[list-item]
    (tool,) = guide.tools
    props = definition.parameters.get("properties", {})  # type: ignore[attr-defined]
    assert set(props.get("action", {}).get("enum", [])) <= set(tool.actions)
    names = {p.name for p in tool.parameters}
    assert set(props) <= names
    text = guide.to_text()
    for name in names:
        assert f"  {name} (" in text
    for action in tool.actions:
        assert action in text
    assert tool.description in text


def test_nested_operation_parameters_are_listed() -> None:
    (tool,) = tool_guide([MEMORY_TOOL]).tools
    by_name = {p.name: p for p in tool.parameters}
    assert by_name["operations[].action"].values == ("add", "replace", "remove")
    assert by_name["operations[].action"].required
    assert tool.actions == ("add", "replace", "remove", "promote", "demote", "purge")


def test_topic_selects_one_tool_and_an_unknown_topic_is_refused() -> None:
    assert [t.name for t in tool_guide(EVERY_TOOL[:3], "memory_search").tools] == ["memory_search"]
    with pytest.raises(InvalidArgument, match="no tool named 'x'; tools: memory, memory_search"):
        tool_guide(EVERY_TOOL[:2], "x")


_SOURCES = Path(__file__).resolve().parents[2]
#: the modules that may name STANDING.md: the reader, the format, the renderer, and text
_MAY_NAME = {
    "domain/prompt/blocks.py",
    "domain/prompt/standing.py",
    "application/lifecycle/prompt_context.py",
    "application/api.py",
    "application/tools/guide.py",
    "adapters/cli/context.py",
}


def test_only_reading_modules_know_the_standing_file() -> None:
    """No writer (memory tool, sync, imports, purge, consolidation, Markdown store) can
    target STANDING.md if it never learns the name; and none of the reading modules opens a
    file for writing."""
    naming = {
        str(path.relative_to(_SOURCES))
        for folder in ("domain", "application", "adapters")
        for path in (_SOURCES / folder).rglob("*.py")
        if "STANDING" in path.read_text(encoding="utf-8")
    }
    assert naming <= _MAY_NAME
    writes = re.compile(r"write_text|write_bytes|open\([^)]*['\"][wax]|os\.replace|unlink")
    for name in _MAY_NAME - {"application/api.py"}:
        assert not writes.search((_SOURCES / name).read_text(encoding="utf-8")), name
