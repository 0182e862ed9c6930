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
