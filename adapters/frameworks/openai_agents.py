"""The OpenAI Agents SDK front end (issue 31 §2, ADR 0098). Needs the `openai-agents` extra.

    from pi_hermes_memory.adapters.frameworks.openai_agents import (
        MemoryRunHooks, MemorySession, memory_tools)
    hooks = MemoryRunHooks(memory)
    agent = Agent(name="a", instructions=hooks.instructions("You help."),
                  tools=memory_tools(memory))
    await Runner.run(agent, "hi", session=MemorySession(memory, "chat-1"), hooks=hooks)

- `memory_tools`: the store's tools (`Memory.tool_schemas("openai", strict=True)`) as SDK
  `FunctionTool`s in strict mode; each call is `Memory.call_tool`, whose JSON result (never a
  traceback) goes back to the model.
- `MemorySession`: the SDK's `Session` protocol. The items are kept, as given, one JSON line
  each, in `<memory_dir>/openai-agents-sessions/<session>.jsonl` (appended and fsynced before
  `add_items` returns: that file is the source of truth); each user/assistant/system text is
  also recorded in the session history index (`Memory.record_message`), so `session_search`
  finds past runs.
- `MemoryRunHooks`: `RunHooks` driving `Memory.session()` (auto-recall into the instructions,
  capture after a run, review nudges counted on tool calls).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pi_hermes_memory.adapters.frameworks._extra import missing_extra
from pi_hermes_memory.errors import CorruptData, InvalidArgument

try:
    from agents import Agent, FunctionTool, RunContextWrapper, RunHooks, Tool
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - exercised in a child without the extra
    raise missing_extra(__name__, "the OpenAI Agents SDK", "openai-agents") from exc

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory
    from pi_hermes_memory.lifecycle.session import AgentSession

__all__ = ["SESSIONS_DIR", "MemoryRunHooks", "MemorySession", "memory_tools"]

#: the folder under the store's `memory_dir` that holds the sessions' item files
SESSIONS_DIR: Final = "openai-agents-sessions"
_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,80}")
_ROLES: Final = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


# -- tools ----------------------------------------------------------------------------------


def memory_tools(memory: Memory) -> list[FunctionTool]:
    """The store's tools as strict SDK function tools; each call runs `Memory.call_tool` in
    a worker thread and returns its JSON result."""
    tools = []
    for schema in memory.tool_schemas("openai", strict=True):
        spec = schema["function"]
        tools.append(
            FunctionTool(
                name=spec["name"],
                description=spec.get("description", ""),
                params_json_schema=spec["parameters"],
                on_invoke_tool=_invoker(memory, spec["name"]),
                strict_json_schema=True,
            )
        )
    return tools


def _invoker(memory: Memory, name: str) -> Callable[[ToolContext[Any], str], Awaitable[str]]:
    async def invoke(_context: ToolContext[Any], arguments: str) -> str:
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return json.dumps(
                {"success": False, "status": "invalid", "message": f"arguments are not JSON: {exc}"}
            )
        result = await asyncio.to_thread(memory.call_tool, name, parsed)
        return json.dumps(result, ensure_ascii=False, default=str)

    return invoke


# -- session --------------------------------------------------------------------------------


def item_text(item: Any) -> tuple[str, str] | None:
    """(role, text) of a message item (user, assistant, system/developer), else None."""
    if not isinstance(item, Mapping):
        item = getattr(item, "model_dump", lambda: None)()
        if not isinstance(item, Mapping):
            return None
    role = _ROLES.get(str(item.get("role", "")))
    if role is None or item.get("type", "message") != "message":
        return None
    content = item.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    else:
        return None
    return (role, text) if text.strip() else None


class MemorySession:
    """The SDK's `Session` protocol over this store.

    Items are JSON lines in one file per session (appended and fsynced; `pop_item` and
    `clear_session` rewrite it atomically). A torn last line (a crash during an append, never
    acknowledged) is ignored and cut at the next write; any other unreadable line raises
    `CorruptData` naming the file and line, and the file is left as it is. Message texts also
    go to the session history index for `session_search`; `pop_item`/`clear_session` take
    the popped or cleared ones out of it after rewriting the file (ADR 0103): a crash in
    between leaves them searchable until the next pop or clear, never loses a kept item.
    """

    session_settings: Any = None

    def __init__(
        self,
        memory: Memory,
        session_id: str,
        *,
        directory: str | os.PathLike[str] | None = None,
        project: str | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidArgument("session_id must be a non-empty string")
        self.session_id = session_id
        self._memory = memory
        self._project = project if project is not None else memory.project
        folder = Path(directory) if directory is not None else _default_dir(memory)
        name = (
            session_id
            if _SAFE_ID.fullmatch(session_id) and session_id not in (".", "..")
            else hashlib.sha256(session_id.encode()).hexdigest()[:40]
        )
        self.path = folder / f"{name}.jsonl"
        self._lock = threading.Lock()

    # the protocol ------------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidArgument("limit must be None or a non-negative integer")
        items = await asyncio.to_thread(self._read_locked)
        if limit is None:
            return items
        return items[-limit:] if limit else []

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        lines = [_json_line(item) for item in items]
        await asyncio.to_thread(self._append, lines, list(items))

    async def pop_item(self) -> Any | None:
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self._rewrite_locked, [])

    # the file ----------------------------------------------------------------------------

    def _read_locked(self) -> list[Any]:
        with self._lock:
            return self._read()[0]

    def _read(self) -> tuple[list[Any], int]:
        """The items and the byte length of the complete lines."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return [], 0
        end = data.rfind(b"\n") + 1  # a torn tail (no newline) was never acknowledged
        items = []
        for number, line in enumerate(data[:end].splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except ValueError as exc:
                raise CorruptData(
                    f"{self.path}: line {number} is not a JSON item ({exc}); the file was "
                    "left as it is: fix or remove that line"
                ) from exc
        return items, end

    def _append(self, lines: list[str], items: list[Any]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _, end = self._read()
            payload = "".join(lines).encode()
            with open(self.path, "ab") as handle:
                if handle.tell() != end:  # cut a torn tail before appending
                    handle.truncate(end)
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
        for item in items:
            said = item_text(item)
            if said is not None:
                self._memory.record_message(
                    self.session_id, said[0], said[1], project=self._project
                )

    def _pop(self) -> Any | None:
        with self._lock:
            items, _ = self._read()
            if not items:
                return None
            self._rewrite(items[:-1])
            self._unrecord(items[:-1])
            return items[-1]

    def _unrecord(self, kept: list[Any]) -> None:
        """Take the turns of the items no longer in the file out of the session history
        index (ADR 0103): the index holds one recorded turn per message item, in order, so
        it keeps as many as the file's remaining message items."""
        keep = sum(item_text(item) is not None for item in kept)
        self._memory.forget_recorded(self.session_id, keep=keep)

    def _rewrite_locked(self, items: list[Any]) -> None:
        with self._lock:
            self._read()  # refuse (CorruptData) rather than drop lines we could not read
            self._rewrite(items)
            self._unrecord(items)

    def _rewrite(self, items: list[Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(self.path.name + ".tmp")
        with open(temp, "wb") as handle:
            handle.write("".join(_json_line(item) for item in items).encode())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _default_dir(memory: Memory) -> Path:
    return Path(memory.config.memory_dir) / SESSIONS_DIR


def _json_line(item: Any) -> str:
    if not isinstance(item, Mapping):
        dump = getattr(item, "model_dump", None)
        item = dump(exclude_unset=True) if callable(dump) else item
    try:
        return json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n"
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"a session item must be JSON: {exc}") from exc


# -- lifecycle hooks ------------------------------------------------------------------------


class MemoryRunHooks(RunHooks[Any]):
    """Run hooks driving the store's lifecycle (`Memory.session()`): on agent start the
    turn's user message is counted and auto-recall runs (its block is added by
    `instructions`), each tool call counts toward the review nudges, and when the run ends
    the answer is recorded and auto-capture stores the user's statements. Use one object per
    conversation (`session_id` names it)."""

    def __init__(self, memory: Memory, session_id: str | None = None) -> None:
        self.memory = memory
        self.lifecycle: AgentSession = memory.session(session_id)
        self._user_text = ""
        self._recall: str | None = None

    def instructions(
        self, base: str = ""
    ) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
        """Dynamic instructions: `base`, the store's system prompt (memory snapshot and
        guidance) and this turn's recalled memories."""

        async def build(_context: RunContextWrapper[Any], _agent: Agent[Any]) -> str:
            parts = [base, self.lifecycle.system_prompt(), self._recall or ""]
            return "\n\n".join(part for part in parts if part.strip())

        return build

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        text = _last_user_text(getattr(context, "turn_input", None) or [])
        if not text or text == self._user_text:
            return
        self._user_text = text
        self.lifecycle.user_message(text)
        self._recall = await asyncio.to_thread(self.lifecycle.before_turn, text)

    async def on_tool_end(self, context: Any, agent: Any, tool: Tool, result: Any) -> None:
        self.lifecycle.tool_call(tool.name)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        answer = output if isinstance(output, str) else json.dumps(output, default=str)
        self.lifecycle.assistant_message(answer)
        if self._user_text:
            await asyncio.to_thread(self.lifecycle.after_turn, self._user_text, answer)

    def shutdown(self, timeout: float = 5.0) -> bool:
        """The conversation ends: flush when configured, wait for background reviews."""
        return self.lifecycle.shutdown(timeout)


def _last_user_text(items: list[Any]) -> str:
    for item in reversed(items):
        said = item_text(item)
        if said is not None and said[0] == "user":
            return said[1]
    return ""
