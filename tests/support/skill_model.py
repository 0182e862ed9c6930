"""The model and the fault of the skill state machine (`skill_machine.py`): what each live
skill must hold, the names it draws from, and skill folders whose render can die between two
file writes."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import attrs
from hypothesis import strategies as st
from pi_hermes_memory.adapters.files.skill_folders import SkillFolders
from pi_hermes_memory.domain.status import Status

PROJECT = "demo"
#: one token each: no two names overlap, so a global create is never refused as similar
WORDS = ("alpha", "bravo", "charlie", "delta")
SCOPES = ("global", "project")
PATHS = (
    "references/notes.md",
    "references/deep/more.md",
    "templates/page.txt",
    "scripts/run.sh",
    "assets/data.csv",
)
SECTIONS = ("When to Use", "Procedure", "Pitfalls", "Notes")
#: a token the content scanner refuses
SECRET = "ghp_R8x2LmQ4vT7nK9pW3zY6bC1dF5gH0jS2aE4u"
VERSION_LINE = re.compile(rb"^version: ([0-9]+)\r?$", re.MULTILINE)
#: a crash after this many file writes of the render that follows the commit, or none
CRASHES = st.none() | st.integers(0, 4)
TEXT_WORDS = ("deploy", "lint", "cache", "schema", "queue", "docs", "build", "port")


DONE = frozenset(
    {
        Status.CREATED,
        Status.PATCHED,
        Status.UPDATED,
        Status.DELETED,
        Status.FILE_WRITTEN,
        Status.FILE_REMOVED,
    }
)


class SimulatedCrash(BaseException):
    """The process dies here: no handler of the library may catch it."""


class CrashingFolders(SkillFolders):
    """Real skill folders whose next render dies after `crash_after` file steps (writes or
    deletes), once armed; each step that happens is a real, atomic file operation."""

    crash_after: int | None = None
    steps: int = 0

    def arm(self, steps: int) -> None:
        self.crash_after, self.steps = steps, 0

    def disarm(self) -> None:
        self.crash_after = None

    def _step(self) -> None:
        if self.crash_after is None:
            return
        if self.steps >= self.crash_after:
            self.crash_after = None
            raise SimulatedCrash(f"crashed after {self.steps} file step(s) of a render")
        self.steps += 1

    def _put(self, path: Path, data: bytes) -> None:
        self._step()
        super()._put(path, data)

    def _remove(self, path: Path) -> None:
        self._step()
        super()._remove(path)


class Quiet:
    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


@attrs.define
class Expected:
    """What one live skill must hold."""

    description: str
    body: str
    display_name: str | None = None
    extra: str = ""
    files: dict[str, str] = attrs.Factory(dict)
    revision: int = 1
    #: the SKILL.md content the journal holds (hand edits not imported yet differ)
    synced: tuple[str, str, str | None, str] = ("", "", None, "")

    def content(self) -> tuple[str, str, str | None, str]:
        return (self.description, self.body, self.display_name, self.extra)

    def settle(self) -> Expected:
        self.synced = self.content()
        return self


@attrs.frozen
class Blocked:
    """A SKILL.md the scanner refused: the person's bytes, and what it held before."""

    person: bytes
    before: bytes | None


def skill_id(scope: str, word: str) -> str:
    return f"global:{word}" if scope == "global" else f"project:{PROJECT}:{word}"
