"""Retrieval benchmark: recall@k of memory_search's engine on LoCoMo-shaped conversations.

    python -m tests.bench.retrieval [--data PATH] [--mode fts|dense|hybrid|all] [--k 5 10 20]

The data (default `../shared/data/locomo-dev.json` from the repository root; licence CC BY-NC
4.0: read it there, never copy it into the project) is a list of samples, each a conversation
(`session_N` lists of turns `{speaker, dia_id, text}`) and its `qa` items (`question`,
`evidence: [dia_id…]`, `category`). `make bench-retrieval DATA=path` runs it on any file of the
same shape.

What is measured:

- every turn of a sample is one unit, stored as a `memory` row of an on-disk store of its own
  (one SQLite file per sample conversation, built through `SqliteStorage`, so recall is
  measured within that conversation); the unit text is `"<speaker>: <text>"`, plus
  `" [shares an image: <blip_caption>]"` when the turn carries an image caption (the turn's
  image is part of what was said). The entry id → `dia_id` map turns ranked rows back into
  evidence ids;
- each question of categories 1–4 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) is
  one query; category 5 (adversarial, no gold evidence) is left out and counted. recall@k of a
  question = the share of its (distinct, valid) evidence turns among the top k units; averaged
  per category and over all questions (each question weighs the same). Evidence ids that are
  malformed (not `D<session>:<turn>`) or point at no turn are counted and skipped; a question
  left with no valid evidence is counted and skipped. Nothing in the data makes it crash;
- latency: each query is timed once, asking for the largest k (the top 5/10 are prefixes of
  the top 20); one warm-up query per sample and mode is not counted. p50/p95 over all queries.

Modes (each a `Retriever`: `(query, k) -> ranked unit ids`, built per sample by a
`RetrieverFactory`; pass your own factories to `run()` to measure another pipeline):

- `fts`: `SqliteSearchIndex.search`, the index memory_search uses (scope: the `memory` target of
  a session without a project), limit k;
- `dense`: the local offline embedder (`pi_hermes_memory.adapters.providers.local_embedder`, the
`local`
  extra; ADR 0017): passages embedded once per sample, the query embedded at search time,
  numpy cosine over the sample's unit matrix;
- `hybrid`: memory_search's own hybrid ranking (`pi_hermes_memory.search.hybrid.ranked_hits` with
the
  default `HybridSettings`, no reranker): the unit vectors stored in the sample's SQLite file,
  weighted RRF with the dense weight `gate` picks for the local embedder, then the scoring
  stages. Query embedding is part of its latency.

`--sweep` adds hybrid variants (dense weights, the rerank stage's cosine fallback with and
without the hard minimum, no stages, the hard minimum on every row); their query vectors are
cached across variants, so their latency leaves out embedding the query. Recency and time decay
are no-ops here: every unit of a sample carries the same date.

Modes that cannot run (no local embedder installed) print `n/a`. Output: a Markdown table per
mode, a summary, and as the very last line
`overall R@10 fts=0.xxx dense=0.xxx hybrid=0.xxx`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs
import numpy as np
import numpy.typing as npt
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.events import MemoryAdded
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.ports.search import SearchQuery
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.search.hybrid import HybridSettings, ranked_hits
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.search.retrieval import Pipeline, Stage

from tests.bench.run import percentile

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT / ".." / "shared" / "data" / "locomo-dev.json"
DEFAULT_KS = (5, 10, 20)
#: The k of the closing line; always computed, whatever `--k` says.
HEADLINE_K = 10
MODES = ("fts", "dense", "hybrid")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5
#: Dense weights of the `--sweep` variants (the default is chosen by `gate`).
SWEEP_WEIGHTS = (0.25, 0.5, 0.75, 1.0)
#: MMR thresholds of the `--sweep` variants (the seed's is 0.85).
SWEEP_MMR = (0.85, 0.9, 0.95)

_DIA_ID = re.compile(r"D(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")
_BASE_TIME = datetime(2023, 1, 1, 9, 0, tzinfo=UTC)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


# --- the data ---------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Unit:
    dia_id: str
    text: str


@attrs.frozen(kw_only=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]  # distinct, valid dia_ids of the sample


@attrs.frozen(kw_only=True)
class Sample:
    sample_id: str
    units: tuple[Unit, ...]
    questions: tuple[Question, ...]


@attrs.define
class Skips:
    """What the loader left out, and why."""

    malformed_samples: int = 0  # not an object, or without a conversation
    malformed_turns: int = 0  # without a usable dia_id or text
    duplicate_turns: int = 0  # a dia_id seen before in the same sample
    malformed_questions: int = 0  # no question text, or a category outside 1-5
    adversarial_questions: int = 0  # category 5: no gold evidence, not in the metric
    malformed_evidence: int = 0  # evidence ids that are not `D<session>:<turn>`
    missing_evidence: int = 0  # well-formed evidence ids that name no turn of the sample
    questions_without_evidence: int = 0  # categories 1-4 left with no valid evidence

    def items(self) -> list[tuple[str, int]]:
        return [(k, int(v)) for k, v in attrs.asdict(self).items()]


@attrs.frozen(kw_only=True)
class Dataset:
    samples: tuple[Sample, ...]
    skips: Skips

    @property
    def questions(self) -> int:
        return sum(len(s.questions) for s in self.samples)

    @property
    def units(self) -> int:
        return sum(len(s.units) for s in self.samples)


def unit_text(turn: Mapping[str, Any]) -> str | None:
    """`"<speaker>: <text>"` (+ the image caption), or None when the turn has no text."""
    text = turn.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    speaker = turn.get("speaker")
    out = f"{speaker}: {text.strip()}" if isinstance(speaker, str) and speaker else text.strip()
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        out += f" [shares an image: {caption.strip()}]"
    return out


def _session_keys(conversation: Mapping[str, Any]) -> list[str]:
    keyed = []
    for key in conversation:
        match = _SESSION.fullmatch(key)
        if match and isinstance(conversation[key], list):
            keyed.append((int(match.group(1)), key))
    return [key for _, key in sorted(keyed)]


def parse_sample(raw: object, position: int, skips: Skips) -> Sample | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("conversation"), Mapping):
        skips.malformed_samples += 1
        return None
    conversation = raw["conversation"]
    units: list[Unit] = []
    seen: set[str] = set()
    for key in _session_keys(conversation):
        for turn in conversation[key]:
            dia_id = turn.get("dia_id") if isinstance(turn, Mapping) else None
            text = unit_text(turn) if isinstance(turn, Mapping) else None
            if not isinstance(dia_id, str) or text is None:
                skips.malformed_turns += 1
                continue
            dia_id = dia_id.strip()
            if dia_id in seen:
                skips.duplicate_turns += 1
                continue
            seen.add(dia_id)
            units.append(Unit(dia_id=dia_id, text=text))
    questions: list[Question] = []
    qa = raw.get("qa")
    for item in qa if isinstance(qa, list) else ():
        question = _parse_question(item, seen, skips)
        if question is not None:
            questions.append(question)
    sample_id = raw.get("sample_id")
    return Sample(
        sample_id=str(sample_id) if sample_id is not None else f"sample-{position}",
        units=tuple(units),
        questions=tuple(questions),
    )


def _parse_question(item: object, turns: set[str], skips: Skips) -> Question | None:
    if not isinstance(item, Mapping):
        skips.malformed_questions += 1
        return None
    text, category = item.get("question"), item.get("category")
    if (
        not isinstance(text, str)
        or not text.strip()
        or isinstance(category, bool)
        or not isinstance(category, int)
        or not 1 <= category <= ADVERSARIAL
    ):
        skips.malformed_questions += 1
        return None
    if category == ADVERSARIAL:
        skips.adversarial_questions += 1
        return None
    raw_evidence = item.get("evidence")
    evidence: list[str] = []
    for ref in raw_evidence if isinstance(raw_evidence, list) else [raw_evidence]:
        ref = ref.strip() if isinstance(ref, str) else ref
        if not isinstance(ref, str) or not _DIA_ID.fullmatch(ref):
            if ref is not None:
                skips.malformed_evidence += 1
        elif ref not in turns:
            skips.missing_evidence += 1
        elif ref not in evidence:
            evidence.append(ref)
    if not evidence:
        skips.questions_without_evidence += 1
        return None
    return Question(text=text.strip(), category=category, evidence=tuple(evidence))


def load_dataset(path: Path) -> Dataset:
    """Read a LoCoMo-shaped JSON file; malformed parts are counted in `skips`, never fatal."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, Mapping):  # a single sample
        data = [data]
    skips = Skips()
    samples = []
    for position, raw in enumerate(data if isinstance(data, list) else ()):
        sample = parse_sample(raw, position, skips)
        if sample is not None:
            samples.append(sample)
    if not isinstance(data, list):
        skips.malformed_samples += 1
    return Dataset(samples=tuple(samples), skips=skips)


