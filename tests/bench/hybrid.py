"""Hybrid memory_search latency: `pi_hermes_memory.search.hybrid.ranked_hits` on the search store.

The store is the one `bench_search` builds (`build_search_store`: five projects, 30% Chinese,
20% history), plus one float32 vector of `dimension` components per row, stored through
`SqliteVectorStore` (random unit vectors: the numbers rank nothing meaningful, but cost what
real ones cost). The query embedder returns a seeded random unit vector at once, so the figures
leave out the provider's time (a network round trip or the local model's ~12 ms) and measure
what this library adds: FTS (depth 50), the search-time backfill check, the cached candidate
matrix, the cosine ranking, fusion, reading the dense-only rows and the scoring stages.

`after_write_ms`: a search right after another connection's write that leaves the scope's rows
as they were (a `last_referenced` update): it invalidates the cached candidate matrix (checked
against the change log and kept, ADR 0043) and the "nothing missing" mark. `after_add_ms`: a
search right after another connection added an in-scope row and stored its vector (the matrix
grows by one row). `after_replace_ms`: a search right after another connection replaced an
in-scope row and stored the new row's vector (one row leaves the matrix, one enters).

`after_remove_ms`: a search right after another connection deleted an in-scope row (one row
leaves the matrix).

Each figure is measured three times in the same run, interleaved (the order rotates): through
the store as it is (a change is written into the cached matrix in place, ADR 0101; the id ->
row map and the background centroid's column are carried along, ADR 0082), through the store
of `BRANCH_POINT` (main before ADR 0101: `adapters/sqlite/vectors.py` read from git, when git
and that commit are at hand), and through `PortOnlyVectorStore` over its own
`SqliteVectorStore` (the port's methods only: the search path before ADR 0082, which builds
the map after every change and multiplies the matrix by the query and the centroid on every
search). Wall and CPU time (`time.process_time`) of each search; medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import types
import zlib
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.ports.search import ScopeClause, SearchQuery
from pi_hermes_memory.ports.vectors import VectorScope
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.search.hybrid import HybridSettings, ranked_hits
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.testing.contracts import EventWriter

from tests.bench.run import (
    SEARCH_SESSION_PROJECT,
    _workdir,
    build_search_store,
    percentile,
    search_queries,
)
from tests.support.port_only_vectors import PortOnlyVectorStore

#: main where ADR 0101 branched off: its `vectors.py` is the "main" path of the comparison
BRANCH_POINT = "2982b6a"
MODEL = "bench/random"
HYBRID_P50_TARGET_MS = 10.0
HYBRID_TARGET_ROWS = 100_000
#: Writes of each kind (touch, add, replace), each followed by a search on both paths.
CHANGES = 9


class RandomEmbedder:
    """Seeded random unit vectors (by text), instantly."""

    def __init__(self, dimension: int) -> None:
        self.model_id = f"{MODEL}-{dimension}"
        self.dimension = dimension

    def embed(self, texts: Sequence[str], *, kind: str) -> npt.NDArray[np.float32]:
        rows = []
        for text in texts:
            rng = np.random.default_rng(zlib.crc32(text.encode()))
            vector = rng.standard_normal(self.dimension).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows) if rows else np.zeros((0, self.dimension), dtype=np.float32)


def branch_point_store_class() -> type[Any] | None:
    """`SqliteVectorStore` as `BRANCH_POINT` had it (its module read from git and loaded
    beside the current one), or None when git or that commit is not at hand (a shallow
    clone, an sdist): the table then leaves the "main" columns out."""
    root = Path(__file__).resolve().parents[2]
    try:
        source = subprocess.run(
            ["git", "-C", str(root), "show", f"{BRANCH_POINT}:adapters/sqlite/vectors.py"],
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout.decode("utf-8")
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return None
    module = types.ModuleType("tests.bench._vectors_branch_point")
    module.__file__ = f"<git {BRANCH_POINT}:adapters/sqlite/vectors.py>"
    sys.modules[module.__name__] = module  # attrs resolves the module's annotations by name
    try:  # our own file, at the branch point; it may import names main has since renamed
        exec(compile(source, module.__file__, "exec"), module.__dict__)
    except Exception as exc:  # the comparison is left out, saying why
        print(f"main's store at {BRANCH_POINT} could not be loaded: {exc!r}", file=sys.stderr)
        return None
    found = getattr(module, "SqliteVectorStore", None)
    return found if isinstance(found, type) else None


def store_vectors(storage: SqliteStorage, dimension: int, *, chunk: int = 20_000) -> int:
    """One random unit vector per row of `memories`, through `SqliteVectorStore.put`."""
    with storage.read() as conn:
        rows = [(str(i), str(t)) for i, t in conn.execute("SELECT id, text FROM memories")]
    rng = np.random.default_rng(7)
    store = SqliteVectorStore(storage)
    stored = 0
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        matrix = rng.standard_normal((len(part), dimension)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        stored += store.put(part, matrix, f"{MODEL}-{dimension}")
    return stored


@attrs.frozen(kw_only=True)
class HybridLatency:
    rows: int
    dimension: int
    candidates: int  # in-scope rows with a vector (the matrix the cosine ranking reads)
    samples: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    after_write_ms: float  # median over a few searches that follow a write
    build_s: float
    after_add_ms: float | None = None  # median over a few searches that follow an add
    after_replace_ms: float | None = None  # median over a few searches that follow a replace
    after_remove_ms: float | None = None  # median over a few searches that follow a remove
    #: (wall ms, CPU ms) medians by state ("warm", "write", "add", "replace", "remove"),
    #: through the store (`now`), through main's store before ADR 0101 (`main`, empty when
    #: it could not be loaded) and through the port-only path before ADR 0082 (`before`)
    now: dict[str, tuple[float, float]] = attrs.field(factory=dict)
    before: dict[str, tuple[float, float]] = attrs.field(factory=dict)
    main: dict[str, tuple[float, float]] = attrs.field(factory=dict)


def bench_hybrid(
    rows: int, samples: int, *, dimension: int = 384, root: Path | None = None
) -> HybridLatency:
    """Time hybrid searches (English keyword and sentence queries, alternating) on `rows`."""
    if samples < 1:
        raise ValueError("samples must be >= 1")
    clauses = search_clauses(SessionScope(project=SEARCH_SESSION_PROJECT))
    texts = [
        q
        for pair in zip(
            search_queries("English keywords", samples),
            search_queries("English sentence", samples),
            strict=True,
        )
        for q in pair
    ][:samples]
    settings = HybridSettings()
    today = date(2026, 12, 1)
    with _workdir(root) as work:
        db_path = work / "hybrid.db"
        started = time.perf_counter()
        build_search_store(db_path, rows)
        storage = SqliteStorage(db_path)
        try:
            store_vectors(storage, dimension)
            build_s = time.perf_counter() - started
            index = SqliteSearchIndex(storage)
            embedder = RandomEmbedder(dimension)
            embeddings = EmbeddingService(embedder=embedder, store=SqliteVectorStore(storage))
            port_only = EmbeddingService(
                embedder=embedder, store=PortOnlyVectorStore(SqliteVectorStore(storage))
            )
            paths = [("now", embeddings), ("before", port_only)]
            branch_point = branch_point_store_class()
            if branch_point is not None:
                paths.insert(
                    1, ("main", EmbeddingService(embedder=embedder, store=branch_point(storage)))
                )
            timed: dict[str, dict[str, list[tuple[float, float]]]] = {n: {} for n, _ in paths}

            def one(service: EmbeddingService, text: str) -> tuple[float, float]:
                query = SearchQuery(text=text, clauses=clauses)
                plan_terms.cache_clear()  # each query as if first seen (it is memoised)
                wall, cpu = time.perf_counter(), time.process_time()
                ranked_hits(query, index=index, embeddings=service, settings=settings, now=today)
                return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000

            def search(text: str, state: str, turn: int) -> float:
                """Every path, the order rotating; the store's wall time."""
                shift = turn % len(paths)
                for name, service in paths[shift:] + paths[:shift]:
                    timed[name].setdefault(state, []).append(one(service, text))
                return timed["now"][state][-1][0]

            for n, text in enumerate(texts[: min(20, len(texts))]):
                search(text, "cold", n)  # warm the page cache, the statements and the matrix
            latencies = [search(text, "warm", n) for n, text in enumerate(texts)]
            candidates = len(embeddings.candidates(_scope(clauses))[0])
            writer = SqliteStorage(db_path)
            after_write = []
            after_add = []
            after_replace: list[float] = []
            after_remove: list[float] = []
            try:
                for n in range(CHANGES):
                    with writer.transaction():  # a real change (a no-op UPDATE commits nothing)
                        writer.connection.execute(
                            "UPDATE memories SET last_referenced = ? WHERE rowid = ?",
                            (f"2026-11-{n + 10:02d}", n + 1),
                        )
                    after_write.append(search(texts[n % len(texts)], "write", n))
                adder = EventWriter(writer)
                their_vectors = SqliteVectorStore(writer)
                for n in range(CHANGES):
                    text = f"bench added row {n} {texts[n % len(texts)]}"
                    entry_id = adder.add(text, Target.MEMORY, entry_id=f"zz-bench-{n:03d}")
                    their_vectors.put(
                        [(entry_id, text)],
                        RandomEmbedder(dimension).embed([text], kind="passage"),
                        f"{MODEL}-{dimension}",
                    )
                    after_add.append(search(texts[(n + 5) % len(texts)], "add", n))
                with writer.read() as conn:  # in-scope rows of the memory target
                    old_ids = [
                        str(i)
                        for (i,) in conn.execute(
                            "SELECT id FROM memories WHERE target = 'memory' "
                            "AND superseded_by IS NULL AND flagged IS NULL ORDER BY rowid LIMIT ?",
                            (CHANGES,),
                        )
                    ]
                adder.n = 10 * rows  # ids of its own
                for n, old_id in enumerate(old_ids):
                    text = f"bench replaced row {n} {texts[n % len(texts)]}"
                    new_id = adder.replace(old_id, text)
                    their_vectors.put(
                        [(new_id, text)],
                        RandomEmbedder(dimension).embed([text], kind="passage"),
                        f"{MODEL}-{dimension}",
                    )
                    after_replace.append(search(texts[(n + 10) % len(texts)], "replace", n))
                with writer.read() as conn:  # in-scope rows of the memory target, newest last
                    gone_ids = [
                        str(i)
                        for (i,) in conn.execute(
                            "SELECT id FROM memories WHERE target = 'memory' "
                            "AND superseded_by IS NULL AND flagged IS NULL "
                            "AND embedding IS NOT NULL ORDER BY rowid LIMIT ?",
                            (CHANGES,),
                        )
                    ]
                for n, gone_id in enumerate(gone_ids):
                    with writer.transaction():  # the row leaves the read model (a removal)
                        writer.connection.execute("DELETE FROM memories WHERE id = ?", (gone_id,))
                    after_remove.append(search(texts[(n + 15) % len(texts)], "remove", n))
            finally:
                writer.close()
        finally:
            storage.close()
    medians = {
        name: {
            state: (
                statistics.median(w for w, _ in pairs),
                statistics.median(c for _, c in pairs),
            )
            for state, pairs in by_state.items()
            if state != "cold"
        }
        for name, by_state in timed.items()
    }
    return HybridLatency(
        rows=rows,
        dimension=dimension,
        candidates=candidates,
        samples=len(latencies),
        p50_ms=percentile(latencies, 50),
        p95_ms=percentile(latencies, 95),
        mean_ms=statistics.fmean(latencies),
        after_write_ms=statistics.median(after_write),
        build_s=build_s,
        after_add_ms=statistics.median(after_add),
        after_replace_ms=statistics.median(after_replace) if after_replace else None,
        after_remove_ms=statistics.median(after_remove) if after_remove else None,
        now=medians["now"],
        before=medians["before"],
        main=medians.get("main", {}),
    )


