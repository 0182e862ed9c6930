"""The Markdown memory format: entries separated by `§` lines, each ending in a metadata comment.

    First entry text <!-- created=2026-07-29, last=2026-07-29, project=my-project -->
    §
    Second entry,
    over two lines <!-- created=2026-07-30, last=2026-08-01, project=api, category=tool-quirk -->

People edit these files by hand, so reading is lenient: it never raises and never drops text. A
trailing comment counts as metadata only when every part of it is readable; otherwise the comment
stays in the entry's text and a warning says why, so a typo never silently loses a date or a note.
Pure functions only: the I/O lives in `store.py` and `atomic.py`.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterator, Sequence
from datetime import date

import attrs
from pi_hermes_memory.domain.memory.markdown_doc import ParsedDocument, ParsedEntry, VersionLine
from pi_hermes_memory.domain.memory.model import (
    SEPARATOR_LINE,
    FailureCategory,
    MemoryEntry,
    MemoryKind,
    Target,
    clean_entry_text,
    entry_text_problem,
    importance_problem,
    is_safe_project_name,
    namespace_problem,
)

__all__ = [
    "decode_project64",
    "encode_project64",
    "parse_document",
    "render_document",
    "render_version_line",
    "speaks_project64",
]

BOM = "\ufeff"
ENTRY_JOINER = f"\n{SEPARATOR_LINE}\n"
COMMENT_OPEN = "<!--"
COMMENT_CLOSE = "-->"

# Keys are plain identifiers so that a stray `a=b` inside prose cannot pose as metadata.
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
# Only the exact form we write; `date.fromisoformat` alone would also take `20260729`. `[0-9]`,
# not `\d`, because `\d` matches non-ASCII digits.
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_KINDS = tuple(k.value for k in MemoryKind)

VERSION_LINE_PREFIX = "pi-hermes-memory:"
_VERSION_FIELDS = re.compile(
    r"\s*(?P<target>[a-z]{1,16}) v(?P<version>[0-9]{1,18}), store (?P<store>[0-9a-f]{1,64})\b"
)
#: `importance` and `kind` (ADR 0045): an invalid value is ignored with a warning (the entry
#: keeps its stored value), never a reason to read the comment as text
_KNOWN_KEYS = frozenset(
    {"created", "last", "project", "project64", "category", "scope", "importance", "kind"}
)
# The TypeScript extension (0.9.x) spells an attribution `project64=<base64url of the UTF-8
# name>` and reads only `created=…, last=…[, project64=…]` (ADR 0027).
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
_CATEGORIES = {c.value: c for c in FailureCategory}
_PROJECT_TARGETS = frozenset({Target.PROJECT, Target.FAILURE})
_FILE_LABEL = {
    Target.MEMORY: "MEMORY.md",
    Target.USER: "USER.md",
    Target.PROJECT: "projects MEMORY.md",
    Target.FAILURE: "failures.md",
}


# --- rendering ---------------------------------------------------------------------------------


def render_version_line(stamp: VersionLine) -> str:
    return (
        f"{COMMENT_OPEN} {VERSION_LINE_PREFIX} {stamp.target} v{stamp.version}, store "
        f"{stamp.store} (edit entries freely; keep this line so edits merge with the agent's) "
        f"{COMMENT_CLOSE}"
    )


def render_document(
    entries: Sequence[MemoryEntry],
    *,
    target: Target,
    stamp: VersionLine | None = None,
    project64: bool = False,
) -> str:
    """The file content for `entries`, in order. Same input, same bytes.

    With `stamp`, the first line names the store, document and journal version the file was
    rendered from (ADR 0022): a hand edit is then merged against exactly that version.

    With `project64` (a file the TypeScript extension shares, ADR 0027), entries are written
    the way that extension reads them: `created`, `last` and the attribution as `project64=`,
    nothing else (the category stays in the journal), and no version line.

    Raises ValueError for an entry that could not be read back unchanged (wrong target, text the
    format cannot hold, unsafe project name): writing it would corrupt the file's structure, and
    the caller is expected to have validated entries already.
    """
    return frame_document(
        render_body(entries, target=target, project64=project64), stamp=stamp, project64=project64
    )


def render_body(
    entries: Sequence[MemoryEntry], *, target: Target, project64: bool = False, start: int = 1
) -> str:
    """The entries' blocks joined (no version line, no final newline); "" for none. `start`
    numbers the first entry in error messages. Raises ValueError as `render_document` does."""
    blocks = []
    for number, entry in enumerate(entries, start):
        block = _render_entry(entry, target, project64)
        if block is None:
            problem = _render_problem(entry, target)
            raise ValueError(
                f"entry {number} cannot be written to {_FILE_LABEL[target]}: {problem}"
            )
        blocks.append(block)
    return ENTRY_JOINER.join(blocks)


def frame_document(body: str, *, stamp: VersionLine | None, project64: bool = False) -> str:
    """The file content around `render_body`'s output: the version line, the final newline."""
    head = "" if stamp is None or project64 else render_version_line(stamp) + "\n"
    if not body:
        return head
    # The reader drops one leading BOM, so a first entry that itself starts with U+FEFF needs a
    # sacrificial one in front to survive the round trip. One join: the body can be megabytes.
    if not head and body.startswith(BOM):
        head = BOM
    return "".join((head, body, "\n"))


