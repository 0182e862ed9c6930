"""Memory values: targets, categories and the MemoryEntry."""

from __future__ import annotations

import enum
import functools
import re
import unicodedata
from datetime import date

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.scanning.unicode_policy import bidi_control_in


class Target(enum.StrEnum):
    """Where an entry lives; each target is one Markdown document."""

    USER = "user"
    MEMORY = "memory"
    PROJECT = "project"
    FAILURE = "failure"


class FailureCategory(enum.StrEnum):
    FAILURE = "failure"
    CORRECTION = "correction"
    INSIGHT = "insight"
    PREFERENCE = "preference"
    CONVENTION = "convention"
    TOOL_QUIRK = "tool-quirk"


class MemoryKind(enum.StrEnum):
    """The second seed's category of an entry (ADR 0045); any target may carry one. Kept apart
    from `FailureCategory`, which only failure entries carry: the tools of the second seed
    show it as `category`, the domain and the Markdown metadata call it `kind`."""

    PREFERENCE = "preference"
    FACT = "fact"
    DECISION = "decision"
    ENTITY = "entity"
    OTHER = "other"


#: the importance a row without one ranks with (the second seed's default)
DEFAULT_IMPORTANCE = 0.7


def importance_problem(importance: object) -> str | None:
    """Why `importance` cannot be stored (a number from 0 to 1), or None when it can."""
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        return "importance must be a number from 0 to 1"
    if not 0.0 <= importance <= 1.0:  # NaN fails both comparisons
        return "importance must be a number from 0 to 1"
    return None


@functools.lru_cache(maxsize=65_536)
def normalize_text(text: str) -> str:
    """The identity of an entry's content: NFC, stripped, inner whitespace collapsed.

    Used for exact-duplicate detection. Case is kept: "Use X" and "use x" are near-duplicates,
    not the same fact (the near-duplicate rule catches them).
    """
    return " ".join(unicodedata.normalize("NFC", text).split())


