"""Rules of the skill tool that need no state: support-file paths and sizes, child sessions.

Support files live beside SKILL.md under four folders only: ``references/``, ``templates/``,
``scripts/``, ``assets/``. A path is refused (`support_path_problem`) when it is

- empty, longer than 1024 characters, or has a component longer than 255 UTF-8 bytes;
- absolute (``/x``), has a drive letter (``C:``) or a backslash;
- has an empty component (``a//b``, a trailing ``/``), a ``.`` or a ``..`` component;
- has a control character (NUL, newline, C1 controls), a bidi control or direction mark
  (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C), or one of ``< > : " | ? *`` (names that
  Windows cannot hold, and ``:`` which NTFS reads as an alternate data stream);
- has a component that starts with ``.``: dot-names are hidden from listings and include
  ``.git/`` and ``.env``-style files other tools act on, so none are allowed, not even
  ``.gitkeep`` (an empty folder needs no file: folders exist through their files);
- has a component that ends with a space or a ``.`` (Windows drops them silently);
- is deeper than 8 components, or is not inside one of the four folders (``references``
  alone names the folder, not a file);
- names a ``SKILL.md`` anywhere (case-insensitive): a nested SKILL.md would be discovered as
  another skill by agents that scan recursively.

Symbolic links are a property of the disk, not the path: the file adapter refuses to follow
them. Paths are compared after NFC normalization (`normalize_support_path`), so ``é`` typed
two ways is one file on every file system.
"""

from __future__ import annotations

import enum
import unicodedata

from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.scanning.unicode_policy import bidi_control_in
from pi_hermes_memory.domain.skills.events import SkillScope

SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
#: the largest support file, counted in UTF-8 bytes
MAX_SUPPORT_FILE_BYTES = 256 * 1024
#: the most support files one skill may hold
MAX_SUPPORT_FILES = 64
#: the most components a support path may have (``references/a/b`` has 3)
MAX_SUPPORT_DEPTH = 8
MAX_SUPPORT_PATH_CHARS = 1024
MAX_COMPONENT_BYTES = 255
_WINDOWS_FORBIDDEN = frozenset('<>:"|?*')


def normalize_support_path(path: str) -> str:
    return unicodedata.normalize("NFC", path)


def _control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F or ch in "\u2028\u2029"


def support_path_problem(path: str) -> str | None:
    """Why `path` cannot name a support file of a skill, or None when it can."""
    where = ", ".join(f"{d}/" for d in SUPPORT_DIRS)
    if not path:
        return f"the path is empty: name a file under {where}"
    if len(path) > MAX_SUPPORT_PATH_CHARS:
        return f"the path is longer than {MAX_SUPPORT_PATH_CHARS} characters"
    if any(_control(ch) for ch in path):
        return "the path holds a control character (NUL, newline, ...)"
    bidi = bidi_control_in(path)
    if bidi is not None:
        return (
            f"the path holds the bidi control {bidi}, which makes a name read otherwise than "
            "it is; remove it"
        )
    if "\\" in path:
        return f"the path {shown(path)} holds a backslash: use '/' between folders"
    if path.startswith("/"):
        return f"the path {shown(path)} is absolute: give a path relative to the skill folder"
    if len(path) >= 2 and path[1] == ":" and path[0].isascii() and path[0].isalpha():
        return f"the path {shown(path)} starts with a drive letter"
    parts = path.split("/")
    for part in parts:
        problem = _component_problem(part)
        if problem:
            return f"the path {shown(path)} {problem}"
    if len(parts) > MAX_SUPPORT_DEPTH:
        return f"the path {shown(path)} is deeper than {MAX_SUPPORT_DEPTH} levels"
    if parts[0] not in SUPPORT_DIRS:
        return f"the path {shown(path)} is outside the support folders: put it under {where}"
    if len(parts) == 1:
        return f"the path {shown(path)} names a folder: name a file inside it"
    return None


def _component_problem(part: str) -> str | None:
    if not part:
        return "has an empty component ('//' or a trailing '/')"
    if part in (".", ".."):
        return f"has a {part!r} component"
    if part.startswith("."):
        return "has a hidden (dot) name; dot-names are not allowed in a skill"
    if part.endswith((" ", ".")):
        return "has a name ending in a space or '.'"
    if any(ch in _WINDOWS_FORBIDDEN for ch in part):
        return 'holds one of < > : " | ? *'
    if part.casefold() == "skill.md":
        return "names a SKILL.md: a skill has one SKILL.md, at its top"
    if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
        return f"has a name longer than {MAX_COMPONENT_BYTES} bytes"
    return None


def support_content_problem(content: str) -> str | None:
    """Why `content` cannot be a support file (too large), or None."""
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > MAX_SUPPORT_FILE_BYTES:
        return (
            f"the file is {size:,} bytes (UTF-8); a support file holds at most "
            f"{MAX_SUPPORT_FILE_BYTES:,} bytes"
        )
    return None


class SkillAction(enum.StrEnum):
    """The actions of the skill tool."""

    CREATE = "create"
    VIEW = "view"
    USE = "use"
    PATCH = "patch"
    UPDATE = "update"
    EDIT = "edit"
    DELETE = "delete"
    WRITE_FILE = "write_file"
    REMOVE_FILE = "remove_file"
    VISIBILITY = "visibility"


#: actions a child session may never take, whatever the scope
_CHILD_NEVER = frozenset({SkillAction.USE, SkillAction.DELETE, SkillAction.VISIBILITY})
#: actions that change a skill
CHANGES = frozenset(
    {
        SkillAction.CREATE,
        SkillAction.PATCH,
        SkillAction.UPDATE,
        SkillAction.EDIT,
        SkillAction.DELETE,
        SkillAction.WRITE_FILE,
        SkillAction.REMOVE_FILE,
    }
)


def child_session_problem(action: SkillAction | str, scope: SkillScope | str | None) -> str | None:
    """Why a child session (background review, curation) may not take `action` on a skill
    of `scope`, or None when it may.

    A child session views any skill and creates or changes PROJECT skills only. It never
    records a use (promotion counts main-session uses only), never deletes, never changes
    visibility, and never creates or changes a global skill: a person or the main session
    does that. `scope` None means "not known yet" (a listing, or a create without a scope,
    which the create decision refuses on its own)."""
    try:
        act = SkillAction(action)
    except ValueError:
        return f"unknown skill action {shown(action)}"
    if act in _CHILD_NEVER:
        return (
            f"a background session may not {act.value} skills: "
            "only the main session records uses, deletes skills or changes visibility"
        )
    if act in CHANGES and scope is not None and str(scope) == SkillScope.GLOBAL.value:
        return (
            f"a background session may not {act.value.replace('_', ' ')} a global skill: "
            "it creates and improves project skills only; promotion makes them global"
        )
    return None


__all__ = [
    "CHANGES",
    "MAX_COMPONENT_BYTES",
    "MAX_SUPPORT_DEPTH",
    "MAX_SUPPORT_FILES",
    "MAX_SUPPORT_FILE_BYTES",
    "MAX_SUPPORT_PATH_CHARS",
    "SUPPORT_DIRS",
    "SkillAction",
    "child_session_problem",
    "normalize_support_path",
    "support_content_problem",
    "support_path_problem",
]
