"""Hybrid memory_search: FTS hits and cosine hits that passed a relevance floor, one score.

`SearchService` calls `hybrid_hits` when an embedder is configured and the query could be
embedded; otherwise the search is FTS-only and returns the index's ranking unchanged (so a
provider failure degrades to exactly the results search gives with embeddings off).

The flow (ADR 0018, ADR 0019, ADR 0069):

1. the FTS hits (the index's best `max(limit, fts_depth)` rows, scope applied in SQL): each
   carries a keyword relevance in [0, 1] and has passed the keyword floor (the score
   contract of issue 27);
2. the cosine of every in-scope row with the query and with the background's centroid (one
   matrix product), turned into a dense relevance in [0, 1] by the query's background
   calibration (`domain/search/background.py`: a row must be clearly closer to the query than
   generic text is, hubness-corrected by default, ADR 0072; `dense_relevance`), or by the
   explicit `retrieval.minCosine` when configured; the `depth` best rows above 0 pass the
   dense floor;
3. candidates = the rows that passed at least one floor; each scores `fused_score`: its two
   relevances weighted (`bm25Weight` / `vectorWeight`, each divided by the larger, ADR 0072),
   the larger plus `both_bonus` times the smaller. Rank fusion (RRF) is no longer used here:
   its number says where a row ranked, not whether it is relevant (ADR 0069 has the
   measurement);
4. the rows only the cosine ranking found are read through `SearchIndex.rows`, which applies
   the query's scope predicate again;
5. the scoring `Pipeline` (rerank only when a reranker is configured, then recency,
   importance, length, time decay, hard minimum (on the rows only the dense floor admitted),
   MMR);
6. the best `limit` rows, each shown with its pipeline score clipped to [0, 1] and never above
   the row before it (`shown_scores`): best first by the shown score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, Final, overload

import attrs
from pi_hermes_memory.domain.search.background import (
    CSLS_FLOOR,
    CSLS_FULL,
    METHODS,
    Z_FLOOR,
    Z_FULL,
    Calibration,
)
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.ports.vectors import BACKFILL_LIMIT, VectorScope
from pi_hermes_memory.search.retrieval import (
    MMR_THRESHOLD,
    Candidate,
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
#: Dense weight for an embedder the retrieval benchmark has not measured: the FTS ranking's.
#: The calibrated dense relevance does not depend on the model's cosine scale, so an unmeasured
#: model needs no discount (ADR 0072; it was 0.5 while fusion was rank-based, ADR 0019).
DEFAULT_DENSE_WEIGHT: Final = 1.0
#: A candidate found by both FTS and the cosine ranking scores its larger relevance plus this
#: share of the smaller (ADR 0069).
BOTH_BONUS: Final = 0.5
#: The least relevance a hit that passed a floor is given (so it is never shown as 0).
MIN_PASSED: Final = 0.01


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
    #: a fixed cosine floor (ADR 0027), used only where no background calibration is at hand
    #: (knowledge search; memory search when the background could not be embedded, ADR 0069)
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
    #: an explicit dense floor (`retrieval.minCosine`): when set, a row passes the dense floor
    #: with this cosine, for every embedder, instead of the background calibration (ADR 0069)
    min_cosine: float | None = attrs.field(default=None, validator=_optional_unit)
    #: the calibrated dense floor: "csls" (hubness-corrected score `2·cos − r_q − r_d` above
    #: `csls_floor`, fully relevant at `csls_full`; ADR 0072) or "z" (background standard
    #: deviations above the background's mean a cosine needs to pass, and to count as fully
    #: relevant; ADR 0069)
    floor_method: str = "csls"
    z_floor: float = Z_FLOOR
    z_full: float = Z_FULL
    csls_floor: float = CSLS_FLOOR
    csls_full: float = CSLS_FULL
    #: the share of a candidate's smaller relevance added when both rankings found it
    both_bonus: float = attrs.field(default=BOTH_BONUS, validator=_unit)

    def __attrs_post_init__(self) -> None:
        if self.floor_method not in METHODS:
            raise InvalidArgument(
                f"floor_method must be one of {METHODS}; got {self.floor_method!r}"
            )
        if not (
            all(
                isinstance(v, int | float) and not isinstance(v, bool) and -2 <= v <= 2
                for v in (self.csls_floor, self.csls_full)
            )
            and self.csls_floor < self.csls_full
        ):
            raise InvalidArgument(
                f"csls_floor and csls_full must be numbers from -2 to 2 with csls_floor < "
                f"csls_full; got {self.csls_floor!r}, {self.csls_full!r}"
            )
        if not (
            isinstance(self.z_floor, int | float)
            and isinstance(self.z_full, int | float)
            and not isinstance(self.z_floor, bool)
            and 0 <= self.z_floor < self.z_full < 1000
        ):
            raise InvalidArgument(
                f"z_floor and z_full must be numbers with 0 <= z_floor < z_full; got "
                f"{self.z_floor!r}, {self.z_full!r}"
            )

    def floor_for(self, model_id: str) -> float | None:
        """A fixed cosine floor for `model_id`: the explicit `min_cosine` when set, else the
        embedder profile's (used where no background calibration is at hand: knowledge
        search, and memory search when the background could not be embedded)."""
        if self.min_cosine is not None:
            return self.min_cosine
        return self.fallback_floor(model_id)

    def fallback_floor(self, model_id: str) -> float | None:
        """The profile's fixed cosine floor (ADR 0027), None without a profile."""
        profile = self.profile(model_id)
        return None if profile is None else profile.min_cosine

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


