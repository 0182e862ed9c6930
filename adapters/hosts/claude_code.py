"""`setup claude-code`: the MCP server entry and the hook commands (issue 30 §2, ADR 0090).

Where Claude Code reads them:

| scope     | MCP servers (`mcpServers`)   | hooks (`hooks`)                |
|-----------|------------------------------|--------------------------------|
| --user    | `~/.claude.json`             | `~/.claude/settings.json`      |
| --project | `<project>/.mcp.json`        | `<project>/.claude/settings.json` |

Our MCP server is the entry named `pi-hermes-memory`; our hooks are the command hooks whose
command runs this library's hook client module (ADR 0096) or its CLI with `hook EVENT`
(recognised by the program, never by position), so a second setup replaces them in place
and never duplicates them, and `--uninstall` removes only them: every other server, hook,
matcher group and key is kept as it was (the JSON is re-serialised, its values unchanged).
A file we cannot parse is refused.

The agent root is pinned in both (`PI_CODING_AGENT_DIR`), so Claude Code reaches the store
`setup` was run for whatever its own environment says. When the configuration file has no
`llm` section, setup adds `{"provider": "claude"}` (background learning through `claude -p`);
`--uninstall` removes exactly that section again when no Claude Code wiring is left.
"""

from __future__ import annotations

import copy
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Final

from pi_hermes_memory.adapters.hosts.base import (
    Detection,
    FileChange,
    SetupOptions,
    json_bytes,
    read_json_object,
)
from pi_hermes_memory.errors import ConfigError

__all__ = ["EVENTS", "HOST", "SERVER_NAME", "ClaudeCode", "hook_command", "is_our_hook"]

SERVER_NAME: Final = "pi-hermes-memory"
#: event -> (matcher or None, seconds Claude Code waits for the hook)
EVENTS: Final[dict[str, tuple[str | None, int]]] = {
    "SessionStart": (None, 15),
    "UserPromptSubmit": (None, 10),
    "PostToolUse": ("*", 5),
    "PreCompact": (None, 10),
    "Stop": (None, 15),
    "SessionEnd": (None, 10),
}
CONFIG_FILE: Final = "hermes-memory-config.json"
LLM_SECTION: Final = {"provider": "claude"}
_PROGRAMS: Final = ("pi-hermes-memory", "pi-hermes-memory.exe")
_MODULES: Final = ("pi_hermes_memory.adapters.cli", "pi_hermes_memory.adapters.cli.app")
#: the thin hook (ADR 0096): stdlib imports only, answered by the warm hook server
CLIENT_MODULE: Final = "pi_hermes_memory.adapters.hosts.hook_client"


def hook_command(options: SetupOptions, event: str) -> str:
    """The shell line Claude Code runs for `event` (its hooks run through a shell): this
    interpreter running the thin hook client, which asks the warm hook server (ADR 0096)."""
    root = shlex.quote(str(options.agent_root))
    return f"PI_CODING_AGENT_DIR={root} {shlex.join([sys.executable, '-m', CLIENT_MODULE, event])}"


def is_our_hook(hook: object) -> bool:
    """A command hook that runs this library's `hook` command."""
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return False
    command = hook.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if CLIENT_MODULE in words:
        return True
    ours = any(os.path.basename(w) in _PROGRAMS for w in words) or any(w in _MODULES for w in words)
    return ours and "hook" in words  # the CLI's `hook EVENT` (setups before ADR 0096)


def _paths(options: SetupOptions, scope: str) -> tuple[Path, Path]:
    if scope == "user":
        return options.home / ".claude.json", options.home / ".claude" / "settings.json"
    return options.project_dir / ".mcp.json", options.project_dir / ".claude" / "settings.json"


def _object(doc: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {key!r} is not a JSON object; nothing was changed")
    return value


def _without_ours(hooks: dict[str, Any]) -> dict[str, Any]:
    """`hooks` with every hook of ours removed (groups and events left empty by that go)."""
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        new_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                new_groups.append(group)
                continue
            left = [h for h in inner if not is_our_hook(h)]
            if len(left) == len(inner):
                new_groups.append(group)
            elif left:
                new_groups.append({**group, "hooks": left})
        if new_groups or not groups:
            kept[event] = new_groups
    return kept


def _with_ours(hooks: dict[str, Any], options: SetupOptions) -> dict[str, Any]:
    """`hooks` with ours in place: an existing hook of ours is replaced where it is, else a
    group of ours is appended to the event."""
    result = copy.deepcopy(hooks)
    for event, (matcher, timeout) in EVENTS.items():
        ours = {"type": "command", "command": hook_command(options, event), "timeout": timeout}
        groups = result.get(event)
        if not isinstance(groups, list):
            groups = result[event] = []
        placed = False
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                continue
            for i, hook in enumerate(inner):
                if is_our_hook(hook):
                    if not placed:
                        inner[i] = ours
                        placed = True
                    else:
                        inner[i] = None  # a duplicate of ours: removed below
            group["hooks"] = [h for h in inner if h is not None]
        result[event] = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
        if not placed:
            group_new: dict[str, Any] = {"hooks": [ours]}
            if matcher is not None:
                group_new = {"matcher": matcher, **group_new}
            result[event].append(group_new)
    return result


def _server(options: SetupOptions) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": options.command[0],
        "args": [*options.command[1:], "mcp"],
        "env": {"PI_CODING_AGENT_DIR": str(options.agent_root)},
    }


