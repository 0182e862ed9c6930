"""The ports hub: every Protocol the application needs from the world, and the value types
they speak. Adapters satisfy them structurally (they never inherit); write a custom adapter
against the names exported here and check it with the matching suite in
`pi_hermes_memory.testing`.

- `store`: the journal, storage, Markdown replicas, search index, vectors, session history,
  knowledge base, clock and ids;
- `read_model`: the read port over the memory rows (`MemoryRows`, ADR 0057);
- `skills`: skill statistics and governance storage (`SkillTelemetry`) and their values;
- `llm`: the LLM port `Completer`;
- `search`, `history`, `knowledge`, `memory`, `vectors`: the values those ports speak
  (queries, hits, reports).

The domain values these ports speak (`Target`, `MemoryEntry`, `Event`, `SessionFile`, …) are
re-exported too, so an adapter imports everything it needs from this one module.

The value types live here, not in the services that use them, so that an adapter or a
service imports the ports without importing another service, and the ports import nothing
but the domain and `pi_hermes_memory.errors` (ADR 0056; `tests/unit/test_ports_hub.py`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_hermes_memory.domain.history.transcripts import (
        FileProgress,
        MessageLine,
        SessionChunk,
        SessionFile,
    )
    from pi_hermes_memory.domain.memory.document import MemoryDocument
    from pi_hermes_memory.domain.memory.events import Event
    from pi_hermes_memory.domain.memory.markdown_doc import ParsedDocument, VersionLine
    from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryEntry, Target
    from pi_hermes_memory.domain.skills.promotion import (
        Classification,
        PromotionPolicy,
        UsageEvidence,
    )
    from pi_hermes_memory.domain.skills.skill import SkillState
    from pi_hermes_memory.ports.history import (
        DEFAULT_SESSIONS,
        MATCHES_PER_SESSION,
        WINDOW_TURNS,
        AnchorLine,
        AnchorQuery,
        IndexCounts,
        SessionHit,
        SessionInfo,
        SessionQuery,
        Turn,
    )
    from pi_hermes_memory.ports.knowledge import (
        DEFAULT_KNOWLEDGE_LIMIT,
        FileChunks,
        KnowledgeHit,
        KnowledgeQuery,
        KnownFile,
        SourceFile,
    )
    from pi_hermes_memory.ports.llm import (
        Completer,
    )
    from pi_hermes_memory.ports.memory import (
        RebuildReport,
        ScrubReport,
        TargetRepair,
    )
    from pi_hermes_memory.ports.read_model import (
        MemoryRow,
        MemoryRows,
        RowChanges,
    )
    from pi_hermes_memory.ports.search import (
        DEFAULT_LIMIT,
        Reranker,
        ScopeClause,
        SearchHit,
        SearchQuery,
    )
    from pi_hermes_memory.ports.skills import (
        ACTIVE_JOB_STATES,
        CLEANUP_INTERVAL,
        FINISHED_JOB_STATES,
        STALE_REASON,
        CleanupReport,
        CurationJob,
        CurationKind,
        CurationLimits,
        CurationRefusal,
        CurationStatus,
        GovernanceRecord,
        JobLease,
        JobState,
        PolicyOverrides,
        RefusalReason,
        SkillClassifier,
        SkillStatRow,
        SkillTelemetry,
        SkillVisibility,
        UsageFields,
        UsageRecord,
        aware,
        since_day,
    )
    from pi_hermes_memory.ports.store import (
        UNCHECKED,
        AppendingMarkdown,
        Clock,
        DocumentFormat,
        Embedder,
        IdFactory,
        Journal,
        KnowledgeIndex,
        KnowledgeSource,
        MarkdownStore,
        Projection,
        RenderLedger,
        ReplicaProofs,
        Replicas,
        SearchIndex,
        SessionIndex,
        SessionSource,
        Storage,
        UnitOfWork,
        VectorStore,
        WriteIndex,
    )
    from pi_hermes_memory.ports.vectors import (
        BACKFILL_LIMIT,
        REEMBED_BATCH,
        EmbeddingKind,
        ReembedProgress,
        ReembedReport,
        VectorScope,
    )

#: where each name lives: the hub imports a module on the first use of one of its names, so
#: importing one ports module (or the hub) does not load every port and the domain behind it
#: (issue 29, ADR 0080)
_MODULES: dict[str, tuple[str, ...]] = {
    "pi_hermes_memory.domain.history.transcripts": (
        "FileProgress",
        "MessageLine",
        "SessionChunk",
        "SessionFile",
    ),
    "pi_hermes_memory.domain.memory.document": ("MemoryDocument",),
    "pi_hermes_memory.domain.memory.events": ("Event",),
    "pi_hermes_memory.domain.memory.markdown_doc": (
        "ParsedDocument",
        "VersionLine",
    ),
    "pi_hermes_memory.domain.memory.model": (
        "FailureCategory",
        "MemoryEntry",
        "Target",
    ),
    "pi_hermes_memory.domain.skills.promotion": (
        "Classification",
        "PromotionPolicy",
        "UsageEvidence",
    ),
    "pi_hermes_memory.domain.skills.skill": ("SkillState",),
    "pi_hermes_memory.ports.history": (
        "DEFAULT_SESSIONS",
        "MATCHES_PER_SESSION",
        "WINDOW_TURNS",
        "AnchorLine",
        "AnchorQuery",
        "IndexCounts",
        "SessionHit",
        "SessionInfo",
        "SessionQuery",
        "Turn",
    ),
    "pi_hermes_memory.ports.knowledge": (
        "DEFAULT_KNOWLEDGE_LIMIT",
        "FileChunks",
        "KnowledgeHit",
        "KnowledgeQuery",
        "KnownFile",
        "SourceFile",
    ),
    "pi_hermes_memory.ports.llm": ("Completer",),
    "pi_hermes_memory.ports.memory": (
        "RebuildReport",
        "ScrubReport",
        "TargetRepair",
    ),
    "pi_hermes_memory.ports.read_model": (
        "MemoryRow",
        "MemoryRows",
        "RowChanges",
    ),
    "pi_hermes_memory.ports.search": (
        "DEFAULT_LIMIT",
        "Reranker",
        "ScopeClause",
        "SearchHit",
        "SearchQuery",
    ),
    "pi_hermes_memory.ports.skills": (
        "ACTIVE_JOB_STATES",
        "CLEANUP_INTERVAL",
        "FINISHED_JOB_STATES",
        "STALE_REASON",
        "CleanupReport",
        "CurationJob",
        "CurationKind",
        "CurationLimits",
        "CurationRefusal",
        "CurationStatus",
        "GovernanceRecord",
        "JobLease",
        "JobState",
        "PolicyOverrides",
        "RefusalReason",
        "SkillClassifier",
        "SkillStatRow",
        "SkillTelemetry",
        "SkillVisibility",
        "UsageFields",
        "UsageRecord",
        "aware",
        "since_day",
    ),
    "pi_hermes_memory.ports.store": (
        "UNCHECKED",
        "AppendingMarkdown",
        "Clock",
        "DocumentFormat",
        "Embedder",
        "IdFactory",
        "Journal",
        "KnowledgeIndex",
        "KnowledgeSource",
        "MarkdownStore",
        "Projection",
        "RenderLedger",
        "ReplicaProofs",
        "Replicas",
        "SearchIndex",
        "SessionIndex",
        "SessionSource",
        "Storage",
        "UnitOfWork",
        "VectorStore",
        "WriteIndex",
    ),
    "pi_hermes_memory.ports.vectors": (
        "BACKFILL_LIMIT",
        "REEMBED_BATCH",
        "EmbeddingKind",
        "ReembedProgress",
        "ReembedReport",
        "VectorScope",
    ),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ACTIVE_JOB_STATES",
    "BACKFILL_LIMIT",
    "CLEANUP_INTERVAL",
    "DEFAULT_KNOWLEDGE_LIMIT",
    "DEFAULT_LIMIT",
    "DEFAULT_SESSIONS",
    "FINISHED_JOB_STATES",
    "MATCHES_PER_SESSION",
    "REEMBED_BATCH",
    "STALE_REASON",
    "UNCHECKED",
    "WINDOW_TURNS",
    "AnchorLine",
    "AnchorQuery",
    "AppendingMarkdown",
    "Classification",
    "CleanupReport",
    "Clock",
    "Completer",
    "CurationJob",
    "CurationKind",
    "CurationLimits",
    "CurationRefusal",
    "CurationStatus",
    "DocumentFormat",
    "Embedder",
    "EmbeddingKind",
    "Event",
    "FailureCategory",
    "FileChunks",
    "FileProgress",
    "GovernanceRecord",
    "IdFactory",
    "IndexCounts",
    "JobLease",
    "JobState",
    "Journal",
    "KnowledgeHit",
    "KnowledgeIndex",
    "KnowledgeQuery",
    "KnowledgeSource",
    "KnownFile",
    "MarkdownStore",
    "MemoryDocument",
    "MemoryEntry",
    "MemoryRow",
    "MemoryRows",
    "MessageLine",
    "ParsedDocument",
    "PolicyOverrides",
    "Projection",
    "PromotionPolicy",
    "RebuildReport",
    "ReembedProgress",
    "ReembedReport",
    "RefusalReason",
    "RenderLedger",
    "ReplicaProofs",
    "Replicas",
    "Reranker",
    "RowChanges",
    "ScopeClause",
    "ScrubReport",
    "SearchHit",
    "SearchIndex",
    "SearchQuery",
    "SessionChunk",
    "SessionFile",
    "SessionHit",
    "SessionIndex",
    "SessionInfo",
    "SessionQuery",
    "SessionSource",
    "SkillClassifier",
    "SkillStatRow",
    "SkillState",
    "SkillTelemetry",
    "SkillVisibility",
    "SourceFile",
    "Storage",
    "Target",
    "TargetRepair",
    "Turn",
    "UnitOfWork",
    "UsageEvidence",
    "UsageFields",
    "UsageRecord",
    "VectorScope",
    "VectorStore",
    "VersionLine",
    "WriteIndex",
    "aware",
    "since_day",
]
