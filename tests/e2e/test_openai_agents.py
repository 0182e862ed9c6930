"""The OpenAI Agents SDK front end against the real SDK (issue 31 §2, ADR 0098).

Runs go through `agents.Runner` with the SDK's own scripted test model
(`agents.testing.ScriptedModel`): no network. The store is a real one in tmp_path.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from pi_hermes_memory.adapters.frameworks.openai_agents import (
    MemoryRunHooks,
    MemorySession,
    memory_tools,
)
from pi_hermes_memory.errors import CorruptData

NULLS = {
    "old_text": None,
    "id": None,
    "category": None,
    "force": None,
    "scope": None,
    "operations": None,
    "importance": None,
    "kind": None,
}


def _add(content: str, call_id: str) -> Any:
    return function_call(
        "memory",
        {**NULLS, "action": "add", "target": "memory", "content": content},
        call_id=call_id,
    )


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(agent_root=str(root))


def _outputs(items: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(i["output"]) for i in items if i.get("type") == "function_call_output"]


def test_tools_are_the_stores_strict_schemas(tmp_path: Path) -> None:
    with _open(tmp_path / "agent") as memory:
        tools = memory_tools(memory)
        schemas = memory.tool_schemas("openai", strict=True)
        assert [t.name for t in tools] == [s["function"]["name"] for s in schemas]
        for tool, schema in zip(tools, schemas, strict=True):
            assert tool.strict_json_schema is True
            assert tool.params_json_schema == schema["function"]["parameters"]


def test_a_run_writes_through_the_tool_and_recalls_in_the_next_run(tmp_path: Path) -> None:
    root = tmp_path / "agent"

    async def first() -> list[Any]:
        with _open(root) as memory:
            hooks = MemoryRunHooks(memory, "chat-1")
            model = ScriptedModel(
                [
                    [_add("The deploy of kestrel uses blue-green releases", "c1")],
                    [_add("api key sk-live-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6", "c2")],
                    [assistant_message("Noted.")],
                ]
            )
            agent = Agent(
                name="helper",
                instructions=hooks.instructions("You help."),
                tools=memory_tools(memory),
                model=model,
            )
            session = MemorySession(memory, "chat-1")
            result = await Runner.run(agent, "Remember how kestrel deploys.", session=session)
            assert result.final_output == "Noted."
            hooks.shutdown()
            return await session.get_items()

    items = asyncio.run(first())
    first_out, second_out = _outputs(items)
    assert first_out["success"] is True and first_out["status"] == "added"
    assert second_out["success"] is False and second_out["status"] == "blocked"

    async def second() -> tuple[str | None, list[Any]]:
        with _open(root) as memory:  # a new process's view: everything reread from disk
            texts = [e.text for e in memory.entries()]
            assert texts == ["The deploy of kestrel uses blue-green releases"]
            hooks = MemoryRunHooks(memory, "chat-2")
            model = ScriptedModel([[assistant_message("Blue-green.")]])
            agent = Agent(name="helper", instructions=hooks.instructions("You help."), model=model)
            session = MemorySession(memory, "chat-1")
            await Runner.run(
                agent,
                "How does the kestrel deploy work with releases?",
                session=session,
                hooks=hooks,
            )
            hooks.shutdown()
            found = memory.session_search("kestrel deploys")
            assert [h.session.session_id for h in found.hits] == ["chat-1"]
            return model.calls[0].system_instructions, model.calls[0].input

    system, sent = asyncio.run(second())
    assert system is not None and system.startswith("You help.")
    assert "<relevant-memories>" in system and "blue-green releases" in system
    # the session's earlier items were sent back to the model
    assert any(
        isinstance(i, dict)
        and i.get("role") == "user"
        and i.get("content") == "Remember how kestrel deploys."
        for i in sent
    )


def test_hooks_capture_after_the_run(tmp_path: Path) -> None:
    async def run() -> list[str]:
        with _open(tmp_path / "agent") as memory:
            hooks = MemoryRunHooks(memory)
            agent = Agent(
                name="helper",
                instructions=hooks.instructions(),
                model=ScriptedModel([[assistant_message("Sure.")]]),
            )
            await Runner.run(agent, "I prefer short answers in English.", hooks=hooks)
            hooks.shutdown()
            return [e.text for e in memory.entries(target="user")] + [
                e.text for e in memory.entries()
            ]

    assert any("short answers" in text for text in asyncio.run(run()))


def test_session_protocol_and_torn_tail(tmp_path: Path) -> None:
    async def run() -> None:
        with _open(tmp_path / "agent") as memory:
            session = MemorySession(memory, "s/with odd id")
            assert await session.get_items() == []
            assert await session.pop_item() is None
            items = [{"role": "user", "content": f"message {i}"} for i in range(4)]
            await session.add_items(items)
            assert await session.get_items() == items
            assert await session.get_items(limit=2) == items[2:]
            assert await session.pop_item() == items[3]
            # a crash during an append leaves a torn line: never acknowledged, ignored, cut
            with open(session.path, "ab") as handle:
                handle.write(b'{"role": "user", "cont')
            assert await session.get_items() == items[:3]
            await session.add_items([items[3]])
            assert await session.get_items() == items
            assert MemorySession(memory, "s/with odd id").path == session.path
            assert session.path.parent == Path(memory.config.memory_dir) / "openai-agents-sessions"
            await session.clear_session()
            assert await session.get_items() == []

    asyncio.run(run())


def test_popped_and_cleared_items_leave_session_search(tmp_path: Path) -> None:
    """ADR 0103: the session history index keeps exactly the file's message items."""

    def found(memory: Any, word: str) -> list[str]:
        hits = memory.session_search(word, project="*").hits
        return [t.text for h in hits if h.session.session_id == "chat" for t in h.matches]

    async def run() -> None:
        with _open(tmp_path / "agent") as memory:
            session = MemorySession(memory, "chat")
            call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
            await session.add_items(
                [
                    {"role": "user", "content": "alpha walrus"},
                    call,
                    {"role": "assistant", "content": "beta kettle"},
                    {"role": "user", "content": "gamma piano"},
                ]
            )
            assert found(memory, "piano") == ["gamma piano"]
            await session.pop_item()
            assert found(memory, "piano") == [] and found(memory, "kettle") == ["beta kettle"]
            await session.pop_item()
            assert found(memory, "kettle") == []
            assert await session.pop_item() == call  # not a message: the index keeps its turn
            assert found(memory, "walrus") == ["alpha walrus"]
            await session.add_items([{"role": "user", "content": "delta violin"}])
            assert found(memory, "violin") == ["delta violin"]
            await session.clear_session()
            assert found(memory, "walrus") == [] and found(memory, "violin") == []
            await session.add_items([{"role": "user", "content": "epsilon chess"}])
            assert found(memory, "chess") == ["epsilon chess"]

    asyncio.run(run())


