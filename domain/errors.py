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
