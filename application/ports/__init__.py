"""The ports hub: every Protocol the application needs from the world, and the value types
they speak. Adapters satisfy them structurally (they never inherit); write a custom adapter
against the names exported here and check it with the matching suite in
`pi_hermes_memory.testing`.

- `store`: the journal, storage, Markdown replicas, search index, vectors, session history,
  knowledge base, clock and ids;
- `skills`: skill statistics and governance storage (`SkillTelemetry`);
- `vectors`: the values of the vector ports;
- `read_model`: the read port over the memory rows (`MemoryRows`, ADR 0057);
- the LLM port `Completer` lives beside the LLM facts in `pi_hermes_memory.learning.llm`.
"""

from pi_hermes_memory.learning.llm import (
    Completer,
)
from pi_hermes_memory.ports.read_model import (
    MemoryRow,
    MemoryRows,
    RowChanges,
)
from pi_hermes_memory.ports.skills import (
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
    SkillStatRow,
    SkillTelemetry,
    SkillVisibility,
    UsageFields,
    UsageRecord,
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
    SearchIndex,
    SessionIndex,
    SessionSource,
    Storage,
    UnitOfWork,
    VectorStore,
)
from pi_hermes_memory.ports.vectors import (
    EmbeddingKind,
    ReembedProgress,
    ReembedReport,
    VectorScope,
)

__all__ = [
    "UNCHECKED",
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
    "GovernanceRecord",
    "IdFactory",
    "JobLease",
    "JobState",
    "Journal",
    "KnowledgeIndex",
    "KnowledgeSource",
    "MarkdownStore",
    "MemoryRow",
    "MemoryRows",
    "PolicyOverrides",
    "Projection",
    "ReembedProgress",
    "ReembedReport",
    "RefusalReason",
    "RenderLedger",
    "RowChanges",
    "SearchIndex",
    "SessionIndex",
    "SessionSource",
    "SkillStatRow",
    "SkillTelemetry",
    "SkillVisibility",
    "Storage",
    "UnitOfWork",
    "UsageFields",
    "UsageRecord",
    "VectorScope",
    "VectorStore",
]