# --- one store per sample ---------------------------------------------------------------------


@attrs.define
class SampleStore:
    """A sample's units as active `memory` rows of an on-disk store, and their entry ids."""

    sample: Sample
    storage: SqliteStorage
    index: SqliteSearchIndex
    unit_ids: tuple[str, ...]  # entry ids, in turn order
    dia_ids: dict[str, str]  # entry id -> dia_id
    texts: tuple[str, ...]  # unit texts, in turn order
    #: Things retrievers may share (e.g. a passage matrix per embedder model id).
    cache: dict[str, Any] = attrs.field(factory=dict)


def unit_id(at: datetime, n: int) -> str:
    """A ULID-shaped id (time `at` in ms, then `n`): deterministic, so bm25 ties (the larger id
    first, ADR 0012) rank the same way in every run; later turns have larger ids."""
    value = (int(at.timestamp() * 1000) << 80) | n
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def build_store(sample: Sample, db_path: Path) -> SampleStore:
    """Append one `memory.added.v1` event per unit through `SqliteStorage` (one transaction)."""
    storage = SqliteStorage(db_path)
    stream = stream_for(Target.MEMORY)
    events = []
    unit_ids = []
    for n, unit in enumerate(sample.units, start=1):
        at = _BASE_TIME + timedelta(seconds=n)
        entry_id = unit_id(at, n)
        unit_ids.append(entry_id)
        events.append(
            MemoryAdded(
                stream=stream,
                version=n,
                at=at,
                entry_id=entry_id,
                target=Target.MEMORY,
                text=unit.text,
                project=None,
                category=None,
                created=at.date(),
                last_referenced=at.date(),
            )
        )
    try:
        if events:
            with storage.transaction() as uow:
                uow.journal.append(stream, uow.journal.version(stream), events)
                uow.projection.apply(events)
    except BaseException:
        storage.close()
        raise
    return SampleStore(
        sample=sample,
        storage=storage,
        index=SqliteSearchIndex(storage),
        unit_ids=tuple(unit_ids),
        dia_ids={e: u.dia_id for e, u in zip(unit_ids, sample.units, strict=True)},
        texts=tuple(u.text for u in sample.units),
    )


