"""Keyword search benchmark (issue 27, ADR 0068): cost of common words, and false recall.

    python -m tests.bench.keyword [--sizes 1000 20000 100000] [--queries 40] [--work DIR]
                                  [--part scale|floor|speed|all] [--data PATH] [--floors ...]
                                  [--speed-sizes 1000 5000 20000 100000] [--samples 100]

`speed` (issue 29, ADR 0102): `tests.bench.run.bench_search` at each of `--speed-sizes`:
p50 per query kind of ours (`SqliteSearchIndex.search`), the TypeScript original's query
shape (`tests/bench/ts_shape.py`), the search before ADR 0102
(`tests/support/keyword_previous.py`: the old code, its own caches) and the bare-SQL floor
(the statements ours ran for that query, replayed through apsw, every row stepped, no Python
around them), query by query in one run, with the ratios (goals: ours <= TS, ours <= 1.2x floor).

`scale`: the synthetic store of `make bench` (`tests.bench.run.build_search_store`: English and
Chinese notes over five projects, ~20% superseded history) at each size, built once into
`--work` (a temporary directory unless given; a store already there is reused). The queries are
pairs of the corpus's most common meaningful English words (counted on the smallest store):
the worst case for a keyword index, whose cost used to grow with the rows a common word hits.
Each query is timed twice on one `SqliteSearchIndex`: *cold* (its document-frequency cache
cleared, as after a write) and *warm*. Reported: p50/p95 per size and the p50 ratio of each
size to the smallest (goal: at most 1.5 from 1k to 100k).

`floor`: the keyword floor's trade-off. For each floor, on the LoCoMo-shaped data of
`tests.bench.retrieval` (read in place): R@5/R@10 of the benchmark questions on their own
conversation, the share of those questions asked against a *different* conversation's store
that return nothing, and the share of `UNRELATED_QUESTIONS` (everyday questions) that return
nothing against `ENGINEERING_FACTS` (a small store of team facts).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.relevance import KEYWORD_FLOOR, row_counts
from pi_hermes_memory.domain.search.terms import is_stop_term
from pi_hermes_memory.ports.search import SearchQuery
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.testing.contracts import EventWriter

from tests.bench import retrieval
from tests.bench.run import (
    SEARCH_FLOOR_RATIO,
    SEARCH_SESSION_PROJECT,
    bench_search,
    build_search_store,
    forget_query_caches,
    percentile,
)

DEFAULT_SIZES = (1_000, 20_000, 100_000)
#: The sizes of the `speed` part (issue 29: "at every size, 5k included").
SPEED_SIZES = (1_000, 5_000, 20_000, 100_000)
#: The goal: p50 at the largest size over p50 at the smallest.
RATIO_GOAL = 1.5
DEFAULT_FLOORS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)

#: A small store of engineering facts (the issue's example store).
ENGINEERING_FACTS = (
    "The deploy script needs the corporate VPN",
    "Tabs are preferred over spaces in this repository",
    "Use pnpm, not npm, for the web frontend",
    "Replies should be short and formatted as bullet lists",
    "The staging database is reset every Sunday night",
    "CI runs the integration tests against PostgreSQL 16",
    "Release tags follow semantic versioning with a v prefix",
    "The on-call rotation changes every Monday at 10:00",
    "Secrets live in the vault, never in the repository",
    "The API gateway times out requests after 30 seconds",
    "Feature flags are removed two sprints after full rollout",
    "Database migrations must be reversible",
)
#: Everyday questions that none of those facts answers.
UNRELATED_QUESTIONS = (
    "does the user like pizza",
    "Can you summarize the plot of the novel for me please?",
    "recipe for banana bread with walnuts",
    "how to tune a violin string",
    "best hiking trails in Patagonia",
    "who won the 1998 football world cup",
    "where do the cats nap",
    "what is the capital of Australia",
    "how many moons does Neptune have",
    "tips for growing tomatoes on a balcony",
    "what time is it in Tokyo",
    "translate good morning into Italian",
    "how do I make cold brew coffee",
    "what are the symptoms of the flu",
    "recommend a good science fiction book",
    "how long should I boil an egg",
    "hello, how are you today?",
    "thanks, that was helpful",
    "what is the weather like tomorrow",
    "explain the rules of cricket",
)


@contextmanager
def _workdir(root: Path | None) -> Iterator[Path]:
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        yield root
    else:
        with tempfile.TemporaryDirectory(prefix="hermes-keyword-") as tmp:
            yield Path(tmp)


def _store(work: Path, rows: int) -> Path:
    path = work / f"keyword-{rows}.db"
    if not path.exists():
        partial = path.with_suffix(".partial")
        for leftover in work.glob(f"{partial.name}*"):
            leftover.unlink()
        build_search_store(partial, rows)
        partial.rename(path)
    return path


def common_words(path: Path, count: int) -> list[str]:
    """The `count` meaningful English words held by the most rows of the store at `path`."""
    storage = SqliteStorage(path)
    try:
        docs: Counter[str] = Counter()
        for (text,) in storage.connection.execute("SELECT text FROM memories"):
            docs.update(
                w
                for w in row_counts(str(text)).words
                if len(w) > 3 and w.isalpha() and not is_stop_term(w)
            )
    finally:
        storage.close()
    return [w for w, _ in docs.most_common(count)]


def common_queries(words: Sequence[str], count: int) -> list[str]:
    """Pairs of common words, most common first, `count` of them."""
    pairs = [f"{a} {b}" for i, a in enumerate(words) for b in words[i + 1 :]]
    return pairs[:count]


def time_queries(path: Path, queries: Sequence[str]) -> tuple[list[float], list[float], float]:
    """(cold latencies ms, warm latencies ms, mean hits) of `queries` on the store at `path`."""
    clauses = search_clauses(SessionScope(project=SEARCH_SESSION_PROJECT))
    storage = SqliteStorage(path)
    cold: list[float] = []
    warm: list[float] = []
    hits = 0
    try:
        index = SqliteSearchIndex(storage)
        for text in queries[:5]:  # the page cache and the statement cache
            index.search(SearchQuery(text=text, clauses=clauses))
        for text in queries:
            query = SearchQuery(text=text, clauses=clauses)
            index._counts._token = None  # as after a write: counted again
            forget_query_caches()
            started = time.perf_counter()
            found = index.search(query)
            cold.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            index.search(query)
            warm.append((time.perf_counter() - started) * 1000)
            hits += len(found)
    finally:
        storage.close()
    return cold, warm, hits / max(1, len(queries))


def scale(sizes: Sequence[int], queries: int, work: Path) -> list[str]:
    paths = {n: _store(work, n) for n in sorted(sizes)}
    words = common_words(paths[min(sizes)], 10)
    texts = common_queries(words, queries)
    lines = [
        "## keyword search with common words",
        "",
        f"{len(texts)} queries of two common words ({', '.join(words)}); limit 10.",
        "",
        "| rows | cold p50 ms | cold p95 ms | warm p50 ms | warm p95 ms | mean hits "
        "| cold p50 / smallest | warm p50 / smallest |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base: tuple[float, float] | None = None
    ratio = (0.0, 0.0)
    for n, path in paths.items():
        cold, warm, hits = time_queries(path, texts)
        p50 = (percentile(cold, 50), percentile(warm, 50))
        base = base or p50
        ratio = (p50[0] / base[0], p50[1] / base[1])
        lines.append(
            f"| {n} | {p50[0]:.2f} | {percentile(cold, 95):.2f} | {p50[1]:.2f} | "
            f"{percentile(warm, 95):.2f} | {hits:.1f} | {ratio[0]:.2f} | {ratio[1]:.2f} |"
        )
    lines += [
        "",
        f"largest / smallest p50: cold {ratio[0]:.2f}, warm {ratio[1]:.2f} (goal <= {RATIO_GOAL})",
    ]
    return lines


def _merged_copy(root: Path, rows: int) -> Path:
    """A copy of the speed store of `rows` rows whose `memories_fts` is merged into one
    segment (FTS5 'optimize'), as a store looks after a merge; built once in `root`."""
    source = root / f"speed-{rows}"
    source.mkdir(parents=True, exist_ok=True)
    if not (source / "search.db").exists():
        build_search_store(source / "search.db", rows)
    target = root / f"speed-{rows}-merged"
    if not (target / "search.db").exists():
        target.mkdir(parents=True, exist_ok=True)
        storage = SqliteStorage(source / "search.db")
        try:
            storage.connection.execute("VACUUM INTO ?", (str(target / "search.partial"),))
        finally:
            storage.close()
        conn = SqliteStorage(target / "search.partial")
        try:
            conn.connection.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
        finally:
            conn.close()
        (target / "search.partial").rename(target / "search.db")
    return target


def _by_adds(root: Path, rows: int) -> Path:
    """The speed store of `rows` rows written one event per transaction, as `Memory.add`
    commits (with the merge step after each, ADR 0102); built once in `root`."""
    target = root / f"speed-{rows}-adds"
    if not (target / "search.db").exists():
        target.mkdir(parents=True, exist_ok=True)
        build_search_store(target / "search.partial", rows, single=True)
        (target / "search.partial").rename(target / "search.db")
    return target


def _segments(db: Path) -> int:
    storage = SqliteStorage(db)
    try:
        sql = "SELECT count(DISTINCT segid) FROM memories_fts_idx"
        return int(storage.connection.execute(sql).get)
    finally:
        storage.close()


def speed(
    sizes: Sequence[int], samples: int, work: Path, merged: bool = False, by_adds: bool = False
) -> list[str]:
    """The speed table; with `merged`, each size once more on a copy whose keyword index
    is one FTS5 segment (ADR 0102: the segment count is most of the SQL floor); with
    `by_adds`, on a store of the same rows written one event per transaction."""
    lines = [
        "## keyword search: ours, the TS shape, the old search and the SQL floor",
        "",
        f"{samples} seeded queries per kind, scope project {SEARCH_SESSION_PROJECT!r}, limit 10; "
        "p50 ms, CPU p50 beside ours; 'old' is the search before ADR 0102 (its own caches).",
        "",
        "| rows | query kind | ours | ours CPU | TS shape | old | SQL floor | statements "
        "| ours / TS | ours / old | old / floor | ours / floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    runs = [(n, "") for n in sorted(sizes)]
    if merged:
        runs += [(n, "merged") for n in sorted(sizes)]
    if by_adds:
        runs += [(n, "by adds") for n in sorted(sizes)]
    segments = []
    for n, variant in runs:
        root = work / f"speed-{n}"
        root.mkdir(parents=True, exist_ok=True)
        if variant == "merged":
            root = _merged_copy(work, n)
        elif variant == "by adds":
            root = _by_adds(work, n)
        label = f"{n:,} {variant}".strip()
        for r in bench_search(n, samples, root=root):
            ts = r.ts_p50_ms or float("nan")
            old = r.old_p50_ms or float("nan")
            floor = r.floor_p50_ms or float("nan")
            lines.append(
                f"| {label} | {r.kind} | {r.p50_ms:.3f} | {r.cpu_p50_ms or 0:.3f} | {ts:.3f} | "
                f"{old:.3f} | {floor:.3f} | {r.statements or 0:g} | {r.p50_ms / ts:.2f} | "
                f"{r.p50_ms / old:.2f} | {old / floor:.2f} | {r.p50_ms / floor:.2f} |"
            )
        segments.append(f"{label}: {_segments(root / 'search.db')}")
    lines += ["", f"goals: ours / TS <= 1, ours / floor <= {SEARCH_FLOOR_RATIO:g}"]
    lines += ["", f"keyword index segments (`memories_fts`): {'; '.join(segments) or '-'}"]
    return lines


def _facts_store(path: Path) -> SqliteStorage:
    storage = SqliteStorage(path)
    writer = EventWriter(storage)
    for fact in ENGINEERING_FACTS:
        writer.add(fact, Target.MEMORY)
    return storage


_CLAUSES = search_clauses(SessionScope(project=None), Target.MEMORY)


def _empty_share(index: SqliteSearchIndex, questions: Sequence[str], floor: float) -> float:
    empty = sum(
        1
        for q in questions
        if not index.search(SearchQuery(text=q, clauses=_CLAUSES, min_score=floor))
    )
    return empty / len(questions) if questions else float("nan")


def floors(data: Path, chosen: Sequence[float], work: Path) -> list[str]:
    def factory(floor: float) -> retrieval.RetrieverFactory:
        def make(store: retrieval.SampleStore) -> retrieval.Retriever:
            def retrieve(query: str, k: int) -> list[str]:
                found = store.index.search(
                    SearchQuery(text=query, clauses=_CLAUSES, limit=k, min_score=floor)
                )
                return [h.id for h in found]

            return retrieve

        return make

    factories = {f"floor {f:.2f}": factory(f) for f in chosen}
    dataset, reports = retrieval.run(data, list(factories), (5, 10), factories=factories)
    # every sample's questions asked against the next sample's store: nothing answers them
    foreign: list[tuple[retrieval.Sample, list[str]]] = []
    samples = dataset.samples
    for i, sample in enumerate(samples):
        if len(samples) > 1:
            other = samples[(i + 1) % len(samples)]
            foreign.append((other, [q.text for q in sample.questions]))
    facts = _facts_store(work / "facts.db")
    facts_index = SqliteSearchIndex(facts)
    lines = [
        "## keyword floor",
        "",
        f"{dataset.questions} questions on their own conversation (R@k); the same questions "
        "against another conversation's store, and "
        f"{len(UNRELATED_QUESTIONS)} everyday questions against {len(ENGINEERING_FACTS)} "
        "engineering facts (share answered with nothing). Default floor "
        f"{KEYWORD_FLOOR}.",
        "",
        "| floor | R@5 | R@10 | other conversation: empty | everyday vs facts: empty |",
        "|---|---|---|---|---|",
    ]
    try:
        stores = []
        for k, (other, _) in enumerate(foreign):
            stores.append(retrieval.build_store(other, work / f"foreign-{k}.db"))
        for floor, report in zip(chosen, reports, strict=True):
            total = empty = 0
            for store, (_, questions) in zip(stores, foreign, strict=True):
                share = _empty_share(store.index, questions, floor)
                empty += round(share * len(questions))
                total += len(questions)
            lines.append(
                f"| {floor:.2f} | {report.recall(5):.3f} | {report.recall(10):.3f} | "
                f"{empty / total if total else float('nan'):.3f} | "
                f"{_empty_share(facts_index, UNRELATED_QUESTIONS, floor):.3f} |"
            )
    finally:
        for store in stores:
            store.storage.close()
        facts.close()
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.keyword", description=__doc__)
    parser.add_argument("--part", choices=["scale", "floor", "speed", "all"], default="all")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--work", type=Path, help="keep (and reuse) the built stores here")
    parser.add_argument("--data", type=Path, default=retrieval.DEFAULT_DATA)
    parser.add_argument("--floors", type=float, nargs="+", default=list(DEFAULT_FLOORS))
    parser.add_argument("--speed-sizes", type=int, nargs="+", default=list(SPEED_SIZES))
    parser.add_argument("--samples", type=int, default=100, help="queries per kind (speed)")
    parser.add_argument(
        "--merged",
        action="store_true",
        help="speed: each size again with the keyword index merged into one FTS5 segment",
    )
    parser.add_argument(
        "--by-adds",
        action="store_true",
        help="speed: each size again on a store written one event per transaction (as adds)",
    )
    args = parser.parse_args(argv)
    if any(n < 1 for n in (*args.sizes, *args.speed_sizes)) or min(args.queries, args.samples) < 1:
        parser.error("sizes, --queries and --samples must be >= 1")
    lines: list[str] = ["# Keyword search benchmark", ""]
    with _workdir(args.work) as work:
        if args.part in ("scale", "all"):
            lines += [*scale(args.sizes, args.queries, work), ""]
        if args.part in ("speed", "all"):
            table = speed(args.speed_sizes, args.samples, work, args.merged, args.by_adds)
            lines += [*table, ""]
        if args.part in ("floor", "all"):
            with tempfile.TemporaryDirectory(prefix="hermes-floor-") as tmp:
                lines += floors(args.data, args.floors, Path(tmp))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
