"""Session history: Pi session JSONL lines and the bookkeeping of incremental indexing.

A Pi session file (`<agentRoot>/sessions/--<cwd>--/<time>_<uuid>.jsonl`) holds one JSON object
per line. The first line is the header, `{"type": "session", "id", "cwd", "timestamp", ...}`;
`{"type": "message", "id", "parentId", "timestamp", "message": {"role", "content"}}` lines carry
the turns; other types (model_change, thinking_level_change, compaction, custom, label, ...) do
not. `content` is a string or a list of blocks: `text` (indexed), `thinking` (skipped),
`toolCall` / `tool_use` (their `name` is kept as metadata), `tool_result` and images (skipped).
Only user, assistant and system turns are indexed; tool results (role `toolResult`, or a turn
made only of `tool_result` blocks) are large and ephemeral and are skipped.

Claude Code's transcripts (`~/.claude/projects/<cwd slug>/<session uuid>.jsonl`, issue 30) have
no header: every turn is `{"type": "user"|"assistant", "sessionId", "cwd", "uuid",
"timestamp", "message": {"role", "content"}}`, with Anthropic content blocks (`text`,
`tool_use`, `tool_result`, `thinking`); `summary`, `system` and the other types are skipped, and
so are `isMeta` turns (the CLI's own notes). A turn carries its session as `MessageLine.header`,
which the reader takes as the file's header when it has none yet.

`parse_line` turns one line (bytes, without its newline) into a `HeaderLine`, a `MessageLine`
or a `SkippedLine` with a reason. It never raises: invalid UTF-8, malformed or too deeply
nested JSON, a value that is not an object, a line over `MAX_LINE_BYTES` or an entry missing
its fields are reasons, like the line kinds skipped by design.

Pure: no I/O, no clock; the caller reads the bytes and passes them in.
"""

from __future__ import annotations

import enum
import hashlib
import json
import posixpath
import re
from collections.abc import Mapping
from datetime import UTC, datetime

import attrs
from pi_hermes_memory.domain.errors import StaleProgress
from pi_hermes_memory.domain.memory.model import is_safe_project_name

#: A longer line is skipped unparsed (and counted): nothing a person typed is that long.
MAX_LINE_BYTES = 4 * 1024 * 1024
#: The leading bytes whose hash identifies a file's content across runs (and the trailing
#: bytes before the indexed offset, checked the same way).
FINGERPRINT_BYTES = 4096
#: Roles whose text is indexed.
INDEXED_ROLES = frozenset({"user", "assistant", "system"})

_TOOL_CALL_BLOCKS = frozenset({"toolCall", "tool_use"})
_TOOL_RESULT_BLOCKS = frozenset({"tool_result", "toolResult"})
_TOOL_RESULT_ROLES = frozenset({"toolResult", "tool"})
_BOM = b"\xef\xbb\xbf"
# Pi writes `{"type":"message",...,"message":{"role":"toolResult",...` (JSON.stringify keeps key
# order); a tool result is the bulk of a session's bytes and is never indexed, so it is
# recognised without parsing. The byte sequence cannot occur inside a JSON string (its quotes
# would be escaped there), so it can only be this structure.
_TOOL_RESULT_PREFIX = b'{"type":"message"'
_TOOL_RESULT_MARK = b'"message":{"role":"toolResult"'
_TOOL_RESULT_WINDOW = 512
_decode = json.JSONDecoder().decode
_SURROGATE = re.compile("[\ud800-\udfff]")


class LineSkip(enum.StrEnum):
    """Why a complete line was not indexed. `is_problem`: the line is damaged, not merely of
    a kind that is skipped by design."""

    NOT_UTF8 = "not-utf8"
    MALFORMED_JSON = "malformed-json"
    NOT_AN_OBJECT = "not-an-object"
    TOO_LONG = "too-long"
    BAD_ENTRY = "bad-entry"
    EXTRA_HEADER = "extra-header"
    EMPTY = "empty"
    OTHER_TYPE = "other-type"
    OTHER_ROLE = "other-role"
    TOOL_RESULT = "tool-result"
    NO_TEXT = "no-text"

    @property
    def is_problem(self) -> bool:
        return self in _PROBLEMS


_PROBLEMS = frozenset(
    {
        LineSkip.NOT_UTF8,
        LineSkip.MALFORMED_JSON,
        LineSkip.NOT_AN_OBJECT,
        LineSkip.TOO_LONG,
        LineSkip.BAD_ENTRY,
        LineSkip.EXTRA_HEADER,
    }
)


@attrs.frozen(kw_only=True)
class HeaderLine:
    """A session header: the session's id, working directory and start time."""

    session_id: str
    cwd: str | None
    started: datetime | None