def dense_relevance(
    cosines: Any,
    calibration: Calibration | None,
    explicit_floor: float | None,
    hubness: Any = None,
) -> Any:
    """Each cosine's dense relevance in [0, 1] (numpy in, numpy out), 0 = did not pass the
    dense floor. With `explicit_floor` (`retrieval.minCosine`): `(cos − floor) / (1 − floor)`
    above it (at least `MIN_PASSED`, so a cosine at the floor still passes), 0 below. Else the
    background calibration (`Calibration.relevance`, vectorised; "csls" needs each row's
    `hubness`, its cosine with the background's centroid: without it nothing passes); without
    a calibration (the background could not be embedded) nothing passes."""
    import numpy as np

    values = np.asarray(cosines, dtype=np.float64)
    if explicit_floor is not None:
        span = max(1.0 - explicit_floor, 1e-9)
        scaled = np.clip((values - explicit_floor) / span, MIN_PASSED, 1.0)
        return np.where(values >= explicit_floor, scaled, 0.0)
    if calibration is None:
        return np.zeros_like(values)
    if calibration.method == "csls":
        if hubness is None:
            return np.zeros_like(values)
        hubs = np.asarray(hubness, dtype=np.float64)
        score = 2.0 * values - calibration.neighbourhood - hubs
        low, high = calibration.csls_floor, calibration.csls_full
        share = np.clip((score - low) / (high - low), MIN_PASSED, 1.0)
        return np.where(np.isfinite(score) & (score > low), share, 0.0)
    z = (values - calibration.mean) / calibration.spread
    share = (z - calibration.z_floor) / (calibration.z_full - calibration.z_floor)
    return np.where(values > calibration.floor, np.clip(share, MIN_PASSED, 1.0), 0.0)


def dense_ranking(
    ids: Sequence[str],
    cosines: Any,
    calibration: Calibration | None,
    explicit_floor: float | None,
    hubness: Any = None,
    *,
    limit: int,
) -> list[tuple[str, float]]:
    """The `limit` best rows by dense relevance, `(id, relevance)` best first, ties by row
    order: `top_scores(ids, dense_relevance(...), limit, MIN_PASSED)`, with the relevance
    computed only for the rows that pass the floor (ADR 0101: a handful of the 44k rows of a
    100k store; the same numbers, element by element)."""
    import numpy as np

    if explicit_floor is None and (
        calibration is None or (calibration.method == "csls" and hubness is None)
    ):
        return []  # nothing passes (see `dense_relevance`)
    near = None
    if explicit_floor is None and calibration is not None and calibration.method == "csls":
        near = _csls_near(cosines, hubness, calibration)
    if near is not None:  # the exact test on the rows near or above the floor only
        values = np.asarray(cosines)[near].astype(np.float64)
        hubs: Any = np.asarray(hubness)[near].astype(np.float64)
    else:
        near = slice(None)
        values = np.asarray(cosines, dtype=np.float64)
        hubs = None if hubness is None else np.asarray(hubness, dtype=np.float64)
    if explicit_floor is not None:
        kept = np.flatnonzero(values >= explicit_floor)
    elif calibration is not None and calibration.method == "csls" and hubs is not None:
        score = 2.0 * values - calibration.neighbourhood - hubs
        kept = np.flatnonzero(np.isfinite(score) & (score > calibration.csls_floor))
    else:
        assert calibration is not None
        kept = np.flatnonzero(values > calibration.floor)
    passing = kept if isinstance(near, slice) else near[kept]
    relevance = dense_relevance(
        values[kept], calibration, explicit_floor, None if hubs is None else hubs[kept]
    )
    return top_scores(_Picked(ids, passing), relevance, limit, MIN_PASSED)


