"""SKILL.md, the Agent Skills file format: YAML frontmatter, then the Markdown body.

    ---
    name: deploy-docs                # the slug (the skill directory's name)
    display_name: Deploy Docs        # only when the human name differs from the slug
    description: Publish the docs site after a release
    version: 3                       # the skill's revision: 1 on create, +1 per revision
    created: 2026-07-01T09:00:00Z    # ISO 8601, UTC, seconds
    updated: 2026-07-03T17:30:00Z
    license: MIT                     # keys we do not own follow, verbatim
    ---

    ## When to Use
    ...

`render_skill` always writes this shape (LF, keys in this order, one trailing newline);
`parse_skill` reads what people and other tools write as well: a BOM, CRLF, a missing version
(revision 1), quoted or plain scalars, ``|``/``>`` block scalars, and any other keys, which are
kept verbatim (nested blocks and lists included). Everything it cannot read raises
`SkillFormatError`, never another exception.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import attrs
from pi_hermes_memory.domain.errors import SkillFormatError
from pi_hermes_memory.domain.skills.body import clean_body
from pi_hermes_memory.domain.skills.yaml_subset import entries, quote, scalar, split_frontmatter

if TYPE_CHECKING:
    from pi_hermes_memory.domain.skills.skill import SkillState

SKILL_FILE = "SKILL.md"
MAX_SLUG_CHARS = 64
OWNED_KEYS = ("name", "display_name", "description", "version", "created", "updated")
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_VERSION = re.compile(r"[0-9]{1,9}")
_FENCE_LINE = re.compile(r"---[ \t]*")


def slugify(name: str) -> str:
    """The slug of a human name: accents folded (NFKD), invisible format characters dropped,
    lower-cased, every run of characters
    other than a-z and 0-9 turned into one '-', trimmed of '-', at most 64 characters.

    "" when nothing ASCII is left (a name in CJK only): the caller refuses it with
    `SLUG_EMPTY_MESSAGE` and keeps the human name as the display name."""
    folded = "".join(
        ch
        for ch in unicodedata.normalize("NFKD", name)
        if not unicodedata.combining(ch) and unicodedata.category(ch) != "Cf"
    )
    slug = _NOT_SLUG.sub("-", folded.lower()).strip("-")
    return slug[:MAX_SLUG_CHARS].rstrip("-")


SLUG_EMPTY_MESSAGE = (
    "the name has no ASCII letters or digits to make a directory name from: give an ASCII "
    "name (e.g. 'deploy-docs'); the name you wrote can stay as the display name"
)


def is_slug(text: str) -> bool:
    return len(text) <= MAX_SLUG_CHARS and _SLUG.fullmatch(text) is not None


def clean_value(text: str) -> str:
    """The stored form of a one-value field (name, description): LF line ends, stripped."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def clean_extra(text: str) -> str:
    """Frontmatter lines we do not own: LF, no blank lines at either end, no '---' line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = [x for x in lines if not _FENCE_LINE.fullmatch(x)]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def format_time(moment: datetime) -> str:
    """ISO 8601 in UTC to the second (``2026-07-01T09:00:00Z``); a naive time counts as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 pushed over the edge by its offset
        moment = moment.replace(tzinfo=UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


def parse_time(text: str) -> datetime | None:
    """A frontmatter date or time as an aware UTC datetime (seconds), or None."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:
        return None
    return moment.replace(microsecond=0)


@attrs.frozen(kw_only=True)
class ParsedSkill:
    """What a SKILL.md says. Fields a file leaves out are None; `notes` lists what was
    tolerated (a version that is not a positive integer, an unreadable date, ...)."""

    name: str | None
    display_name: str | None
    description: str | None
    revision: int
    created: datetime | None
    updated: datetime | None
    body: str
    extra_frontmatter: str
    notes: tuple[str, ...] = ()


def parse_skill(text: str) -> ParsedSkill:
    """Read a SKILL.md text; raises `SkillFormatError` naming the problem when it cannot."""
    front, body = split_frontmatter(text)
    owned: dict[str, str | None] = {}
    extra: list[str] = []
    notes: list[str] = []
    for entry in entries(front):
        comments = [line for line in entry.lead if line.strip()]
        if entry.key is None:
            extra.extend(entry.lead)
            if entry.lines:
                notes.append(f"ignored {len(entry.lines)} indented line(s) before the first key")
        elif entry.key in OWNED_KEYS:
            extra.extend(comments)
            owned[entry.key] = scalar(entry)
        else:
            extra.extend(entry.lead)
            extra.extend(entry.lines)
    revision = 1
    version = owned.get("version")
    if version is not None:
        if _VERSION.fullmatch(version.strip()) and int(version) >= 1:
            revision = int(version)
        else:
            notes.append("the version is not a positive integer; it counts as 1")
    times: dict[str, datetime | None] = {}
    for key in ("created", "updated"):
        raw = owned.get(key)
        times[key] = parse_time(raw) if raw is not None else None
        if raw is not None and times[key] is None:
            notes.append(f"{key} is not an ISO 8601 date or time; it was left out")
    return ParsedSkill(
        name=_text_or_none(owned.get("name")),
        display_name=_text_or_none(owned.get("display_name")),
        description=_text_or_none(owned.get("description"), empty_ok=True),
        revision=revision,
        created=times["created"],
        updated=times["updated"],
        body=clean_body(body),
        extra_frontmatter=clean_extra("\n".join(extra)),
        notes=tuple(notes),
    )


def _text_or_none(value: str | None, *, empty_ok: bool = False) -> str | None:
    if value is None:
        return None
    cleaned = clean_value(value)
    return cleaned if cleaned or empty_ok else None


def render_skill(state: SkillState) -> str:
    """The SKILL.md text of a skill: LF line ends, keys in a fixed order, then the keys we do
    not own verbatim, then the body; ends with one newline."""
    lines = ["---", f"name: {quote(state.slug)}"]
    display = clean_value(state.display_name or "")
    if display and display != state.slug:
        lines.append(f"display_name: {quote(display)}")
    lines.append(f"description: {quote(clean_value(state.description))}")
    lines.append(f"version: {state.revision}")
    if state.created is not None:
        lines.append(f"created: {format_time(state.created)}")
    if state.updated is not None:
        lines.append(f"updated: {format_time(state.updated)}")
    extra = clean_extra(state.extra_frontmatter)
    if extra:
        lines.append(extra)
    lines.append("---")
    text = "\n".join(lines) + "\n"
    body = clean_body(state.body)
    return text + f"\n{body}\n" if body else text


__all__ = [
    "MAX_SLUG_CHARS",
    "OWNED_KEYS",
    "SKILL_FILE",
    "SLUG_EMPTY_MESSAGE",
    "ParsedSkill",
    "SkillFormatError",
    "clean_extra",
    "clean_value",
    "format_time",
    "is_slug",
    "parse_skill",
    "parse_time",
    "render_skill",
    "slugify",
]