@attrs.frozen(kw_only=True)
class MessageLine:
    """One indexed turn. `text` may be empty when the turn only called tools."""

    role: str
    text: str
    tools: tuple[str, ...] = ()
    at: datetime | None = None
    message_id: str | None = None
    #: the session a turn names itself (Claude Code's lines), for a file without a header
    header: HeaderLine | None = None

    @classmethod
    def create(
        cls,
        *,
        role: str,
        text: str,
        tools: tuple[str, ...] = (),
        at: datetime | None = None,
        message_id: str | None = None,
    ) -> MessageLine:
        """A turn with its strings made storable (lone surrogates replaced)."""
        return cls(
            role=clean_text(role),
            text=clean_text(text),
            tools=tuple(clean_text(t) for t in tools),
            at=at,
            message_id=None if message_id is None else clean_text(message_id),
        )


@attrs.frozen
class SkippedLine:
    reason: LineSkip


ParsedLine = HeaderLine | MessageLine | SkippedLine

_SKIPPED = {reason: SkippedLine(reason) for reason in LineSkip}


def clean_text(text: str) -> str:
    """`text` without lone surrogates (JSON may escape them; UTF-8 cannot store them)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 string (naive = UTC) or Unix milliseconds as a UTC datetime; else None."""
    try:
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value.strip())
            if parsed.tzinfo is UTC:  # Pi writes "...Z"
                return parsed
            if parsed.tzinfo is None:
                return parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def parse_line(raw: bytes) -> ParsedLine:
    """Classify one JSONL line (without its newline); never raises."""
    if len(raw) > MAX_LINE_BYTES:
        return _SKIPPED[LineSkip.TOO_LONG]
    if raw.startswith(_BOM):
        raw = raw[3:]
    if raw.startswith(_TOOL_RESULT_PREFIX) and _TOOL_RESULT_MARK in raw[:_TOOL_RESULT_WINDOW]:
        return _SKIPPED[LineSkip.TOOL_RESULT]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _SKIPPED[LineSkip.NOT_UTF8]
    try:
        entry = _decode(text)
    except (ValueError, RecursionError):  # JSONDecodeError, huge integers, deep nesting
        if not text or text.isspace():
            return _SKIPPED[LineSkip.EMPTY]
        return _SKIPPED[LineSkip.MALFORMED_JSON]
    if not isinstance(entry, dict):
        return _SKIPPED[LineSkip.NOT_AN_OBJECT]
    kind = entry.get("type")
    if kind == "message":
        return _message(entry)
    if kind == "session":
        return _header(entry)
    if kind in _CLAUDE_TURNS and "message" in entry:
        return _claude_turn(entry)
    return _SKIPPED[LineSkip.OTHER_TYPE]


_CLAUDE_TURNS = frozenset({"user", "assistant"})


def _claude_turn(entry: Mapping[str, object]) -> ParsedLine:
    """A Claude Code transcript turn: a message, with the session it names as its header."""
    if entry.get("isMeta") is True:  # the CLI's own notes (command output caveats, ...)
        return _SKIPPED[LineSkip.OTHER_TYPE]
    parsed = _message(entry, id_key="uuid")
    if not isinstance(parsed, MessageLine):
        return parsed
    session_id, cwd = entry.get("sessionId"), entry.get("cwd")
    if not isinstance(session_id, str) or not session_id.strip():
        return parsed
    header = HeaderLine(
        session_id=clean_text(session_id.strip()),
        cwd=clean_text(cwd) if isinstance(cwd, str) and cwd else None,
        started=parsed.at,
    )
    return attrs.evolve(parsed, header=header)


def _header(entry: Mapping[str, object]) -> ParsedLine:
    session_id, cwd = entry.get("id"), entry.get("cwd")
    if not isinstance(session_id, str) or not session_id.strip():
        return _SKIPPED[LineSkip.BAD_ENTRY]
    if cwd is not None and not isinstance(cwd, str):
        return _SKIPPED[LineSkip.BAD_ENTRY]
    return HeaderLine(
        session_id=clean_text(session_id.strip()),
        cwd=clean_text(cwd) if cwd else None,
        started=parse_time(entry.get("timestamp")),
    )


def _message(entry: Mapping[str, object], *, id_key: str = "id") -> ParsedLine:
    message = entry.get("message")
    if not isinstance(message, dict):
        return _SKIPPED[LineSkip.BAD_ENTRY]
    role = message.get("role")
    if not isinstance(role, str):
        return _SKIPPED[LineSkip.BAD_ENTRY]
    if role in _TOOL_RESULT_ROLES:
        return _SKIPPED[LineSkip.TOOL_RESULT]
    if role not in INDEXED_ROLES:
        return _SKIPPED[LineSkip.OTHER_ROLE]
    content = message.get("content")
    texts: list[str] = []
    tools: list[str] = []
    results = 0
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                value = block.get("text")
                if isinstance(value, str):
                    texts.append(value)
            elif kind in _TOOL_CALL_BLOCKS:
                name = block.get("name")
                if isinstance(name, str) and name:
                    tools.append(name)
            elif kind in _TOOL_RESULT_BLOCKS:
                results += 1
    elif content is not None:
        return _SKIPPED[LineSkip.BAD_ENTRY]
    text = "\n".join(t for t in texts if t and not t.isspace())
    if not text and not tools:
        return _SKIPPED[LineSkip.TOOL_RESULT if results else LineSkip.NO_TEXT]
    message_id = entry.get(id_key)
    return MessageLine(  # role is one of INDEXED_ROLES: already clean
        role=role,
        text=clean_text(text),
        tools=tuple(clean_text(t) for t in dict.fromkeys(tools)) if tools else (),
        at=parse_time(entry.get("timestamp")) or parse_time(message.get("timestamp")),
        message_id=clean_text(message_id) if isinstance(message_id, str) else None,
    )