def clean_entry_text(text: str) -> str:
    """The stored form of an entry's text: NFC, newlines as LF, surrounding space stripped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text).strip()


@attrs.frozen(kw_only=True, cache_hash=True)  # hashed often: render and similarity caches
class MemoryEntry:
    """One remembered fact. `project` is the real project attribution (None = global)."""

    id: str
    target: Target
    text: str
    project: str | None
    category: FailureCategory | None
    created: date
    last_referenced: date
    superseded_by: str | None = None
    superseded_at: date | None = None
    #: None for the shared global layer; "agent:<id>", "custom:<name>" (memory) or "user:<id>"
    #: (user) for a namespaced row. Project rows use `project` instead (ADR 0014).
    namespace: str | None = None
    #: why hand-edited text failed the content scan; such a row stays out of search results
    #: until a person fixes its text (None: clean)
    flagged: str | None = None
    #: 0..1, set by the second seed's tools (ADR 0045); None: never set (ranks as 0.7)
    importance: float | None = None
    #: the second seed's category (ADR 0045); None: never set
    kind: MemoryKind | None = None
    #: the stable id of the memory this row is a version of (ADR 0074): the id of the chain's
    #: first version, carried by every replace; None: this row is that first version
    memory_id: str | None = None
    #: this row's number in its memory's versions, 1 for the first (ADR 0074)
    version_no: int = 1

    @classmethod
    def create(
        cls,
        *,
        id: str,
        target: Target,
        text: str,
        project: str | None,
        category: FailureCategory | None,
        created: date,
        last_referenced: date | None = None,
    ) -> MemoryEntry:
        # only failures carry a category; they default to the generic one
        category = (category or FailureCategory.FAILURE) if target is Target.FAILURE else None
        if target in (Target.USER, Target.MEMORY):
            project = None
        return cls(
            id=id,
            target=target,
            text=clean_entry_text(text),
            project=project,
            category=category,
            created=created,
            last_referenced=last_referenced or created,
        )

    #: the normalized text (exact-duplicate identity), computed once: the add path compares it
    #: against every row of the scope
    key: str = attrs.field(init=False, eq=False, repr=False, hash=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "key", normalize_text(self.text))

    @property
    def active(self) -> bool:
        return self.superseded_by is None

    @property
    def stable_id(self) -> str:
        """The id of the memory this row is a version of: the same for every version (ADR 0074)."""
        return self.memory_id or self.id


SEPARATOR_LINE = "§"
MAX_ENTRY_CHARS = 65_536


def entry_text_problem(text: str) -> str | None:
    """Why `text` (already cleaned) cannot be stored as one entry, or None when it can.

    The Markdown format separates entries with a line holding only `§` and ends each entry with
    an HTML metadata comment, so an entry may contain neither.
    """
    if not text:
        return "the content is empty"
    if len(text) > MAX_ENTRY_CHARS:
        return f"the content is longer than {MAX_ENTRY_CHARS} characters"
    if any(line.strip() == SEPARATOR_LINE for line in text.splitlines()):
        return "a line holding only '§' is the entry separator and cannot be part of an entry"
    if "<!--" in text or "-->" in text:
        return "HTML comments ('<!--', '-->') are reserved for entry metadata"
    if "\x00" in text:
        return "the content contains a NUL character"
    return None


MAX_PROJECT_NAME_BYTES = 255
_UNSAFE_PROJECT_CHARS = frozenset("/\\,<>")


def is_safe_project_name(name: str) -> bool:
    """Whether `name` can be a project attribution (and a directory name).

    The name must already be trimmed. Rejected: empty, `.`, `..`, path separators, `,` (the
    metadata list separator), `<`/`>` (they would break the HTML metadata comment), control
    characters (newline, NUL, ...), bidi controls and direction marks (U+202E shows
    ``a\u202eb.cod`` as ``adoc.b``), and names longer than 255 UTF-8 bytes. One rule for the
    configuration, the CLI and the Markdown format, so an accepted name is always writable.
    """
    if not name or name != name.strip() or name in (".", ".."):
        return False
    if len(name.encode("utf-8", "surrogatepass")) > MAX_PROJECT_NAME_BYTES:
        return False
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        return False
    if bidi_control_in(name) is not None:  # a name that reads otherwise than it is
        return False
    return not any(ch in _UNSAFE_PROJECT_CHARS for ch in name)


def project_name_problem(name: str) -> str | None:
    """Why `name`, given by a caller (a tool argument), cannot name a project, or None: it
    must be safe (`is_safe_project_name`) and not a value the content scanner refuses (a
    secret pasted as a project name would be stored and echoed back, issue 26 §6)."""
    from pi_hermes_memory.domain.echo import withheld

    note = withheld(name)
    if note is not None:
        return f"the project name is not usable {note}"
    if not is_safe_project_name(name):
        return (
            f"project {shown(name)} is not a valid project name: it must be non-empty, not "
            "'.' or '..', and contain no / \\ , < >, control or bidi characters"
        )
    return None


GLOBAL_NAMESPACE = "global"
NAMESPACE_KINDS: dict[str, tuple[Target, ...]] = {
    "agent": (Target.MEMORY,),
    "custom": (Target.MEMORY,),
    "user": (Target.USER,),
}
_NAMESPACE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def namespace_problem(namespace: str | None, target: Target) -> str | None:
    """Why `namespace` cannot hold rows of `target`, or None when it can (None = global)."""
    if namespace is None:
        return None
    kind, _, name = namespace.partition(":")
    if kind not in NAMESPACE_KINDS or not _NAMESPACE_ID.fullmatch(name):
        return (
            f"scope {shown(namespace)} is not valid: use global, agent:<id>, custom:<name> or "
            "user:<id> (letters, digits, '.', '_' and '-')"
        )
    if target not in NAMESPACE_KINDS[kind]:
        allowed = ", ".join(t.value for t in NAMESPACE_KINDS[kind])
        return f"scope {kind}:… holds {allowed} entries, not {target.value} entries"
    return None
