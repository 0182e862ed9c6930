"""Values shared by the embedding service and the vector stores (ADR 0015). No numpy here.

`VectorScope` is the scope predicate of a search (clauses, category, active or history) without
the query text: vector look-ups, backfill and the vector ranking never cross it. The reports
are what `Memory.reembed` and the search-time backfill return.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.ports.search import ScopeClause, SearchQuery

#: What a text is embedded as: a search query, or a stored passage (task-aware models differ).
EmbeddingKind = Literal["query", "passage"]

#: The search-time backfill embeds at most this many in-scope rows per search.
BACKFILL_LIMIT: Final = 16
#: Rows per request of the bulk `reembed` job.
REEMBED_BATCH: Final = 64
#: The bulk job gives up after this many failed batches in a row (the provider is down).
REEMBED_MAX_CONSECUTIVE_FAILURES: Final = 3


@attrs.frozen(kw_only=True)
class VectorScope:
    """Rows inside one of `clauses`, of `category` (if set), active unless
    `include_superseded`: the same predicate as `SearchQuery.admits`."""

    clauses: tuple[ScopeClause, ...]
    category: FailureCategory | None = None
    include_superseded: bool = False

    @classmethod
    def of(cls, query: SearchQuery) -> VectorScope:
        return cls(
            clauses=query.clauses,
            category=query.category,
            include_superseded=query.include_superseded,
        )

    @classmethod
    def everything(cls) -> VectorScope:
        """Every row of the mirror, history included (the bulk job's scope)."""
        return cls(clauses=tuple(ScopeClause(t) for t in Target), include_superseded=True)

    def as_query(self, text: str = "") -> SearchQuery:
        """The same predicate as a `SearchQuery` (for adapters that reuse their scope SQL)."""
        return SearchQuery(
            text=text,
            clauses=self.clauses,
            category=self.category,
            include_superseded=self.include_superseded,
        )

    def admits(
        self,
        target: Target,
        project: str | None,
        category: str | None,
        superseded_by: str | None,
        namespace: str | None = None,
    ) -> bool:
        return self.as_query().admits(target, project, category, superseded_by, namespace)


@attrs.frozen(kw_only=True)
class ReembedProgress:
    """Where the bulk job stands, after each batch."""

    done: int
    total: int
    embedded: int
    failed: int
    seconds: float

    @property
    def rate(self) -> float:
        """Rows per second so far."""
        return self.done / self.seconds if self.seconds > 0 else 0.0


@attrs.frozen(kw_only=True)
class ReembedReport:
    """What `Memory.reembed` did. `stopped` says why the job ended early (None: it ran to the
    end). `total`: rows the job set out to embed; `failed`: rows left without a vector."""

    model_id: str
    total: int
    embedded: int
    failed: int
    batches: int
    seconds: float
    everything: bool = False
    stopped: str | None = None

    @property
    def success(self) -> bool:
        return self.failed == 0 and self.stopped is None

    @property
    def rate(self) -> float:
        done = self.embedded + self.failed
        return done / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "model": self.model_id,
            "total": self.total,
            "embedded": self.embedded,
            "failed": self.failed,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rate, 1),
            "all": self.everything,
            "stopped": self.stopped,
        }


__all__ = [
    "BACKFILL_LIMIT",
    "REEMBED_BATCH",
    "EmbeddingKind",
    "ReembedProgress",
    "ReembedReport",
    "VectorScope",
]
