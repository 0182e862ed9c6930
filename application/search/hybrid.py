"""Hybrid memory_search: the FTS ranking and the cosine ranking fused, then the scoring stages.

`SearchService` calls `hybrid_hits` when an embedder is configured and the query could be
embedded; otherwise the search is FTS-only and returns the index's ranking unchanged (so a
provider failure degrades to exactly the results search gives with embeddings off).

The flow (ADR 0018, ADR 0019):

1. the FTS hits (the index's best `max(limit, fts_depth)` rows, scope applied in SQL) and the
   cosine ranking of the in-scope candidate matrix (`depth` best rows; the matrix holds
   in-scope rows only);
2. weighted RRF (`Fusion`), the dense weight and MMR threshold chosen per embedder
   (`EmbedderProfile`; benchmarked models in `BENCHMARKED_PROFILES`, any other model gets
   `HybridSettings.fusion` and `.pipeline`);
3. the rows only the cosine ranking found are read through `SearchIndex.rows`, which applies
   the query's scope predicate again;
4. when FTS found nothing, only rows whose cosine reaches the embedder's relevance floor
   (`EmbedderProfile.min_cosine`, `HybridSettings.min_cosine`; ADR 0027) take part, so an
   unrelated query answers nothing;
5. the scoring `Pipeline` (rerank only when a reranker is configured, then recency,
   importance, length, time decay, hard minimum, MMR);
6. the best `limit` rows, with the pipeline's score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, Final

import attrs
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.ports.vectors import BACKFILL_LIMIT, VectorScope
from pi_hermes_memory.search.retrieval import (
    MMR_THRESHOLD,
    Fusion,
    Pipeline,
    Reranker,
    Stage,
    build_candidates,
    gate,
    safe_rerank,
    top_scores,
)

if TYPE_CHECKING:
    from pi_hermes_memory.ports.search import SearchHit, SearchQuery
    from pi_hermes_memory.ports.store import SearchIndex
    from pi_hermes_memory.search.embedding import EmbeddingService, SearchVectors

#: Rows each ranking contributes to the fusion, and candidates that enter the pipeline.
FUSION_DEPTH: Final = 50
#: Candidates sent to the reranker (the best by fused score).
RERANK_TOP_N: Final = 20
#: Dense weight for an embedder the retrieval benchmark has not measured: half the FTS
#: ranking's, so a row found by cosine only enters below the FTS rows of twice its rank
#: (ADR 0019).
DEFAULT_DENSE_WEIGHT: Final = 0.5


def _depth(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"{attribute.name} must be an integer >= 1; got {value!r}")


def _unit(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidArgument(f"{attribute.name} must be a number from 0 to 1; got {value!r}")


def _optional_unit(_: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None:
        _unit(_, attribute, value)


@attrs.frozen(kw_only=True)
class EmbedderProfile:
    """What the retrieval benchmark measured for one embedder: the largest dense weight that
    never scores below FTS-only (overall and per category), and the MMR threshold that fits
    its cosine scale (e5-style models give unrelated text ≈ 0.7–0.8, so the seed's 0.85
    would treat most rows as near-copies)."""

    dense_weight: float = attrs.field(validator=_unit)
    mmr_threshold: float = attrs.field(default=MMR_THRESHOLD, validator=_unit)
    #: the relevance floor: when no query word matches any row, a row takes part only with
    #: at least this cosine; None = no floor (ADR 0027)
    min_cosine: float | None = attrs.field(default=None, validator=_optional_unit)


#: Benchmarked embedders by model id (the part before an "@version" suffix also matches).
#: ADR 0019 holds the table they come from.
BENCHMARKED_PROFILES: Final[Mapping[str, EmbedderProfile]] = {
    "local/multilingual-e5-small-q4": EmbedderProfile(
        dense_weight=1.0, mmr_threshold=0.95, min_cosine=0.86
    ),
}


@attrs.frozen(kw_only=True)
class HybridSettings:
    """How memory_search combines FTS and vectors when an embedder is configured.

    `fusion` and `pipeline` apply to embedders without a profile; a profile replaces the
    fusion's dense weight and the pipeline's MMR threshold (`fusion_for`, `pipeline_for`)."""

    fusion: Fusion = attrs.field(factory=lambda: Fusion(dense_weight=DEFAULT_DENSE_WEIGHT))
    profiles: Mapping[str, EmbedderProfile] = attrs.field(
        factory=lambda: dict(BENCHMARKED_PROFILES)
    )
    depth: int = attrs.field(default=FUSION_DEPTH, validator=_depth)
    #: FTS rows that take part: None = the search's limit (rows past it only reach the
    #: results through the cosine ranking). Deeper costs: at 100k rows an FTS query past its
    #: first tier reads every row matching any term (ADR 0019).
    fts_depth: int | None = attrs.field(default=None)

    @fts_depth.validator
    def _check_fts_depth(self, attribute: attrs.Attribute[Any], value: int | None) -> None:
        if value is not None:
            _depth(self, attribute, value)

    pipeline: Pipeline = attrs.field(factory=Pipeline)
    rerank_top_n: int = attrs.field(default=RERANK_TOP_N, validator=_depth)
    #: the relevance floor for embedders without a profile (`retrieval.minCosine`); None =
    #: none, since a floor depends on the model's cosine scale (ADR 0027)
    min_cosine: float | None = attrs.field(default=None, validator=_optional_unit)

    def floor_for(self, model_id: str) -> float | None:
        """The least cosine a row needs when the query matches no row through FTS (see
        `hybrid_hits`)."""
        profile = self.profile(model_id)
        return self.min_cosine if profile is None else profile.min_cosine

    def profile(self, model_id: str) -> EmbedderProfile | None:
        found = self.profiles.get(model_id)
        return found if found is not None else self.profiles.get(model_id.split("@", 1)[0])

    def fusion_for(self, model_id: str) -> Fusion:
        """The fusion for the embedder `model_id` (see `gate`)."""
        profile = self.profile(model_id)
        weights = None if profile is None else {model_id: profile.dense_weight}
        return gate(self.fusion, model_id, weights)

    def pipeline_for(self, model_id: str) -> Pipeline:
        profile = self.profile(model_id)
        if profile is None:
            return self.pipeline
        return attrs.evolve(self.pipeline, mmr_threshold=profile.mmr_threshold)


def ranked_hits(
    query: SearchQuery,
    *,
    index: SearchIndex,
    embeddings: EmbeddingService,
    settings: HybridSettings,
    now: date,
    reranker: Reranker | None = None,
    logger: Any = None,
    backfill: int = BACKFILL_LIMIT,
    importance_of: Callable[[SearchHit], float | None] | None = None,
) -> list[SearchHit]:
    """memory_search's ranking with embeddings on: the index's own when the query cannot be
    embedded or no in-scope row has a vector (FTS-only: exactly what search gives with
    embeddings off); otherwise `hybrid_hits`. `backfill`: in-scope rows lacking a vector to
    embed first."""
    fts_limit = max(query.limit, settings.fts_depth or 0)
    fts_hits = index.search(attrs.evolve(query, limit=fts_limit))
    scope = VectorScope.of(query)
    vectors = embeddings.search_vectors(scope, query.text, backfill=backfill)
    if vectors is None or not vectors.ids:
        return fts_hits[: query.limit]
    return hybrid_hits(
        query,
        fts_hits,
        vectors,
        index=index,
        model_id=embeddings.model_id,
        settings=settings,
        now=now,
        reranker=reranker,
        logger=logger,
        importance_of=importance_of,
    )


def hybrid_hits(
    query: SearchQuery,
    fts_hits: Sequence[SearchHit],
    vectors: SearchVectors,
    *,
    index: SearchIndex,
    model_id: str,
    settings: HybridSettings,
    now: date,
    reranker: Reranker | None = None,
    logger: Any = None,
    importance_of: Callable[[SearchHit], float | None] | None = None,
) -> list[SearchHit]:
    """The best `query.limit` rows of the fused and scored rankings (see the module).
    `importance_of`: a row's stored importance (ADR 0045), None for the default."""
    import numpy as np

    scores = np.clip(vectors.cosines(), -1.0, 1.0)  # one pass over the candidate matrix
    dense = top_scores(vectors.ids, scores, limit=settings.depth)
    fusion = settings.fusion_for(model_id)
    floor = settings.floor_for(model_id)
    if floor is not None and not fts_hits:
        # No query word matched any row: only a cosine above what unrelated queries reach
        # makes a row relevant. Without the floor every query answers with the nearest rows,
        # however unrelated (ADR 0027: measured, this gate costs no recall, while a floor on
        # every cosine-only row also cut rows that questions sharing a word still needed).
        dense = [(item, score) for item, score in dense if score >= floor]
        if not dense:
            return []
    fused = fusion.fuse([h.id for h in fts_hits], dense)[: settings.depth]
    rows: dict[str, SearchHit] = {h.id: h for h in fts_hits}
    wanted = [item for item, _ in fused if item not in rows]
    if wanted:
        rows.update((h.id, h) for h in index.rows(wanted, query))
    positions = vectors.positions()
    cosines: dict[str, float] = {}
    row_vectors: dict[str, Any] = {}
    for item, _ in fused:
        at = positions.get(item)
        if at is not None:
            cosines[item] = float(scores[at])
            row_vectors[item] = vectors.matrix[at]
    pipeline = settings.pipeline_for(model_id)
    weights: dict[str, float] | None = None
    if importance_of is not None:
        weights = {}
        for item, _ in fused:
            row = rows.get(item)
            weight = None if row is None else importance_of(row)
            if weight is not None:
                weights[item] = weight
    candidates = build_candidates(
        fused,
        rows,
        cosines=cosines,
        importance=weights,
        default_importance=pipeline.default_importance,
    )
    rerank_scores = None
    if pipeline.enabled(Stage.RERANK):
        if reranker is None:
            pipeline = pipeline.without(Stage.RERANK)  # no reranker configured: no cosine mix
        else:
            rerank_scores = safe_rerank(
                reranker, query.text, candidates, top_n=settings.rerank_top_n, logger=logger
            )
    ranked = pipeline.run(candidates, now=now, rerank_scores=rerank_scores, vectors=row_vectors)
    return [attrs.evolve(rows[c.id], score=c.score) for c in ranked[: query.limit]]


__all__ = [
    "BENCHMARKED_PROFILES",
    "DEFAULT_DENSE_WEIGHT",
    "FUSION_DEPTH",
    "RERANK_TOP_N",
    "EmbedderProfile",
    "HybridSettings",
    "hybrid_hits",
    "ranked_hits",
]
