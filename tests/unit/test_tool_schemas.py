"""The tool exporters (ADR 0028): one definition, four renderings, a strict variant that
passes a strict-mode checker, and a dispatcher that reads null as absent for every tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.history import InMemorySessionFiles, InMemorySessionIndex
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.errors import ArgumentError
from pi_hermes_memory.search.search_tool import parse_search_arguments
from pi_hermes_memory.tools.registry import MEMORY_TOOL_SCHEMA, parse_memory_arguments
from pi_hermes_memory.tools.schemas import (
    FORMATS,
    STRICT_KEYWORDS,
    render,
    render_all,
    strict_problems,
    strict_schema,
)


def _open(root: Path, variant: str = "legacy") -> Memory:
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"sessionSearch": {"variant": variant}})
    )
    storage = InMemoryStorage()
    return pi_hermes_memory.open(
        agent_root=root,
        cwd=root / "web",
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        search_index=InMemorySearchIndex(storage),
        session_index=InMemorySessionIndex(),
        session_source=InMemorySessionFiles(),
    )


@pytest.fixture(params=["legacy", "anchors"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with _open(tmp_path, request.param) as m:
        yield m


def test_every_tool_is_offered(memory: Memory) -> None:
    assert [t.name for t in memory.tool_definitions()] == [
        "memory",
        "memory_search",
        "session_search",
        "skill",
    ]


def test_openai_chat_completions_shape(memory: Memory) -> None:
    for tool, out in zip(memory.tool_definitions(), memory.tool_schemas("openai"), strict=True):
        assert out == tool.as_openai()  # the exporter the project always had
        assert set(out) == {"type", "function"} and out["type"] == "function"
        assert set(out["function"]) == {"name", "description", "parameters"}
    strict = memory.tool_schemas("openai", strict=True)
    assert all(t["function"]["strict"] is True for t in strict)


def test_openai_responses_is_flat_and_always_says_strict(memory: Memory) -> None:
    for strict in (False, True):
        for out in memory.tool_schemas("openai-responses", strict=strict):
            assert set(out) == {"type", "name", "description", "parameters", "strict"}
            # the Responses API defaults strict to true: a loose schema must say false
            assert out["type"] == "function" and out["strict"] is strict


def test_anthropic_shape(memory: Memory) -> None:
    for tool, out in zip(memory.tool_definitions(), memory.tool_schemas("anthropic"), strict=True):
        assert out == {
            "name": tool.name,
            "description": tool.description,
            "input_schema": dict(tool.parameters),
        }


def test_mcp_shape_and_annotations(memory: Memory) -> None:
    out = {t["name"]: t for t in memory.tool_schemas("mcp")}
    for tool in out.values():
        assert set(tool) == {"name", "title", "description", "inputSchema", "annotations"}
        assert tool["inputSchema"]["type"] == "object"
        assert tool["annotations"]["openWorldHint"] is False
    assert out["memory"]["annotations"]["readOnlyHint"] is False
    assert out["memory"]["annotations"]["destructiveHint"] is True
    for name in ("memory_search", "session_search"):
        hints = out[name]["annotations"]
        assert hints["readOnlyHint"] is True and hints["idempotentHint"] is True
        assert hints["destructiveHint"] is False


@pytest.mark.parametrize("fmt", FORMATS)
def test_strict_schemas_pass_the_strict_checker(memory: Memory, fmt: str) -> None:
    for out in memory.tool_schemas(fmt, strict=True):
        schema = out.get("function", out).get("parameters") or out.get("input_schema")
        schema = schema or out["inputSchema"]
        assert strict_problems(schema) == [], out.get("name")


def test_the_loose_schemas_would_fail_it(memory: Memory) -> None:
    """The checker can fail: the ordinary schemas have optional properties and defaults."""
    problems = [p for t in memory.tool_definitions() for p in strict_problems(t.parameters)]
    assert any("every property must be required" in p for p in problems)
    assert any("'default'" in p for p in problems)


def test_strict_rewriting_rules() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "minLength": 1, "description": "Words."},
            "n": {"type": "integer", "minimum": 1, "maximum": 20, "default": 10},
            "kind": {"type": "string", "enum": ["a", "b"]},
            "ops": {
                "type": "array",
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {"x": {"type": "string"}, "y": {"type": "boolean"}},
                    "required": ["x"],
                },
            },
        },
        "required": ["q"],
        "additionalProperties": False,
    }
    out = strict_schema(schema)
    assert out["required"] == ["q", "n", "kind", "ops"]
    assert out["properties"]["q"] == {"type": "string", "description": "Words."}
    assert out["properties"]["n"] == {
        "type": ["integer", "null"],
        "description": "From 1 to 20. Default: 10.",
    }
    assert out["properties"]["kind"]["enum"] == ["a", "b", None]
    item = out["properties"]["ops"]["items"]
    assert out["properties"]["ops"]["type"] == ["array", "null"]
    assert item["required"] == ["x", "y"] and item["additionalProperties"] is False
    assert item["properties"]["x"] == {"type": "string"}  # required stays non-null
    assert item["properties"]["y"]["type"] == ["boolean", "null"]
    assert strict_problems(out) == []
    assert schema["properties"]["n"]["default"] == 10  # the input is not changed


def test_unknown_format_is_refused(memory: Memory) -> None:
    with pytest.raises(ValueError, match="format must be one of"):
        render(memory.tool_definitions()[0], "gemini")


def test_rendering_returns_copies(memory: Memory) -> None:
    tool = memory.tool_definitions()[0]
    out = render(tool, "anthropic")
    out["input_schema"]["properties"].clear()
    assert tool.parameters["properties"]


# --- null is absent ---------------------------------------------------------------------------


def _optional(schema: dict[str, Any]) -> list[str]:
    return [p for p in schema["properties"] if p not in schema.get("required", ())]


def test_null_for_every_optional_argument_is_absent(memory: Memory) -> None:
    """For each tool, a valid call answers the same with every optional argument null."""
    memory.add("The deploy script lives in scripts/deploy.sh")
    calls = {
        "memory": {"action": "add", "target": "memory", "content": "Tabs, not spaces, in Go"},
        "memory_search": {"query": "deploy"},
        "session_search": {"query": "flock"},
        "skill": {"action": "view"},
    }
    tried: list[str] = []
    for tool in memory.tool_definitions():
        base = (
            calls[tool.name]
            if tool.name != "session_search" or "query" in tool.parameters["properties"]
            else {"request": "all:\n- flock\n"}
        )
        nulls = {k: None for k in _optional(dict(tool.parameters)) if k not in base}
        if not nulls:  # the anchors variant has one required argument only
            continue
        tried.append(tool.name)
        with_nulls = memory.call_tool(tool.name, {**base, **nulls})
        assert with_nulls["status"] != "invalid_arguments", (tool.name, with_nulls)
        if tool.name != "memory":  # the write is not repeatable; the reads are
            assert with_nulls == memory.call_tool(tool.name, base)
    assert tried[:2] == ["memory", "memory_search"]


def test_strict_caller_batch_and_move_with_nulls(memory: Memory) -> None:
    """What a strict-mode model sends: every property present, the unused ones null."""
    props = list(memory.tool_definitions()[0].parameters["properties"])
    blank = dict.fromkeys(props)
    op = {
        "action": "add",
        "target": "memory",
        "content": "Uses pnpm",
        "old_text": None,
        "id": None,
        "force": None,
        "scope": None,
    }
    out = memory.call_tool("memory", {**blank, "operations": [op]})
    assert out["status"] == "ok", out
    single = memory.call_tool(
        "memory", {**blank, "action": "remove", "target": "memory", "old_text": "pnpm"}
    )
    assert single["status"] == "removed", single
    missing = memory.call_tool("memory", blank)
    assert missing["status"] == "invalid_arguments" and "action is required" in missing["message"]


def test_null_limit_is_the_default(memory: Memory) -> None:
    for i in range(12):
        memory.add(f"Deploy note number {i} about the widget {i * 7919}", force=True)
    out = memory.call_tool("memory_search", {"query": "deploy widget", "limit": None})
    assert out["status"] == "ok" and len(out["results"]) == 10


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_strict_schemas_of_random_objects_pass_the_checker(data: st.DataObject) -> None:
    leaf = st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "boolean", "number"])},
        optional={
            "description": st.text(max_size=5),
            "default": st.integers(),
            "minimum": st.integers(),
            "maximum": st.integers(),
        },
    )

    def object_of(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        props = st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), children, max_size=4)
        return props.flatmap(
            lambda p: st.fixed_dictionaries(
                {
                    "type": st.just("object"),
                    "properties": st.just(p),
                    "required": st.lists(st.sampled_from(sorted(p)), unique=True)
                    if p
                    else st.just([]),
                }
            )
        )

    def nested(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        arr = children.map(lambda c: {"type": "array", "items": c, "minItems": 1})
        return object_of(children) | arr

    # a tool's parameters are always an object (drawn as one: a filter on the recursive
    # strategy rejects most draws and trips Hypothesis' filter health check on some seeds)
    schema = data.draw(object_of(st.recursive(leaf, nested, max_leaves=12)))
    strict = strict_schema(schema)
    assert strict_problems(strict) == []
    assert not {k for k in strict if k not in STRICT_KEYWORDS}


def test_render_all_keeps_the_order(memory: Memory) -> None:
    names = [t.name for t in memory.tool_definitions()]
    assert [t["name"] for t in render_all(memory.tool_definitions(), "mcp")] == names


def _outcome(parse: Any, args: Any) -> Any:
    try:
        out = parse(args)
    except ArgumentError as exc:
        return str(exc)
    if isinstance(out, list):  # a batch: per-operation errors are values
        return [str(o) if isinstance(o, ArgumentError) else o for o in out]
    return out


_VALUES = st.one_of(
    st.sampled_from(["add", "replace", "remove", "promote", "demote", "memory", "user", "x"]),
    st.text(max_size=8),
    st.booleans(),
    st.integers(-3, 30),
)


@settings(max_examples=300, deadline=None)
@given(
    args=st.dictionaries(
        st.sampled_from(
            ["action", "target", "content", "old_text", "id", "category", "force", "scope"]
        ),
        _VALUES,
    ),
    nulls=st.sets(
        st.sampled_from(
            ["action", "target", "content", "old_text", "id", "category", "force", "scope"]
        )
    ),
)
def test_null_is_absent_for_any_memory_arguments(args: dict[str, Any], nulls: set[str]) -> None:
    """Whatever the arguments (valid or not), adding nulls for absent ones changes nothing."""
    padded = {**dict.fromkeys(nulls), **args}
    assert _outcome(parse_memory_arguments, padded) == _outcome(parse_memory_arguments, args)
    batch = {"operations": [padded]}
    assert _outcome(parse_memory_arguments, batch) == _outcome(
        parse_memory_arguments, {"operations": [args]}
    )


@settings(max_examples=200, deadline=None)
@given(
    args=st.dictionaries(
        st.sampled_from(["query", "target", "category", "limit", "include_superseded"]), _VALUES
    ),
    nulls=st.sets(st.sampled_from(["query", "target", "category", "limit", "include_superseded"])),
)
def test_null_is_absent_for_any_search_arguments(args: dict[str, Any], nulls: set[str]) -> None:
    padded = {**dict.fromkeys(nulls), **args}
    assert _outcome(parse_search_arguments, padded) == _outcome(parse_search_arguments, args)


def test_the_knowledge_tools_render_in_every_format_and_strictly(tmp_path: Path) -> None:
    (tmp_path / "hermes-memory-config.json").write_text(
        json.dumps({"knowledge": {"paths": [str(tmp_path / "docs")]}})
    )
    storage = InMemoryStorage()
    with pi_hermes_memory.open(
        agent_root=tmp_path,
        cwd=tmp_path / "web",
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        search_index=InMemorySearchIndex(storage),
    ) as memory:
        names = [t.name for t in memory.tool_definitions()]
        assert names[-3:] == ["knowledge_search", "knowledge_index", "knowledge_stats"]
        for fmt in FORMATS:
            rendered = memory.tool_schemas(fmt, strict=True)
            assert len(rendered) == len(names)
            for out in rendered:
                schema = out.get("function", out).get("parameters") or out.get("input_schema")
                schema = schema or out["inputSchema"]
                assert strict_problems(schema) == [], out.get("name")
        # null is absent for these tools too (strict schemas send every optional as null)
        result = memory.call_tool("knowledge_search", {"query": "x", "limit": None, "path": None})
        assert result["status"] == "no_results"  # nothing indexed yet


def test_the_knowledge_tools_come_with_the_second_seeds_tool_set_too(tmp_path: Path) -> None:
    (tmp_path / "hermes-memory-config.json").write_text(
        json.dumps({"tools": {"sets": ["pi-memory"]}, "knowledge": {"paths": ["docs"]}})
    )
    storage = InMemoryStorage()
    with pi_hermes_memory.open(
        agent_root=tmp_path,
        cwd=tmp_path / "web",
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        search_index=InMemorySearchIndex(storage),
    ) as memory:
        names = [t.name for t in memory.tool_definitions()]
    assert "memory" not in names and "memory_recall" in names
    assert names[-3:] == ["knowledge_search", "knowledge_index", "knowledge_stats"]


def test_an_unknown_memory_argument_names_every_argument_the_schema_offers() -> None:
    """The refusal lists what the caller may send, `operations` too (the schema offers it: a
    batch goes alone), so a model that reads it can correct its call."""
    with pytest.raises(ArgumentError) as refused:
        parse_memory_arguments({"action": "add", "target": "memory", "content": "x", "extra": 1})
    message = str(refused.value)
    assert message.startswith("unknown argument(s): extra; allowed: ")
    for name in MEMORY_TOOL_SCHEMA["properties"]:
        assert name in message, (name, message)


def test_a_missing_and_an_unknown_action_name_the_schemas_actions(memory: Memory) -> None:
    # one list per tool: the skill tool's missing-action refusal once left out `list`
    for tool in memory.tool_definitions():
        prop = tool.parameters["properties"].get("action")
        if prop is None:
            continue
        actions = ", ".join(prop["enum"])
        missing = memory.call_tool(tool.name, {})
        unknown = memory.call_tool(tool.name, {"action": "bogus"})
        assert missing["status"] == unknown["status"] == "invalid_arguments", tool.name
        assert missing["message"] == f"action is required ({actions})", tool.name
        assert f"action must be one of {actions}; got 'bogus'" in unknown["message"], tool.name
