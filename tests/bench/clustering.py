"""Benchmark: consolidation's offline pre-clustering (`domain/learning/clustering.py`) at 200 and
2,000 entries (issue 12 §6).

    python -m tests.bench.clustering [--sizes 200 2000] [--repeats 3]

Entries are seeded sentences of 8-14 words from a 400-word vocabulary (about 10% written as
near-duplicates of an earlier one, a third Chinese); timed twice: token rule only, and with a
unit vector (dimension 64) for every second entry, whose cosine links are computed by one
matrix product as `Consolidator._links` does (included in the time). The figure is the median
over the repeats of links + `cluster` + `render`. Part of `make bench` (`tests.bench.run`).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence

import attrs
import numpy as np
from pi_hermes_memory.domain.learning.clustering import CLUSTER_COSINE, CosineLinks, cluster, render

_HAN = "构建测试部署项目命令检查类型合并代码运行覆盖率要求每次之前完整服务端口配置"


@attrs.frozen(kw_only=True)
class ClusteringTime:
    entries: int
    vectors: bool
    median_ms: float
    clusters: int


def corpus(n: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    words = [f"w{k}" for k in range(400)]
    out: list[tuple[str, str]] = []
    for i in range(n):
        if out and rng.random() < 0.1:
            base = rng.choice(out)[1]
            text = base + (" again" if base.isascii() else "再")
        elif rng.random() < 0.33:
            text = "".join(rng.choice(_HAN) for _ in range(rng.randint(10, 24)))
        else:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(8, 14)))
        out.append((f"e{i:06d}", text))
    return out


def _vectors(entries: Sequence[tuple[str, str]], seed: int = 11) -> dict[str, list[float]]:
    rng = random.Random(seed)
    out: dict[str, list[float]] = {}
    for entry_id, _ in entries[::2]:
        raw = [rng.gauss(0, 1) for _ in range(64)]
        norm = sum(x * x for x in raw) ** 0.5
        out[entry_id] = [x / norm for x in raw]
    return out


def _links(vectors: dict[str, list[float]]) -> CosineLinks:
    """As `Consolidator._links`: one matrix product over the rows with a vector."""
    ids = list(vectors)
    matrix = np.asarray([vectors[i] for i in ids], dtype=np.float32)
    a, b = np.nonzero(np.triu(matrix @ matrix.T >= CLUSTER_COSINE, k=1))
    pairs = frozenset(
        (min(ids[x], ids[y]), max(ids[x], ids[y]))
        for x, y in zip(a.tolist(), b.tolist(), strict=True)
    )
    return CosineLinks(covered=frozenset(ids), pairs=pairs)


def bench_clustering(n: int, *, vectors: bool, repeats: int = 3) -> ClusteringTime:
    entries = corpus(n)
    vecs = _vectors(entries) if vectors else None
    times: list[float] = []
    found = 0
    for _ in range(max(1, repeats)):
        started = time.perf_counter()
        result = cluster(entries, links=_links(vecs) if vecs else None)
        render(entries, result)
        times.append((time.perf_counter() - started) * 1000)
        found = len(result.clusters)
    return ClusteringTime(
        entries=n, vectors=vectors, median_ms=statistics.median(times), clusters=found
    )


def run(sizes: Sequence[int] = (200, 2000), repeats: int = 3) -> list[ClusteringTime]:
    return [bench_clustering(n, vectors=v, repeats=repeats) for n in sizes for v in (False, True)]


def render_clustering(results: Sequence[ClusteringTime]) -> list[str]:
    lines = [
        "",
        "## Consolidation pre-clustering (`domain/learning/clustering.py`)",
        "",
        "| entries | vectors | median (ms) | clusters |",
        "|---:|---|---:|---:|",
    ]
    lines += [
        f"| {r.entries:,} | {'every 2nd' if r.vectors else 'none'} | {r.median_ms:.1f} | "
        f"{r.clusters} |"
        for r in results
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.clustering", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print("\n".join(render_clustering(run(args.sizes, args.repeats))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
