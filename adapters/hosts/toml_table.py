"""Set or remove one `[mcp_servers.<name>]` table of a TOML file (Codex's config.toml)
textually, leaving every other byte of the person's file as it was (issue 30, ADR 0092).

Python's standard library reads TOML (tomllib) but does not write it, and re-serialising would
drop the person's comments and layout. So only our table's lines change: found by its header
(and the sub-tables under it), replaced in place or appended at the end. The result is parsed
again and must hold exactly the person's values plus (or minus) ours; anything else (our table
written inline, a `mcp_servers = {...}` inline table that cannot be extended) is refused with a
message, never written.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_hermes_memory.errors import ConfigError

__all__ = ["read_toml", "render_table", "with_table", "without_table"]

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
_HEADER = re.compile(r"^\s*\[\[?\s*(?P<key>[^\]]*?)\s*\]\]?\s*(#.*)?$")


def read_toml(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    """The file's bytes and its parsed table; absent is `(None, {})`. A file that is not
    valid TOML is a ConfigError naming it: we never rewrite what we cannot read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    try:
        return raw, tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path} is not valid TOML ({exc}); fix or move it, then run setup again "
            "(nothing was changed)"
        ) from exc


def _key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string is a JSON string
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def render_table(parent: str, name: str, entry: Mapping[str, Any]) -> str:
    lines = [f"[{parent}.{_key(name)}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def _header_path(key: str) -> list[str]:
    """The dotted key of a table header, each part unquoted (good enough for the headers we
    look for; the parse afterwards checks the result)."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+)', key)
    return [a or b or c for a, b, c in parts]


def _our_lines(lines: list[str], parent: str, name: str) -> tuple[int, int] | None:
    """[start, end) of our table and its sub-tables, trailing blank and comment lines left to
    what follows; None when the file has no header for it."""
    start = None
    for i, line in enumerate(lines):
        match = _HEADER.match(line)
        if match is None:
            continue
        path = _header_path(match.group("key"))
        ours = path[:2] == [parent, name]
        if start is None and ours:
            start = i
        elif start is not None and not ours:
            end = i
            while end > start + 1 and (
                not lines[end - 1].strip() or lines[end - 1].lstrip()[:1] == "#"
            ):
                end -= 1
            return start, end
    if start is None:
        return None
    end = len(lines)
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip()[:1] == "#"):
        end -= 1
    return start, end


def _check(path: Path, text: str, expected: dict[str, Any]) -> bytes:
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path}: adding our table would not be valid TOML ({exc}); is `mcp_servers` an "
            "inline table? Nothing was changed: add the entry by hand (see `setup codex --print`)"
        ) from exc
    if parsed != expected:
        raise ConfigError(
            f"{path}: our [mcp_servers] entry is written in a form setup does not edit (inline "
            "or dotted keys); nothing was changed: edit or remove it by hand"
        )
    return text.encode("utf-8")


def with_table(
    path: Path,
    raw: bytes | None,
    data: dict[str, Any],
    parent: str,
    name: str,
    entry: dict[str, Any],
) -> bytes:
    """The file with `[parent.name]` set to `entry` (replaced where it is, else appended)."""
    text = "" if raw is None else raw.decode("utf-8")
    lines = text.splitlines(keepends=True)
    block = render_table(parent, name, entry)
    span = _our_lines(lines, parent, name)
    if span is not None:
        start, end = span
        tail = "".join(lines[end:])
        new = (
            "".join(lines[:start])
            + block
            + ("\n" if tail.strip() and not tail.startswith("\n") else "")
            + tail
        )
    else:
        head = text if not text or text.endswith("\n") else text + "\n"
        new = head + ("\n" if head.strip() else "") + block
    expected = copy.deepcopy(data)
    expected.setdefault(parent, {})[name] = copy.deepcopy(entry)
    return _check(path, new, expected)


def without_table(path: Path, raw: bytes, data: dict[str, Any], parent: str, name: str) -> bytes:
    """The file without `[parent.name]` (and its sub-tables)."""
    text = raw.decode("utf-8")
    lines = text.splitlines(keepends=True)
    span = _our_lines(lines, parent, name)
    expected = copy.deepcopy(data)
    expected.get(parent, {}).pop(name, None)
    if span is None:
        return _check(path, text, expected)
    start, end = span
    head, tail = lines[:start], lines[end:]
    while head and not head[-1].strip() and (not tail or not tail[0].strip()):
        head.pop()  # the blank line we added before our table
    return _check(path, "".join(head + tail), expected)
