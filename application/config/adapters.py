"""The `adapters` section: storage-side parts named by import path (ADR 0060).

`{"adapters": {"vectorStore": "my_pkg.vectors:factory"}}` names, for every store this
configuration opens (library, CLI, MCP stdio, server), the factory of one storage-side part:
the attribute is called with the `pi_hermes_memory.composition.Backend` bundle, exactly as a
factory given to `pi_hermes_memory.open(vector_store=...)` (ADR 0057), and its result replaces
that one part. A keyword given to `open()` wins over the entry.

Anything here that cannot be read (the section is not an object, a key that names no part, a
value that is not `package.module:Attribute`) sets `problem`, and opening fails with it: the
part a host asked for is never silently replaced by the default (style rule 36).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from pi_hermes_memory.config.settings import _Section

#: a host's own adapter: `package.module:Attribute`, dotted attributes allowed (ADR 0057)
IMPORT_PATH: Final = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")

#: config key -> the keyword of `pi_hermes_memory.open` it stands for
ADAPTER_KEYS: Final[Mapping[str, str]] = {
    "storage": "storage",
    "searchIndex": "search_index",
    "vectorStore": "vector_store",
    "sessionIndex": "session_index",
    "sessionSource": "session_source",
    "skillTelemetry": "skill_telemetry",
}


@attrs.frozen(kw_only=True)
class AdaptersConfig:
    """`paths`: open() keyword -> import path of its factory, for the parts the file names.
    `problem`: why the section cannot be used (opening then fails with it)."""

    paths: Mapping[str, str] = attrs.field(factory=dict)
    problem: str | None = None

    def field(self, keyword: str) -> str:
        """The config field of an open() keyword (`vector_store` -> `adapters.vectorStore`)."""
        key = next(k for k, v in ADAPTER_KEYS.items() if v == keyword)
        return f"adapters.{key}"


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, str) else type(value).__name__
    return text if len(text) <= 60 else f"{text[:57]}..."


def parse_adapters(top: _Section) -> AdaptersConfig:
    """The `adapters` section of the document `top` (absent or null: no entries)."""
    raw = top.get("adapters")
    if raw is None:
        return AdaptersConfig()
    if not isinstance(raw, Mapping):
        return AdaptersConfig(
            problem='adapters: expected an object such as {"vectorStore": '
            '"my_pkg.vectors:factory"}, not ' + _shown(raw)
        )
    known = ", ".join(ADAPTER_KEYS)
    paths: dict[str, str] = {}
    problems: list[str] = []
    for key, value in raw.items():
        if key not in ADAPTER_KEYS:
            problems.append(f"adapters.{key}: names no part (expected one of {known})")
        elif value is None:
            continue  # JSON null is "unset", as everywhere in the file
        elif not isinstance(value, str) or not IMPORT_PATH.fullmatch(value):
            problems.append(
                f"adapters.{key}: expected an import path 'package.module:Attribute', "
                f"not {_shown(value)}"
            )
        else:
            paths[ADAPTER_KEYS[key]] = value
    if problems:
        return AdaptersConfig(
            problem="; ".join(problems) + "; no store is opened without the part it names"
        )
    return AdaptersConfig(paths=paths)


__all__ = ["ADAPTER_KEYS", "IMPORT_PATH", "AdaptersConfig", "parse_adapters"]
