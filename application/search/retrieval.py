"""Hybrid retrieval building blocks: fusion, cosine ranking and the scoring pipeline (ADR 0018).

Numbers in, numbers out; nothing here reads storage, calls a provider or looks at the clock.
numpy is imported inside the functions that need it, so importing this module stays light.

The flow the search service composes (the seed's order):

    FTS ranking ─┐
                 ├─ Fusion.fuse (weighted RRF, k = 60, normalised to 0..1)
    cosine_ranking ┘        │
                  build_candidates ─ Pipeline.run: rerank → recency → importance → length
                                                   → time decay → hard minimum → MMR

Every stage is a pure function over a list of `Candidate` values and returns a new list, best
first (each score-changing stage re-sorts, stably, by score; MMR decides the final order).
Only the stages that look at age take `now`, and always explicitly.

Scores. `Fusion.fuse` divides the RRF sum by the best score possible for the rankings that took
part (a row first in every ranking scores 1.0), so a fused score is in (0, 1]. That number says
where a row *ranked*, not how relevant it is; `rerank_mix` mixes in an absolute relevance signal
(the cross-encoder's score, else the row's cosine) and records it in `Candidate.relevance`.
The hard minimum only judges rows that carry such a signal unless told otherwise: a threshold
on a rank-derived score would drop a perfectly good FTS match for being old or long.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.ports.search import Reranker

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

RRF_K: Final = 60
DEFAULT_IMPORTANCE: Final = 0.7
RERANK_WEIGHT: Final = 0.6
RECENCY_HALF_LIFE_DAYS: Final = 14.0
RECENCY_WEIGHT: Final = 0.10
IMPORTANCE_FLOOR: Final = 0.7
LENGTH_ANCHOR: Final = 500
LENGTH_STRENGTH: Final = 0.5
TIME_DECAY_HALF_LIFE_DAYS: Final = 60.0
TIME_DECAY_FLOOR: Final = 0.5
HARD_MIN_SCORE: Final = 0.35
MMR_THRESHOLD: Final = 0.85


# --- checks -----------------------------------------------------------------------------------


#: the number types a check accepts (a tuple: `int | float` would build a union per call)
_NUMBER: Final = (int, float)


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, _NUMBER) or not math.isfinite(value):
        raise InvalidArgument(f"{name} must be a finite number; got {value!r}")
    return float(value)


def _positive(name: str, value: float) -> float:
    if _finite(name, value) <= 0:
        raise InvalidArgument(f"{name} must be > 0; got {value!r}")
    return float(value)


def _non_negative(name: str, value: float) -> float:
    if _finite(name, value) < 0:
        raise InvalidArgument(f"{name} must be >= 0; got {value!r}")
    return float(value)


def _unit(name: str, value: float) -> float:
    if not 0.0 <= _finite(name, value) <= 1.0:
        raise InvalidArgument(f"{name} must be between 0 and 1; got {value!r}")
    return float(value)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidArgument(f"k must be an integer >= 0; got {k!r}")


def _attr_finite(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    _finite(attribute.name, value)


def _attr_positive(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    _positive(attribute.name, value)


def _attr_non_negative(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    _non_negative(attribute.name, value)


def _attr_unit(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    _unit(attribute.name, value)


def _attr_optional_finite(_: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None:
        _finite(attribute.name, value)


# --- fusion -----------------------------------------------------------------------------------


def _weights(rankings: Sequence[Sequence[str]], weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise InvalidArgument(f"{len(weights)} weights for {len(rankings)} rankings")
    return [_non_negative("weight", w) for w in weights]


def rrf(
    rankings: Sequence[Sequence[str]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: `score(d) = Σ_i w_i / (k + rank_i(d))`, rank 1-based, summed
    over the rankings that hold `d` (a row missing from one ranking, e.g. a row without a
    vector, still scores through the others). Best first; ties keep the order in which the
    ids were first met, reading the rankings in order (so pass the FTS ranking first). An id
    repeated inside one ranking counts once, at its first place. A ranking with weight 0 is
    ignored entirely: it contributes neither score nor rows. Scores are raw (see
    `normalised_rrf`)."""
    _check_k(k)
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, _weights(rankings, weights), strict=True):
        if weight == 0:
            continue
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])


