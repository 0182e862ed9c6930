"""The values the memory search ports speak (`SearchIndex`, `VectorStore`): a query with its
scope clauses, and a hit. They live with the ports, not with the search service, so an
adapter (or the service) can import them without importing the other (ADR 0056)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Protocol, runtime_checkable

import attrs
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.search.relevance import KEYWORD_FLOOR
from pi_hermes_memory.domain.search.terms import QueryTerms, plan_terms
from pi_hermes_memory.errors import InvalidArgument

__all__ = ["DEFAULT_LIMIT", "Reranker", "ScopeClause", "SearchHit", "SearchQuery"]

#: Hits a search returns unless asked otherwise.
DEFAULT_LIMIT = 10


@attrs.frozen
class ScopeClause:
    """Rows of `target` whose project attribution is one of `projects` (None in the tuple =
    unattributed); `projects=None` means any attribution."""

    target: Target
    projects: tuple[str | None, ...] | None = None
    #: memory/user namespaces the session may read (None in the tuple = the global layer);
    #: None = any namespace (ADR 0014)
    namespaces: tuple[str | None, ...] | None = None

    def admits(self, target: Target, project: str | None, namespace: str | None = None) -> bool:
        return (
            target is self.target
            and (self.projects is None or project in self.projects)
            and (self.namespaces is None or namespace in self.namespaces)
        )


@attrs.frozen(kw_only=True)
class SearchQuery:
    """What a `SearchIndex` must answer: rows matching at least one term of `text`, inside one
    of `clauses`, of `category` (if set), active only unless `include_superseded`; the best
    `limit` by keyword relevance at or above `floor` (ADR 0068), ties: the larger id first."""

    text: str
    clauses: tuple[ScopeClause, ...]
    category: FailureCategory | None = None
    include_superseded: bool = False
    limit: int = DEFAULT_LIMIT
    #: The keyword floor: hits whose keyword relevance (`SearchHit.score`, 0-1) is below it
    #: are dropped; None = `KEYWORD_FLOOR` (issue 27, ADR 0068).
    min_score: float | None = attrs.field(default=None)

    @min_score.validator
    def _check_min_score(self, _: object, value: object) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidArgument(f"min_score must be a number from 0 to 1; got {value!r}")
        if not 0.0 <= value <= 1.0:  # NaN fails too
            raise InvalidArgument(f"min_score must be from 0 to 1; got {value!r}")

    @property
    def terms(self) -> QueryTerms:
        return plan_terms(self.text)

    @property
    def floor(self) -> float:
        """The keyword floor this query applies (`min_score`, else `KEYWORD_FLOOR`)."""
        return KEYWORD_FLOOR if self.min_score is None else self.min_score

    def admits(
        self,
        target: Target,
        project: str | None,
        category: str | None,
        superseded_by: str | None,
        namespace: str | None = None,
    ) -> bool:
        """The scope predicate, for indexes that filter in Python (and for double checks)."""
        if superseded_by is not None and not self.include_superseded:
            return False
        if self.category is not None and category != self.category.value:
            return False
        return any(c.admits(target, project, namespace) for c in self.clauses)


@attrs.frozen(kw_only=True)
class SearchHit:
    id: str
    target: Target
    project: str | None
    category: FailureCategory | None
    text: str
    created: date
    last_referenced: date
    superseded_by: str | None
    superseded_at: date | None
    #: keyword relevance in [0, 1] from a `SearchIndex` (ADR 0068): the share of the query's
    #: meaningful, idf-weighted terms the row holds; higher is better
    score: float
    namespace: str | None = None  # agent:/custom:/user: scope of a memory/user row
    #: ADR 0074: the stable id of the memory this row is a version of, and the version's
    #: number; an index leaves them unset (None: the row's own id, number unknown), the
    #: application fills them from the documents
    memory_id: str | None = None
    version_no: int | None = None


@runtime_checkable
class Reranker(Protocol):
    """A cross-encoder: one relevance score per document, in the documents' order, higher is
    more relevant (0..1 expected; `rerank_mix` clamps). None (or an exception, which
    `safe_rerank` turns into None) means "unavailable": the pipeline falls back to cosine."""

    def rerank(self, query: str, documents: Sequence[str]) -> list[float] | None: ...