@functools.lru_cache(maxsize=32_768)
def _render_entry(entry: MemoryEntry, target: Target, project64: bool = False) -> str | None:
    """One entry's block, or None when it cannot be written. Cached: entries are immutable
    values, and a write re-renders the whole document while usually changing one entry."""
    if _render_problem(entry, target) is not None:
        return None
    pairs = _project64_pairs(entry, target) if project64 else _metadata_pairs(entry, target)
    metadata = ", ".join(pairs)
    return f"{entry.text} {COMMENT_OPEN} {metadata} {COMMENT_CLOSE}"


def _render_problem(entry: MemoryEntry, target: Target) -> str | None:
    if entry.target is not target:
        return f"it belongs to the {entry.target.value} target"
    if entry.text != clean_entry_text(entry.text):
        return "its text is not in cleaned form (clean_entry_text)"
    # Only what would change the file's structure is refused here. Text imported from a
    # hand-edited file may hold a malformed comment, a NUL or be very long: it still reads back
    # unchanged because the reader strips only our trailing comment, so it must stay writable
    # (new content is validated earlier, by the domain's entry_text_problem).
    if not entry.text:
        return "its text is empty"
    if any(line.strip() == SEPARATOR_LINE for line in entry.text.split("\n")):
        return "a line holding only '§' would split the entry"
    project = entry.project if target in _PROJECT_TARGETS else None
    if project is not None and not is_safe_project_name(project):
        return "the project name is not a safe name"
    if namespace_problem(entry.namespace, target) is not None:
        return "the scope is not valid for this file"
    return None


def _metadata_pairs(entry: MemoryEntry, target: Target) -> list[str]:
    pairs = [f"created={entry.created.isoformat()}", f"last={entry.last_referenced.isoformat()}"]
    # MEMORY.md and USER.md are global by definition: a project there would be meaningless.
    if target in _PROJECT_TARGETS and entry.project is not None:
        pairs.append(f"project={entry.project}")
    if target is Target.FAILURE and entry.category is not None:
        pairs.append(f"category={entry.category.value}")
    if entry.namespace is not None:  # agent:/custom:/user: rows (ADR 0014); global has none
        pairs.append(f"scope={entry.namespace}")
    # the second seed's fields (ADR 0045), only when set: a file without them is unchanged
    if entry.importance is not None:
        pairs.append(f"importance={entry.importance!r}")
    if entry.kind is not None:
        pairs.append(f"kind={entry.kind.value}")
    return pairs


def _project64_pairs(entry: MemoryEntry, target: Target) -> list[str]:
    pairs = [f"created={entry.created.isoformat()}", f"last={entry.last_referenced.isoformat()}"]
    if target in _PROJECT_TARGETS and entry.project is not None:
        pairs.append(f"project64={encode_project64(entry.project)}")
    return pairs


def encode_project64(project: str) -> str:
    """base64url of the UTF-8 name, without padding (Node's `toString("base64url")`)."""
    return base64.urlsafe_b64encode(project.encode("utf-8")).decode("ascii").rstrip("=")


def decode_project64(value: str) -> str | None:
    """The project name `value` encodes, or None when it is not base64url of a UTF-8 name."""
    if _BASE64URL.fullmatch(value) is None or len(value) % 4 == 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        return raw.decode("utf-8").strip() or None
    except (ValueError, UnicodeDecodeError):
        return None


def speaks_project64(data: bytes) -> bool:
    """Whether a file as read is in the TypeScript extension's spelling: no version line of
    ours and at least one `project64=` attribution. Then it is rendered that way (ADR 0027)."""
    head = data[len(BOM.encode()) :] if data.startswith(BOM.encode()) else data
    ours = f"{COMMENT_OPEN} {VERSION_LINE_PREFIX}".encode()
    return b"project64=" in data and not head.lstrip().startswith(ours)


# --- parsing -----------------------------------------------------------------------------------


@attrs.frozen
class _Chunk:
    """The raw text between two separator lines and the 1-based line where it starts."""

    text: str
    line: int