def _blas_threads() -> str:
    return os.environ.get("OPENBLAS_NUM_THREADS") or "default"


def _scope(clauses: tuple[ScopeClause, ...]) -> VectorScope:
    return VectorScope(clauses=clauses)


def render_hybrid(results: Sequence[HybridLatency]) -> list[str]:
    out = [
        "",
        "## memory_search, hybrid (FTS + cosine + fusion + stages; query embedding excluded)",
        "",
        "| rows | dims | candidates | samples | p50 ms | p95 ms | mean ms | after a write ms "
        "| after an add ms | after a replace ms | after a remove ms | target (issue) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        target = ""
        if r.rows == HYBRID_TARGET_ROWS:
            worst = max(
                r.p50_ms,
                r.after_write_ms,
                r.after_add_ms or 0.0,
                r.after_replace_ms or 0.0,
                r.after_remove_ms or 0.0,
            )
            met = "met" if worst <= HYBRID_P50_TARGET_MS else "NOT met"
            target = f"≤ {HYBRID_P50_TARGET_MS:g} ms, also after a write: {met}"
        added = "—" if r.after_add_ms is None else f"{r.after_add_ms:.1f}"
        replaced = "—" if r.after_replace_ms is None else f"{r.after_replace_ms:.1f}"
        removed = "—" if r.after_remove_ms is None else f"{r.after_remove_ms:.1f}"
        out.append(
            f"| {r.rows:,} | {r.dimension} | {r.candidates:,} | {r.samples} | {r.p50_ms:.2f} "
            f"| {r.p95_ms:.2f} | {r.mean_ms:.2f} | {r.after_write_ms:.1f} | {added} "
            f"| {replaced} | {removed} | {target} |"
        )
    out += [
        "",
        "Session scope: project web of five, no sharing; candidates = in-scope active rows with "
        "a vector. 'after a write': another connection committed a change that leaves the "
        "scope's rows as they were, so that search re-checks for rows lacking a vector and "
        "refreshes the matrix from the change log (ADR 0043); 'after an add': another "
        "connection added an in-scope row and its vector; 'after a replace': another connection "
        f"replaced an in-scope row and embedded the new one; 'after a remove': another "
        f"connection deleted an in-scope row. Medians of {CHANGES}. "
        f"numpy BLAS threads: {_blas_threads()} (OPENBLAS_NUM_THREADS); on a busy machine "
        "threaded BLAS makes these small products much slower (ADR 0040).",
    ]
    out += [
        "",
        "### hybrid after a change: the cached matrix changed in place (ADR 0101) vs main's "
        f"store ({BRANCH_POINT}) vs the port-only path (before ADR 0082)",
        "",
        "| rows | state | wall ms | CPU ms | main: wall ms | main: CPU ms | CPU vs main "
        "| port-only: wall ms | port-only: CPU ms | CPU vs port-only | target (issue 29) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    labels = {"warm": "warm", "write": "after a write", "add": "after an add"}
    labels |= {"replace": "after a replace", "remove": "after a remove"}

    def pair(found: dict[str, tuple[float, float]], state: str, cpu: float) -> str:
        if state not in found:
            return "— | — | —"
        old_wall, old_cpu = found[state]
        ratio = f"{cpu / old_cpu:.2f}×" if old_cpu > 0 else "—"
        return f"{old_wall:.2f} | {old_cpu:.2f} | {ratio}"

    for r in results:
        for state, label in labels.items():
            if state not in r.now:
                continue
            wall, cpu = r.now[state]
            target = ""
            if r.rows == HYBRID_TARGET_ROWS:
                met = "met" if wall <= HYBRID_P50_TARGET_MS else "NOT met"
                target = f"≤ {HYBRID_P50_TARGET_MS:g} ms: {met}"
            out.append(
                f"| {r.rows:,} | {label} | {wall:.2f} | {cpu:.2f} | {pair(r.main, state, cpu)} "
                f"| {pair(r.before, state, cpu)} | {target} |"
            )
    missing = (
        ""
        if all(r.main for r in results)
        else (f" The 'main' columns are empty where {BRANCH_POINT} could not be read from git.")
    )
    out += [
        "",
        f"Medians of {CHANGES} searches after each kind of write (warm: every query), the "
        "three paths interleaved in one run, the order rotating. 'main': the same store read "
        f"through `SqliteVectorStore` as of {BRANCH_POINT} (a change copies the kept ids and "
        "moves the last row into a removed one's place). 'port-only': the same store read "
        "through the `VectorStore` port's methods only (`PortOnlyVectorStore`), so the service "
        "builds the id -> row map after each change and multiplies the matrix by the query "
        "and the background centroid on every search. CPU: `time.process_time` of the "
        "searching process." + missing,
    ]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tests.bench.hybrid [--rows N ...] [--samples N]`: the hybrid table alone."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[HYBRID_TARGET_ROWS])
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args(argv)
    print("\n".join(render_hybrid([bench_hybrid(n, args.samples) for n in args.rows])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