def rrf_best(
    rankings: Sequence[Sequence[str]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> float:
    """The highest score `rrf` can give with these rankings: first place in every non-empty
    ranking of positive weight, `Σ w_i / (k + 1)`; 0.0 when there is none."""
    _check_k(k)
    pairs = zip(rankings, _weights(rankings, weights), strict=True)
    return sum(w / (k + 1) for ranking, w in pairs if w > 0 and len(ranking) > 0)


def normalised_rrf(
    rankings: Sequence[Sequence[str]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """`rrf` divided by `rrf_best`: scores in (0, 1], 1.0 for a row first in every ranking.
    With k = 60 and two equal weights, a row first in one ranking only scores 0.5, and the
    100th row of one ranking only 0.5 · 61/160 ≈ 0.19."""
    best = rrf_best(rankings, k, weights)
    if best <= 0:
        return []
    return [(item, min(1.0, score / best)) for item, score in rrf(rankings, k, weights)]


@attrs.frozen(kw_only=True)
class Fusion:
    """How the FTS ranking and the cosine ranking are fused: weighted RRF, normalised.

    - `k`: the RRF constant (60, as the seed says);
    - `fts_weight`, `dense_weight`: the rankings' weights. `dense_weight = 0` is FTS-only
      (the dense ranking then adds no rows either); the default (1.0, plain RRF) is to be
      replaced by the value the retrieval benchmark shows never loses to FTS-only;
    - `dense_depth`: only the best `dense_depth` rows of the cosine ranking take part (None:
      all that are given);
    - `dense_min_cosine`: rows of the cosine ranking below this cosine take no part (None: no
      floor); a semantic near-miss then cannot push an FTS match down.
    """

    k: int = RRF_K
    fts_weight: float = attrs.field(default=1.0, validator=_attr_non_negative)
    dense_weight: float = attrs.field(default=1.0, validator=_attr_non_negative)
    dense_depth: int | None = None
    dense_min_cosine: float | None = attrs.field(default=None, validator=_attr_optional_finite)

    def __attrs_post_init__(self) -> None:
        _check_k(self.k)
        depth = self.dense_depth
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or depth < 1
        ):
            raise InvalidArgument(f"dense_depth must be an integer >= 1 or None; got {depth!r}")

    def dense_ids(self, dense: Sequence[tuple[str, float]]) -> list[str]:
        """The ids of the cosine ranking that take part, best first."""
        floor = self.dense_min_cosine
        ids = [item for item, cosine in dense if floor is None or cosine >= floor]
        return ids if self.dense_depth is None else ids[: self.dense_depth]

    def fuse(
        self, fts_ids: Sequence[str], dense: Sequence[tuple[str, float]] | None
    ) -> list[tuple[str, float]]:
        """Fused `(id, score)` pairs, best first, scores normalised to (0, 1]. `dense` is a
        `cosine_ranking` result, or None when there is none (no embedder, a provider failure:
        FTS-only). The normaliser counts only the rankings that took part, so FTS-only gives
        its first row 1.0 and its r-th `(k + 1) / (k + r)`."""
        if dense is None or self.dense_weight == 0:
            return normalised_rrf([fts_ids], self.k, [self.fts_weight])
        return normalised_rrf(
            [fts_ids, self.dense_ids(dense)], self.k, [self.fts_weight, self.dense_weight]
        )


def gate(
    fusion: Fusion, model_id: str | None, dense_weights: Mapping[str, float] | None = None
) -> Fusion:
    """The fusion to use with the embedder `model_id`: FTS-only (dense weight 0) when there is
    no embedder; the weight `dense_weights` lists for the model when it lists one (the
    benchmarked embedders, e.g. `{"local/multilingual-e5-small": 0.8}`; 0 turns a model off);
    otherwise `fusion` unchanged."""
    if model_id is None:
        return attrs.evolve(fusion, dense_weight=0.0)
    if dense_weights is not None and model_id in dense_weights:
        return attrs.evolve(fusion, dense_weight=dense_weights[model_id])
    return fusion


# --- cosine ranking ---------------------------------------------------------------------------


def cosine_ranking(
    query_vec: npt.ArrayLike,
    ids: Sequence[str],
    matrix: npt.ArrayLike,
    *,
    limit: int | None = None,
    min_cosine: float | None = None,
) -> list[tuple[str, float]]:
    """`(id, cosine)` pairs, best first, ties by row order: one matrix-vector product over
    `matrix` (float32, one L2-normalised row per id, in `ids` order; other dtypes are
    converted). The query is normalised here. Rows whose cosine is not finite (NaN in the
    vector) are left out, as are rows below `min_cosine`; `limit` keeps the best `limit`
    (selected with `argpartition`, so 100k rows cost no full sort). A zero or non-finite
    query gives []. Cosines are clipped to [-1, 1] (float32 rounding)."""
    import numpy as np

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgument(f"limit must be an integer >= 0 or None; got {limit!r}")
    rows = np.asarray(matrix, dtype=np.float32)
    query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    if len(ids) == 0 or limit == 0:
        return []
    if rows.ndim != 2 or rows.shape[0] != len(ids):
        raise InvalidArgument(f"matrix must have one row per id: {rows.shape} for {len(ids)} ids")
    if query.shape[0] != rows.shape[1]:
        raise InvalidArgument(f"query has {query.shape[0]} dimensions, rows have {rows.shape[1]}")
    norm = float(np.linalg.norm(query))
    if not math.isfinite(norm) or norm == 0.0:
        return []
    return top_scores(ids, np.clip(rows @ (query / np.float32(norm)), -1.0, 1.0), limit, min_cosine)


def top_scores(
    ids: Sequence[str],
    scores: npt.ArrayLike,
    limit: int | None = None,
    min_cosine: float | None = None,
) -> list[tuple[str, float]]:
    """The ranking part of `cosine_ranking`, for cosines already computed (one per id, in
    `ids` order): `(id, score)` best first, ties by row order, non-finite scores and scores
    below `min_cosine` left out, the best `limit` kept."""
    import numpy as np

    scores = np.asarray(scores)
    if len(ids) != scores.shape[0]:
        raise InvalidArgument(f"{scores.shape[0]} scores for {len(ids)} ids")
    if limit == 0:
        return []
    keep = np.isfinite(scores)
    if min_cosine is not None:
        keep &= scores >= np.float32(_finite("min_cosine", min_cosine))
    where = np.flatnonzero(keep)
    kept = scores[where]
    chosen = np.arange(len(where))
    if limit is not None and limit < len(where):
        kth = kept[np.argpartition(-kept, limit - 1)[limit - 1]]
        above = np.flatnonzero(kept > kth)
        ties = np.flatnonzero(kept == kth)[: limit - len(above)]
        chosen = np.concatenate([above, ties])
    order = chosen[np.lexsort((chosen, -kept[chosen]))]
    return [(ids[int(where[i])], float(kept[i])) for i in order]


# --- candidates -------------------------------------------------------------------------------


class AgeBasis(enum.StrEnum):
    """Which date a row's age counts from: `last_referenced` (default: promotions and merges
    refresh it, so a re-confirmed fact is young again) or `created`."""

    LAST_REFERENCED = "last_referenced"
    CREATED = "created"


def _length_default(self: Candidate) -> int:
    return len(self.text)


def _score_default(self: Candidate) -> float:
    return self.fused


@attrs.frozen(kw_only=True)
class Candidate:
    """One row in the scoring pipeline.

    `fused`: the normalised fused score (0..1); `score`: the pipeline's running score
    (starts at `fused`); `cosine`: the row's cosine to the query, None without a current
    vector; `importance`: 0..1 (rows carry none yet: 0.7, the default); `length`: characters
    (default `len(text)`); `relevance`: the absolute relevance signal `rerank_mix` mixed in
    (rerank score or cosine), None while the score is rank-derived only.
    """

    id: str
    text: str
    fused: float = attrs.field(validator=_attr_finite)
    score: float = attrs.field(
        default=attrs.Factory(_score_default, takes_self=True), validator=_attr_finite
    )
    created: date
    last_referenced: date
    cosine: float | None = attrs.field(default=None, validator=_attr_optional_finite)
    importance: float = attrs.field(default=DEFAULT_IMPORTANCE, validator=_attr_unit)
    length: int = attrs.field(default=attrs.Factory(_length_default, takes_self=True))
    relevance: float | None = attrs.field(default=None, validator=_attr_optional_finite)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.length, bool) or not isinstance(self.length, int) or self.length < 0:
            raise InvalidArgument(f"length must be an integer >= 0; got {self.length!r}")

    def rescored(self, score: float, relevance: float | None = None) -> Candidate:
        """This candidate with a new `score` (and `relevance`, when given). The stages call
        this 50 × 7 times per search: a shallow copy with the one field set costs a tenth of
        `attrs.evolve` (which re-runs every validator), and copying the fields directly half
        of `copy.copy` (its `__reduce_ex__` round trip; ADR 0082); the new score is
        checked here."""
        _finite("score", score)
        new = object.__new__(type(self))
        for name in _CANDIDATE_FIELDS:
            object.__setattr__(new, name, getattr(self, name))
        object.__setattr__(new, "score", float(score))  # frozen: set on the fresh copy only
        if relevance is not None:
            object.__setattr__(new, "relevance", _finite("relevance", relevance))
        return new

    def age_days(self, now: date, basis: AgeBasis = AgeBasis.LAST_REFERENCED) -> float:
        """Days from the basis date to `now`, never negative (a future date is age 0).
        Two datetimes count fractions of a day; otherwise whole calendar days."""
        then = self.created if basis is AgeBasis.CREATED else self.last_referenced
        return _age_days(now, then)


#: The fields `Candidate.rescored` copies (every attrs field: the class has no `__dict__`).
_CANDIDATE_FIELDS: Final = tuple(field.name for field in attrs.fields(Candidate))


def _age_days(now: date, then: date) -> float:
    if isinstance(now, datetime) and isinstance(then, datetime):
        if (now.tzinfo is None) != (then.tzinfo is None):
            now, then = now.replace(tzinfo=None), then.replace(tzinfo=None)
        return max(0.0, (now - then).total_seconds() / 86_400)
    day_now = now.date() if isinstance(now, datetime) else now
    day_then = then.date() if isinstance(then, datetime) else then
    return float(max(0, (day_now - day_then).days))


class RowLike(Protocol):
    """What `build_candidates` reads from a row (a `SearchHit` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def created(self) -> date: ...
    @property
    def last_referenced(self) -> date: ...


def build_candidates(
    fused: Sequence[tuple[str, float]],
    rows: Mapping[str, RowLike],
    *,
    cosines: Mapping[str, float] | None = None,
    importance: Mapping[str, float] | None = None,
    default_importance: float = DEFAULT_IMPORTANCE,
) -> list[Candidate]:
    """Candidates for the fused ids, in fused order; an id without a row is skipped (it was
    deleted between the rankings and the read). `cosines` should hold every candidate that
    has a current vector (not only the dense ranking's top: FTS-only rows with a vector have
    a cosine too); non-finite cosines count as missing."""
    _unit("default_importance", default_importance)
    out: list[Candidate] = []
    for item, score in fused:
        row = rows.get(item)
        if row is None:
            continue
        cosine = None if cosines is None else cosines.get(item)
        if cosine is not None and not math.isfinite(cosine):
            cosine = None
        weight = default_importance if importance is None else importance.get(item)
        out.append(
            Candidate(
                id=item,
                text=row.text,
                fused=score,
                created=row.created,
                last_referenced=row.last_referenced,
                cosine=cosine,
                importance=default_importance if weight is None else weight,
            )
        )
    return out


def _ranked(candidates: Iterable[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: -c.score)


# --- stages -----------------------------------------------------------------------------------


def rerank_mix(
    candidates: Sequence[Candidate],
    rerank_scores: Sequence[float | None] | None,
    weight: float = RERANK_WEIGHT,
) -> list[Candidate]:
    """`score = weight · r + (1 − weight) · score` with `r` the candidate's rerank score
    (aligned with `candidates`; clamped to 0..1), else, when the reranker gave nothing for it
    (`rerank_scores` None, too short, None or non-finite at its place), its cosine clamped to
    0..1; a candidate with neither keeps its score (the missing signal is taken to equal it)
    and stays rank-only (`relevance` None). A score list of the wrong length is ignored
    as a whole. Defaults: 60% rerank + 40% fused."""
    _unit("weight", weight)
    scores = rerank_scores
    if scores is not None and len(scores) != len(candidates):
        scores = None
    out: list[Candidate] = []
    for i, c in enumerate(candidates):
        raw = None if scores is None else scores[i]
        signal: float | None = None
        if raw is not None and not isinstance(raw, bool) and math.isfinite(raw):
            signal = min(1.0, max(0.0, float(raw)))
        elif c.cosine is not None:
            signal = min(1.0, max(0.0, c.cosine))
        if signal is None:
            out.append(c)
        else:
            mixed = weight * signal + (1.0 - weight) * c.score
            out.append(c.rescored(mixed, relevance=signal))
    return _ranked(out)


def recency_boost(
    candidates: Sequence[Candidate],
    *,
    now: date,
    half_life_days: float = RECENCY_HALF_LIFE_DAYS,
    weight: float = RECENCY_WEIGHT,
    basis: AgeBasis = AgeBasis.LAST_REFERENCED,
) -> list[Candidate]:
    """`score + exp(−age / half_life_days) · weight` (the seed's formula: 14 days, 0.10; the
    seed calls the constant a half-life, though at that age the boost is 1/e, not 1/2)."""
    _positive("half_life_days", half_life_days)
    _non_negative("weight", weight)
    return _ranked(
        c.rescored(c.score + math.exp(-c.age_days(now, basis) / half_life_days) * weight)
        for c in candidates
    )


def importance_weight(
    candidates: Sequence[Candidate], floor: float = IMPORTANCE_FLOOR
) -> list[Candidate]:
    """`score · (floor + (1 − floor) · importance)`: the seed's `0.7 + 0.3 · importance`
    (importance 1.0 → ×1.0, 0.5 → ×0.85, the default 0.7 → ×0.91)."""
    _unit("floor", floor)
    return _ranked(c.rescored(c.score * (floor + (1.0 - floor) * c.importance)) for c in candidates)


def length_factor(
    length: int, anchor: int = LENGTH_ANCHOR, strength: float = LENGTH_STRENGTH
) -> float:
    """`1 / (1 + strength · log2(length / anchor))` for `length > anchor`, else 1.0: only long
    rows are damped (500 → ×1, 1000 → ×0.667, 2000 → ×0.5, 4000 → ×0.4). Below the anchor
    the seed's formula would boost short rows, and below anchor/4 it would divide by zero or
    flip the sign, so it is not applied there."""
    _positive("anchor", anchor)
    _non_negative("strength", strength)
    if length <= anchor:
        return 1.0
    return 1.0 / (1.0 + strength * math.log2(length / anchor))


def length_normalise(
    candidates: Sequence[Candidate],
    anchor: int = LENGTH_ANCHOR,
    strength: float = LENGTH_STRENGTH,
) -> list[Candidate]:
    """`score · length_factor(length)` (anchor 500 characters)."""
    return _ranked(
        c.rescored(c.score * length_factor(c.length, anchor, strength)) for c in candidates
    )


def time_decay(
    candidates: Sequence[Candidate],
    *,
    now: date,
    half_life_days: float = TIME_DECAY_HALF_LIFE_DAYS,
    floor: float = TIME_DECAY_FLOOR,
    basis: AgeBasis = AgeBasis.LAST_REFERENCED,
) -> list[Candidate]:
    """`score · (floor + (1 − floor) · exp(−age / half_life_days))`: the seed's
    `0.5 + 0.5 · exp(−age / 60 d)`, never below ×0.5."""
    _positive("half_life_days", half_life_days)
    _unit("floor", floor)
    return _ranked(
        c.rescored(
            c.score * (floor + (1.0 - floor) * math.exp(-c.age_days(now, basis) / half_life_days))
        )
        for c in candidates
    )


def hard_min_score(
    candidates: Sequence[Candidate],
    threshold: float = HARD_MIN_SCORE,
    *,
    exempt_rank_only: bool = True,
) -> list[Candidate]:
    """Drop candidates whose score is below `threshold` (0.35). With `exempt_rank_only`
    (default) a candidate without an absolute relevance signal (`relevance` None: no rerank
    score and no cosine was mixed in) is kept: its score only says where it ranked."""
    _finite("threshold", threshold)
    return [
        c for c in candidates if c.score >= threshold or (exempt_rank_only and c.relevance is None)
    ]


def _unit_vectors(
    candidates: Sequence[Candidate], vectors: Mapping[str, npt.ArrayLike]
) -> dict[int, np.ndarray[Any, np.dtype[np.float32]]]:
    import numpy as np

    found: dict[int, np.ndarray[Any, np.dtype[np.float32]]] = {}
    dims: int | None = None
    for i, c in enumerate(candidates):
        raw = vectors.get(c.id)
        if raw is None:
            continue
        vec = np.asarray(raw, dtype=np.float32).reshape(-1)
        # what `np.linalg.norm` computes for a 1-D float vector (`sqrt(x.dot(x))`, in
        # float32), without its Python dispatch: 50 calls per search (ADR 0107)
        norm = float(np.sqrt(vec.dot(vec)))
        if not math.isfinite(norm) or norm == 0.0 or (dims is not None and vec.shape[0] != dims):
            continue
        dims = vec.shape[0]
        found[i] = vec / np.float32(norm)
    return found


def mmr_diversity(
    candidates: Sequence[Candidate],
    vectors: Mapping[str, npt.ArrayLike] | None,
    threshold: float = MMR_THRESHOLD,
) -> list[Candidate]:
    """Demote near-duplicates: walking the candidates best first, one whose cosine to an
    already *selected* (not demoted) candidate exceeds `threshold` (0.85) is deferred. The
    result is the selected candidates, then the deferred ones, each group best first; scores
    are unchanged and nothing is dropped, so this order (not the scores) is the ranking.
    Candidates without a usable vector in `vectors` (missing, zero, non-finite, another
    dimension) are never demoted and demote nothing; `vectors` None makes this a no-op."""
    _finite("threshold", threshold)
    ranked = _ranked(candidates)
    if not vectors:
        return ranked
    import numpy as np

    unit = _unit_vectors(ranked, vectors)
    if len(unit) < 2:
        return ranked
    positions = sorted(unit)
    matrix = np.stack([unit[i] for i in positions])
    gram = matrix @ matrix.T
    row_of = {pos: row for row, pos in enumerate(positions)}
    selected: list[Candidate] = []
    deferred: list[Candidate] = []
    # closest[r]: the highest cosine of row r to any selected row so far
    closest = np.full(len(positions), -np.inf, dtype=np.float64)
    for i, c in enumerate(ranked):
        row = row_of.get(i)
        if row is None:
            selected.append(c)
        elif float(closest[row]) > threshold:
            deferred.append(c)
        else:
            selected.append(c)
            np.maximum(closest, gram[row], out=closest)
    return selected + deferred


# --- the pipeline -----------------------------------------------------------------------------


class Stage(enum.StrEnum):
    """The scoring stages, in the seed's order (its noise filter is applied at capture)."""

    RERANK = "rerank"
    RECENCY = "recency"
    IMPORTANCE = "importance"
    LENGTH = "length"
    TIME_DECAY = "time_decay"
    HARD_MIN = "hard_min"
    MMR = "mmr"


STAGE_ORDER: Final[tuple[Stage, ...]] = tuple(Stage)


def _stages(value: Iterable[Stage | str]) -> tuple[Stage, ...]:
    stages = tuple(Stage(s) for s in value)
    if len(set(stages)) != len(stages):
        raise InvalidArgument(f"a stage is listed twice: {[s.value for s in stages]}")
    if list(stages) != [s for s in STAGE_ORDER if s in stages]:
        order = ", ".join(s.value for s in STAGE_ORDER)
        raise InvalidArgument(
            f"stages must keep the order {order}; got {[s.value for s in stages]}"
        )
    return stages


@attrs.frozen(kw_only=True)
class Pipeline:
    """The scoring stages to run, in the fixed order `STAGE_ORDER` (a subset may be enabled),
    with the seed's defaults. `Pipeline()` runs all seven; `Pipeline().without(Stage.HARD_MIN)`
    or `Pipeline(stages=[...])` turn stages off; any parameter can be overridden."""

    stages: tuple[Stage, ...] = attrs.field(default=STAGE_ORDER, converter=_stages)
    rerank_weight: float = attrs.field(default=RERANK_WEIGHT, validator=_attr_unit)
    recency_half_life_days: float = attrs.field(
        default=RECENCY_HALF_LIFE_DAYS, validator=_attr_positive
    )
    recency_weight: float = attrs.field(default=RECENCY_WEIGHT, validator=_attr_non_negative)
    age_basis: AgeBasis = AgeBasis.LAST_REFERENCED
    importance_floor: float = attrs.field(default=IMPORTANCE_FLOOR, validator=_attr_unit)
    default_importance: float = attrs.field(default=DEFAULT_IMPORTANCE, validator=_attr_unit)
    length_anchor: int = attrs.field(default=LENGTH_ANCHOR, validator=_attr_positive)
    length_strength: float = attrs.field(default=LENGTH_STRENGTH, validator=_attr_non_negative)
    time_decay_half_life_days: float = attrs.field(
        default=TIME_DECAY_HALF_LIFE_DAYS, validator=_attr_positive
    )
    time_decay_floor: float = attrs.field(default=TIME_DECAY_FLOOR, validator=_attr_unit)
    min_score: float = attrs.field(default=HARD_MIN_SCORE, validator=_attr_finite)
    min_score_exempts_rank_only: bool = True
    mmr_threshold: float = attrs.field(default=MMR_THRESHOLD, validator=_attr_finite)

    def without(self, *stages: Stage | str) -> Pipeline:
        drop = {Stage(s) for s in stages}
        return attrs.evolve(self, stages=tuple(s for s in self.stages if s not in drop))

    def enabled(self, stage: Stage | str) -> bool:
        return Stage(stage) in self.stages

    def run(
        self,
        candidates: Sequence[Candidate],
        *,
        now: date,
        rerank_scores: Sequence[float | None] | None = None,
        vectors: Mapping[str, npt.ArrayLike] | None = None,
    ) -> list[Candidate]:
        """Run the enabled stages in order. `rerank_scores` is aligned with `candidates` as
        given (see `safe_rerank`); `vectors` (id → the row's vector) feeds MMR."""
        if Stage.RERANK in self.stages:
            out = rerank_mix(candidates, rerank_scores, self.rerank_weight)
        else:
            out = _ranked(candidates)
        out = self._rescore(out, now)
        if Stage.HARD_MIN in self.stages:
            out = hard_min_score(
                out, self.min_score, exempt_rank_only=self.min_score_exempts_rank_only
            )
        if Stage.MMR in self.stages:
            out = mmr_diversity(out, vectors, self.mmr_threshold)
        return out

    def _rescore(self, candidates: list[Candidate], now: date) -> list[Candidate]:
        """The enabled score-only stages (recency, importance, length, time decay) over
        `candidates`, ranked: what `recency_boost`, `importance_weight`, `length_normalise`
        and `time_decay` give applied in turn, with the same arithmetic in the same order,
        the same check of every intermediate score and the same stable sort after each stage
        (ties keep the previous stage's order). The scores are carried as floats and each
        candidate is copied once, at the end, instead of once per stage (ADR 0107: 200 of the
        240 copies of a 50-candidate search)."""
        stages = [s for s in _SCORE_STAGES if s in self.stages]
        if not stages:
            return candidates
        if Stage.RECENCY in stages:
            _positive("half_life_days", self.recency_half_life_days)
            _non_negative("weight", self.recency_weight)
        if Stage.IMPORTANCE in stages:
            _unit("floor", self.importance_floor)
        if Stage.LENGTH in stages:
            _positive("anchor", self.length_anchor)
            _non_negative("strength", self.length_strength)
        if Stage.TIME_DECAY in stages:
            _positive("half_life_days", self.time_decay_half_life_days)
            _unit("floor", self.time_decay_floor)
        basis = self.age_basis
        scores = [c.score for c in candidates]
        ages: list[float] | None = None
        order = list(range(len(candidates)))  # the candidates' positions, in ranked order
        for stage in stages:
            if (stage is Stage.RECENCY or stage is Stage.TIME_DECAY) and ages is None:
                ages = [c.age_days(now, basis) for c in candidates]
            if stage is Stage.RECENCY:
                half_life, weight = self.recency_half_life_days, self.recency_weight
                assert ages is not None
                for i in order:
                    scores[i] = scores[i] + math.exp(-ages[i] / half_life) * weight
            elif stage is Stage.IMPORTANCE:
                floor = self.importance_floor
                for i in order:
                    scores[i] = scores[i] * (floor + (1.0 - floor) * candidates[i].importance)
            elif stage is Stage.LENGTH:
                anchor, strength = self.length_anchor, self.length_strength
                for i in order:  # `length_factor`, its arguments checked above
                    length = candidates[i].length
                    if length > anchor:
                        scores[i] = scores[i] * (
                            1.0 / (1.0 + strength * math.log2(length / anchor))
                        )
                    else:
                        scores[i] = scores[i] * 1.0
            else:
                half_life, floor = self.time_decay_half_life_days, self.time_decay_floor
                assert ages is not None
                for i in order:
                    scores[i] = scores[i] * (floor + (1.0 - floor) * math.exp(-ages[i] / half_life))
            for i in order:  # as `Candidate.rescored` checks each new score
                value = scores[i]
                if not (type(value) is float and math.isfinite(value)):
                    scores[i] = _finite("score", value)
            order.sort(key=lambda i: -scores[i])
        return [candidates[i].rescored(scores[i]) for i in order]


#: The stages `Pipeline._rescore` runs, in their order.
_SCORE_STAGES: Final = (Stage.RECENCY, Stage.IMPORTANCE, Stage.LENGTH, Stage.TIME_DECAY)


# --- calling the reranker ---------------------------------------------------------------------


def safe_rerank(
    reranker: Reranker | None,
    query: str,
    candidates: Sequence[Candidate],
    *,
    top_n: int | None = None,
    logger: Any = None,
) -> list[float | None] | None:
    """Ask `reranker` about the first `top_n` candidates (all by default); scores aligned with
    `candidates` (None past `top_n`), or None when there is no reranker, no candidate, or the
    reranker failed in any way (an exception, None, a wrong count, a non-finite or non-number
    score): `rerank_mix` then falls back to cosine. Failures are logged by kind only."""
    if reranker is None or not candidates:
        return None
    head = list(candidates if top_n is None else candidates[: max(0, top_n)])
    if not head:
        return None
    try:
        scores = reranker.rerank(query, [c.text for c in head])
    except Exception as exc:
        _warn(logger, "raised", error=type(exc).__name__)
        return None
    if scores is None:
        return None
    if len(scores) != len(head) or not all(
        isinstance(s, int | float) and not isinstance(s, bool) and math.isfinite(s) for s in scores
    ):
        _warn(logger, "bad_scores", expected=len(head))
        return None
    return [float(s) for s in scores] + [None] * (len(candidates) - len(head))


def _warn(logger: Any, reason: str, **fields: Any) -> None:
    if logger is None:
        from pi_hermes_memory.log import library_logger

        logger = library_logger()
    logger.warning("rerank.unavailable", reason=reason, **fields)


__all__ = [
    "DEFAULT_IMPORTANCE",
    "HARD_MIN_SCORE",
    "MMR_THRESHOLD",
    "RRF_K",
    "STAGE_ORDER",
    "AgeBasis",
    "Candidate",
    "Fusion",
    "Pipeline",
    "Reranker",
    "RowLike",
    "Stage",
    "build_candidates",
    "cosine_ranking",
    "gate",
    "hard_min_score",
    "importance_weight",
    "length_factor",
    "length_normalise",
    "mmr_diversity",
    "normalised_rrf",
    "recency_boost",
    "rerank_mix",
    "rrf",
    "rrf_best",
    "safe_rerank",
    "time_decay",
    "top_scores",
]