@attrs.frozen
class _Metadata:
    created: date | None = None
    last: date | None = None
    project: str | None = None
    category: str | None = None
    namespace: str | None = None
    extra: tuple[tuple[str, str], ...] = ()
    importance: float | None = None
    kind: str | None = None
    #: the second seed's keys whose value is not valid (ignored)
    ignored: tuple[str, ...] = ()


class _Unreadable(Exception):
    """A trailing comment that is not valid metadata; the message says why, never the content."""


def parse_document(text: str, *, target: Target) -> ParsedDocument:
    """Read a memory file leniently. Never raises; text that is not metadata is never dropped."""
    if text.startswith(BOM):
        text = text[len(BOM) :]
    entries: list[ParsedEntry] = []
    warnings: list[str] = []
    stamp, text, offset = _version_line(text, target, warnings)
    for number, chunk in enumerate(_chunks(text), 1):
        where = f"entry {number} (line {chunk.line + offset})"
        entry, warning = _parse_chunk(chunk.text, target)
        if warning is not None:
            warnings.append(f"{_FILE_LABEL[target]}: {where}: {warning}")
        if entry is not None:
            entries.append(entry)
    return ParsedDocument(entries=tuple(entries), warnings=tuple(warnings), version_line=stamp)


def _version_line(
    text: str, target: Target, warnings: list[str]
) -> tuple[VersionLine | None, str, int]:
    """(the version line, the text after it, lines consumed). A first line that is our comment
    but cannot be read is dropped with a warning: the importer then merges conservatively."""
    first, _, rest = text.partition("\n")
    line = first.strip()
    if not (
        line.startswith(f"{COMMENT_OPEN} {VERSION_LINE_PREFIX}") and line.endswith(COMMENT_CLOSE)
    ):
        return None, text, 0
    found = _VERSION_FIELDS.match(line[len(COMMENT_OPEN) + 1 + len(VERSION_LINE_PREFIX) :])
    if found is None:
        warnings.append(f"{_FILE_LABEL[target]}: line 1: the version line is unreadable")
        return None, rest, 1
    stamp = VersionLine(target=found["target"], version=int(found["version"]), store=found["store"])
    return stamp, rest, 1


def _chunks(text: str) -> Iterator[_Chunk]:
    """Split on separator lines. Only LF breaks lines; CRLF leaves a CR that strip() removes."""
    lines: list[str] = []
    start = 1
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip() == SEPARATOR_LINE:
            yield from _non_blank(lines, start)
            lines, start = [], number + 1
        else:
            lines.append(line)
    yield from _non_blank(lines, start)


def _non_blank(lines: list[str], start: int) -> Iterator[_Chunk]:
    # Blank chunks come from trailing or doubled separators: structure, not entries.
    joined = "\n".join(lines)
    if joined.strip():
        # Number from the first line with content, which is where a person would look.
        leading_blank = len(joined) - len(joined.lstrip())
        yield _Chunk(text=joined, line=start + joined.count("\n", 0, leading_blank))


def _parse_chunk(raw: str, target: Target) -> tuple[ParsedEntry | None, str | None]:
    try:
        body, comment = _split_trailing_comment(raw.strip())
        metadata = _Metadata() if comment is None else _read_metadata(comment)
    except _Unreadable as why:
        # Keep the whole chunk as text: a person wrote something there we do not understand.
        entry = _plain_entry(raw)
        return entry, f"the trailing comment is not entry metadata ({why}); kept it as text"
    text = clean_entry_text(body)
    if not text:
        what = "is empty" if comment is None else "has metadata but no text"
        return None, f"{what}; skipped it"
    entry = ParsedEntry(
        text=text,
        created=metadata.created,
        last=metadata.last,
        project=metadata.project,
        category=metadata.category,
        namespace=metadata.namespace,
        extra=metadata.extra,
        importance=metadata.importance,
        kind=metadata.kind,
    )
    return entry, (
        _misplaced_metadata(metadata, target) or _ignored_fields(metadata) or _unwritable(text)
    )


def _ignored_fields(metadata: _Metadata) -> str | None:
    if not metadata.ignored:
        return None
    keys = " and ".join(metadata.ignored)
    return (
        f"{keys} is not valid (importance: a number from 0 to 1; kind: one of "
        f"{', '.join(_KINDS)}); the entry keeps its stored value"
    )


def _plain_entry(raw: str) -> ParsedEntry | None:
    text = clean_entry_text(raw)
    return ParsedEntry(text=text) if text else None


def _unwritable(text: str) -> str | None:
    # Such text reads fine but would change shape if written back (e.g. a comment in the middle,
    # or a CR-only line break that becomes a separator line), so the caller should know.
    problem = entry_text_problem(text)
    return None if problem is None else f"cannot be written back unchanged: {problem}"


