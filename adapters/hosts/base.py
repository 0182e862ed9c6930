"""What every host offers `setup`: detection and a plan of file changes (issue 30).

A plan is computed from what is on disk and applied by `apply`, which writes each file
atomically and keeps the file it replaces as `<name>.pi-hermes-memory.bak`. A file we merge
into (a host's settings) is parsed first: one we cannot parse is refused with a message that
names it, never overwritten.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs
from pi_hermes_memory.errors import ConfigError

__all__ = [
    "BACKUP_SUFFIX",
    "Detection",
    "FileChange",
    "Host",
    "SetupOptions",
    "apply",
    "command_path",
    "json_bytes",
    "read_json_object",
    "write_atomic",
]

BACKUP_SUFFIX = ".pi-hermes-memory.bak"
Scope = Literal["user", "project"]


@attrs.frozen
class SetupOptions:
    """What the person asked for, and where things are."""

    scope: Scope
    project_dir: Path  # the project folder (`--cwd`, else the current one)
    home: Path
    agent_root: Path  # the memory store's root ($PI_CODING_AGENT_DIR, default ~/.pi/agent)
    command: tuple[str, ...]  # how a host starts this library's CLI (absolute paths)
    environ: Mapping[str, str] = attrs.field(factory=dict)
    uninstall: bool = False


@attrs.frozen
class Detection:
    """What `setup` (no host) reports for one host."""

    host: str
    installed: bool  # the host program (or its config folder) was found
    configured: bool  # our entry/extension/hooks are in place
    where: str | None = None  # the host program or the file that configures it
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "installed": self.installed,
            "configured": self.configured,
            "where": self.where,
            "detail": self.detail,
        }


@attrs.frozen
class FileChange:
    """One file to write (`after` bytes) or remove (`after` None); `before` is what is there
    now (None: absent). A change whose `before == after` is dropped by `apply`."""

    path: Path
    before: bytes | None
    after: bytes | None
    why: str = ""

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        return "remove" if self.after is None else "update"

    def diff(self) -> str:
        def lines(data: bytes | None) -> list[str]:
            return [] if data is None else data.decode("utf-8", "replace").splitlines(True)

        return "".join(
            difflib.unified_diff(
                lines(self.before),
                lines(self.after),
                fromfile=str(self.path) if self.before is not None else "/dev/null",
                tofile=str(self.path) if self.after is not None else "/dev/null",
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "action": self.action, "why": self.why}


class Host(Protocol):
    """One host program `setup` knows."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...

    def detect(self, options: SetupOptions) -> Detection: ...

    def plan(self, options: SetupOptions) -> list[FileChange]:
        """The changes that install (or, with `options.uninstall`, remove) our wiring. Pure
        reading: never writes. Idempotent: planning after applying gives no change."""
        ...


def command_path(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """How a host should start this library's CLI: the installed `pi-hermes-memory` script
    beside this interpreter when there is one, else this interpreter with `-m`."""
    script = Path(sys.executable).with_name("pi-hermes-memory")
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script),)
    found = shutil.which("pi-hermes-memory", path=(environ or os.environ).get("PATH"))
    if found:
        return (str(Path(found).resolve()),)
    return (sys.executable, "-m", "pi_hermes_memory.adapters.cli")


def read_json_object(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    """The file's bytes and its JSON object; an absent or empty file is `{}`. A file that is
    not a JSON object is a ConfigError naming it: we never overwrite what we cannot read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if not raw.strip():
        return raw, {}
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc}); fix or move it, then run setup again "
            "(nothing was changed)"
        ) from exc
    if not isinstance(value, dict):
        raise ConfigError(
            f"{path} holds a JSON {type(value).__name__}, not an object; nothing was changed"
        )
    return raw, value


def json_bytes(value: Mapping[str, Any]) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def apply(changes: list[FileChange]) -> list[FileChange]:
    """Write every change that changes something; return those. Each file is replaced
    atomically (temporary file in the same folder, fsync, rename); an existing file is first
    copied to `<name>.pi-hermes-memory.bak`. A file that changed since the plan read it is
    refused (ConfigError) and the changes after it are not made."""
    done: list[FileChange] = []
    for change in changes:
        if change.before == change.after:
            continue
        try:
            now: bytes | None = change.path.read_bytes()
        except FileNotFoundError:
            now = None
        if now != change.before:
            raise ConfigError(f"{change.path} changed while setup ran; nothing more was changed")
        if change.before is not None:
            backup = change.path.with_name(change.path.name + BACKUP_SUFFIX)
            write_atomic(backup, change.before)
        if change.after is None:
            change.path.unlink()
        else:
            write_atomic(change.path, change.after)
        done.append(change)
    return done


def write_atomic(path: Path, data: bytes, *, new_mode: int = 0o644) -> None:
    """Replace `path` with `data`: a temporary file in the same folder, fsync, rename. The
    file keeps its permissions; a new one gets `new_mode`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        except FileNotFoundError:
            os.chmod(tmp, new_mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
