"""Errors raised by the application layer to its callers."""

from __future__ import annotations

import enum

from pi_hermes_memory.domain.errors import DomainError, HermesMemoryError

__all__ = [
    "CompletionFailed",
    "CompletionFailure",
    "CorruptData",
    "DatabaseDamaged",
    "DomainError",
    "EmbeddingFailed",
    "HermesMemoryError",
    "InvalidArgument",
    "MarkdownChanged",
    "MarkdownTooLarge",
    "MarkdownUnreadable",
    "StorageFailed",
    "StorageFull",
    "StoreBusy",
    "StoreLayoutConflict",
    "StoreReadOnly",
    "StoreVersionError",
]


class InvalidArgument(HermesMemoryError, ValueError):
    """An argument of a public call is out of range or of the wrong kind (also a ValueError)."""


class CorruptData(HermesMemoryError):
    """Stored data (an event, a snapshot, a database page) cannot be decoded as written."""


class StoreVersionError(HermesMemoryError):
    """The store or a library it needs is of a version this release cannot use (a database
    written by a newer release, an SQLite older than the minimum); nothing was changed."""


class StoreLayoutConflict(HermesMemoryError):
    """Two memory documents resolve to one physical file (a symlink or a configuration that
    makes memoryDir and projectsMemoryDir one folder): refused before anything is written."""


class MarkdownChanged(HermesMemoryError, OSError):
    """A Markdown file changed between our read and our render (a person saved it meanwhile):
    the render was skipped; the change is imported by the next operation (ADR 0022)."""


class MarkdownUnreadable(HermesMemoryError):
    """A Markdown document cannot be read back without losing bytes; nothing was written."""


class EmbeddingFailed(HermesMemoryError):
    """An embedding request failed (HTTP status, timeout, transport, a malformed answer, or a
    local engine's error).

    `reason` is a short machine-readable kind (`http_status`, `timeout`, `transport`,
    `malformed`, `count`, `dimension`, `non_finite`, `engine`, or a custom embedder's own);
    `host` is the redacted endpoint (scheme and host only), or None for an embedder that has
    none (a local model, a custom adapter): ``EmbeddingFailed("engine", detail="...")``. The
    message names both and never carries the API key, the full base URL or the server's
    response body (which may echo the key).
    """

    def __init__(self, reason: str, host: str | None = None, detail: str = "") -> None:
        self.reason = reason
        self.host = host
        self.detail = detail
        if host:
            message = f"embedding request to {host} failed ({reason})"
        else:
            message = f"the embedder failed ({reason})"
        super().__init__(f"{message}: {detail}" if detail else message)


class StorageFailed(HermesMemoryError, OSError):
    """The store could not be read or written (full disk, read-only files, a damaged database).

    Also an OSError, so code that treats an I/O failure after COMMIT as a warning (ADR 0011)
    treats these the same way. Nothing was reported saved; `path` names the file at fault.
    """

    def __init__(self, message: str, *, path: object = None) -> None:
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DatabaseDamaged(StorageFailed, CorruptData):
    """sessions.db cannot be read as a SQLite database (truncated, overwritten, corrupt).

    The store then works read-only from the event log and the Markdown files until
    `pi-hermes-memory recover` rebuilds the database (ADR 0023).
    """


class StoreReadOnly(StorageFailed):
    """A file or folder of the store cannot be written (read-only permissions or file system,
    or a store opened read-only after its database was found damaged); nothing was written."""


class StorageFull(StorageFailed):
    """The disk (or quota) is full; the write was rolled back and nothing was written."""


class StoreBusy(StorageFailed):
    """Another process held the store (its write lock, or the database) for longer than the
    wait allowed; nothing was written. Retrying later is safe (ADR 0024)."""


class MarkdownTooLarge(MarkdownUnreadable):
    """A Markdown file is larger than a memory file may be; it was left untouched and not
    read, and only its document is blocked (ADR 0024)."""


class CompletionFailure(enum.StrEnum):
    """Why an LLM completion gave no usable text (`CompletionFailed.reason`)."""

    #: no LLM is configured (`llm.provider` off, a missing field, a missing key or command)
    OFF = "off"
    #: the child process could not be started (not found, not executable)
    SPAWN = "spawn"
    #: no complete reply within the timeout; a child process was killed with its group
    TIMEOUT = "timeout"
    #: the child process exited with a non-zero status or was killed by a signal
    EXIT = "exit"
    #: the reply was larger than `llm.maxReplyBytes`; the child was killed, the body dropped
    TOO_LARGE = "too-large"
    #: the HTTP server answered with a status other than 200
    HTTP = "http"
    #: the connection failed (refused, reset, TLS, a protocol error)
    TRANSPORT = "transport"
    #: the answer is not of the expected shape (not JSON, no choices[0].message.content)
    BAD_REPLY = "bad-reply"
    #: the completer raised something other than `CompletionFailed` (a custom adapter's bug
    #: or an unwrapped library error); `detail` names the exception's class and message
    ADAPTER = "adapter"


class CompletionFailed(HermesMemoryError):
    """An LLM completion failed; nothing was read from the reply.

    `reason` is a `CompletionFailure`; `source` names the LLM without secrets (the command's
    program name, or the scheme and host of an HTTP endpoint); `detail` is a short human
    text: an exit status, an HTTP status code, the child's stderr clipped to a few hundred
    characters. The message never carries an API key, a full URL or a response body.
    """

    def __init__(self, reason: CompletionFailure, source: str, detail: str = "") -> None:
        self.reason = reason
        self.source = source
        self.detail = detail
        if reason is CompletionFailure.OFF:  # nothing ran: the detail is the whole story
            super().__init__(detail or "the LLM is off")
            return
        message = f"the LLM ({source}) failed: {reason.value}"
        super().__init__(f"{message}: {detail}" if detail else message)
