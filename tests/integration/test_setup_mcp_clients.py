"""`setup cursor|claude-desktop|vscode|codex|openclaw` on real files in a temporary HOME, through
the real CLI in a child process (issue 30 §3, ADR 0092)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from pi_hermes_memory.adapters.hosts.base import BACKUP_SUFFIX


@attrs.frozen
class Client:
    name: str
    scope: str  # user | project
    file: Callable[[Path, Path], Path]  # (home, project) -> the file setup edits
    servers: Callable[[dict[str, Any]], dict[str, Any]]  # the parsed file -> its servers
    seed: bytes  # a file the person already has: another server and another key
    broken: bytes
    toml: bool = False

    def read(self, path: Path) -> dict[str, Any]:
        raw = path.read_bytes()
        return tomllib.loads(raw.decode()) if self.toml else json.loads(raw)


MCP_SERVERS = json.dumps(
    {"theme": "dark", "mcpServers": {"other": {"command": "/usr/bin/other", "args": ["x"]}}},
    indent=4,
).encode()
CODEX_SEED = b"""# my codex settings
model = "o3"  # keep this comment

[mcp_servers.other]
command = "/usr/bin/other"
args = ["x"]

# profiles below
[profiles.fast]
model = "o4-mini"
"""

CLIENTS = [
    Client(
        "cursor",
        "user",
        lambda h, p: h / ".cursor" / "mcp.json",
        lambda d: d["mcpServers"],
        MCP_SERVERS,
        b'{"mcpServers": {',
    ),
    Client(
        "cursor",
        "project",
        lambda h, p: p / ".cursor" / "mcp.json",
        lambda d: d["mcpServers"],
        MCP_SERVERS,
        b"[]",
    ),
    Client(
        "claude-desktop",
        "user",
        lambda h, p: h / ".config" / "Claude" / "claude_desktop_config.json",
        lambda d: d["mcpServers"],
        MCP_SERVERS,
        b"{,}",
    ),
    Client(
        "vscode",
        "user",
        lambda h, p: h / ".config" / "Code" / "User" / "mcp.json",
        lambda d: d["servers"],
        json.dumps(
            {"servers": {"other": {"type": "stdio", "command": "o"}}, "inputs": []}
        ).encode(),
        b"// a comment\n{}",
    ),
    Client(
        "vscode",
        "project",
        lambda h, p: p / ".vscode" / "mcp.json",
        lambda d: d["servers"],
        json.dumps({"servers": {"other": {"type": "stdio", "command": "o"}}}).encode(),
        b'{"servers": []}',
    ),
    Client(
        "codex",
        "user",
        lambda h, p: h / ".codex" / "config.toml",
        lambda d: d["mcp_servers"],
        CODEX_SEED,
        b"[mcp_servers\nbroken = ",
        toml=True,
    ),
    Client(
        "codex",
        "project",
        lambda h, p: p / ".codex" / "config.toml",
        lambda d: d["mcp_servers"],
        CODEX_SEED,
        b'model = "a"\nmodel = "b"\n',  # a duplicate key: not valid TOML
        toml=True,
    ),
    Client(
        "openclaw",
        "user",
        lambda h, p: h / ".openclaw" / "openclaw.json",
        lambda d: d["mcp"]["servers"],
        json.dumps(
            {
                "plugins": {"entries": {"pi-memory": {"enabled": True}}},
                "mcp": {"servers": {"other": {"command": "o"}}},
            }
        ).encode(),
        b"{ plugins: {} }",  # JSON5, which we do not parse: refused, not rewritten
    ),
]
IDS = [f"{c.name}-{c.scope}" for c in CLIENTS]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CODEX_", "APPDATA"))}
    return {
        **env,
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(home / "agent"),
        "PATH": "/usr/bin:/bin",  # no cursor/code/codex on PATH: detection by folders
    }


def setup(home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli", "setup", *args],
        cwd=project,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    value: dict[str, Any] = json.loads(done.stdout)
    return value


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "my-app"
    home.mkdir()
    project.mkdir()
    return home, project


def _scope(client: Client) -> list[str]:
    return ["--project"] if client.scope == "project" else []


@pytest.mark.parametrize("client", CLIENTS, ids=IDS)
def test_install_is_idempotent_keeps_the_persons_servers_and_uninstalls_only_ours(
    client: Client, places: tuple[Path, Path]
) -> None:
    home, project = places
    path = client.file(home, project)
    path.parent.mkdir(parents=True)
    path.write_bytes(client.seed)
    before = client.read(path)

    done = _json(setup(home, project, client.name, *_scope(client), "--json"))
    assert [c["path"] for c in done["changes"]] == [str(path)]
    after = client.read(path)
    ours = client.servers(after)["pi-hermes-memory"]
    command = Path(ours["command"])
    assert command.is_absolute() and os.access(command, os.X_OK)
    assert ours["args"][-1 if client.scope == "user" else -3] == "mcp"
    if client.scope == "project":
        assert ours["args"][-2:] == ["--cwd", str(project)]
    assert ours["env"] == {"PI_CODING_AGENT_DIR": str(home / "agent")}
    if client.name == "vscode":
        assert ours["type"] == "stdio"
    # everything the person had is still there, unchanged
    del client.servers(after)["pi-hermes-memory"]
    assert after == before
    assert (path.parent / (path.name + BACKUP_SUFFIX)).read_bytes() == client.seed
    if client.toml:  # not reformatted: the person's bytes come first, ours appended
        assert path.read_bytes().startswith(client.seed)

    written = path.read_bytes()
    assert _json(setup(home, project, client.name, *_scope(client), "--json"))["changes"] == []
    dry = _json(setup(home, project, client.name, *_scope(client), "--dry-run", "--json"))
    assert dry["changes"] == []
    assert path.read_bytes() == written

    gone = _json(setup(home, project, client.name, *_scope(client), "--uninstall", "--json"))
    assert [c["path"] for c in gone["changes"]] == [str(path)]
    assert client.read(path) == before
    if client.toml:
        assert path.read_bytes() == client.seed
    again = setup(home, project, client.name, *_scope(client), "--uninstall", "--json")
    assert _json(again)["changes"] == []


@pytest.mark.parametrize("client", CLIENTS, ids=IDS)
def test_a_file_that_cannot_be_parsed_is_refused_and_kept(
    client: Client, places: tuple[Path, Path]
) -> None:
    home, project = places
    path = client.file(home, project)
    path.parent.mkdir(parents=True)
    path.write_bytes(client.broken)
    for extra in ([], ["--uninstall"], ["--dry-run"]):
        done = setup(home, project, client.name, *_scope(client), *extra)
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert str(path) in done.stderr and "nothing was changed" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert path.read_bytes() == client.broken
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.parametrize("client", CLIENTS, ids=IDS)
def test_dry_run_prints_the_entry_and_writes_nothing(
    client: Client, places: tuple[Path, Path]
) -> None:
    home, project = places
    done = setup(home, project, client.name, *_scope(client), "--print")
    assert done.returncode == 0, done.stderr
    assert "pi-hermes-memory" in done.stdout and str(home / "agent") in done.stdout
    assert str(client.file(home, project)) in done.stdout
    assert not client.file(home, project).exists()
    assert not (home / "agent").exists()


def test_a_stale_entry_is_replaced_in_place(places: tuple[Path, Path]) -> None:
    """A moved virtual environment: our entry points at a command that is gone. Setup again
    replaces it (JSON: the same key; TOML: the same lines, the tables after it untouched)."""
    home, project = places
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    stale = (
        b'[mcp_servers."pi-hermes-memory"]\ncommand = "/gone/bin/pi-hermes-memory"\n'
        b'args = ["mcp"]\n\n[mcp_servers."pi-hermes-memory".env]\nPI_CODING_AGENT_DIR = "/old"\n'
        b"\n# the next table's comment\n[profiles.fast]\nmodel = 'x'\n"
    )
    path.write_bytes(stale)
    listed = _json(setup(home, project, "--json"))
    codex = next(h for h in listed["hosts"] if h["host"] == "codex")
    assert codex["configured"] and "/gone/bin/pi-hermes-memory does not exist" in codex["detail"]
    _json(setup(home, project, "codex", "--json"))
    text = path.read_text()
    assert "/gone/" not in text and "/old" not in text
    assert text.endswith("\n# the next table's comment\n[profiles.fast]\nmodel = 'x'\n")
    assert tomllib.loads(text)["profiles"] == {"fast": {"model": "x"}}
    listed = _json(setup(home, project, "--json"))
    codex = next(h for h in listed["hosts"] if h["host"] == "codex")
    assert codex["configured"] and "does not exist" not in codex["detail"]


def test_an_inline_servers_table_is_refused(places: tuple[Path, Path]) -> None:
    home, project = places
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    raw = b'mcp_servers = { other = { command = "o" } }\n'
    path.write_bytes(raw)
    done = setup(home, project, "codex")
    assert done.returncode == 1 and "inline table" in done.stderr, done.stderr
    assert path.read_bytes() == raw


def test_a_client_without_project_settings_refuses_project(places: tuple[Path, Path]) -> None:
    home, project = places
    done = setup(home, project, "claude-desktop", "--project")
    assert done.returncode == 1 and "no project settings" in done.stderr, done.stderr
    assert not (home / ".config").exists()


def test_setup_without_a_host_reports_what_is_installed_and_set_up(
    places: tuple[Path, Path],
) -> None:
    home, project = places
    (home / ".cursor").mkdir()
    (home / ".config" / "Code" / "User").mkdir(parents=True)
    _json(setup(home, project, "vscode", "--json"))
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_bytes(b"[broken")
    listed = {h["host"]: h for h in _json(setup(home, project, "--json"))["hosts"]}
    assert {"claude-desktop", "codex", "cursor", "openclaw", "vscode"} <= set(listed)
    assert listed["cursor"]["installed"] and not listed["cursor"]["configured"]
    assert "setup cursor" in listed["cursor"]["detail"]
    assert listed["vscode"]["configured"]
    assert listed["vscode"]["where"] == str(home / ".config" / "Code" / "User" / "mcp.json")
    assert listed["codex"]["installed"] and not listed["codex"]["configured"]
    assert "not valid TOML" in listed["codex"]["detail"]
    assert not listed["openclaw"]["installed"] and not listed["claude-desktop"]["installed"]
    text = setup(home, project)
    assert text.returncode == 0, text.stderr
    assert "vscode" in text.stdout and "set up" in text.stdout