@contextmanager
def open_store(sample: Sample, work: Path) -> Iterator[SampleStore]:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", sample.sample_id)[:80] or "sample"
    store = build_store(sample, work / f"{safe}.db")
    try:
        yield store
    finally:
        store.storage.close()


# --- retrievers -------------------------------------------------------------------------------


class Retriever(Protocol):
    """Ranked unit (entry) ids for `query`, best first, at most `k`."""

    def __call__(self, query: str, k: int) -> Sequence[str]: ...


#: Builds the retriever of one sample's store (may precompute, e.g. passage vectors).
RetrieverFactory = Callable[[SampleStore], Retriever]

Kind = Literal["query", "passage"]


class Embedder(Protocol):
    """The shape of the application's `Embedder` port (ADR 0017)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str], *, kind: Kind) -> npt.NDArray[np.float32]: ...


_MEMORY_CLAUSES = search_clauses(SessionScope(project=None), Target.MEMORY)


def fts_retriever(store: SampleStore) -> Retriever:
    """memory_search's index, as the tool asks it (ranked by its tiers and bm25)."""

    def retrieve(query: str, k: int) -> list[str]:
        found = store.index.search(SearchQuery(text=query, clauses=_MEMORY_CLAUSES, limit=k))
        return [hit.id for hit in found]

    return retrieve


