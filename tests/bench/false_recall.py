"""False recall: how often a query with no answer in the store is answered with nothing (ADR 0069).

    python -m tests.bench.false_recall [--data PATH] [--z-floors 2 3 4 5 6]
                                       [--csls-floors -0.02 0 0.02] [--dense-only]
                                       [--recall 0.5] [--samples N] [--keyword-proxy]

Two sets of queries that have no answer in the store they are asked of:

- each LoCoMo question (categories 1-4) asked against every *other* conversation's store (the
  data is read where it lies, never copied; stores as `tests.bench.retrieval` builds them);
- `EVERYDAY_QUESTIONS` (recipes, violins, Patagonia, small talk, …) against a small store of
  engineering facts (`tests.bench.false_recall_data`).

For each variant (keyword only; hybrid at each hubness-corrected dense floor `csls_floor`
(ADR 0072) and at each background-z floor `z_floor` (ADR 0069); with `--dense-only` the same
floors with the FTS weight 0, i.e. the cosine ranking alone; the previous fixed floor of ADR
0027 for comparison) it reports the share answered with nothing by search
(limit 10) and by auto-recall's stricter rule (only hits with `score >= --recall`), next to
what the floor costs: LoCoMo R@5/R@10 of each conversation's own questions and the engineering
store's answerable questions (`ANSWERABLE`, R@1/R@5). One table row per variant is the curve
over the floor setting.

Keyword scores: the index's own (the score contract of issue 27, ADR 0068: a keyword relevance
in [0, 1], hits below the keyword floor dropped inside the index). `--keyword-proxy` wraps the
index in `KeywordProxy` instead (hits rescored with a plain idf-weighted share of the query's
non-stop-word terms, dropped below `PROXY_FLOOR`): the stand-in the dense floor was first
calibrated with before the keyword index followed the contract, kept to compare against.

Vectors are cached on disk between runs (`tests.bench.vector_cache`); the first run embeds
every unit and question of the data (minutes of CPU).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.ports.search import SearchHit, SearchQuery
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.search.hybrid import HybridSettings, ranked_hits
from pi_hermes_memory.search.retrieval import Stage

from tests.bench.false_recall_data import (
    ANSWERABLE,
    ENGINEERING_FACTS,
    EVERYDAY_QUESTIONS,
    PARAPHRASE_NOTES,
    PARAPHRASE_RELATED,
    PARAPHRASE_UNRELATED,
)
from tests.bench.retrieval import (
    _BASE_TIME,
    _MEMORY_CLAUSES,
    DEFAULT_DATA,
    Embedder,
    Sample,
    SampleStore,
    Unit,
    load_dataset,
    local_embedder,
    open_store,
    passage_matrix,
    recall_at,
)
from tests.bench.vector_cache import DiskCachedEmbedder

#: Calibrated dense floors swept (background standard deviations, `HybridSettings.z_floor`).
Z_FLOORS = (3.0, 4.0, 4.5, 5.0, 6.0)
#: Hubness-corrected floors swept (`HybridSettings.csls_floor`; `csls_full` = floor + the
#: default width), ADR 0072.
CSLS_FLOORS = (-0.08, 0.0, 0.01, 0.02, 0.03)
#: Auto-recall's confidence: hits below this score are not injected (part "recall" owns the
#: configured value; this is the default it is measured at).
RECALL_CONFIDENCE = 0.5
#: The keyword proxy's floor: the least share of the query's information a hit must hold.
PROXY_FLOOR = 0.3
SEARCH_LIMIT = 10

#: English stop words for the keyword proxy (the keyword part owns the product's list).
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t don't i'm it's what's let's please tell give get got like want know think also much
    many one ever""".split()  # noqa: SIM905
)
_WORD = re.compile(r"\w+", re.UNICODE)


