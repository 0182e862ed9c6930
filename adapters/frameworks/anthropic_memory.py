"""A backend for Claude's memory tool (`memory_20250818`) over this store (issue 31 §3,
ADR 0097). Needs the `anthropic` extra.

    from pi_hermes_memory.adapters.frameworks.anthropic_memory import PiHermesMemoryTool
    tool = PiHermesMemoryTool.open()
    client.beta.messages.tool_runner(model=..., tools=[tool], messages=[...]).until_done()

Mapping (one, documented in docs/frameworks.md): the files under `/memories` are entries of one
scope of the memory layer, `custom:claude-memory` by default, one entry per file, as one JSON
line `{"claude_memory": {"path": "/memories/notes.md", "lines": ["# Notes", "…", ""]}}` (the
file is `"\\n".join(lines)`, byte for byte; a list of lines keeps the search tokens clean).
Directories are not stored: a directory exists while a file lies under it. `create` is
`Memory.add`; `str_replace`, `insert` and `rename` are `Memory.update` of the file's entry (the
old version stays in `Memory.history`); `delete` is `Memory.delete` (`restore` brings a file
back). Every write goes through the store's scanner: a secret or a prompt injection is refused
with the tool's error format (`ToolError`, so the tool result has `is_error: true`). Paths are
checked before anything is read: `/memories` first, no `..`/`.`/empty segment, no backslash,
no control character, no `%`-escape; nothing here touches the file system, so no symlink can
lead out of `/memories`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import unicodedata
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pi_hermes_memory.adapters.frameworks._extra import missing_extra
from pi_hermes_memory.adapters.frameworks._lock import ScopeLock
from pi_hermes_memory.domain.scanning.scanner import MAX_SCAN_CHARS
from pi_hermes_memory.domain.status import SUCCESS, Status

try:
    from anthropic.lib.tools import ToolError
    from anthropic.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool
    from anthropic.types.beta import (
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as exc:  # pragma: no cover - exercised in a child without the extra
    raise missing_extra(__name__, "the anthropic SDK", "anthropic") from exc

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory

__all__ = [
    "DEFAULT_SCOPE",
    "MAX_FILES",
    "MAX_FILE_CHARS",
    "MAX_PATH_CHARS",
    "PiHermesAsyncMemoryTool",
    "PiHermesMemoryTool",
]

DEFAULT_SCOPE: Final = "custom:claude-memory"
ROOT: Final = "/memories"
#: a file's largest size in characters (the tool refuses a write that would pass it); its
#: entry (the JSON line, escapes and line quoting included) must also fit the scanner's
#: MAX_SCAN_CHARS (65,536), past which the store refuses any write (`too_long_to_scan`)
MAX_FILE_CHARS: Final = 50_000
#: the most files under /memories
MAX_FILES: Final = 1_000
#: the longest path, and the deepest
MAX_PATH_CHARS: Final = 255
MAX_DEPTH: Final = 8
#: the store session's memoryCharLimit when `open` opens it: files must never be evicted
OPEN_CHAR_LIMIT: Final = 200_000_000
_MARK: Final = "claude_memory"
_WIDTH: Final = 6  # line numbers as the SDK's own backend shows them


class _File:
    __slots__ = ("entry_id", "path", "text")

    def __init__(self, entry_id: str, path: str, text: str) -> None:
        self.entry_id = entry_id
        self.path = path
        self.text = text


def _encode(path: str, text: str) -> str:
    return json.dumps(
        {_MARK: {"path": path, "lines": text.split("\n")}},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _decode(raw: str) -> tuple[str, str] | None:
    """(path, text) of an entry, or None for an entry that is not one of our files."""
    if not raw.startswith("{"):
        return None
    try:
        doc = json.loads(raw)[_MARK]
        path, lines = doc["path"], doc["lines"]
    except (ValueError, KeyError, TypeError):
        return None
    if isinstance(path, str) and isinstance(lines, list) and all(isinstance(x, str) for x in lines):
        return path, "\n".join(lines)
    return None


def check_path(path: object, *, root_ok: bool = True) -> str:
    """The normalised `/memories/...` path, or ToolError for anything that could leave it."""
    if not isinstance(path, str) or not path:
        raise ToolError("The path must be a non-empty string starting with /memories")
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise ToolError(f"Path must start with /memories, got: {path}")
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(f"Path is longer than {MAX_PATH_CHARS} characters: {path[:80]}…")
    if "\\" in path or "%" in path or any(unicodedata.category(c).startswith("C") for c in path):
        raise ToolError(
            f"Path {path!r} holds a backslash, a %-escape or a control character: refused"
        )
    rest = path[len(ROOT) :]  # "", "/" or "/a/b", one trailing slash allowed (a directory)
    rest = rest[:-1] if rest.endswith("/") else rest
    parts = rest[1:].split("/") if rest else []
    if any(p in ("", ".", "..") for p in parts):
        raise ToolError(f"Path {path} would escape /memories directory (no '..', '.' or '//')")
    if len(parts) > MAX_DEPTH:
        raise ToolError(f"Path {path} is deeper than {MAX_DEPTH} directories")
    if not parts and not root_ok:
        raise ToolError(f"The /memories directory itself cannot be used here: {path}")
    return "/".join([ROOT, *parts]) if parts else ROOT


def _size(n: int) -> str:
    """A size as the SDK's own backend shows it (1024-based, one decimal)."""
    units, i, value = ("B", "K", "M", "G"), 0, float(n)
    while value >= 1024 and i < len(units) - 1:
        value, i = value / 1024, i + 1
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{str(i + start).rjust(_WIDTH)}\t{line}" for i, line in enumerate(lines))