def _wired(options: SetupOptions, scope: str) -> bool:
    try:
        _, settings = read_json_object(_paths(options, scope)[1])
    except ConfigError:
        return False
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return False
    return any(
        is_our_hook(h)
        for groups in hooks.values()
        if isinstance(groups, list)
        for g in groups
        if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        for h in g["hooks"]
    )


class ClaudeCode:
    """The `Host` for Claude Code."""

    name = "claude-code"
    summary = "Claude Code: MCP server + lifecycle hooks (recall, capture, review, flush)"

    def detect(self, options: SetupOptions) -> Detection:
        program = shutil.which("claude", path=options.environ.get("PATH", os.defpath))
        folder = options.home / ".claude"
        user, project = _wired(options, "user"), _wired(options, "project")
        scopes = [s for s, on in (("user", user), ("project", project)) if on]
        return Detection(
            host=self.name,
            installed=program is not None or folder.is_dir(),
            configured=bool(scopes),
            where=program or (str(folder) if folder.is_dir() else None),
            detail=f"hooks set up for: {', '.join(scopes)}" if scopes else "",
        )

    def plan(self, options: SetupOptions) -> list[FileChange]:
        mcp_path, settings_path = _paths(options, options.scope)
        changes = [
            self._mcp_change(options, mcp_path),
            self._settings_change(options, settings_path),
        ]
        llm = self._llm_change(options)
        if llm is not None:
            changes.append(llm)
        return [c for c in changes if c.before != c.after]

    def _mcp_change(self, options: SetupOptions, path: Path) -> FileChange:
        before, doc = read_json_object(path)
        servers = dict(_object(doc, "mcpServers", path))
        after_doc = dict(doc)
        if options.uninstall:
            servers.pop(SERVER_NAME, None)
        else:
            servers[SERVER_NAME] = _server(options)
        if servers:
            after_doc["mcpServers"] = servers
        else:
            after_doc.pop("mcpServers", None)
        return self._change(path, before, doc, after_doc, "the MCP server entry", options)

    def _settings_change(self, options: SetupOptions, path: Path) -> FileChange:
        before, doc = read_json_object(path)
        hooks = _object(doc, "hooks", path)
        new_hooks = _without_ours(hooks) if options.uninstall else _with_ours(hooks, options)
        after_doc = dict(doc)
        if new_hooks:
            after_doc["hooks"] = new_hooks
        else:
            after_doc.pop("hooks", None)
        return self._change(path, before, doc, after_doc, "the hook commands", options)

    def _change(
        self,
        path: Path,
        before: bytes | None,
        doc: dict[str, Any],
        after_doc: dict[str, Any],
        why: str,
        options: SetupOptions,
    ) -> FileChange:
        if after_doc == doc:
            return FileChange(path, before, before, why)
        if not after_doc and options.uninstall and path.name != ".claude.json":
            return FileChange(path, before, None, why)  # only ours was there
        return FileChange(path, before, json_bytes(after_doc), why)

    def _llm_change(self, options: SetupOptions) -> FileChange | None:
        path = options.agent_root / CONFIG_FILE
        try:
            before, doc = read_json_object(path)
        except ConfigError as exc:
            if options.uninstall:
                return None
            raise ConfigError(
                f'{exc} (setup adds llm.provider "claude" to it when it has no llm section)'
            ) from exc
        if options.uninstall:
            other = "project" if options.scope == "user" else "user"
            if doc.get("llm") != LLM_SECTION or _wired(options, other):
                return None
            after_doc = {k: v for k, v in doc.items() if k != "llm"}
            why = "the claude LLM preset setup added"
            if not after_doc:
                return FileChange(path, before, None, why)
            return FileChange(path, before, json_bytes(after_doc), why)
        if "llm" in doc:
            return None  # the person chose an LLM (or none): theirs
        return FileChange(
            path,
            before,
            json_bytes({**doc, "llm": dict(LLM_SECTION)}),
            "background learning through claude -p (no llm section yet)",
        )


HOST: Final = ClaudeCode()
