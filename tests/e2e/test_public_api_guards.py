"""The public `Memory` API raises the library's own typed errors (issue 26 §6): after `close()`
every call raises `StoreClosed` (never a driver's `ConnectionClosedError`), and an argument of
the wrong type raises `InvalidArgument` naming the parameter (never `TypeError: 'int' object is
not subscriptable` from deep inside). Run on a real store (SQLite, Markdown files)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory
from pi_hermes_memory.errors import HermesMemoryError, InvalidArgument, StoreClosed

#: valid arguments of each public method (positional, keyword) on the fixture's store
CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "add": (("Deploys run on Fridays",), {"target": "memory", "force": False}),
    "replace": (("Fridays", "Deploys run on Mondays"), {"target": "memory"}),
    "remove": (("Fridays",), {"target": "memory"}),
    "restore": (("Fridays",), {"target": "memory"}),
    "purge": (("Fridays",), {"target": "memory", "dry_run": True}),
    "removed": (("memory",), {}),
    "settled": ((), {}),
    "get": (("01J000000000000000000000000",), {}),
    "active_entry": (("01J000000000000000000000000", "memory"), {}),
    "active_entries": ((["01J000000000000000000000000"], "memory"), {}),
    "revision": (("memory",), {}),
    "forget_recorded": (("chat-1",), {"keep": 0}),
    "history": (("01J000000000000000000000000",), {}),
    "update": (("01J000000000000000000000000", "new text"), {}),
    "delete": (("01J000000000000000000000000",), {}),
    "promote": (("Fridays",), {"force": False}),
    "demote": (("Fridays",), {"force": False}),
    "batch": (([{"action": "add", "target": "memory", "content": "x y z"}],), {}),
    "entries": (("memory",), {"include_history": False, "scope": "global"}),
    "search": (("Fridays",), {"target": "memory", "limit": 5, "include_superseded": False}),
    "session_search": (("Fridays",), {"project": "web", "role": "user", "limit": 3}),
    "session_anchors": (("# all\n- Fridays\n",), {}),
    "record_message": (("s1", "user", "hello"), {"project": "web"}),
    "index_live": (("missing.jsonl",), {}),
    "session": ((), {"session_id": "s1"}),
    "skill_stats": ((), {"since_days": 7, "skill_id": None, "project": "web"}),
    "tool_schemas": (("openai",), {"strict": False}),
    "call_tool": (("memory_search", {"query": "Fridays"}), {}),
    "learn_skill": (("a source text",), {"name": "skill"}),
    "interview": ((), {"answers": None}),
    "consolidate": (("memory",), {}),
    "reembed": ((), {"everything": False, "batch_size": 8}),
    "index_sessions": ((), {}),
}
#: a value of the wrong type for a parameter annotated with each kind
WRONG = {"str": 123, "bool": "yes", "int": "7", "Mapping": 5, "Sequence": 5, "float": "high"}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(json.dumps({"projectName": "web"}))
    with pi_hermes_memory.open(agent_root=root, cwd=tmp_path, environ={}) as opened:
        yield opened


def _public_methods() -> list[str]:
    return sorted(
        name
        for name, value in vars(Memory).items()
        if not name.startswith("_") and callable(value) and name != "close"
    )


def test_every_public_method_is_covered() -> None:
    assert set(_public_methods()) - {"flush", "insights", "project_overview", "doctor"} - {
        "sync_markdown",
        "system_prompt",
        "preview_context",
        "tool_definitions",
    } <= set(CALLS)


def test_every_call_after_close_raises_store_closed(memory: Memory) -> None:
    assert memory.add("Deploys run on Fridays").success
    memory.close()
    memory.close()  # a second close is harmless
    for name in _public_methods():
        args, kwargs = CALLS.get(name, ((), {}))
        with pytest.raises(StoreClosed, match="closed"):
            getattr(memory, name)(*args, **kwargs)
    for name in ("skills", "skill_governance", "knowledge", "pending_renders", "embeddings"):
        with pytest.raises(StoreClosed):
            getattr(memory, name)


def test_a_part_taken_before_close_raises_store_closed(memory: Memory) -> None:
    skills = memory.skills
    memory.close()
    with pytest.raises(StoreClosed):
        skills.skills()


def _kind(annotation: str) -> str | None:
    for kind in ("Mapping", "Sequence", "bool", "float", "int", "str"):
        if kind in annotation and "Callable" not in annotation and "PathLike" not in annotation:
            return kind
    return None


def _wrong_calls() -> Iterator[tuple[str, str, Callable[[Memory], Any]]]:
    for name, (args, kwargs) in CALLS.items():
        signature = inspect.signature(getattr(Memory, name))
        params = [p for p in signature.parameters.values() if p.name != "self"]
        for index, param in enumerate(params):
            kind = _kind(str(param.annotation))
            if kind is None or name == "call_tool":  # the JSON boundary: see the test below
                continue
            wrong = WRONG[kind]
            if index < len(args):
                new_args = (*args[:index], wrong, *args[index + 1 :])
                call_args, call_kwargs = new_args, kwargs
            else:
                call_args, call_kwargs = args, {**kwargs, param.name: wrong}

            def call(m: Memory, n: str = name, a: Any = call_args, k: Any = call_kwargs) -> Any:
                return getattr(m, n)(*a, **k)

            yield name, param.name, call


@pytest.mark.parametrize(
    ("method", "parameter", "call"),
    list(_wrong_calls()),
    ids=[f"{m}-{p}" for m, p, _ in _wrong_calls()],
)
def test_a_wrong_argument_type_is_invalid_argument(
    memory: Memory, method: str, parameter: str, call: Callable[[Memory], Any]
) -> None:
    try:
        call(memory)
    except InvalidArgument as exc:
        assert parameter in str(exc) or "must be" in str(exc), str(exc)
    except HermesMemoryError as exc:
        # another of the library's typed errors (e.g. embeddings off) is fine: not a raw one
        assert not isinstance(exc, TypeError | AttributeError), repr(exc)
    else:
        pytest.fail(f"{method}({parameter}=<wrong type>) was accepted")


def test_add_of_an_int_is_invalid_argument(memory: Memory) -> None:
    with pytest.raises(InvalidArgument, match="content must be a string"):
        memory.add(123)  # type: ignore[arg-type]


def test_call_tool_answers_a_wrong_name_with_a_result(memory: Memory) -> None:
    result = memory.call_tool(123, {"query": "x"})  # type: ignore[arg-type]
    assert result["success"] is False