def passage_matrix(store: SampleStore, embedder: Embedder) -> npt.NDArray[np.float32]:
    """The sample's unit vectors (L2-normalised rows), computed once per embedder model."""
    key = f"passages:{embedder.model_id}"
    if key not in store.cache:
        raw = np.asarray(embedder.embed(list(store.texts), kind="passage"), dtype=np.float32)
        store.cache[key] = _normalised(raw.reshape(len(store.texts), -1))
    matrix: npt.NDArray[np.float32] = store.cache[key]
    return matrix


def _normalised(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def top_k(scores: npt.NDArray[np.float32], k: int) -> list[int]:
    """Indexes of the k highest scores, best first; ties: the lower index first."""
    if k <= 0 or scores.size == 0:
        return []
    k = min(k, scores.size)
    part = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
    return sorted(part.tolist(), key=lambda i: (-float(scores[i]), i))


def dense_factory(embedder: Embedder) -> RetrieverFactory:
    """Cosine over the sample's unit matrix (numpy), the query embedded at search time."""

    def factory(store: SampleStore) -> Retriever:
        matrix = passage_matrix(store, embedder)

        def retrieve(query: str, k: int) -> list[str]:
            vector = np.asarray(embedder.embed([query], kind="query"), dtype=np.float32)
            vector = _normalised(vector.reshape(1, -1))[0]
            return [store.unit_ids[i] for i in top_k(matrix @ vector, k)]

        return retrieve

    return factory


class QueryCache:
    """An embedder that remembers query vectors (sweep variants re-ask the same questions;
    their latency then excludes embedding the query)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._queries: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    @property
    def dimension(self) -> int:
        return self._embedder.dimension

    def embed(self, texts: Sequence[str], *, kind: Kind) -> npt.NDArray[np.float32]:
        if kind != "query":
            return self._embedder.embed(texts, kind=kind)
        missing = [t for t in dict.fromkeys(texts) if t not in self._queries]
        if missing:
            vectors = self._embedder.embed(missing, kind="query")
            self._queries.update(zip(missing, np.asarray(vectors, dtype=np.float32), strict=True))
        return np.stack([self._queries[t] for t in texts])


def hybrid_factory(
    embedder: Embedder, settings: HybridSettings | None = None, reranker: Any = None
) -> RetrieverFactory:
    """memory_search's hybrid ranking (`pi_hermes_memory.search.hybrid.ranked_hits`, the function
    `SearchService` calls): the sample's unit vectors stored in its SQLite file through
    `SqliteVectorStore` (model id = the embedder's), candidates read from there, fusion and
    scoring stages as configured (default: `HybridSettings()`, no reranker)."""
    chosen = settings or HybridSettings()

    def factory(store: SampleStore) -> Retriever:
        vector_store = SqliteVectorStore(store.storage)
        key = f"stored:{embedder.model_id}"
        if key not in store.cache:
            rows = list(zip(store.unit_ids, store.texts, strict=True))
            vector_store.put(rows, passage_matrix(store, embedder), embedder.model_id)
            store.cache[key] = True
        embeddings = EmbeddingService(embedder=embedder, store=vector_store)  # type: ignore[arg-type]

        def retrieve(query: str, k: int) -> list[str]:
            search = SearchQuery(text=query, clauses=_MEMORY_CLAUSES, limit=k)
            hits = ranked_hits(
                search,
                index=store.index,
                embeddings=embeddings,
                settings=chosen,
                now=_BASE_TIME.date(),
                reranker=reranker,
                backfill=0,
            )
            return [hit.id for hit in hits]

        return retrieve

    return factory


class CosineFallback:
    """A reranker that is configured but never answers: `rerank_mix` falls back to each
    row's cosine (the seed's fallback), which makes cosines the rows' relevance signal."""

    def rerank(self, query: str, documents: Sequence[str]) -> None:
        return None


