"""Contract suites that every adapter must pass (in-memory, SQLite/Markdown, or your own).

Usage in your test suite::

    import pytest
    from pi_hermes_memory.testing import StorageContract

    class TestMyStorage(StorageContract):
        @pytest.fixture
        def storage(self):
            s = MyStorage(...)
            yield s
            s.close()

pytest collects the inherited ``test_*`` methods. Requires pytest.
"""

from pi_hermes_memory.testing.classifier_contracts import SkillClassifierContract
from pi_hermes_memory.testing.contracts import (
    KeywordRelevanceContract,
    MarkdownStoreContract,
    SearchIndexContract,
    StorageContract,
)
from pi_hermes_memory.testing.format_contracts import DocumentFormatContract
from pi_hermes_memory.testing.knowledge_contracts import (
    KnowledgeIndexContract,
    KnowledgeSourceContract,
)
from pi_hermes_memory.testing.provider_contracts import (
    CompleterContract,
    EmbedderContract,
    RerankerContract,
)
from pi_hermes_memory.testing.read_model_contracts import MemoryRowsContract
from pi_hermes_memory.testing.replica_contracts import SharedJournalContract
from pi_hermes_memory.testing.replicas_port_contracts import ReplicasContract
from pi_hermes_memory.testing.session_contracts import SessionIndexContract
from pi_hermes_memory.testing.skill_contracts import SkillTelemetryContract
from pi_hermes_memory.testing.source_contracts import SessionSourceContract
from pi_hermes_memory.testing.system_contracts import ClockContract, IdFactoryContract
from pi_hermes_memory.testing.vector_contracts import (
    VectorBackgroundContract,
    VectorStoreContract,
)

__all__ = [
    "ClockContract",
    "CompleterContract",
    "DocumentFormatContract",
    "EmbedderContract",
    "IdFactoryContract",
    "KeywordRelevanceContract",
    "KnowledgeIndexContract",
    "KnowledgeSourceContract",
    "MarkdownStoreContract",
    "MemoryRowsContract",
    "ReplicasContract",
    "RerankerContract",
    "SearchIndexContract",
    "SessionIndexContract",
    "SessionSourceContract",
    "SharedJournalContract",
    "SkillClassifierContract",
    "SkillTelemetryContract",
    "StorageContract",
    "VectorBackgroundContract",
    "VectorStoreContract",
]