_R = TypeVar("_R")


def _locked(method: Callable[..., _R]) -> Callable[..., _R]:
    """Run a command holding the scope's lock: its checks and its write see no other
    writer in between (ADR 0103: two processes creating one path, one of them fails)."""

    @functools.wraps(method)
    def run(self: PiHermesMemoryTool, *args: Any, **kwargs: Any) -> _R:
        with self._lock.held():
            return method(self, *args, **kwargs)

    return run


class PiHermesMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool, each file under /memories a journaled entry of one scope."""

    def __init__(
        self,
        memory: Memory,
        *,
        scope: str = DEFAULT_SCOPE,
        owns_memory: bool = False,
        max_file_chars: int = MAX_FILE_CHARS,
        max_files: int = MAX_FILES,
    ) -> None:
        super().__init__()
        if not scope.startswith(("custom:", "agent:")):
            from pi_hermes_memory.errors import InvalidArgument

            raise InvalidArgument(f"scope must be custom:<name> or agent:<id>; got {scope!r}")
        self._memory = memory
        self._scope = scope
        self._owns = owns_memory
        self.max_file_chars = max_file_chars
        self.max_files = max_files
        self._lock = ScopeLock(memory, "claude-memory", scope)

    @classmethod
    def open(cls, *, scope: str = DEFAULT_SCOPE, **open_kwargs: Any) -> PiHermesMemoryTool:
        """Open a session of the store (`pi_hermes_memory.open(**open_kwargs)`) that may use
        `scope` and has room for the files (memoryCharLimit `OPEN_CHAR_LIMIT`)."""
        import pi_hermes_memory

        overrides = dict(open_kwargs.pop("overrides", None) or {})
        agent = "claude-memory-tool"
        overrides.setdefault("scopes", {"agentAccess": {agent: ["global", scope]}})
        overrides.setdefault("memoryCharLimit", OPEN_CHAR_LIMIT)
        memory = pi_hermes_memory.open(agent_id=agent, overrides=overrides, **open_kwargs)
        return cls(memory, scope=scope, owns_memory=True)

    @property
    def memory(self) -> Memory:
        return self._memory

    @property
    def scope(self) -> str:
        return self._scope

    def close(self) -> None:
        if self._owns:
            self._memory.close()

    # -- the store --------------------------------------------------------------------------

    def files(self) -> dict[str, _File]:
        """Every file, read from the store now (never a cache a second process could have
        made stale), by path."""
        found: dict[str, _File] = {}
        for view in self._memory.entries("memory", scope=self._scope):
            decoded = _decode(view.text)
            if decoded is not None:
                found[decoded[0]] = _File(view.id, decoded[0], decoded[1])
        return found

    def read(self, path: str) -> str | None:
        """A file's text, or None."""
        file = self.files().get(check_path(path, root_ok=False))
        return None if file is None else file.text

    def history(self, path: str) -> list[str]:
        """Every version of a live file's text, oldest first, the current one last."""
        file = self.files().get(check_path(path, root_ok=False))
        if file is None:
            return []
        out: list[str] = []
        for view in self._memory.history(file.entry_id):
            decoded = _decode(view.text)
            if decoded is not None:
                out.append(decoded[1])
        return out

    @_locked
    def restore(self, path: str) -> str:
        """Bring back the deleted file at `path` (the newest deletion), with its history."""
        wanted = check_path(path, root_ok=False)
        if wanted in self.files():
            raise ToolError(f"The file {wanted} exists: nothing to restore")
        for view in self._memory.removed("memory"):
            decoded = _decode(view.text)
            if view.scope == self._scope and decoded is not None and decoded[0] == wanted:
                self._check(self._memory.restore(view.id, target="memory"), "restore", wanted)
                return f"Restored {wanted}"
        raise ToolError(f"No deleted file {wanted} to restore")

    def _check(self, result: Any, what: str, path: str) -> Any:
        if result.status not in SUCCESS and result.status is not Status.NOOP:
            raise ToolError(
                f"Error: {what} of {path} refused ({result.status.value}): {result.message}"
            )
        return result

    def _limit(self, path: str, text: str) -> None:
        if len(text) > self.max_file_chars:
            raise ToolError(
                f"File {path} would hold {len(text)} characters; the limit is "
                f"{self.max_file_chars}. Keep memory files short: split or summarise."
            )
        stored = len(_encode(path, text))
        if stored > MAX_SCAN_CHARS:
            raise ToolError(
                f"File {path} would be stored as {stored} characters (its lines quoted and "
                f"escaped); the store scans at most {MAX_SCAN_CHARS}. Split or summarise it."
            )

    def _write(self, file: _File, new_path: str, text: str, what: str) -> None:
        self._limit(new_path, text)
        self._check(self._memory.update(file.entry_id, _encode(new_path, text)), what, new_path)

    @staticmethod
    def _existing(files: Mapping[str, _File], path: str) -> _File:
        file = files.get(path)
        if file is None:
            if any(p.startswith(path + "/") for p in files):
                raise ToolError(f"The path {path} is not a file.")
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return file

    # -- the commands -----------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        path = check_path(command.path)
        files = self.files()
        file = files.get(path)
        if file is not None:
            lines = file.text.split("\n")
            start = 1
            if command.view_range and len(command.view_range) == 2:
                first, last = command.view_range
                start = max(1, first)
                lines = lines[start - 1 : None if last == -1 else last]
            return f"Here's the content of {path} with line numbers:\n" + _numbered(lines, start)
        prefix = "" if path == ROOT else path[len(ROOT) + 1 :] + "/"
        under = {p[len(ROOT) + 1 :]: f for p, f in files.items() if p.startswith(path + "/")}
        if path != ROOT and not under:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        sizes: dict[str, int] = {}
        for rel, f in under.items():
            parts = rel[len(prefix) :].split("/")
            size = len(f.text.encode("utf-8"))
            for depth in range(1, min(len(parts), 2) + 1):
                name = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
                sizes[name] = sizes.get(name, 0) + size
        total = sum(len(f.text.encode("utf-8")) for f in under.values())
        header = (
            f"Here're the files and directories up to 2 levels deep in {path}, "
            "excluding hidden items:"
        )
        rows = [f"{_size(total)}\t{path}"]
        rows += [
            f"{_size(sizes[n])}\t{path}/{n}"
            for n in sorted(sizes, key=lambda n: n.rstrip("/"))
            if not any(seg.startswith(".") for seg in n.rstrip("/").split("/"))
        ]
        return header + "\n" + "\n".join(rows)

    @_locked
    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        path = check_path(command.path, root_ok=False)
        files = self.files()
        if path in files:
            raise ToolError(f"File {path} already exists")
        if any(p.startswith(path + "/") for p in files):
            raise ToolError(f"The path {path} is a directory")
        if any(path.startswith(p + "/") for p in files):
            raise ToolError(f"A parent of {path} is a file")
        if len(files) >= self.max_files:
            raise ToolError(f"/memories already holds {len(files)} files (the limit)")
        self._limit(path, command.file_text)
        self._check(
            self._memory.add(
                _encode(path, command.file_text), target="memory", scope=self._scope, force=True
            ),
            "create",
            path,
        )
        return f"File created successfully at: {path}"

    @_locked
    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        path = check_path(command.path, root_ok=False)
        file = self._existing(self.files(), path)
        count = file.text.count(command.old_str) if command.old_str else 0
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{command.old_str}` did not appear "
                f"verbatim in {path}."
            )
        if count > 1:
            lines, start = [], 0
            while (pos := file.text.find(command.old_str, start)) != -1:
                lines.append(file.text[:pos].count("\n") + 1)
                start = pos + 1
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str "
                f"`{command.old_str}` in lines: {', '.join(map(str, lines))}. "
                "Please ensure it is unique"
            )
        changed = file.text[: file.text.find(command.old_str)].count("\n")
        text = file.text.replace(command.old_str, command.new_str)
        self._write(file, path, text, "str_replace")
        new_lines = text.split("\n")
        first = max(0, changed - 2)
        snippet = _numbered(new_lines[first : min(len(new_lines), changed + 3)], first + 1)
        return (
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + snippet
        )

    @_locked
    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        path = check_path(command.path, root_ok=False)
        file = self._existing(self.files(), path)
        lines = file.text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if command.insert_line < 0 or command.insert_line > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {command.insert_line}. "
                f"It should be within the range [0, {len(lines)}]."
            )
        lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
        self._write(file, path, "\n".join(lines) + "\n", "insert")
        return f"The file {path} has been edited."

    @_locked
    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        path = check_path(command.path)
        if path == ROOT:
            raise ToolError("Cannot delete the /memories directory itself")
        files = self.files()
        doomed = [f for p, f in files.items() if p == path or p.startswith(path + "/")]
        if not doomed:
            raise ToolError(f"The path {path} does not exist")
        self._remove_all(doomed, path)
        return f"Successfully deleted {path}"

    @_locked
    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old = check_path(command.old_path)
        new = check_path(command.new_path)
        if ROOT in (old, new):
            raise ToolError("Cannot rename the /memories directory itself")
        files = self.files()
        if new in files or any(p.startswith(new + "/") for p in files):
            raise ToolError(f"The destination {new} already exists")
        if new.startswith(old + "/"):
            raise ToolError(f"Cannot move {old} into itself ({new})")
        moving = [(p, f) for p, f in files.items() if p == old or p.startswith(old + "/")]
        if not moving:
            raise ToolError(f"The path {old} does not exist")
        targets = [new + p[len(old) :] for p, _ in moving]
        for target in targets:
            check_path(target, root_ok=False)
            if any(target.startswith(p + "/") for p in files if p not in dict(moving)):
                raise ToolError(f"A parent of {target} is a file")
        for (_, file), target in zip(moving, targets, strict=True):
            self._limit(target, file.text)
        # every file's new version in one journal transaction: a crash leaves all or none
        ops = [
            {
                "action": "replace",
                "target": "memory",
                "id": f.entry_id,
                "content": _encode(t, f.text),
            }
            for (_, f), t in zip(moving, targets, strict=True)
        ]
        result = self._memory.batch(ops)
        if not result.success:
            done = [
                {
                    "action": "replace",
                    "target": "memory",
                    "id": f.entry_id,
                    "content": _encode(p, f.text),
                }
                for (p, f), r in zip(moving, result.results, strict=True)
                if r.success
            ]
            if done:  # a refused file: move the others back, so the rename is all or nothing
                self._memory.batch(done)
            refused = next(r for r in result.results if not r.success)
            raise ToolError(
                f"Error: rename of {old} refused ({refused.status.value}): {refused.message}"
            )
        return f"Successfully renamed {old} to {new}"

    @_locked
    def clear_all_memory(self) -> str:
        """Delete every file (each restorable, as `delete`)."""
        files = list(self.files().values())
        if files:
            self._remove_all(files, ROOT)
        return "All memory cleared"

    def _remove_all(self, doomed: list[_File], path: str) -> None:
        """Remove files in one journal transaction (each restorable, as `delete`)."""
        result = self._memory.batch(
            [{"action": "remove", "target": "memory", "id": f.entry_id} for f in doomed]
        )
        if not result.success:
            refused = next(r for r in result.results if not r.success)
            raise ToolError(
                f"Error: delete of {path} refused ({refused.status.value}): {refused.message}"
            )


class PiHermesAsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """The async form (`client.beta.messages.tool_runner` of `AsyncAnthropic`): each command
    runs `PiHermesMemoryTool`'s in a worker thread."""

    def __init__(self, tool: PiHermesMemoryTool) -> None:
        super().__init__()
        self.sync = tool

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await asyncio.to_thread(self.sync.view, command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await asyncio.to_thread(self.sync.create, command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await asyncio.to_thread(self.sync.str_replace, command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await asyncio.to_thread(self.sync.insert, command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await asyncio.to_thread(self.sync.delete, command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await asyncio.to_thread(self.sync.rename, command)

    async def clear_all_memory(self) -> str:
        return await asyncio.to_thread(self.sync.clear_all_memory)