def terms(text: str) -> list[str]:
    """Lower-cased words, stop words left out."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class KeywordProxy:
    """A `SearchIndex` whose hits carry the score contract's keyword relevance (see the
    module): the wrapped index's hits (asked 5× deeper), rescored, below `floor` dropped."""

    def __init__(self, index: Any, texts: Sequence[str], floor: float = PROXY_FLOOR) -> None:
        self._index = index
        self._floor = floor
        self._n = len(texts)
        self._df: Counter[str] = Counter()
        for text in texts:
            self._df.update(set(terms(text)))

    def _idf(self, term: str) -> float:
        return math.log(1.0 + (self._n + 1) / (self._df.get(term, 0) + 0.5))

    def score(self, query: str, text: str) -> float:
        wanted = set(terms(query))
        if not wanted:
            return 0.0
        held = set(terms(text))
        total = sum(self._idf(t) for t in wanted)
        return sum(self._idf(t) for t in wanted if t in held) / total

    def search(self, query: SearchQuery) -> list[SearchHit]:
        deeper = self._index.search(attrs.evolve(query, limit=max(query.limit * 5, 50)))
        scored = [attrs.evolve(h, score=self.score(query.text, h.text)) for h in deeper]
        kept = [h for h in scored if h.score >= self._floor]
        kept.sort(key=lambda h: -h.score)
        return kept[: query.limit]

    def rows(self, ids: Sequence[str], query: SearchQuery) -> list[SearchHit]:
        rows: list[SearchHit] = self._index.rows(ids, query)
        return rows


Searcher = Callable[[str, int], list[SearchHit]]


def keyword_searcher(index: Any) -> Searcher:
    def search(text: str, limit: int) -> list[SearchHit]:
        return list(index.search(SearchQuery(text=text, clauses=_MEMORY_CLAUSES, limit=limit)))

    return search


def hybrid_searcher(
    store: SampleStore, index: Any, embedder: Embedder, settings: HybridSettings
) -> Searcher:
    vector_store = SqliteVectorStore(store.storage)
    key = f"stored:{embedder.model_id}"
    if key not in store.cache:
        rows = list(zip(store.unit_ids, store.texts, strict=True))
        vector_store.put(rows, passage_matrix(store, embedder), embedder.model_id)
        store.cache[key] = True
    embeddings = EmbeddingService(embedder=embedder, store=vector_store)  # type: ignore[arg-type]

    def search(text: str, limit: int) -> list[SearchHit]:
        query = SearchQuery(text=text, clauses=_MEMORY_CLAUSES, limit=limit)
        return ranked_hits(
            query,
            index=index,
            embeddings=embeddings,
            settings=settings,
            now=_BASE_TIME.date(),
            backfill=0,
        )

    return search


def variants(
    model_id: str,
    z_floors: Sequence[float],
    embedder: Embedder | None,
    csls_floors: Sequence[float] = (),
    *,
    dense_only: bool = False,
) -> dict[str, HybridSettings | None]:
    """Variant name -> hybrid settings (None: keyword only)."""
    out: dict[str, HybridSettings | None] = {"keyword": None}
    if embedder is None:
        return out
    default = HybridSettings()
    kinds = [("hybrid", default)]
    if dense_only:
        kinds.append(
            ("dense", attrs.evolve(default, fusion=attrs.evolve(default.fusion, fts_weight=0.0)))
        )
    csls_width = default.csls_full - default.csls_floor
    z_width = default.z_full - default.z_floor
    for kind, base in kinds:
        for c in csls_floors:
            is_default = c == default.csls_floor and default.floor_method == "csls"
            name = f"{kind} csls_floor {c:g}" + (" (default)" if is_default else "")
            out[name] = attrs.evolve(
                base, floor_method="csls", csls_floor=c, csls_full=c + csls_width
            )
        for z in z_floors:
            is_default = z == default.z_floor and default.floor_method == "z"
            name = f"{kind} z_floor {z:g}" + (" (default)" if is_default else "")
            out[name] = attrs.evolve(base, floor_method="z", z_floor=z, z_full=z + z_width)
    without = default.pipeline.without(Stage.HARD_MIN)
    out[f"hybrid z_floor {default.z_floor:g} without hard_min"] = attrs.evolve(
        default, floor_method="z", pipeline=without
    )
    out[f"hybrid csls_floor {default.csls_floor:g} without hard_min"] = attrs.evolve(
        default, floor_method="csls", pipeline=without
    )
    fixed = default.fallback_floor(model_id)
    if fixed is not None:
        out[f"hybrid fixed cosine {fixed:g}"] = attrs.evolve(default, min_cosine=fixed)
    return out


