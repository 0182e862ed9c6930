"""`setup pi`: the Pi extension, installed where Pi discovers extensions (issue 30 §1, ADR 0091).

Pi loads `<agent root>/extensions/*/index.ts` (every project) and `<project>/.pi/extensions/
*/index.ts` (that project; loaded first). We install the folder `pi-hermes-memory/` there:

- `index.ts`, the extension shipped in this package (`pi_extension/index.ts`), copied as is;
- `bridge.json`: the absolute argv that starts this library's CLI (the extension runs it with
  `bridge`), and a snapshot of the core tool schemas, used only until the bridge answers (so
  that a memory tool exists, and says "memory unavailable: …", when Python cannot start).

Background learning needs an LLM: when `hermes-memory-config.json` has no `llm` section,
setup adds `"llm": {"provider": "pi"}` (the `pi -p --no-session --no-tools` preset) and
records that it did in `bridge.json`, so `--uninstall` removes exactly that and nothing a
person wrote. An `llm` section already there is left alone.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any, Final

import attrs
from pi_hermes_memory.adapters.hosts.base import (
    Detection,
    FileChange,
    SetupOptions,
    json_bytes,
    read_json_object,
)
from pi_hermes_memory.config.settings import CONFIG_FILE_NAME

__all__ = ["HOST", "PiHost", "extension_dir", "extension_source"]

FOLDER: Final = "pi-hermes-memory"
MARKER: Final = "pi-hermes-memory setup pi"
#: what setup writes into a config without an `llm` section
PI_LLM: Final[dict[str, Any]] = {"provider": "pi"}


def extension_source() -> bytes:
    """The extension as shipped in this package (package data)."""
    return (
        resources.files("pi_hermes_memory.adapters.hosts")
        .joinpath("pi_extension/index.ts")
        .read_bytes()
    )


def extension_dir(options: SetupOptions) -> Path:
    if options.scope == "project":
        return options.project_dir / ".pi" / "extensions" / FOLDER
    return options.agent_root / "extensions" / FOLDER


def _tool_snapshot() -> list[dict[str, Any]]:
    from pi_hermes_memory.search.search_tool import MEMORY_SEARCH_TOOL
    from pi_hermes_memory.tools.registry import MEMORY_TOOL
    from pi_hermes_memory.tools.schemas import render_all

    return [
        {
            "name": t["name"],
            "label": t.get("title") or t["name"],
            "description": t["description"],
            "parameters": t["inputSchema"],
        }
        for t in render_all([MEMORY_TOOL, MEMORY_SEARCH_TOOL], "mcp")
    ]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _ours(sidecar: bytes | None) -> dict[str, Any] | None:
    """The sidecar's JSON when setup wrote it, else None."""
    if sidecar is None:
        return None
    try:
        value = json.loads(sidecar)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) and value.get("generated_by") == MARKER else None


class PiHost:
    name = "pi"
    summary = "Pi coding agent: an extension that runs the memory bridge"

    def detect(self, options: SetupOptions) -> Detection:
        program = shutil.which("pi", path=options.environ.get("PATH"))
        # the agent root alone proves nothing (this library creates it for its own store);
        # Pi's own files in it do
        pi_files = ("settings.json", "auth.json", "models.json", "sessions")
        installed = program is not None or any((options.agent_root / f).exists() for f in pi_files)
        places = [
            options.project_dir / ".pi" / "extensions" / FOLDER,
            options.agent_root / "extensions" / FOLDER,
        ]
        configured = [p for p in places if (p / "index.ts").is_file()]
        return Detection(
            host=self.name,
            installed=installed,
            configured=bool(configured),
            where=str(configured[0]) if configured else program,
            detail="" if configured else "run `pi-hermes-memory setup pi`",
        )

    def plan(self, options: SetupOptions) -> list[FileChange]:
        folder = extension_dir(options)
        index, sidecar = folder / "index.ts", folder / "bridge.json"
        index_now, sidecar_now = _read(index), _read(sidecar)
        config_path = options.agent_root / CONFIG_FILE_NAME
        recorded = _ours(sidecar_now)
        if options.uninstall:
            changes: list[FileChange] = []
            if recorded is not None:
                changes.append(FileChange(index, index_now, None, "the Pi extension"))
                changes.append(FileChange(sidecar, sidecar_now, None, "the bridge command"))
                other = attrs.evolve(
                    options, scope="user" if options.scope == "project" else "project"
                )
                still_used = (extension_dir(other) / "index.ts").is_file()
                if recorded.get("llm_added") and not still_used:
                    raw, config = read_json_object(config_path)
                    if config.get("llm") == PI_LLM:
                        del config["llm"]
                        changes.append(
                            FileChange(config_path, raw, json_bytes(config), "setup's llm preset")
                        )
            return [c for c in changes if c.before is not None]
        raw, config = read_json_object(config_path)
        llm_added = bool(recorded and recorded.get("llm_added"))
        changes = [
            FileChange(index, index_now, extension_source(), "the Pi extension"),
        ]
        if "llm" not in config:
            config["llm"] = dict(PI_LLM)
            llm_added = True
            changes.append(
                FileChange(
                    config_path, raw, json_bytes(config), "background learning through `pi -p`"
                )
            )
        sidecar_after = json_bytes(
            {
                "generated_by": MARKER,
                "command": list(options.command),
                "llm_added": llm_added,
                "tools": _tool_snapshot(),
            }
        )
        changes.insert(1, FileChange(sidecar, sidecar_now, sidecar_after, "the bridge command"))
        return changes


HOST = PiHost()
