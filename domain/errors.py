"""Domain errors."""

from __future__ import annotations


class DomainError(Exception):
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
