"""Calibrating the hybrid relevance floor of an embedder (ADR 0027).

    python -m tests.bench.floor [--data PATH] [--samples 1]

For each of the first `--samples` conversations of the retrieval benchmark's data (read where
it lies, never copied), every turn is embedded as a passage with the local offline embedder
(ADR 0017). Then:

- each query of `UNRELATED_QUERIES` (nonsense words and questions about things no
  conversation talks about) is embedded, and its *best* cosine over the sample's turns is
  recorded: the floor has to sit above these for an unrelated query to find nothing;
- each benchmark question's cosine with each of its evidence turns is recorded: the share of
  evidence below a candidate floor bounds what the floor can cost recall (a turn that FTS
  also finds is never dropped, so the real cost is lower; `make bench-retrieval` measures it).

Prints the quantiles of both and, per candidate floor, the share of unrelated queries that
would answer nothing and the share of evidence turns a dense-only match would lose.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from tests.bench.retrieval import DEFAULT_DATA, load_dataset

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

CANDIDATE_FLOORS = (0.78, 0.79, 0.80, 0.81, 0.82, 0.83, 0.84, 0.85)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--samples", type=int, default=1)
    args = parser.parse_args(argv)
    from pi_hermes_memory.adapters.local_embedder import LocalEmbedder

    embedder = LocalEmbedder()
    dataset = load_dataset(args.data)
    unrelated = embedder.embed(list(UNRELATED_QUERIES), kind="query")
    best_unrelated: list[float] = []
    evidence: list[float] = []
    units = 0
    for sample in dataset.samples[: args.samples]:
        matrix = embedder.embed([u.text for u in sample.units], kind="passage")
        units += len(sample.units)
        at = {u.dia_id: i for i, u in enumerate(sample.units)}
        best_unrelated += (unrelated @ matrix.T).max(axis=1).tolist()
        questions = [q for q in sample.questions if q.category in (1, 2, 3, 4)]
        vectors = embedder.embed([q.text for q in questions], kind="query")
        for question, vector in zip(questions, vectors, strict=True):
            cosines = matrix @ vector
            evidence += [float(cosines[at[d]]) for d in question.evidence if d in at]
    print(f"model {embedder.model_id}; {units} turns; {len(UNRELATED_QUERIES)} unrelated queries")
    for name, values in (("unrelated best", best_unrelated), ("evidence", evidence)):
        q = np.quantile(values, [0.0, 0.05, 0.5, 0.95, 1.0])
        print(f"{name:>15}: " + " ".join(f"{v:.3f}" for v in q) + "  (min p5 p50 p95 max)")
    print("| floor | unrelated answered nothing | evidence turns below |")
    print("|---|---|---|")
    for floor in CANDIDATE_FLOORS:
        empty = np.mean([v < floor for v in best_unrelated])
        lost = np.mean([v < floor for v in evidence])
        print(f"| {floor:.2f} | {empty:.3f} | {lost:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