def sweep_factories(embedder: Embedder) -> dict[str, RetrieverFactory]:
    """Hybrid variants (query vectors cached across them): dense weights without MMR, MMR
    thresholds, the rerank stage's cosine fallback with and without the hard minimum, the hard
    minimum on every row, and no stages at all."""
    cached = QueryCache(embedder)
    model = embedder.model_id
    base = HybridSettings(profiles={})
    no_mmr = base.pipeline.without(Stage.MMR)
    out: dict[str, RetrieverFactory] = {}
    for weight in SWEEP_WEIGHTS:
        fusion = attrs.evolve(base.fusion, dense_weight=weight)
        settings = attrs.evolve(base, fusion=fusion, pipeline=no_mmr)
        out[f"hybrid w={weight:g} no mmr"] = hybrid_factory(cached, settings)
    default = HybridSettings()  # the weight and MMR threshold of this embedder's profile
    tuned = attrs.evolve(
        base, fusion=default.fusion_for(model), pipeline=default.pipeline_for(model)
    )
    for threshold in SWEEP_MMR:
        pipeline = attrs.evolve(tuned.pipeline, mmr_threshold=threshold)
        out[f"hybrid mmr>{threshold:g}"] = hybrid_factory(
            cached, attrs.evolve(tuned, pipeline=pipeline)
        )
    out["hybrid fts depth 50"] = hybrid_factory(cached, attrs.evolve(tuned, fts_depth=50))
    out["hybrid no stages"] = hybrid_factory(
        cached, attrs.evolve(tuned, pipeline=Pipeline(stages=()))
    )
    mix = attrs.evolve(tuned, pipeline=no_mmr.without(Stage.HARD_MIN))
    out["hybrid cosine mix"] = hybrid_factory(cached, mix, CosineFallback())
    out["hybrid cosine mix + hard_min"] = hybrid_factory(
        cached, attrs.evolve(tuned, pipeline=no_mmr), CosineFallback()
    )
    strict = attrs.evolve(no_mmr, min_score_exempts_rank_only=False)
    out["hybrid hard_min on every row"] = hybrid_factory(
        cached, attrs.evolve(tuned, pipeline=strict)
    )
    return out


def local_embedder() -> tuple[Embedder | None, str]:
    """The local offline embedder, or None and why it is not available."""
    try:
        from pi_hermes_memory.adapters.providers.local_embedder import LocalEmbedder

        cache = os.environ.get("PI_HERMES_BENCH_VECTOR_CACHE")
        if cache:  # vectors kept on disk between runs (tests.bench.vector_cache)
            from tests.bench.vector_cache import DiskCachedEmbedder

            return DiskCachedEmbedder(LocalEmbedder(), Path(cache)), ""
        return LocalEmbedder(), ""
    except ImportError as exc:
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def default_factories(modes: Sequence[str]) -> tuple[dict[str, RetrieverFactory], dict[str, str]]:
    """Factories of the requested modes, and the reason for each mode that is n/a."""
    factories: dict[str, RetrieverFactory] = {}
    missing: dict[str, str] = {}
    if "fts" in modes:
        factories["fts"] = fts_retriever
    if "dense" in modes or "hybrid" in modes:
        embedder, why = local_embedder()
        for mode in ("dense", "hybrid"):
            if mode not in modes:
                continue
            if embedder is None:
                missing[mode] = why
            elif mode == "dense":
                factories[mode] = dense_factory(embedder)
            else:
                factories[mode] = hybrid_factory(embedder)
    return factories, missing