#: the float32 pre-test's allowance below the csls floor (its rounding is below 2e-6 where
#: it matters: see `_csls_near`)
_NEAR_MARGIN: Final = 1e-3
#: the largest |hubness| and |neighbourhood| (and |csls floor|) the pre-test bounds its
#: rounding for; cosines and hubness are cosines, within [-1, 1]
_NEAR_BOUND: Final = 4.0


def _csls_near(cosines: Any, hubness: Any, calibration: Calibration) -> Any:
    """The rows whose csls score may pass the floor, by a float32 pre-test (ADR 0107), or
    None when it does not apply (the caller tests every row): a superset of the rows the
    exact float64 test `2·cos − r_q − r_d > floor` passes.

    Why a superset: with float32 `cos` and `r_d` (|r_d|, |r_q|, |floor| ≤ 4), the pre-test
    computes `a = fl32(2·cos − r_d)` (2·cos is exact in float32) and keeps `a > fl32(floor +
    r_q − 1e-3)`. A row the exact test passes has `2·cos − r_d > floor + r_q − 1e-14` (the
    two float64 roundings); if |2·cos| > 16 its `a` is above any such threshold or it fails
    the exact test anyway; else |2·cos − r_d| ≤ 20 and `a` is within 20·2⁻²⁴ < 1.2e-6 of it,
    the threshold within 5e-7 of its value: far inside the 1e-3 allowance. NaN rows fail
    both tests; an infinite `a` is kept and left to the exact test."""
    import numpy as np

    values = np.asarray(cosines)
    hubs = np.asarray(hubness)
    neighbourhood, floor = calibration.neighbourhood, calibration.csls_floor
    if (
        values.dtype != np.float32
        or hubs.dtype != np.float32
        or values.ndim != 1
        or values.shape != hubs.shape
        or values.size == 0
        or not (math.isfinite(neighbourhood) and abs(neighbourhood) <= _NEAR_BOUND)
        or not (math.isfinite(floor) and abs(floor) <= _NEAR_BOUND)
    ):
        return None
    if not (
        float(hubs.max()) <= _NEAR_BOUND and float(hubs.min()) >= -_NEAR_BOUND
    ):  # NaN fails too
        return None
    approx = np.multiply(values, np.float32(2.0))
    np.subtract(approx, hubs, out=approx)
    return np.flatnonzero(approx > np.float32(floor + neighbourhood - _NEAR_MARGIN))


class _Picked(Sequence[str]):
    """The ids at `rows` (a numpy index array) of `ids`, looked up only when read
    (`top_scores` reads `limit` of them)."""

    __slots__ = ("_ids", "_rows")

    def __init__(self, ids: Sequence[str], rows: Any) -> None:
        self._ids = ids
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, at: int) -> str: ...
    @overload
    def __getitem__(self, at: slice) -> Sequence[str]: ...
    def __getitem__(self, at: int | slice) -> str | Sequence[str]:
        if isinstance(at, slice):
            return [self._ids[int(row)] for row in self._rows[at]]
        return self._ids[int(self._rows[at])]