# --- projects -----------------------------------------------------------------------------------


def normalize_cwd(cwd: str) -> str:
    """A cwd with `/` separators, normalised, without a trailing separator ("" for none)."""
    path = cwd.strip().replace("\\", "/")
    if not path:
        return ""
    norm = posixpath.normpath(path)
    return "/" if norm in ("/", "//") else norm.rstrip("/")


def project_of(cwd: str | None, mapping: Mapping[str, str] | None = None) -> str | None:
    """The project of a session's working directory: the mapped name of the longest mapping
    key that is the cwd or one of its parents, else the cwd's last path segment (None when
    that is not a safe project name, e.g. for `/`). Mapping keys are normalised cwds."""
    if not cwd:
        return None
    path = normalize_cwd(cwd)
    if mapping:
        best = ""
        for key in mapping:
            if (path == key or path.startswith(key.rstrip("/") + "/")) and len(key) > len(best):
                best = key
        if best:
            return mapping[best]
    name = path.rsplit("/", 1)[-1].strip()
    return name if is_safe_project_name(name) else None


def cwd_within(cwd: str | None, root: str) -> bool:
    """Whether `cwd` is `root` or lies under it (both normalised first)."""
    if not cwd:
        return False
    path, base = normalize_cwd(cwd), normalize_cwd(root)
    return bool(base) and (path == base or path.startswith(base.rstrip("/") + "/"))


def fallback_session_id(path: str) -> str:
    """The session id of a file without a header: Pi names files `<time>_<uuid>.jsonl`."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return stem.rsplit("_", 1)[-1] or stem


# --- incremental indexing -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SessionFile:
    """A session file as listed now: its path and identity."""

    path: str
    size: int
    mtime_ns: int
    device: int
    inode: int


@attrs.frozen(kw_only=True)
class FileProgress:
    """What the index holds of one file: its identity when last read, `offset` (the end of
    the last complete line read), `lines` (complete lines read), the sha256 of the first
    `head_len` bytes and of the `FINGERPRINT_BYTES` (or fewer) bytes before `offset`, and
    whether a session header was read."""

    path: str
    size: int
    mtime_ns: int
    device: int
    inode: int
    offset: int = 0
    lines: int = 0
    head_len: int = 0
    head_sha: str = ""
    tail_sha: str = ""
    headed: bool = False


class FileChange(enum.StrEnum):
    NEW = "new"
    UNCHANGED = "unchanged"
    CHANGED = "changed"  # grew or touched: verify the fingerprints, then read on
    REWRITTEN = "rewritten"  # another file, or shorter than what was read: read it again


def classify(listed: SessionFile, stored: FileProgress | None) -> FileChange:
    if stored is None:
        return FileChange.NEW
    if (listed.device, listed.inode) != (stored.device, stored.inode):
        return FileChange.REWRITTEN
    if listed.size < stored.offset:
        return FileChange.REWRITTEN
    if listed.size == stored.size and listed.mtime_ns == stored.mtime_ns:
        return FileChange.UNCHANGED
    return FileChange.CHANGED


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprints_match(stored: FileProgress, head: bytes, tail: bytes) -> bool:
    """Whether the file still starts and (up to `offset`) ends with what was read."""
    return (
        len(head) == stored.head_len
        and digest(head) == stored.head_sha
        and digest(tail) == stored.tail_sha
    )


@attrs.frozen(kw_only=True)
class SessionChunk:
    """One write to the session index: the file's progress after this chunk, whether what was
    indexed from the file before is dropped first (`reset`), the offset the chunk's bytes
    start at (`start`: the stored offset it continues from; 0 for a file not indexed yet),
    the session header if this chunk holds it (with its project), and the new turns as
    (line number, message)."""

    progress: FileProgress
    reset: bool = False
    start: int = 0
    fallback_id: str
    header: HeaderLine | None = None
    project: str | None = None
    messages: tuple[tuple[int, MessageLine], ...] = ()


__all__ = [
    "FINGERPRINT_BYTES",
    "INDEXED_ROLES",
    "MAX_LINE_BYTES",
    "FileChange",
    "FileProgress",
    "HeaderLine",
    "LineSkip",
    "MessageLine",
    "ParsedLine",
    "SessionChunk",
    "SessionFile",
    "SkippedLine",
    "StaleProgress",
    "classify",
    "clean_text",
    "cwd_within",
    "digest",
    "fallback_session_id",
    "fingerprints_match",
    "normalize_cwd",
    "parse_line",
    "parse_time",
    "project_of",
]