# --- evaluation -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class QuestionResult:
    sample_id: str
    category: int
    recall: dict[int, float]  # k -> share of the evidence in the top k
    latency_ms: float


@attrs.frozen(kw_only=True)
class ModeReport:
    mode: str
    ks: tuple[int, ...]
    results: tuple[QuestionResult, ...] = ()
    unavailable: str | None = None  # why the mode could not run

    @property
    def available(self) -> bool:
        return self.unavailable is None

    def recall(self, k: int, category: int | None = None) -> float:
        """Mean recall@k over the questions (of `category`); nan when there is none."""
        values = [r.recall[k] for r in self.results if category is None or r.category == category]
        return sum(values) / len(values) if values else float("nan")

    def count(self, category: int | None = None) -> int:
        return sum(1 for r in self.results if category is None or r.category == category)

    def latency(self, q: float) -> float:
        values = [r.latency_ms for r in self.results]
        return percentile(values, q) if values else float("nan")


def recall_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    wanted = set(evidence)
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def evaluate(
    dataset: Dataset,
    factories: Mapping[str, RetrieverFactory],
    ks: Sequence[int],
    *,
    root: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[QuestionResult]]:
    """Run every question of every sample through every factory's retriever."""
    depth = max(ks)
    out: dict[str, list[QuestionResult]] = {mode: [] for mode in factories}
    with _workdir(root) as work:
        for sample in dataset.samples:
            if not sample.questions:
                continue
            if progress is not None:
                progress(f"{sample.sample_id}: {len(sample.units)} units, "
                         f"{len(sample.questions)} questions")  # fmt: skip
            with open_store(sample, work) as store:
                for mode, factory in factories.items():
                    retrieve = factory(store)
                    retrieve(sample.questions[0].text, depth)  # warm-up, not timed
                    for question in sample.questions:
                        started = time.perf_counter()
                        ranked = list(retrieve(question.text, depth))
                        elapsed = (time.perf_counter() - started) * 1000
                        dia = [store.dia_ids.get(u, "") for u in ranked]
                        out[mode].append(
                            QuestionResult(
                                sample_id=sample.sample_id,
                                category=question.category,
                                recall={k: recall_at(dia, question.evidence, k) for k in ks},
                                latency_ms=elapsed,
                            )
                        )
    return out


@contextmanager
def _workdir(root: Path | None) -> Iterator[Path]:
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        yield root
    else:
        with tempfile.TemporaryDirectory(prefix="hermes-retrieval-") as tmp:
            yield Path(tmp)


def run(
    data: Path,
    modes: Sequence[str] = MODES,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    factories: Mapping[str, RetrieverFactory] | None = None,
    root: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Dataset, list[ModeReport]]:
    """Load `data`, evaluate `modes` (given `factories` replace the default ones)."""
    computed = tuple(sorted({*ks, HEADLINE_K}))
    if any(k < 1 for k in computed):
        raise ValueError("every k must be >= 1")
    dataset = load_dataset(data)
    chosen, missing = default_factories([m for m in modes if m not in (factories or {})])
    chosen.update({m: f for m, f in (factories or {}).items() if m in modes})
    results = evaluate(dataset, chosen, computed, root=root, progress=progress)
    reports = []
    for mode in modes:
        if mode in chosen:
            reports.append(ModeReport(mode=mode, ks=computed, results=tuple(results[mode])))
        else:
            reports.append(ModeReport(mode=mode, ks=computed, unavailable=missing.get(mode, "")))
    return dataset, reports


# --- report -----------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def _fmt(value: float, digits: int = 3) -> str:
    return "n/a" if value != value else f"{value:.{digits}f}"  # nan -> n/a


