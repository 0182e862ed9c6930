"""Domain errors."""

from __future__ import annotations


class HermesMemoryError(Exception):
    """Base class of every error pi-hermes-memory raises to its callers.

    It lives in the domain (an exception is pure) so domain errors can be part of the one
    tree; the public name is `pi_hermes_memory.HermesMemoryError`.
    """


class DomainError(HermesMemoryError):
    """Base class of every error raised by the domain."""


class VersionConflict(DomainError):
    """An event's version is not the previous version + 1, or a stream moved under a writer."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream!r}: expected version {expected}, found {actual}")
        self.stream = stream
        self.expected = expected
        self.actual = actual


class InvariantViolation(DomainError):
    """A state transition would break a domain invariant (a bug or a corrupt journal)."""


class SkillFormatError(DomainError, ValueError):
    """A SKILL.md text cannot be read (no frontmatter, an unclosed quote, ...)."""


class InvalidSkillId(DomainError, ValueError):
    """A text is not a skill id (``global:<slug>`` or ``project:<project>:<slug>``)."""


class SkillFolderProblem(DomainError):
    """The folder cannot be imported as this skill; it is left untouched."""


class RecordError(DomainError, ValueError):
    """A record (or a header) that cannot be read; the message names the field."""


class StaleProgress(DomainError):
    """A chunk continues from an offset the index no longer holds for its file: another
    indexer (a second process, a live update) got there first. Nothing was written."""


class AnchorRequestError(DomainError, ValueError):
    """A request that cannot be parsed. `line` is the 1-based line at fault, or None when the
    problem is the request as a whole; the message starts with "line N: " when there is one."""

    def __init__(self, problem: str, *, line: int | None = None) -> None:
        super().__init__(problem if line is None else f"line {line}: {problem}")
        self.line = line
        self.problem = problem