def test_a_corrupt_line_is_a_clear_error_and_nothing_is_dropped(tmp_path: Path) -> None:
    async def run() -> None:
        with _open(tmp_path / "agent") as memory:
            session = MemorySession(memory, "chat")
            await session.add_items([{"role": "user", "content": "one"}])
            with open(session.path, "ab") as handle:
                handle.write(b"not json\n")
            before = session.path.read_bytes()
            with pytest.raises(CorruptData, match="line 2"):
                await session.add_items([{"role": "user", "content": "two"}])
            with pytest.raises(CorruptData, match="line 2"):
                await session.get_items()
            with pytest.raises(CorruptData, match="line 2"):
                await session.pop_item()
            with pytest.raises(CorruptData, match="line 2"):
                await session.clear_session()
            assert session.path.read_bytes() == before

    asyncio.run(run())


def test_bad_tool_arguments_get_a_json_error(tmp_path: Path) -> None:
    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        with _open(tmp_path / "agent") as memory:
            tool = {t.name: t for t in memory_tools(memory)}["memory"]
            broken = await tool.on_invoke_tool(None, "{not json")  # type: ignore[arg-type]
            wrong = await tool.on_invoke_tool(None, json.dumps({**NULLS, "action": "fly"}))  # type: ignore[arg-type]
            return json.loads(broken), json.loads(wrong)

    broken, wrong = asyncio.run(run())
    assert broken["success"] is False and "not JSON" in broken["message"]
    assert wrong["success"] is False


def test_a_missing_extra_is_one_clear_line() -> None:
    child = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "agents" or name.startswith("agents."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
        sys.meta_path.insert(0, Block())
        import pi_hermes_memory  # the core package never needs it
        import pi_hermes_memory.adapters.frameworks.openai_agents
        """
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ImportError: pi_hermes_memory.adapters.frameworks.openai_agents needs the OpenAI "
        "Agents SDK: pip install 'pi-hermes-memory[openai-agents]'"
    )