def render_mode(report: ModeReport, ks: Sequence[int]) -> list[str]:
    out = ["", f"## {report.mode}", ""]
    if not report.available:
        return [*out, f"n/a: {report.unavailable or 'not available'}"]
    header = ["category", "questions", *(f"R@{k}" for k in ks)]
    rows: list[list[object]] = []
    for category, name in CATEGORIES.items():
        if report.count(category):
            rows.append(
                [f"{category} {name}", report.count(category)]
                + [_fmt(report.recall(k, category)) for k in ks]
            )
    rows.append(["**overall**", report.count()] + [_fmt(report.recall(k)) for k in ks])
    out += _table(header, rows)
    out += [
        "",
        f"latency per query (limit {max(report.ks)}): p50 {_fmt(report.latency(50), 2)} ms, "
        f"p95 {_fmt(report.latency(95), 2)} ms over {report.count()} queries",
    ]
    return out


def headline(reports: Sequence[ModeReport]) -> str:
    by_mode = {r.mode: r for r in reports}
    parts = []
    for mode in MODES:
        report = by_mode.get(mode)
        ok = report is not None and report.available and report.count() > 0
        parts.append(f"{mode}={_fmt(report.recall(HEADLINE_K)) if ok and report else 'n/a'}")
    return f"overall R@{HEADLINE_K} " + " ".join(parts)


def render(data: Path, dataset: Dataset, reports: Sequence[ModeReport], ks: Sequence[int]) -> str:
    out = [f"# Retrieval benchmark: {Path(data).name}", ""]
    by_category = {
        c: sum(1 for s in dataset.samples for q in s.questions if q.category == c)
        for c in CATEGORIES
    }
    out.append(
        f"{len(dataset.samples)} samples, {dataset.units} units (turns), {dataset.questions} "
        "questions of categories 1-4 ("
        + ", ".join(f"{c}: {n}" for c, n in by_category.items())
        + "); one store per sample."
    )
    skipped = [f"{name.replace('_', ' ')} {n}" for name, n in dataset.skips.items() if n]
    out.append("Skipped: " + (", ".join(skipped) if skipped else "nothing") + ".")
    for report in reports:
        out += render_mode(report, ks)
    out += ["", "## summary", ""]
    rows = []
    for r in reports:
        if r.available:
            recalls = [_fmt(r.recall(k)) for k in ks]
            rows.append([r.mode, *recalls, _fmt(r.latency(50), 2), _fmt(r.latency(95), 2)])
        else:
            rows.append([r.mode, *("n/a" for _ in ks), "n/a", "n/a"])
    out += _table(["mode", *(f"R@{k}" for k in ks), "p50 ms", "p95 ms"], rows)
    if any(r.mode.startswith("hybrid ") and r.available for r in reports):
        out += ["", "sweep variants reuse cached query vectors: their latency excludes "
                "embedding the query."]  # fmt: skip
    out += ["", headline(reports)]
    return "\n".join(out)


def main(
    argv: Sequence[str] | None = None,
    *,
    factories: Mapping[str, RetrieverFactory] | None = None,
) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.retrieval",
        description="Recall@k of memory_search's engine on LoCoMo-shaped data.",
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo-shaped JSON")
    parser.add_argument("--mode", choices=[*MODES, "all"], default="all")
    parser.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS), metavar="K")
    parser.add_argument(
        "--sweep", action="store_true", help="add hybrid variants (weights, stages)"
    )
    args = parser.parse_args(argv)
    if any(k < 1 for k in args.k):
        parser.error("every k must be >= 1")
    if not args.data.is_file():
        parser.error(f"no data file at {args.data} (pass --data PATH)")
    modes = list(MODES) if args.mode == "all" else [args.mode]
    ks = sorted(set(args.k))

    def progress(line: str) -> None:
        print(f"… {line}", file=sys.stderr, flush=True)

    chosen = dict(factories or {})
    if args.sweep:
        embedder, why = local_embedder()
        if embedder is None:
            parser.error(f"--sweep needs the local embedder: {why}")
        variants = sweep_factories(embedder)
        chosen.update(variants)
        modes += list(variants)
    dataset, reports = run(args.data, modes, ks, factories=chosen, progress=progress)
    print(render(args.data, dataset, reports, ks), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
