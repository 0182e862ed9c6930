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

The value types live here, not in the services that use them, so that an adapter or a
service imports the ports without importing another service, and the ports import nothing
but the domain and `pi_hermes_memory.errors` (ADR 0056; `tests/unit/test_ports_hub.py`).
"""

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
    Replicas,
    SearchIndex,
    SessionIndex,
    SessionSource,
    Storage,
    UnitOfWork,
    VectorStore,
)
from pi_hermes_memory.ports.vectors import (
    BACKFILL_LIMIT,
    REEMBED_BATCH,
    EmbeddingKind,
    ReembedProgress,
    ReembedReport,
    VectorScope,
)

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
    "FileChunks",
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
    "MemoryRow",
    "MemoryRows",
    "PolicyOverrides",
    "Projection",
    "RebuildReport",
    "ReembedProgress",
    "ReembedReport",
    "RefusalReason",
    "RenderLedger",
    "Replicas",
    "Reranker",
    "RowChanges",
    "ScopeClause",
    "ScrubReport",
    "SearchHit",
    "SearchIndex",
    "SearchQuery",
    "SessionHit",
    "SessionIndex",
    "SessionInfo",
    "SessionQuery",
    "SessionSource",
    "SkillClassifier",
    "SkillStatRow",
    "SkillTelemetry",
    "SkillVisibility",
    "SourceFile",
    "Storage",
    "TargetRepair",
    "Turn",
    "UnitOfWork",
    "UsageFields",
    "UsageRecord",
    "VectorScope",
    "VectorStore",
    "aware",
    "since_day",
]
