"""MCP clients `setup` wires in by one server entry: Cursor, Claude Desktop, VS Code, Codex and
OpenClaw (issue 30 §3, ADR 0092).

Each writes `pi-hermes-memory` -> `{"command": <absolute>, "args": ["mcp"], "env":
{"PI_CODING_AGENT_DIR": <agent root>}}` into the client's own file, merged with what is there:
the person's other servers and keys stay, a file we cannot parse is refused, `--uninstall`
removes our entry only. A project-scope entry also passes `--cwd <project>`, so a client that
declares no MCP roots still lands in that project. Which file:

- cursor: ~/.cursor/mcp.json `mcpServers`; project .cursor/mcp.json
- claude-desktop: claude_desktop_config.json `mcpServers` in ~/.config/Claude (macOS
  ~/Library/Application Support/Claude, Windows %APPDATA%\\Claude); user only
- vscode: the user profile's mcp.json (Linux ~/.config/Code/User) `servers`, each entry with
  `"type": "stdio"`; project .vscode/mcp.json
- codex: $CODEX_HOME (~/.codex)/config.toml `[mcp_servers.pi-hermes-memory]`; project
  .codex/config.toml (Codex reads it in a trusted project)
- openclaw: ~/.openclaw/openclaw.json `mcp.servers`; user only
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
from pi_hermes_memory.adapters.hosts.base import (
    Detection,
    FileChange,
    Scope,
    SetupOptions,
    json_bytes,
    read_json_object,
)
from pi_hermes_memory.adapters.hosts.toml_table import read_toml, with_table, without_table
from pi_hermes_memory.errors import ConfigError

__all__ = [
    "CLAUDE_DESKTOP",
    "CODEX",
    "CURSOR",
    "OPENCLAW",
    "SERVER_NAME",
    "VSCODE",
    "JsonMcpClient",
    "TomlMcpClient",
    "server_entry",
]

#: the key of our entry in every client's server table
SERVER_NAME = "pi-hermes-memory"

PathFor = Callable[[SetupOptions], Path]


def server_entry(options: SetupOptions, *, project: bool) -> dict[str, Any]:
    """What a client runs: our CLI's `mcp` with the agent root (and, for a project's own
    file, that project's folder)."""
    command, *pre = options.command
    args = [*pre, "mcp"]
    if project:
        args += ["--cwd", str(options.project_dir)]
    return {
        "command": command,
        "args": args,
        "env": {"PI_CODING_AGENT_DIR": str(options.agent_root)},
    }


def _config_home(options: SetupOptions) -> Path:
    """Where desktop programs keep their settings on this platform."""
    if sys.platform == "darwin":
        return options.home / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(options.environ.get("APPDATA") or options.home / "AppData" / "Roaming")
    xdg = options.environ.get("XDG_CONFIG_HOME", "").strip()
    return Path(xdg) if xdg else options.home / ".config"


def _on_path(options: SetupOptions, program: str) -> str | None:
    return shutil.which(program, path=options.environ.get("PATH", ""))


