"""pi-hermes-memory: durable, searchable, self-maintaining long-term memory for LLM agents.

    import pi_hermes_memory
    with pi_hermes_memory.open(project="my-app") as memory:
        memory.add("The test command is `make test`", target="project")

Importing this package is light: storage modules load when `open` is called.
"""

from __future__ import annotations

from pi_hermes_memory.api import Memory
from pi_hermes_memory.bootstrap import open_memory as open
from pi_hermes_memory.bootstrap import recover
from pi_hermes_memory.config import ConfigError
from pi_hermes_memory.domain.model import FailureCategory, Target
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import (
    CompletionFailed,
    CorruptData,
    DatabaseDamaged,
    DomainError,
    EmbeddingFailed,
    HermesMemoryError,
    InvalidArgument,
    MarkdownChanged,
    MarkdownTooLarge,
    MarkdownUnreadable,
    StorageFailed,
    StorageFull,
    StoreBusy,
    StoreLayoutConflict,
    StoreReadOnly,
    StoreVersionError,
)
from pi_hermes_memory.purging import PurgeResult
from pi_hermes_memory.results import BatchResult, CandidateView, EntryView, WriteResult
from pi_hermes_memory.search import SearchHit, SearchResult
from pi_hermes_memory.tools import ToolDefinition

__version__ = "0.1.0"
__all__ = [
    "BatchResult",
    "CandidateView",
    "CompletionFailed",
    "ConfigError",
    "CorruptData",
    "DatabaseDamaged",
    "DomainError",
    "EmbeddingFailed",
    "EntryView",
    "FailureCategory",
    "HermesMemoryError",
    "InvalidArgument",
    "MarkdownChanged",
    "MarkdownTooLarge",
    "MarkdownUnreadable",
    "Memory",
    "PurgeResult",
    "SearchHit",
    "SearchResult",
    "Status",
    "StorageFailed",
    "StorageFull",
    "StoreBusy",
    "StoreLayoutConflict",
    "StoreReadOnly",
    "StoreVersionError",
    "Target",
    "ToolDefinition",
    "WriteResult",
    "__version__",
    "open",
    "recover",
]