def _misplaced_metadata(metadata: _Metadata, target: Target) -> str | None:
    unused = []
    if metadata.project is not None and target not in _PROJECT_TARGETS:
        unused.append("project")
    if metadata.category is not None and target is not Target.FAILURE:
        unused.append("category")
    if not unused:
        return None
    keys = " and ".join(unused)
    return f"{keys} metadata has no meaning in {_FILE_LABEL[target]} and will not be kept"


def _split_trailing_comment(chunk: str) -> tuple[str, str | None]:
    """(text before, comment body or None) for a stripped chunk that may end in `<!-- ... -->`."""
    if not chunk.endswith(COMMENT_CLOSE):
        return chunk, None
    start = chunk.rfind(COMMENT_OPEN)
    body_start, body_end = start + len(COMMENT_OPEN), len(chunk) - len(COMMENT_CLOSE)
    # "<!-->" counts as unmatched: its "-->" overlaps the opener.
    if start < 0 or body_start > body_end:
        raise _Unreadable(f"'{COMMENT_CLOSE}' has no matching '{COMMENT_OPEN}'")
    return chunk[:start], chunk[body_start:body_end]


def _read_metadata(comment: str) -> _Metadata:
    if not comment.strip():
        raise _Unreadable("it holds no key=value pairs")
    if COMMENT_CLOSE in comment:
        raise _Unreadable(f"it contains '{COMMENT_CLOSE}' before its end")
    known: dict[str, str] = {}
    extra: list[tuple[str, str]] = []
    for key, value in _pairs(comment):
        if key in known or key in dict(extra):
            raise _Unreadable(f"'{key}' appears twice")
        if key in _KNOWN_KEYS:
            known[key] = value
        else:
            extra.append((key, value))
    if not known:
        # Our comments always carry created/last; one with none of our keys is a person's note.
        raise _Unreadable("it holds none of created, last, project, project64, category")
    importance, bad_importance = _read_importance(known)
    kind = known.get("kind")
    bad_kind = kind is not None and kind not in _KINDS
    kind = None if bad_kind else kind
    if (bad_importance or bad_kind) and set(known) <= {"importance", "kind"}:
        # none of the keys we always write: a person's note such as <!-- kind=reminder -->
        raise _Unreadable("its importance or kind is not one this store writes")
    return _Metadata(
        created=_read_date(known, "created"),
        last=_read_date(known, "last"),
        project=_read_project(known),
        category=_read_category(known),
        namespace=_read_scope(known),
        extra=tuple(extra),
        importance=importance,
        kind=kind,
        ignored=tuple(k for k, bad in (("importance", bad_importance), ("kind", bad_kind)) if bad),
    )


def _pairs(comment: str) -> Iterator[tuple[str, str]]:
    for number, part in enumerate(comment.split(","), 1):
        key, equals, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not equals or _KEY.fullmatch(key) is None:
            raise _Unreadable(f"part {number} is not key=value")
        yield key, value


def _read_importance(known: dict[str, str]) -> tuple[float | None, bool]:
    """(the importance, whether a value was given but is not valid)."""
    value = known.get("importance")
    if value is None:
        return None, False
    try:
        number = float(value) if _DECIMAL.fullmatch(value) else None
    except ValueError:
        number = None
    if number is None or importance_problem(number) is not None:
        return None, True
    return number, False


def _read_date(known: dict[str, str], key: str) -> date | None:
    value = known.get(key)
    if value is None:
        return None
    try:
        if _ISO_DATE.fullmatch(value) is None:
            raise ValueError(value)
        return date.fromisoformat(value)
    except ValueError:
        raise _Unreadable(f"'{key}' is not a valid YYYY-MM-DD date") from None


def _read_project(known: dict[str, str]) -> str | None:
    value = known.get("project")
    if value is not None and not is_safe_project_name(value):
        raise _Unreadable("'project' is not a safe project name")
    encoded = known.get("project64")
    if encoded is None:
        return value
    decoded = decode_project64(encoded)
    if decoded is None:
        raise _Unreadable("'project64' is not base64url of a UTF-8 project name")
    if not is_safe_project_name(decoded):
        raise _Unreadable("'project64' does not encode a safe project name")
    if value is not None and value != decoded:
        raise _Unreadable("'project' and 'project64' name different projects")
    return decoded


def _read_scope(known: dict[str, str]) -> str | None:
    value = known.get("scope")
    if value is None:
        return None
    # which file may hold which kind is checked by the importer; here only the syntax
    if all(namespace_problem(value, t) is not None for t in (Target.MEMORY, Target.USER)):
        raise _Unreadable("'scope' is not agent:<id>, custom:<name> or user:<id>")
    return value


def _read_category(known: dict[str, str]) -> str | None:
    value = known.get("category")
    if value is not None and value not in _CATEGORIES:
        raise _Unreadable(f"'category' is not one of {', '.join(_CATEGORIES)}")
    return value