def _command_problem(entry: Any) -> str | None:
    """Why our entry's command cannot start (None: it can)."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("command"), str):
        return "our entry has no command"
    command = Path(entry["command"])
    if not command.is_absolute():
        return f"its command {command} is not an absolute path"
    if not command.is_file():
        return f"its command {command} does not exist (moved or removed virtual environment?)"
    if not os.access(command, os.X_OK):
        return f"its command {command} is not executable"
    return None


@attrs.frozen
class JsonMcpClient:
    """A client whose MCP servers are an object inside a JSON file."""

    name: str
    summary: str
    user_file: PathFor
    project_file: PathFor | None
    keys: tuple[str, ...]  # the object holding the servers: ("mcpServers",), ("mcp", "servers")
    markers: Callable[[SetupOptions], list[Path]]  # folders whose presence means installed
    programs: tuple[str, ...] = ()
    extra: Mapping[str, Any] = attrs.field(factory=dict)  # keys every entry carries first

    def path(self, options: SetupOptions) -> Path:
        if options.scope == "project":
            if self.project_file is None:
                raise ConfigError(
                    f"{self.name} has no project settings; run `pi-hermes-memory setup "
                    f"{self.name}` (user scope) instead"
                )
            return self.project_file(options)
        return self.user_file(options)

    def entry(self, options: SetupOptions) -> dict[str, Any]:
        return {**self.extra, **server_entry(options, project=options.scope == "project")}

    def _servers(self, path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
        node: Any = data
        for key in self.keys:
            if not isinstance(node, dict):
                raise ConfigError(
                    f"{path}: `{'.'.join(self.keys)}` is not an object; nothing was changed"
                )
            node = node.get(key)
            if node is None:
                return None
        if not isinstance(node, dict):
            raise ConfigError(
                f"{path}: `{'.'.join(self.keys)}` is not an object; nothing was changed"
            )
        return node

    def found(self, options: SetupOptions) -> tuple[Path, Any]:
        """(the file, our entry there or None)."""
        path = self.path(options)
        _, data = read_json_object(path)
        servers = self._servers(path, data) or {}
        return path, servers.get(SERVER_NAME)

    def plan(self, options: SetupOptions) -> list[FileChange]:
        path = self.path(options)
        before, data = read_json_object(path)
        servers = self._servers(path, data)
        if options.uninstall:
            if servers is None or SERVER_NAME not in servers:
                return []
            after = copy.deepcopy(data)
            node = after
            for key in self.keys:
                node = node[key]
            del node[SERVER_NAME]
            return [FileChange(path, before, json_bytes(after), f"removed {self.name}'s entry")]
        wanted = self.entry(options)
        if servers is not None and servers.get(SERVER_NAME) == wanted:
            return []
        after = copy.deepcopy(data)
        node = after
        for key in self.keys:
            node = node.setdefault(key, {})
        node[SERVER_NAME] = wanted
        why = f"{self.name}: MCP server `{SERVER_NAME}` (restart {self.name} to load it)"
        return [FileChange(path, before, json_bytes(after), why)]

    def detect(self, options: SetupOptions) -> Detection:
        return _detect(self, options)

    def problems(self, options: SetupOptions) -> list[str]:
        """What keeps our configured entry from starting (for the doctor)."""
        return _problems(self, options)


@attrs.frozen
class TomlMcpClient:
    """Codex: `[mcp_servers.<name>]` tables in config.toml, edited textually."""

    name: str
    summary: str
    user_file: PathFor
    project_file: PathFor
    markers: Callable[[SetupOptions], list[Path]]
    programs: tuple[str, ...] = ()
    table: str = "mcp_servers"

    def path(self, options: SetupOptions) -> Path:
        return self.project_file(options) if options.scope == "project" else self.user_file(options)

    def entry(self, options: SetupOptions) -> dict[str, Any]:
        return server_entry(options, project=options.scope == "project")

    def found(self, options: SetupOptions) -> tuple[Path, Any]:
        path = self.path(options)
        _, data = read_toml(path)
        servers = data.get(self.table)
        return path, servers.get(SERVER_NAME) if isinstance(servers, dict) else None

    def plan(self, options: SetupOptions) -> list[FileChange]:
        path = self.path(options)
        before, data = read_toml(path)
        servers = data.get(self.table)
        if servers is not None and not isinstance(servers, dict):
            raise ConfigError(f"{path}: `{self.table}` is not a table; nothing was changed")
        present = isinstance(servers, dict) and SERVER_NAME in servers
        if options.uninstall:
            if not present or before is None:
                return []
            after = without_table(path, before, data, self.table, SERVER_NAME)
            return [FileChange(path, before, after, f"removed {self.name}'s entry")]
        wanted = self.entry(options)
        if present and servers is not None and servers[SERVER_NAME] == wanted:
            return []
        after = with_table(path, before, data, self.table, SERVER_NAME, wanted)
        why = f"{self.name}: MCP server `{SERVER_NAME}` (restart {self.name} to load it)"
        return [FileChange(path, before, after, why)]

    def detect(self, options: SetupOptions) -> Detection:
        return _detect(self, options)

    def problems(self, options: SetupOptions) -> list[str]:
        return _problems(self, options)


def _scopes(client: Any, options: SetupOptions) -> list[Scope]:
    """The scopes whose files to look at: the project's file only when the client has one
    and it is not the user's file (a project folder that is HOME)."""
    if getattr(client, "project_file", None) is None:
        return ["user"]
    same = client.project_file(options) == client.user_file(options)
    return ["user"] if same else ["user", "project"]


