"""Loads `hermes-memory-config.json`: locates agentRoot, reads and decodes the file, and
supplies the real physical path resolver to the pure parser.

A configuration problem never stops start-up: an unreadable or malformed file yields the
defaults plus a warning (a missing file is the normal case and is silent). The defaults are
never taken for *where the data lives* (ADR 0065): when the file cannot be parsed and may name
a store (`storage`, `adapters`, `memoryDir`, `projectsMemoryDir` appear in its text, or its
text cannot be read at all), `Config.location_unknown` says so, and the store opens read-only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs
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


#: the keys that say where data lives; matched as words anywhere in a file that cannot be
#: parsed (an unquoted `storage:` of a JSON5 habit counts too), so a doubt is never missed
_LOCATION_KEYS: Final = ("storage", "adapters", "memoryDir", "projectsMemoryDir")
_LOCATION_WORD: Final = re.compile(
    r"(?<![A-Za-z0-9_])(?:" + "|".join(_LOCATION_KEYS) + r")(?![A-Za-z0-9_])", re.IGNORECASE
)
#: a `\uXXXX` escape could spell one of those keys: also a doubt
_ESCAPE: Final = re.compile(r"\\u[0-9A-Fa-f]{4}")


@attrs.frozen(kw_only=True)
class ConfigDocument:
    """The decoded file (`{}` when it cannot be used), the warnings about it, and `location`:
    why the data's place is in doubt (None: the file was parsed, or says nothing about it).
    A doubt is said by `location` alone: the store's read-only line carries it."""

    raw: object
    warnings: tuple[ConfigWarning, ...] = ()
    location: str | None = None


def _names_a_place(text: str) -> str | None:
    """The first location key (or a `\\u` escape) in the raw `text`, else None."""
    found = _LOCATION_WORD.search(text)
    if found is not None:
        return f"'{found.group(0)}'"
    return "a \\u escape" if _ESCAPE.search(text) else None


def _fix_hint(message: str) -> str:
    if "double quotes" in message:
        return "remove a trailing comma or quote the key there"
    if "delimiter" in message:
        return "add the missing comma or colon there"
    return "correct the JSON there"


def read_document(path: Path) -> ConfigDocument:
    """The file at `path`, decoded. A missing file is `{}` without a warning; a UTF-8 byte-order
    mark is tolerated; a file that cannot be read or parsed is `{}` with a warning, or with
    `location` when it may say where the data lives (a location key in its text, or text that
    cannot be read at all)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return ConfigDocument(raw={})
    except UnicodeDecodeError as error:  # its bytes still show whether it names a store
        named = _names_a_place(error.object.decode("latin-1"))
        if named is None:
            return ConfigDocument(
                raw={},
                warnings=_document_warning(
                    f"cannot read {path} (UnicodeDecodeError); {_USING_DEFAULTS}"
                ),
            )
        return ConfigDocument(
            raw={},
            location=f"{path} is not UTF-8 (byte {error.start + 1}): save it as UTF-8; it names "
            f"{named}, so where the data lives is unknown until then",
        )
    except OSError as error:
        what = (
            "is a folder"
            if isinstance(error, IsADirectoryError)
            else f"cannot be read ({type(error).__name__})"
        )
        return ConfigDocument(
            raw={},
            location=f"{path} {what}, so where the data lives is unknown: make it a readable "
            "JSON file (or remove it)",
        )
    if not text.strip():
        return ConfigDocument(
            raw={}, warnings=_document_warning(f"{path} is empty; {_USING_DEFAULTS}")
        )
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        named = _names_a_place(text)
        if named is None:
            return ConfigDocument(
                raw={},
                warnings=_document_warning(
                    f"{path} is not valid JSON ({where}); {_USING_DEFAULTS}"
                ),
            )
        return ConfigDocument(
            raw={},
            location=f"{path} is not valid JSON at {where} ({error.msg}): "
            f"{_fix_hint(error.msg)}; it names {named}, so where the data lives is unknown "
            "until it parses",
        )
    except RecursionError:
        named = _names_a_place(text)
        if named is None:
            return ConfigDocument(
                raw={},
                warnings=_document_warning(f"{path} is nested too deeply; {_USING_DEFAULTS}"),
            )
        return ConfigDocument(
            raw={},
            location=f"{path} is nested too deeply to parse: flatten it; it names {named}, so "
            "where the data lives is unknown until it parses",
        )
    if not isinstance(raw, Mapping):
        named = _names_a_place(text)
        if named is not None:  # a list or string holding the sections: not where they belong
            return ConfigDocument(
                raw={},
                location=f"{path} is not a JSON object: put its settings in one {{...}}; it "
                f"names {named}, so where the data lives is unknown until then",
            )
    return ConfigDocument(raw=raw)


def read_config_document(path: Path) -> tuple[object, tuple[ConfigWarning, ...]]:
    """The decoded JSON at `path`, or `{}` with a warning when it cannot be used.

    A missing file is `{}` without a warning. A UTF-8 byte-order mark is tolerated.
    """
    document = read_document(path)
    if document.location is not None:
        return document.raw, _document_warning(document.location)
    return document.raw, document.warnings


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
    overrides: Mapping[str, Any] | None = None,
) -> tuple[Config, tuple[ConfigWarning, ...]]:
    """The effective configuration and its warnings (file problems first).

    `overrides`: top-level keys that replace the file's (the server passes the ones it read
    from openclaw.json, ADR 0075); they are parsed and validated as the file's own.

    `environ` defaults to the process environment, `cwd` to the working directory. Raises
    ConfigError for an invalid `project_override` or when no agent directory can be located.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    working = _current_directory(env) if cwd is None else cwd
    home = _home(env)
    agent_root = resolve_agent_root(env, home=home, cwd=working)
    document = read_document(agent_root / CONFIG_FILE_NAME)
    raw: object = document.raw
    if overrides:
        raw = {**(raw if isinstance(raw, dict) else {}), **overrides}
    config, warnings = parse_config(
        raw,
        agent_root=agent_root,
        cwd=working,
        environ=env,
        physical=physical_path,
        project_override=project_override,
        home=home,
    )
    if document.location is not None:
        config = attrs.evolve(config, location_unknown=document.location)
    return config, document.warnings + warnings