@attrs.define
class Tally:
    """One variant's counts."""

    asked: int = 0
    empty_search: int = 0
    empty_recall: int = 0
    recall: dict[str, list[float]] = attrs.field(factory=dict)

    def unanswered(self, hits: Sequence[SearchHit], confidence: float) -> None:
        self.asked += 1
        self.empty_search += not hits
        self.empty_recall += not any(h.score >= confidence for h in hits)

    def found(self, name: str, value: float) -> None:
        self.recall.setdefault(name, []).append(value)

    def share(self, empty: int) -> float:
        return empty / self.asked if self.asked else float("nan")

    def mean(self, name: str) -> float:
        values = self.recall.get(name, [])
        return sum(values) / len(values) if values else float("nan")


@contextmanager
def _workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="hermes-false-recall-") as tmp:
        yield Path(tmp)


def _searchers(
    store: SampleStore,
    chosen: Mapping[str, HybridSettings | None],
    embedder: Embedder | None,
    proxy: bool,
) -> dict[str, Searcher]:
    index: Any = KeywordProxy(store.index, store.texts) if proxy else store.index
    out: dict[str, Searcher] = {}
    for name, settings in chosen.items():
        if settings is None or embedder is None:
            out[name] = keyword_searcher(index)
        else:
            out[name] = hybrid_searcher(store, index, embedder, settings)
    return out


def engineering_sample() -> Sample:
    units = tuple(Unit(dia_id=f"F{n}", text=t) for n, t in enumerate(ENGINEERING_FACTS))
    return Sample(sample_id="engineering-facts", units=units, questions=())


def paraphrase_sample() -> Sample:
    units = tuple(Unit(dia_id=f"P{n}", text=t) for n, t in enumerate(PARAPHRASE_NOTES))
    return Sample(sample_id="paraphrase-notes", units=units, questions=())


def measure(
    samples: Sequence[Sample],
    chosen: Mapping[str, HybridSettings | None],
    embedder: Embedder | None,
    *,
    confidence: float = RECALL_CONFIDENCE,
    proxy: bool = False,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[str, Tally], dict[str, Tally]]:
    """(LoCoMo tallies, engineering-store tallies, paraphrase-store tallies) per variant."""
    locomo = {name: Tally() for name in chosen}
    facts = {name: Tally() for name in chosen}
    para = {name: Tally() for name in chosen}
    with _workdir() as work:
        for sample in samples:
            if progress is not None:
                progress(f"{sample.sample_id}: {len(sample.units)} units")
            with open_store(sample, work) as store:
                searchers = _searchers(store, chosen, embedder, proxy)
                others = [q for s in samples if s is not sample for q in s.questions]
                for name, search in searchers.items():
                    tally = locomo[name]
                    for question in sample.questions:
                        ranked = search(question.text, SEARCH_LIMIT)
                        dia = [store.dia_ids.get(h.id, "") for h in ranked]
                        for k in (5, 10):
                            tally.found(f"R@{k}", recall_at(dia, question.evidence, k))
                    for question in others:
                        tally.unanswered(search(question.text, SEARCH_LIMIT), confidence)
        with open_store(engineering_sample(), work) as store:
            searchers = _searchers(store, chosen, embedder, proxy)
            by_text = {t: f"F{n}" for n, t in enumerate(ENGINEERING_FACTS)}
            for name, search in searchers.items():
                tally = facts[name]
                for text in EVERYDAY_QUESTIONS:
                    tally.unanswered(search(text, SEARCH_LIMIT), confidence)
                for text, answer in ANSWERABLE:
                    hits = search(text, SEARCH_LIMIT)
                    dia = [store.dia_ids.get(h.id, "") for h in hits]
                    for k in (1, 5):
                        tally.found(f"R@{k}", recall_at(dia, [by_text[answer]], k))
                    tally.found(
                        "recalled", float(any(h.score >= confidence for h in hits[:1])
                                          and dia[:1] == [by_text[answer]])
                    )  # fmt: skip
        with open_store(paraphrase_sample(), work) as store:
            searchers = _searchers(store, chosen, embedder, proxy)
            for name, search in searchers.items():
                tally = para[name]
                for text in PARAPHRASE_UNRELATED:
                    tally.unanswered(search(text, SEARCH_LIMIT), confidence)
                for text, answer in PARAPHRASE_RELATED:
                    dia = [store.dia_ids.get(h.id, "") for h in search(text, SEARCH_LIMIT)]
                    for k in (1, 10):
                        tally.found(f"R@{k}", recall_at(dia, [f"P{answer}"], k))
    return locomo, facts, para