def _detect(client: Any, options: SetupOptions) -> Detection:
    """Installed: a marker folder or the program on PATH. Set up: our entry in the user file
    or (when the client has one) this project's file; the detail says where and whether its
    command can start."""
    program = next((p for p in map(lambda n: _on_path(options, n), client.programs) if p), None)
    marker = next((m for m in client.markers(options) if m.is_dir()), None)
    installed = program is not None or marker is not None
    where: str | None = program or (str(marker) if marker else None)
    notes: list[str] = []
    configured = False
    for scope in _scopes(client, options):
        scoped = attrs.evolve(options, scope=scope)
        try:
            path, entry = client.found(scoped)
        except ConfigError as exc:
            notes.append(str(exc))
            continue
        if entry is None:
            continue
        configured, where = True, str(path)
        problem = _command_problem(entry)
        notes.append(f"{scope}: {path}" + (f" ({problem})" if problem else ""))
    if not configured and installed:
        notes.append(f"run `pi-hermes-memory setup {client.name}`")
    return Detection(
        host=client.name,
        installed=installed or configured,
        configured=configured,
        where=where,
        detail="; ".join(notes),
    )


def _problems(client: Any, options: SetupOptions) -> list[str]:
    out = []
    for scope in _scopes(client, options):
        try:
            path, entry = client.found(attrs.evolve(options, scope=scope))
        except ConfigError as exc:
            out.append(str(exc))
            continue
        if entry is not None and (problem := _command_problem(entry)) is not None:
            out.append(
                f"{client.name}: {path}: {problem}; run "
                f"`pi-hermes-memory setup {client.name}` again"
            )
    return out


def _codex_home(options: SetupOptions) -> Path:
    named = options.environ.get("CODEX_HOME", "").strip()
    return Path(named) if named else options.home / ".codex"


CURSOR = JsonMcpClient(
    name="cursor",
    summary="Cursor: MCP server in ~/.cursor/mcp.json (--project: .cursor/mcp.json)",
    user_file=lambda o: o.home / ".cursor" / "mcp.json",
    project_file=lambda o: o.project_dir / ".cursor" / "mcp.json",
    keys=("mcpServers",),
    markers=lambda o: [o.home / ".cursor", _config_home(o) / "Cursor"],
    programs=("cursor",),
)

CLAUDE_DESKTOP = JsonMcpClient(
    name="claude-desktop",
    summary="Claude Desktop: MCP server in claude_desktop_config.json (user only)",
    user_file=lambda o: _config_home(o) / "Claude" / "claude_desktop_config.json",
    project_file=None,
    keys=("mcpServers",),
    markers=lambda o: [_config_home(o) / "Claude"],
    programs=("claude-desktop",),
)

VSCODE = JsonMcpClient(
    name="vscode",
    summary="VS Code: MCP server in the user profile's mcp.json (--project: .vscode/mcp.json)",
    user_file=lambda o: _config_home(o) / "Code" / "User" / "mcp.json",
    project_file=lambda o: o.project_dir / ".vscode" / "mcp.json",
    keys=("servers",),
    markers=lambda o: [_config_home(o) / "Code" / "User"],
    programs=("code",),
    extra={"type": "stdio"},
)

CODEX = TomlMcpClient(
    name="codex",
    summary="Codex: [mcp_servers.pi-hermes-memory] in ~/.codex/config.toml "
    "(--project: .codex/config.toml of a trusted project)",
    user_file=lambda o: _codex_home(o) / "config.toml",
    project_file=lambda o: o.project_dir / ".codex" / "config.toml",
    markers=lambda o: [_codex_home(o)],
    programs=("codex",),
)

OPENCLAW = JsonMcpClient(
    name="openclaw",
    summary="OpenClaw: MCP server under mcp.servers in ~/.openclaw/openclaw.json (user only)",
    user_file=lambda o: o.home / ".openclaw" / "openclaw.json",
    project_file=None,
    keys=("mcp", "servers"),
    markers=lambda o: [o.home / ".openclaw"],
    programs=("openclaw",),
)
