"""pi-hermes-memory: durable, searchable, self-maintaining long-term memory for LLM agents.

    import pi_hermes_memory
    with pi_hermes_memory.open(project="my-app") as memory:
        memory.add("The test command is `make test`", target="project")

Importing this package is light: every public name loads its module on first use (PEP 562),
so a command line call pays only for what it runs (ADR 0038).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pi_hermes_memory import _moved

_moved.install()  # the 0.1 flat module paths still import, with a warning (ADR 0055)

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory
    from pi_hermes_memory.bootstrap import open_memory as open
    from pi_hermes_memory.bootstrap import recover
    from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target
    from pi_hermes_memory.domain.status import Status
    from pi_hermes_memory.errors import (
        AnchorRequestError,
        ArgumentError,
        BridgeError,
        CompletionFailed,
        CompletionFailure,
        ConfigError,
        ConfigUnreadable,
        CorruptData,
        CorruptEvent,
        CorruptSnapshot,
        CurationTimedOut,
        DatabaseDamaged,
        DoctorFailed,
        DomainError,
        EmbeddingFailed,
        ForeignDatabaseError,
        HermesMemoryError,
        InvalidArgument,
        InvalidSkillId,
        InvariantViolation,
        KnowledgeBusy,
        KnowledgeNotConfigured,
        KnowledgeRootRefused,
        LocalEmbedderUnavailable,
        LockTimeout,
        MarkdownChanged,
        MarkdownTooLarge,
        MarkdownUnreadable,
        RecordError,
        ServeFailed,
        ServerConfigError,
        SkillFolderProblem,
        SkillFormatError,
        StaleProgress,
        StorageFailed,
        StorageFull,
        StoreBusy,
        StoreClosed,
        StoreLayoutConflict,
        StoreReadOnly,
        StoreVersionError,
        UnsafeBind,
        UnusableInput,
        VersionConflict,
        WriteRefused,
    )
    from pi_hermes_memory.memory.purging import PurgeResult
    from pi_hermes_memory.ports.search import SearchHit
    from pi_hermes_memory.results import BatchResult, CandidateView, EntryView, WriteResult
    from pi_hermes_memory.search.memory_search import SearchResult
    from pi_hermes_memory.tools.registry import ToolDefinition

__version__ = "0.1.0"
__all__ = [
    "AnchorRequestError",
    "ArgumentError",
    "BatchResult",
    "BridgeError",
    "CandidateView",
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
    "EntryView",
    "FailureCategory",
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
    "Memory",
    "MemoryKind",
    "PurgeResult",
    "RecordError",
    "SearchHit",
    "SearchResult",
    "ServeFailed",
    "ServerConfigError",
    "SkillFolderProblem",
    "SkillFormatError",
    "StaleProgress",
    "Status",
    "StorageFailed",
    "StorageFull",
    "StoreBusy",
    "StoreClosed",
    "StoreLayoutConflict",
    "StoreReadOnly",
    "StoreVersionError",
    "Target",
    "ToolDefinition",
    "UnsafeBind",
    "UnusableInput",
    "VersionConflict",
    "WriteRefused",
    "WriteResult",
    "__version__",
    "open",
    "recover",
]

#: public name -> (module, attribute): imported on first access
_LAZY: dict[str, tuple[str, str]] = {
    "Memory": ("pi_hermes_memory.api", "Memory"),
    "open": ("pi_hermes_memory.bootstrap", "open_memory"),
    "recover": ("pi_hermes_memory.bootstrap", "recover"),
    "FailureCategory": ("pi_hermes_memory.domain.memory.model", "FailureCategory"),
    "MemoryKind": ("pi_hermes_memory.domain.memory.model", "MemoryKind"),
    "Target": ("pi_hermes_memory.domain.memory.model", "Target"),
    "Status": ("pi_hermes_memory.domain.status", "Status"),
    "AnchorRequestError": ("pi_hermes_memory.errors", "AnchorRequestError"),
    "ArgumentError": ("pi_hermes_memory.errors", "ArgumentError"),
    "BridgeError": ("pi_hermes_memory.errors", "BridgeError"),
    "CompletionFailed": ("pi_hermes_memory.errors", "CompletionFailed"),
    "CompletionFailure": ("pi_hermes_memory.errors", "CompletionFailure"),
    "ConfigError": ("pi_hermes_memory.errors", "ConfigError"),
    "ConfigUnreadable": ("pi_hermes_memory.errors", "ConfigUnreadable"),
    "CorruptData": ("pi_hermes_memory.errors", "CorruptData"),
    "CorruptEvent": ("pi_hermes_memory.errors", "CorruptEvent"),
    "CorruptSnapshot": ("pi_hermes_memory.errors", "CorruptSnapshot"),
    "CurationTimedOut": ("pi_hermes_memory.errors", "CurationTimedOut"),
    "DatabaseDamaged": ("pi_hermes_memory.errors", "DatabaseDamaged"),
    "DoctorFailed": ("pi_hermes_memory.errors", "DoctorFailed"),
    "DomainError": ("pi_hermes_memory.errors", "DomainError"),
    "EmbeddingFailed": ("pi_hermes_memory.errors", "EmbeddingFailed"),
    "ForeignDatabaseError": ("pi_hermes_memory.errors", "ForeignDatabaseError"),
    "HermesMemoryError": ("pi_hermes_memory.errors", "HermesMemoryError"),
    "InvalidArgument": ("pi_hermes_memory.errors", "InvalidArgument"),
    "InvalidSkillId": ("pi_hermes_memory.errors", "InvalidSkillId"),
    "InvariantViolation": ("pi_hermes_memory.errors", "InvariantViolation"),
    "KnowledgeBusy": ("pi_hermes_memory.errors", "KnowledgeBusy"),
    "KnowledgeNotConfigured": ("pi_hermes_memory.errors", "KnowledgeNotConfigured"),
    "KnowledgeRootRefused": ("pi_hermes_memory.errors", "KnowledgeRootRefused"),
    "LocalEmbedderUnavailable": ("pi_hermes_memory.errors", "LocalEmbedderUnavailable"),
    "LockTimeout": ("pi_hermes_memory.errors", "LockTimeout"),
    "MarkdownChanged": ("pi_hermes_memory.errors", "MarkdownChanged"),
    "MarkdownTooLarge": ("pi_hermes_memory.errors", "MarkdownTooLarge"),
    "MarkdownUnreadable": ("pi_hermes_memory.errors", "MarkdownUnreadable"),
    "RecordError": ("pi_hermes_memory.errors", "RecordError"),
    "ServeFailed": ("pi_hermes_memory.errors", "ServeFailed"),
    "ServerConfigError": ("pi_hermes_memory.errors", "ServerConfigError"),
    "SkillFolderProblem": ("pi_hermes_memory.errors", "SkillFolderProblem"),
    "SkillFormatError": ("pi_hermes_memory.errors", "SkillFormatError"),
    "StaleProgress": ("pi_hermes_memory.errors", "StaleProgress"),
    "StorageFailed": ("pi_hermes_memory.errors", "StorageFailed"),
    "StorageFull": ("pi_hermes_memory.errors", "StorageFull"),
    "StoreBusy": ("pi_hermes_memory.errors", "StoreBusy"),
    "StoreClosed": ("pi_hermes_memory.errors", "StoreClosed"),
    "StoreLayoutConflict": ("pi_hermes_memory.errors", "StoreLayoutConflict"),
    "StoreReadOnly": ("pi_hermes_memory.errors", "StoreReadOnly"),
    "StoreVersionError": ("pi_hermes_memory.errors", "StoreVersionError"),
    "UnsafeBind": ("pi_hermes_memory.errors", "UnsafeBind"),
    "UnusableInput": ("pi_hermes_memory.errors", "UnusableInput"),
    "VersionConflict": ("pi_hermes_memory.errors", "VersionConflict"),
    "WriteRefused": ("pi_hermes_memory.errors", "WriteRefused"),
    "PurgeResult": ("pi_hermes_memory.memory.purging", "PurgeResult"),
    "BatchResult": ("pi_hermes_memory.results", "BatchResult"),
    "CandidateView": ("pi_hermes_memory.results", "CandidateView"),
    "EntryView": ("pi_hermes_memory.results", "EntryView"),
    "WriteResult": ("pi_hermes_memory.results", "WriteResult"),
    "SearchHit": ("pi_hermes_memory.ports.search", "SearchHit"),
    "SearchResult": ("pi_hermes_memory.search.memory_search", "SearchResult"),
    "ToolDefinition": ("pi_hermes_memory.tools.registry", "ToolDefinition"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later accesses skip this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
