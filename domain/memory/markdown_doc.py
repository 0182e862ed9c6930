"""What a Markdown memory document holds once parsed, independent of its byte format."""

from __future__ import annotations

from datetime import date

import attrs


@attrs.frozen(kw_only=True)
class ParsedEntry:
    """One entry read back from a Markdown file.

    `created`/`last` are None when the metadata comment is missing or unreadable (a hand-written
    entry). `extra` keeps metadata keys we do not know, so nothing a person wrote is lost.
    """

    text: str
    created: date | None = None
    last: date | None = None
    project: str | None = None
    category: str | None = None
    namespace: str | None = None
    extra: tuple[tuple[str, str], ...] = ()
    #: `importance=` and `kind=` (ADR 0045), when present and valid; None: keep the stored value
    importance: float | None = None
    kind: str | None = None


@attrs.frozen(kw_only=True)
class VersionLine:
    """The first line of a rendered file: which store, document and journal version the file
    was rendered from. A hand edit is merged against that version (ADR 0022)."""

    target: str
    version: int
    store: str


@attrs.frozen(kw_only=True)
class ParsedDocument:
    entries: tuple[ParsedEntry, ...]
    warnings: tuple[str, ...] = ()
    #: the version line the file started with; None when it had none (or an unreadable one)
    version_line: VersionLine | None = None