def fused_score(
    keyword: float,
    dense: float,
    both_bonus: float,
    *,
    keyword_weight: float = 1.0,
    dense_weight: float = 1.0,
) -> float:
    """A candidate's relevance from its keyword relevance (0 when FTS did not find it) and its
    dense relevance (0 when it did not pass the dense floor), each multiplied by its weight
    divided by the larger of the two weights (`retrieval.bm25Weight` / `vectorWeight`; equal
    weights leave them as they are, both 0 count as equal): the larger, plus `both_bonus`
    times the smaller (found by both), at most 1."""
    scale = max(keyword_weight, dense_weight)
    if scale > 0:
        keyword, dense = keyword * (keyword_weight / scale), dense * (dense_weight / scale)
    high, low = (keyword, dense) if keyword >= dense else (dense, keyword)
    return min(1.0, high + both_bonus * low)


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
    """The best `query.limit` rows of the fused and scored candidates (see the module).
    `importance_of`: a row's stored importance (ADR 0045), None for the default."""
    import numpy as np

    explicit = settings.min_cosine
    calibration = (
        None
        if explicit is not None
        else vectors.calibration(
            method=settings.floor_method,
            z_floor=settings.z_floor,
            z_full=settings.z_full,
            csls_floor=settings.csls_floor,
            csls_full=settings.csls_full,
        )
    )
    if explicit is None and calibration is None:
        explicit = settings.fallback_floor(model_id)  # no background: the profile's floor
    raw, hubness = vectors.cosines_and_hubness()  # one pass over the candidate matrix
    scores = np.clip(raw, -1.0, 1.0)
    fusion = settings.fusion_for(model_id)
    dense: list[tuple[str, float]] = []
    if fusion.dense_weight > 0:  # weight 0: FTS-only
        dense = dense_ranking(
            vectors.ids, scores, calibration, explicit, hubness, limit=settings.depth
        )
    keyword_weight = fusion.fts_weight if fusion.dense_weight > 0 else 1.0
    base: dict[str, float] = {}
    keyword: dict[str, float] = {}
    if keyword_weight > 0:  # FTS weight 0 (`mode: "vector"`): the cosine ranking only
        for hit in fts_hits:  # every FTS hit passed the keyword floor (the score contract)
            keyword.setdefault(hit.id, min(1.0, max(0.0, float(hit.score))))
    dense_of = dict(dense)
    for item in dict.fromkeys([*keyword, *dense_of]):
        base[item] = fused_score(
            keyword.get(item, 0.0),
            dense_of.get(item, 0.0),
            settings.both_bonus,
            keyword_weight=keyword_weight,
            dense_weight=fusion.dense_weight,
        )
    if not base:
        return []
    fused = sorted(base.items(), key=lambda pair: -pair[1])[: max(settings.depth, len(keyword))]
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
    # The hard minimum judges the rows that only the dense floor let in: an FTS hit has
    # passed the keyword floor inside the index (the score contract), its gate
    candidates = [
        c if c.id in keyword else c.rescored(c.score, relevance=c.fused)
        for c in build_candidates(
            fused,
            rows,
            cosines=cosines,
            importance=weights,
            default_importance=pipeline.default_importance,
        )
    ]
    rerank_scores = None
    if pipeline.enabled(Stage.RERANK):
        if reranker is None:
            pipeline = pipeline.without(Stage.RERANK)  # no reranker configured: no cosine mix
        else:
            rerank_scores = safe_rerank(
                reranker, query.text, candidates, top_n=settings.rerank_top_n, logger=logger
            )
    ranked = pipeline.run(candidates, now=now, rerank_scores=rerank_scores, vectors=row_vectors)
    best = 1.0 + (pipeline.recency_weight if pipeline.enabled(Stage.RECENCY) else 0.0)
    shown = shown_scores(ranked[: query.limit], best=best)
    return [attrs.evolve(rows[c.id], score=s) for c, s in shown]


def shown_scores(
    ranked: Sequence[Candidate], *, best: float = 1.0
) -> list[tuple[Candidate, float]]:
    """The scores shown for the pipeline's final order: each divided by `best` (the highest
    score the pipeline can give: 1 + the recency boost's weight, the other stages only
    multiply by factors <= 1), clipped to [0, 1] and never above the one before it (MMR
    defers a near-copy below rows it outscored: it is shown at the score of the row it now
    follows), so the results read best first by their score."""
    out: list[tuple[Candidate, float]] = []
    ceiling = 1.0
    for candidate in ranked:
        score = min(ceiling, max(0.0, candidate.score / best))
        out.append((candidate, score))
        ceiling = score
    return out


__all__ = [
    "BENCHMARKED_PROFILES",
    "BOTH_BONUS",
    "DEFAULT_DENSE_WEIGHT",
    "FUSION_DEPTH",
    "MIN_PASSED",
    "RERANK_TOP_N",
    "EmbedderProfile",
    "HybridSettings",
    "dense_ranking",
    "dense_relevance",
    "fused_score",
    "hybrid_hits",
    "ranked_hits",
    "shown_scores",
]