def render(
    locomo: Mapping[str, Tally],
    facts: Mapping[str, Tally],
    confidence: float,
    proxy: bool,
    para: Mapping[str, Tally] | None = None,
) -> str:
    lines = [
        f"keyword scores: {'contract proxy (KeywordProxy)' if proxy else 'the index own'}; "
        f"auto-recall confidence {confidence:g}; search limit {SEARCH_LIMIT}",
        "",
        "LoCoMo: own questions (recall) and other conversations' questions (no answer)",
        "",
        "| variant | R@5 | R@10 | asked | search empty | auto-recall empty |",
        "|---|---|---|---|---|---|",
    ]
    for name, t in locomo.items():
        lines.append(
            f"| {name} | {t.mean('R@5'):.3f} | {t.mean('R@10'):.3f} | {t.asked} | "
            f"{t.share(t.empty_search):.3f} | {t.share(t.empty_recall):.3f} |"
        )
    lines += [
        "",
        "Engineering facts: everyday questions (no answer) and answerable questions",
        "",
        "| variant | R@1 | R@5 | recalled | asked | search empty | auto-recall empty |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t in facts.items():
        lines.append(
            f"| {name} | {t.mean('R@1'):.3f} | {t.mean('R@5'):.3f} | {t.mean('recalled'):.3f} | "
            f"{t.asked} | {t.share(t.empty_search):.3f} | {t.share(t.empty_recall):.3f} |"
        )
    if para:
        lines += [
            "",
            "Paraphrase notes (tests/integration/test_paraphrase_local.py): the 7 questions "
            "about a note (found first / found in the top 10) and 8 about nothing",
            "",
            "| paraphrase variant | found first | found | asked | search empty | "
            "auto-recall empty |",
            "|---|---|---|---|---|---|",
        ]
        for name, t in para.items():
            lines.append(
                f"| {name} | {t.mean('R@1'):.3f} | {t.mean('R@10'):.3f} | {t.asked} | "
                f"{t.share(t.empty_search):.3f} | {t.share(t.empty_recall):.3f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.false_recall")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--z-floors", type=float, nargs="*", default=list(Z_FLOORS))
    parser.add_argument("--csls-floors", type=float, nargs="*", default=list(CSLS_FLOORS))
    parser.add_argument("--dense-only", action="store_true", help="also the cosine ranking alone")
    parser.add_argument("--recall", type=float, default=RECALL_CONFIDENCE)
    parser.add_argument("--samples", type=int, default=0, help="only the first N (0: all)")
    parser.add_argument("--keyword-proxy", action="store_true")
    parser.add_argument("--vector-cache", type=Path, default=None)
    args = parser.parse_args(argv)
    embedder, why = local_embedder()
    cached = None if embedder is None else DiskCachedEmbedder(embedder, args.vector_cache)
    if cached is None:
        print(f"hybrid n/a: {why}", file=sys.stderr)
    dataset = load_dataset(args.data)
    samples = dataset.samples[: args.samples] if args.samples else dataset.samples
    chosen = variants(
        cached.model_id if cached else "",
        args.z_floors,
        cached,
        args.csls_floors,
        dense_only=args.dense_only,
    )

    def progress(line: str) -> None:
        print(f"… {line}", file=sys.stderr, flush=True)

    locomo, facts, para = measure(
        samples,
        chosen,
        cached,
        confidence=args.recall,
        proxy=args.keyword_proxy,
        progress=progress,
    )
    print(render(locomo, facts, args.recall, args.keyword_proxy, para))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
