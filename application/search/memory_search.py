"""memory_search: scoped full-text search over the active rows (and, if asked, their history).

The session scope decides which rows a search may return (the seed's rules, ADR 0012):

- `memory` and `user` rows: all of them;
- `project` rows: the current project's only (none without a current project); every
  attributed project with `projectMemorySharing`; unattributed project rows never (they live
  in Markdown only);
- `failure` rows: the current project's and the unattributed (global) ones; all with sharing.

A `target` narrows the search (ADR 0027, the seed's `memory`, `user` or `failure`): `memory`
means the memory the agent works with, the global `memory` rows *and* the visible `project`
rows; `user` and `failure` their own rows; `project` (our extra value) only the project rows.

`SearchService` turns that into `ScopeClause`s, imports hand edits of the searched documents
first (`MemoryService.refresh`, one stat per file when nothing changed) and asks the
`SearchIndex` port (SQLite FTS5, or the in-memory index). The index applies every predicate
itself, before its LIMIT. Searching writes nothing: no `last_referenced` refresh.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from pi_hermes_memory.domain.echo import shown, withheld
from pi_hermes_memory.domain.memory.model import (
    GLOBAL_NAMESPACE,
    FailureCategory,
    MemoryEntry,
    Target,
    namespace_problem,
)
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.terms import MAX_QUERY_TERMS, QueryTerms, plan_terms
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.ports.search import DEFAULT_LIMIT, ScopeClause, SearchHit, SearchQuery

if TYPE_CHECKING:
    from pi_hermes_memory.domain.memory.document import MemoryDocument
    from pi_hermes_memory.memory.service import MemoryService
    from pi_hermes_memory.ports.store import Clock, SearchIndex
    from pi_hermes_memory.search.hybrid import HybridSettings
    from pi_hermes_memory.search.retrieval import Reranker

MAX_LIMIT = 20
#: Characters of each hit's text shown in the model-facing message (results carry all of it).
MESSAGE_TEXT_CHARS = 300


# --- values -----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SearchResult:
    """`status`: ok (hits found), no_results, or invalid_arguments (nothing to search for)."""

    success: bool
    status: Status
    message: str
    hits: tuple[SearchHit, ...] = ()


# --- scope ------------------------------------------------------------------------------------


def search_clauses(
    scope: SessionScope, target: Target | None = None, category: FailureCategory | None = None
) -> tuple[ScopeClause, ...]:
    """The rows a session may search (see the module docstring), narrowed to `target`; a
    category narrows to failures."""
    if target is None:
        wanted = list(Target)
    elif target is Target.MEMORY:
        # the seed's `memory` is the memory the agent works with: the global layer and the
        # current project's layer (ADR 0027); `project` alone narrows to the project layer
        wanted = [Target.MEMORY, Target.PROJECT]
    else:
        wanted = [target]
    if category is not None:
        wanted = [t for t in wanted if t is Target.FAILURE]
    clauses: list[ScopeClause] = []
    for t in wanted:
        if t in (Target.MEMORY, Target.USER):
            readable = tuple(
                None if ns == GLOBAL_NAMESPACE else ns
                for ns in sorted(scope.access)
                if ns == GLOBAL_NAMESPACE or namespace_problem(ns, t) is None
            )
            if readable:
                clauses.append(ScopeClause(t, namespaces=readable))
        elif t is Target.PROJECT:
            if scope.sharing:
                clauses.append(ScopeClause(t))  # unattributed project rows are never indexed
            elif scope.project is not None:
                clauses.append(ScopeClause(t, (scope.project,)))
        elif scope.sharing:
            clauses.append(ScopeClause(t))
        else:
            clauses.append(ScopeClause(t, (scope.project, None) if scope.project else (None,)))
    return tuple(clauses)


# --- the service ------------------------------------------------------------------------------


def check_search_options(
    target: Target | None, category: FailureCategory | None, limit: int
) -> None:
    """Raise ValueError for options that do not fit together (the typed API's validation)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {MAX_LIMIT}; got {shown(limit)}")
    if category is not None and target not in (None, Target.FAILURE):
        raise InvalidArgument(
            "category applies only to failure entries: use target 'failure' or no target"
        )


class SearchService:
    """memory_search. FTS-only without an embedder (or when the query cannot be embedded);
    hybrid (`pi_hermes_memory.search.hybrid`) with one."""

    def __init__(
        self,
        *,
        service: MemoryService,
        index: SearchIndex,
        logger: Any = None,
        clock: Clock | None = None,
        hybrid: HybridSettings | None = None,
        reranker: Reranker | None = None,
        min_score: float | None = None,
    ) -> None:
        self._service = service
        #: `retrieval.minScore`: hits whose shown score is below it are dropped (ADR 0070)
        self._min_score = min_score
        self._index = index
        self._log = logger or library_logger()
        self._clock = clock
        self._hybrid = hybrid
        self._reranker = reranker

    def search(
        self,
        text: str,
        *,
        target: Target | None = None,
        category: FailureCategory | None = None,
        limit: int = DEFAULT_LIMIT,
        include_superseded: bool = False,
    ) -> SearchResult:
        check_search_options(target, category, limit)
        if not isinstance(text, str):
            raise InvalidArgument(f"query must be a string; got {type(text).__name__}")
        if not plan_terms(text):
            return SearchResult(
                success=False,
                status=Status.INVALID_ARGUMENTS,
                message="query has nothing to search for: it must contain at least one word "
                "(letters or digits); punctuation, symbols and emoji are ignored.",
            )
        clauses = search_clauses(self._service.settings.scope, target, category)
        if not clauses:
            why = (
                "this session has no current project"
                if target is Target.PROJECT
                else "this session has no access to any scope of that target"
            )
            return SearchResult(
                success=True, status=Status.NO_RESULTS, message=f"Nothing to search: {why}."
            )
        self._service.refresh({c.target for c in clauses})
        query = SearchQuery(
            text=text,
            clauses=clauses,
            category=category,
            include_superseded=include_superseded,
            limit=limit,
            # one setting: the index's keyword floor and the least shown score (ADR 0068/0070)
            min_score=self._min_score,
        )
        hits = self._ranked(query)
        if self._min_score is not None:
            hits = [h for h in hits if h.score >= self._min_score]
        allowed = [
            h
            for h in hits
            if query.admits(
                h.target,
                h.project,
                h.category.value if h.category else None,
                h.superseded_by,
                h.namespace,
            )
        ]
        if len(allowed) != len(hits):  # an index bug must never leak rows out of scope
            self._log.error("search.out_of_scope_hits", dropped=len(hits) - len(allowed))
        return _result(text, tuple(self._identified(allowed[:limit])))

    def _identified(self, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """`hits` with the stable id and version number of their rows (ADR 0074): as the index
        returned them when it keeps them (ADR 0079), else read from the documents."""
        docs: dict[Target, MemoryDocument] = {}
        history: dict[Target, dict[str, MemoryEntry]] = {}
        out: list[SearchHit] = []
        for hit in hits:
            if hit.memory_id is not None and hit.version_no is not None:
                out.append(hit)  # the index keeps the lineage (SQLite, ADR 0079)
                continue
            doc = docs.get(hit.target)
            if doc is None:
                doc = docs[hit.target] = self._service.current(hit.target)
            entry = doc.index.entry(hit.id)
            if entry is None:
                if hit.target not in history:
                    history[hit.target] = {e.id: e for e in doc.history}
                entry = history[hit.target].get(hit.id)
            if entry is not None:
                hit = attrs.evolve(hit, memory_id=entry.stable_id, version_no=entry.version_no)
            out.append(hit)
        return out

    def _ranked(self, query: SearchQuery) -> list[SearchHit]:
        embeddings = self._service.embeddings
        if embeddings is None:
            return self._index.search(query)
        # hybrid ranking (and its retrieval and relevance modules) loads only with embeddings
        from pi_hermes_memory.search.hybrid import HybridSettings, ranked_hits

        return ranked_hits(
            query,
            index=self._index,
            embeddings=embeddings,
            settings=self._hybrid or HybridSettings(),
            now=(self._clock or self._service.clock).now().date(),
            reranker=self._reranker,
            logger=self._log,
            importance_of=self._importance_lookup(),
        )

    def _importance_lookup(self) -> Callable[[SearchHit], float | None]:
        """A hit's stored importance (ADR 0045); None: not set (the default) or not an active
        row. Each document is read once per search; a lookup is O(1) in its index, which is
        carried from write to write (ADR 0039)."""
        docs: dict[Target, MemoryDocument] = {}

        def importance_of(hit: SearchHit) -> float | None:
            doc = docs.get(hit.target)
            if doc is None:
                doc = docs[hit.target] = self._service.current(hit.target)
            entry = doc.index.entry(hit.id)
            return None if entry is None else entry.importance

        return importance_of


# --- presentation -----------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def hit_line(rank: int, hit: SearchHit) -> str:
    """`[1] (project:web, 2026-07-29) text…` plus a superseded marker."""
    where = hit.target.value + (f":{hit.project}" if hit.project else "")
    if hit.category is not None:
        where += f" {hit.category.value}"
    line = f"[{rank}] ({where}, {hit.created.isoformat()}) {_clip(hit.text, MESSAGE_TEXT_CHARS)}"
    if hit.superseded_by is not None:
        on = f" on {hit.superseded_at.isoformat()}" if hit.superseded_at else ""
        line += f" (superseded by {hit.superseded_by}{on})"
    return line


def _result(text: str, hits: Sequence[SearchHit]) -> SearchResult:
    quoted = withheld(text) or f'"{_clip(text, 80)}"'  # a secret in a query is not echoed
    if not hits:
        return SearchResult(
            success=True,
            status=Status.NO_RESULTS,
            message=f"No memories match {quoted}. Try other or fewer words.",
        )
    noun = "memory matches" if len(hits) == 1 else "memories match"
    lines = [f"{len(hits)} {noun} {quoted} (best first):"]
    lines += [hit_line(i, h) for i, h in enumerate(hits, start=1)]
    return SearchResult(success=True, status=Status.OK, message="\n".join(lines), hits=tuple(hits))


def _rounded(score: float) -> float:
    """Four significant digits: bm25 scores can be tiny (1e-06) and must stay > 0."""
    return float(f"{score:.4g}") if math.isfinite(score) else 0.0


def hit_json(hit: SearchHit) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": hit.memory_id or hit.id,  # the memory's stable id (ADR 0074)
        "version_id": hit.id,
        "target": hit.target.value,
        "project": hit.project,
        "category": hit.category.value if hit.category else None,
        "text": hit.text,
        "created": hit.created.isoformat(),
        "last_referenced": hit.last_referenced.isoformat(),
        "score": _rounded(hit.score),
    }
    if hit.version_no is not None:
        out["version"] = hit.version_no
    if hit.namespace is not None:
        out["scope"] = hit.namespace
    if hit.superseded_by is not None:
        out["superseded_by"] = hit.superseded_by
        out["superseded_at"] = hit.superseded_at.isoformat() if hit.superseded_at else None
    return out


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_QUERY_TERMS",
    "QueryTerms",
    "ScopeClause",
    "SearchHit",
    "SearchQuery",
    "SearchResult",
    "SearchService",
    "plan_terms",
    "search_clauses",
]
