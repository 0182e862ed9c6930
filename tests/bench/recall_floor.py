"""Auto-recall's confidence threshold (`autoRecallMinScore`, issue 27 §3, ADR 0070): what it
lets through, and what it keeps out, as a curve over the threshold.

    python -m tests.bench.recall_floor [--data PATH] [--thresholds 0,0.3,0.5,0.6,0.7,0.8]

For every question the keyword search auto-recall runs (`SqliteSearchIndex.search`, the
index `memory_search` uses, limit 20, as `AutoMemory._search` asks it) is run once; each
threshold then applies auto-recall's own rule to those hits: adaptive retrieval must say
"retrieve" (`should_retrieve`, default lengths), and the hits whose shown score reaches the
threshold and that hold a meaningful query term (`auto_memory.rejection`, without
embeddings) are injected, the best `autoRecallMaxItems` (3). Measured per threshold:

- `silent_unrelated`: everyday questions (`UNRELATED`) against a small store of engineering
  facts (`FACTS`): the share that injects nothing (goal ≥ 0.9);
- `silent_cross`: each LoCoMo question (categories 1–4) of sample j asked against the store of
  sample j+1 (another conversation: its answer is not there): the share that injects nothing
  (goal ≥ 0.9);
- `injects_evidence`: each LoCoMo question against its own conversation: the share whose
  injected items hold at least one evidence turn (what the threshold costs), and
  `injects_any`: the share that injects anything.

The scores are whatever the index returns: on the contract scale (0..1, issue 27's keyword
part) the thresholds mean the same in every store; before that part is merged they are raw
-bm25 values and the curve is only a baseline. `--preview` re-scores the same hits with an
approximation of the contract's score (the idf-weighted share of the query's meaningful terms
the row holds, `auto_memory.matched_terms` deciding presence, idf over the store's rows, no
length term; rows holding none score 0), to see where a threshold on that scale falls before
the keyword part lands. Keyword path only (the dense part's calibrated hybrid scores go
through the same rule). No figure is asserted by the test suite.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import attrs
from pi_hermes_memory.domain.prompt.adaptive import should_retrieve
from pi_hermes_memory.domain.search.terms import split_pieces
from pi_hermes_memory.lifecycle.auto_memory import (
    _folded,
    _same_word,
    matched_terms,
    rejection,
)
from pi_hermes_memory.ports.search import SearchHit, SearchQuery

from tests.bench.retrieval import (
    _MEMORY_CLAUSES,
    DEFAULT_DATA,
    Question,
    Sample,
    SampleStore,
    Unit,
    load_dataset,
    open_store,
)

SEARCH_LIMIT = 20
MAX_ITEMS = 3
DEFAULT_THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)

FACTS = (
    "The deploy script needs the corporate VPN",
    "Tabs are preferred over spaces in the Python code",
    "We use pnpm as the javascript package manager",
    "Replies should be short and formatted as bullet lists",
    "The staging database is reset every Monday at 06:00",
    "CI runs on GitHub Actions with a self-hosted runner for GPU tests",
    "The API listens on port 8443 behind the nginx proxy",
    "Release branches are cut from main every second Thursday",
    "Secrets live in the team vault, never in the repository",
    "The mobile app is written in Kotlin and Swift, not Flutter",
    "Feature flags are managed in LaunchDarkly",
    "Logs go to Loki and are kept for 30 days",
)
UNRELATED = (
    "does the user like pizza",
    "Can you summarize the plot of the novel for me please?",
    "what is a good recipe for banana bread with walnuts?",
    "how to tune a violin string",
    "best hiking trails in Patagonia",
    "who won the 1998 football world cup",
    "how long should I boil an egg for a soft yolk?",
    "what is the capital of Australia?",
    "recommend a movie for a rainy sunday",
    "how do I get red wine out of a carpet?",
    "what's the weather like in Lisbon in October?",
    "explain the rules of cricket in simple terms",
    "how many moons does Jupiter have?",
    "write a haiku about autumn leaves",
    "which houseplants survive with little light?",
    "how do I improve my chess openings?",
    "translate 'good morning' into Japanese",
    "what are the symptoms of a cold versus the flu?",
    "suggest a name for my new puppy",
    "how do tides work?",
)


def _hits(store: SampleStore, query: str, preview: bool = False) -> list[SearchHit]:
    hits = store.index.search(SearchQuery(text=query, clauses=_MEMORY_CLAUSES, limit=SEARCH_LIMIT))
    if not preview:
        return hits
    scored = [attrs.evolve(h, score=preview_score(query, h.text, store.texts)) for h in hits]
    return sorted(scored, key=lambda h: -h.score)


def preview_score(query: str, text: str, rows: Sequence[str]) -> float:
    """The `--preview` score (see the module)."""
    terms = matched_terms(query, query)  # the query's meaningful terms
    if not terms:
        return 0.0
    n = len(rows)

    def idf(term: str) -> float:
        df = _df(term, rows)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    present = set(matched_terms(query, text))
    total = sum(idf(t) for t in terms)
    return sum(idf(t) for t in terms if t in present) / total if total > 0 else 0.0


_DF: dict[tuple[str, int], int] = {}
_ROWS: dict[int, list[tuple[str, set[str]]]] = {}


def _df(term: str, rows: Sequence[str]) -> int:
    """Rows holding `term` as `matched_terms` would find it (each row split once)."""
    key = (term, id(rows))
    if key not in _DF:
        if id(rows) not in _ROWS:
            _ROWS[id(rows)] = [
                (f, {run for kind, run in split_pieces(f) if kind == "word"})
                for f in (_folded(r) for r in rows)
            ]
        split = _ROWS[id(rows)]
        if any(kind == "cjk" for kind, _ in split_pieces(term)):
            _DF[key] = sum(term in folded for folded, _ in split)
        else:
            _DF[key] = sum(any(_same_word(term, w) for w in words) for _, words in split)
    return _DF[key]


def injected(query: str, hits: Sequence[SearchHit], threshold: float) -> list[str]:
    """The ids auto-recall would inject at `threshold` (see the module)."""
    if not should_retrieve(query).retrieve:
        return []
    kept = [h.id for h in hits if rejection(query, h.score, h.text, threshold, dense=False) is None]
    return kept[:MAX_ITEMS]


def _facts_sample() -> Sample:
    units = tuple(Unit(dia_id=f"D1:{i}", text=t) for i, t in enumerate(FACTS, start=1))
    return Sample(sample_id="facts", units=units, questions=())


def run(
    data: Path, thresholds: Sequence[float], *, preview: bool = False
) -> list[dict[str, float]]:
    dataset = load_dataset(data)
    samples = [s for s in dataset.samples if s.questions]
    if len(samples) < 2:
        raise SystemExit("the cross-conversation set needs at least two samples")
    cross: list[tuple[str, list[SearchHit]]] = []
    #: (question, its store's entry id -> dia_id, the hits of its own store)
    own: list[tuple[Question, dict[str, str], list[SearchHit]]] = []
    with tempfile.TemporaryDirectory(prefix="recall-floor-") as tmp:
        work = Path(tmp)
        with open_store(_facts_sample(), work) as facts:
            unrelated = [_hits(facts, q, preview) for q in UNRELATED]
        for j, sample in enumerate(samples):
            other = samples[(j + 1) % len(samples)]
            (work / f"own-{j}").mkdir()
            (work / f"cross-{j}").mkdir()
            with open_store(sample, work / f"own-{j}") as mine:
                dia_ids = dict(mine.dia_ids)
                own.extend((q, dia_ids, _hits(mine, q.text, preview)) for q in sample.questions)
            with open_store(other, work / f"cross-{j}") as theirs:
                cross.extend((q.text, _hits(theirs, q.text, preview)) for q in sample.questions)
    rows = []
    for t in thresholds:
        pairs = zip(UNRELATED, unrelated, strict=True)
        silent_unrelated = sum(not injected(q, h, t) for q, h in pairs)
        silent_cross = sum(not injected(q, h, t) for q, h in cross)
        any_ = evidence = 0
        for question, ids, hits in own:
            chosen = injected(question.text, hits, t)
            any_ += bool(chosen)
            evidence += any(ids.get(i) in question.evidence for i in chosen)
        rows.append(
            {
                "threshold": t,
                "silent_unrelated": silent_unrelated / len(UNRELATED),
                "silent_cross": silent_cross / len(cross),
                "injects_evidence": evidence / len(own),
                "injects_any": any_ / len(own),
            }
        )
    return rows


def render(rows: Sequence[dict[str, float]]) -> str:
    keys = ("threshold", "silent_unrelated", "silent_cross", "injects_evidence", "injects_any")
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(f"{row[k]:.3f}" for k in keys) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.recall_floor")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--thresholds", default=",".join(str(t) for t in DEFAULT_THRESHOLDS))
    parser.add_argument("--preview", action="store_true", help="approximate contract scores")
    args = parser.parse_args(argv)
    thresholds = [float(t) for t in args.thresholds.split(",") if t.strip()]
    print(render(run(args.data, thresholds, preview=args.preview)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
