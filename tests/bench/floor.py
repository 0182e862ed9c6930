"""Calibrating a fixed hybrid relevance floor of an embedder (ADR 0027; since ADR 0069 the
default floor is the background calibration and a fixed floor is the explicit
`retrieval.minCosine`, applied to every row the cosine ranking finds).

    python -m tests.bench.floor [--data PATH] [--floors 0.8 0.82 ...] [--samples N]

Runs memory_search's hybrid ranking (`pi_hermes_memory.search.hybrid.ranked_hits`, the local offline
embedder of ADR 0017) on the retrieval benchmark's conversations (`tests.bench.retrieval`: the
data is read where it lies, never copied) once per candidate floor, and reports per floor:

- recall@5/10/20 of the benchmark questions (categories 1-4), and the change against no floor:
  the floor applies only to a query that matches no row through FTS, and then drops the rows
  whose cosine is below it, so it can only cost recall;
- the share of `UNRELATED_QUERIES` (nonsense words and questions about things no conversation
  talks about) answered with nothing, on every sample's store, next to FTS-only's share (an
  unrelated query that shares a word with the store is found by FTS whatever the floor);
- the quantiles of the best cosine of the unrelated queries: where their rows stand.

Query vectors are embedded once and shared by every variant (`QueryCache`), so the run costs
about one `make bench-retrieval` hybrid run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np
from pi_hermes_memory.search.hybrid import HybridSettings

from tests.bench.retrieval import (
    DEFAULT_DATA,
    DEFAULT_KS,
    Embedder,
    ModeReport,
    QueryCache,
    RetrieverFactory,
    SampleStore,
    fts_retriever,
    hybrid_factory,
    local_embedder,
    passage_matrix,
    run,
)

#: Queries no conversation of the benchmark (or an ordinary store of notes) is about.
UNRELATED_QUERIES = (
    "xylophone quantum",
    "zxqv blorft wibble",
    "quantum chromodynamics lattice gauge",
    "carburetor jet needle adjustment",
    "Byzantine iconoclasm controversy",
    "how many moons does Neptune have",
    "mitochondrial DNA haplogroup",
    "Estonian corporate tax filing deadline",
    "torque specification for lug nuts",
    "zeolite catalyst cracking",
    "lorem ipsum dolor sit amet",
    "asdf qwerty uiop",
    "Fermat's last theorem proof",
    "hydraulic fracturing regulations",
    "sonnet iambic pentameter",
    "kernel page table walk",
    "xylem phloem transport",
    "the boiling point of tungsten",
    "cryptocurrency mining difficulty",
    "medieval siege trebuchet",
    "ocelot habitat",
    "Kubernetes pod eviction",
    "gallium arsenide wafer",
    "tensor contraction einsum",
    "plate tectonics subduction zone",
    "Bessel function zeros",
    "glaucoma intraocular pressure",
    "Sumerian cuneiform tablets",
    "pneumatic tube mail",
    "flibbertigibbet quux",
)

CANDIDATE_FLOORS = (0.80, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87)


@attrs.define
class Unrelated:
    """The unrelated queries' outcome per variant, over every sample store."""

    empty: dict[str, int] = attrs.field(factory=dict)
    asked: dict[str, int] = attrs.field(factory=dict)
    best: list[float] = attrs.field(factory=list)

    def record(self, mode: str, answers: Sequence[Sequence[str]]) -> None:
        self.empty[mode] = self.empty.get(mode, 0) + sum(1 for a in answers if not a)
        self.asked[mode] = self.asked.get(mode, 0) + len(answers)

    def share(self, mode: str) -> float:
        return self.empty.get(mode, 0) / max(1, self.asked.get(mode, 0))


def asking_unrelated(mode: str, factory: RetrieverFactory, seen: Unrelated) -> RetrieverFactory:
    """`factory`, which also asks every unrelated query once per sample store."""

    def wrapped(store: SampleStore) -> object:
        retrieve = factory(store)
        seen.record(mode, [list(retrieve(q, 10)) for q in UNRELATED_QUERIES])
        return retrieve

    return wrapped  # type: ignore[return-value]


def floor_factories(
    embedder: Embedder, floors: Sequence[float], seen: Unrelated
) -> dict[str, RetrieverFactory]:
    cached = QueryCache(embedder)
    default = HybridSettings()
    out: dict[str, RetrieverFactory] = {"fts": fts_retriever}  # type: ignore[dict-item]
    # Since ADR 0069 a fixed cosine floor is the explicit `retrieval.minCosine` (it then
    # replaces the background calibration for every dense hit); 0 admits every cosine >= 0.
    variants: dict[str, HybridSettings] = {
        "hybrid (default)": default,
        "hybrid no floor": attrs.evolve(default, min_cosine=0.0),
    }
    for floor in floors:
        variants[f"hybrid floor {floor:.2f}"] = attrs.evolve(default, min_cosine=floor)
    for name, settings in variants.items():
        out[name] = hybrid_factory(cached, settings)

    def best_cosines(store: SampleStore) -> object:
        matrix = passage_matrix(store, cached)
        queries = cached.embed(list(UNRELATED_QUERIES), kind="query")
        seen.best.extend((queries @ matrix.T).max(axis=1).tolist())
        return lambda query, k: []

    out = {name: asking_unrelated(name, f, seen) for name, f in out.items()}
    out["(cosines)"] = best_cosines  # type: ignore[assignment]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.floor")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--floors", type=float, nargs="+", default=list(CANDIDATE_FLOORS))
    parser.add_argument("--samples", type=int, default=0, help="only the first N (0: all)")
    args = parser.parse_args(argv)
    embedder, why = local_embedder()
    if embedder is None:
        parser.error(f"needs the local embedder: {why}")
    data = args.data
    if args.samples:
        import json
        import tempfile

        raw = json.loads(Path(data).read_text(encoding="utf-8"))[: args.samples]
        tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)  # noqa: SIM115
        json.dump(raw, tmp)
        tmp.close()
        data = Path(tmp.name)
    seen = Unrelated()
    factories = floor_factories(embedder, args.floors, seen)
    modes = list(factories)

    def progress(line: str) -> None:
        print(f"… {line}", file=sys.stderr, flush=True)

    dataset, reports = run(data, modes, DEFAULT_KS, factories=factories, progress=progress)
    by_mode = {r.mode: r for r in reports}
    base = by_mode["hybrid no floor"]
    print(
        f"model {embedder.model_id}; {dataset.units} turns, {dataset.questions} questions in "
        f"{len(dataset.samples)} samples; {len(UNRELATED_QUERIES)} unrelated queries"
    )
    print()
    print("| variant | R@5 | R@10 | R@20 | ΔR@10 vs no floor | unrelated answered nothing |")
    print("|---|---|---|---|---|---|")
    for name, report in by_mode.items():
        if name == "(cosines)":
            continue
        assert isinstance(report, ModeReport)
        r5, r10, r20 = (report.recall(k) for k in DEFAULT_KS)
        delta = r10 - base.recall(10)
        print(f"| {name} | {r5:.3f} | {r10:.3f} | {r20:.3f} | {delta:+.3f} | "
              f"{seen.share(name):.3f} |")  # fmt: skip
    q = np.quantile(seen.best, [0.0, 0.05, 0.5, 0.95, 1.0])
    print()
    print("best cosine of an unrelated query (min p5 p50 p95 max): "
          + " ".join(f"{v:.3f}" for v in q))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
