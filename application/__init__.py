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
from pi_hermes_memory.domain.model import FailureCategory, Target
from pi_hermes_memory.errors import (
    DatabaseDamaged,
    HermesMemoryError,
    MarkdownUnreadable,
    StorageFailed,
    StorageFull,
    StoreReadOnly,
)
from pi_hermes_memory.purging import PurgeResult
from pi_hermes_memory.results import BatchResult, CandidateView, EntryView, WriteResult
from pi_hermes_memory.search import SearchHit, SearchResult
from pi_hermes_memory.tools import ToolDefinition

__version__ = "0.1.0"
__all__ = [
    "BatchResult",
    "CandidateView",
    "DatabaseDamaged",
    "EntryView",
    "FailureCategory",
    "HermesMemoryError",
    "MarkdownUnreadable",
    "Memory",
    "PurgeResult",
    "SearchHit",
    "SearchResult",
    "StorageFailed",
    "StorageFull",
    "StoreReadOnly",
    "Target",
    "ToolDefinition",
    "WriteResult",
    "__version__",
    "open",
    "recover",
]
