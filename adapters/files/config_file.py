"""Loads `hermes-memory-config.json`: locates agentRoot, reads and decodes the file, and
supplies the real physical path resolver to the pure parser.

A configuration problem never stops start-up: an unreadable or malformed file yields the
defaults plus a warning (a missing file is the normal case and is silent).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pi_hermes_memory.config.settings import (
    CONFIG_FILE_NAME,
    DOCUMENT_FIELD,
    Config,
    ConfigWarning,
    parse_config,
)
from pi_hermes_memory.errors import ConfigError

AGENT_DIR_ENV: Final = "PI_CODING_AGENT_DIR"
_USING_DEFAULTS: Final = "using defaults for every field"


def _home(environ: Mapping[str, str]) -> Path | None:
    """HOME from `environ` when it is an absolute path, else the account's home directory."""
    home = environ.get("HOME", "")
    if os.path.isabs(home):
        return Path(home)
    try:
        return Path("~").expanduser()
    except RuntimeError:  # no HOME and no password database entry
        return None


def _expand_user(value: str, home: Path | None) -> str:
    if home is not None and (value == "~" or value.startswith("~/")):
        return os.path.join(home, value[2:]) if value != "~" else str(home)
    return os.path.expanduser(value)  # `~user/...` goes through the password database


def resolve_agent_root(environ: Mapping[str, str], *, home: Path | None, cwd: Path) -> Path:
    """`$PI_CODING_AGENT_DIR` when set and non-blank (`~` expanded, relative to `cwd`), else
    `~/.pi/agent`. Raises ConfigError when neither can be determined."""
    override = environ.get(AGENT_DIR_ENV, "")
    if override.strip():
        return Path(os.path.normpath(os.path.join(cwd, _expand_user(override, home))))
    if home is None:
        raise ConfigError(f"no home directory to locate ~/.pi/agent; set {AGENT_DIR_ENV}")
    return home / ".pi" / "agent"


def _deepest_existing(path: Path) -> tuple[Path, list[str]]:
    """The deepest existing ancestor of `path` (itself included) and the missing tail names.

    Only "does not exist" moves up a level; any other error (permission denied) propagates so
    that the caller falls back to the lexical path.
    """
    missing: list[str] = []
    current = path
    while True:
        try:
            os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):
            if current.parent == current:
                raise
            missing.append(current.name)
            current = current.parent
        else:
            return current, missing[::-1]


def physical_path(path: Path) -> Path:
    """`path` with symlinks resolved, even when its tail does not exist yet.

    The deepest existing ancestor is resolved (following a dangling symlink to its intended
    target, since that is where writes would land) and the missing tail is appended. Any
    error (permissions, symlink loop) gives the lexical absolute path.
    """
    absolute = Path(os.path.normpath(os.path.abspath(path)))
    try:
        existing, missing = _deepest_existing(absolute)
        return existing.resolve(strict=False).joinpath(*missing)
    except (OSError, RuntimeError):  # RuntimeError: symlink loop on Python < 3.13
        return absolute


def _document_warning(message: str) -> tuple[ConfigWarning, ...]:
    return (ConfigWarning(field=DOCUMENT_FIELD, message=message),)


def read_config_document(path: Path) -> tuple[object, tuple[ConfigWarning, ...]]:
    """The decoded JSON at `path`, or `{}` with a warning when it cannot be used.

    A missing file is `{}` without a warning. A UTF-8 byte-order mark is tolerated.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}, ()
    except (OSError, UnicodeDecodeError) as error:
        reason = type(error).__name__
        return {}, _document_warning(f"cannot read {path} ({reason}); {_USING_DEFAULTS}")
    if not text.strip():
        return {}, _document_warning(f"{path} is empty; {_USING_DEFAULTS}")
    try:
        return json.loads(text), ()
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        return {}, _document_warning(f"{path} is not valid JSON ({where}); {_USING_DEFAULTS}")
    except RecursionError:
        return {}, _document_warning(f"{path} is nested too deeply; {_USING_DEFAULTS}")


def _current_directory(environ: Mapping[str, str]) -> Path:
    try:
        return Path.cwd()
    except OSError:  # the working directory was deleted; PWD still names the project
        return Path(environ.get("PWD") or "/")


def load_config(
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    project_override: str | None = None,
) -> tuple[Config, tuple[ConfigWarning, ...]]:
    """The effective configuration and its warnings (file problems first).

    `environ` defaults to the process environment, `cwd` to the working directory. Raises
    ConfigError for an invalid `project_override` or when no agent directory can be located.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    working = _current_directory(env) if cwd is None else cwd
    home = _home(env)
    agent_root = resolve_agent_root(env, home=home, cwd=working)
    raw, read_warnings = read_config_document(agent_root / CONFIG_FILE_NAME)
    config, warnings = parse_config(
        raw,
        agent_root=agent_root,
        cwd=working,
        environ=env,
        physical=physical_path,
        project_override=project_override,
        home=home,
    )
    return config, read_warnings + warnings
