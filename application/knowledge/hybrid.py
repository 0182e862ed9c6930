"""knowledge_search with embeddings on: the FTS ranking and the cosine ranking of the chunk
vectors fused by memory_search's weighted RRF (ADR 0048, reusing ADR 0018/0019/0027).

The same gating as memory_search: the query is embedded (kind "query"); when that fails or no
chunk has a vector the answer is the FTS ranking unchanged; the dense weight and the relevance
floor come from `HybridSettings` for the embedder (`fusion_for`, `floor_for`), and the floor
applies when no query word matched any chunk. The memory-only scoring stages (recency,
importance, decay) have no meaning for documents and are not run; the score is the fused one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
from pi_hermes_memory.search.retrieval import top_scores

if TYPE_CHECKING:
    from pi_hermes_memory.ports.knowledge import KnowledgeHit, KnowledgeQuery
    from pi_hermes_memory.ports.store import KnowledgeIndex
    from pi_hermes_memory.search.embedding import EmbeddingService
    from pi_hermes_memory.search.hybrid import HybridSettings


def hybrid_knowledge_hits(
    query: KnowledgeQuery,
    *,
    index: KnowledgeIndex,
    embeddings: EmbeddingService,
    settings: HybridSettings,
) -> list[KnowledgeHit]:
    import numpy as np

    depth = max(query.limit, settings.depth)
    fts_hits = index.search(attrs.evolve(query, limit=depth))
    ids, matrix = index.vectors(embeddings.model_id)
    vector = embeddings.query_vector(query.text) if ids else None
    if vector is None:
        return fts_hits[: query.limit]
    scores = np.clip(matrix @ vector, -1.0, 1.0)
    keys = [str(i) for i in ids]
    dense = top_scores(keys, scores, limit=depth)
    floor = settings.floor_for(embeddings.model_id)
    if floor is not None and not fts_hits:
        dense = [(item, score) for item, score in dense if score >= floor]
        if not dense:
            return []
    fusion = settings.fusion_for(embeddings.model_id)
    fused = fusion.fuse([str(h.chunk_id) for h in fts_hits], dense)[:depth]
    rows = {str(h.chunk_id): h for h in fts_hits}
    wanted = [int(item) for item, _ in fused if item not in rows]
    if wanted:  # the path filter applies again to rows only the cosine ranking found
        rows.update((str(h.chunk_id), h) for h in index.hits(wanted, query))
    ranked = [attrs.evolve(rows[item], score=score) for item, score in fused if item in rows]
    return ranked[: query.limit]


__all__ = ["hybrid_knowledge_hits"]
