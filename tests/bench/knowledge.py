"""The knowledge base: indexing speed, the unchanged re-index and knowledge_search latency
(issue 15 §4, ADR 0048).

    python -m tests.bench.knowledge [--mb 200] [--samples 300] [--dir D] [--out f.json]

A tree of `--mb` megabytes is generated in a temporary folder (or `--dir`): 100 folders of
Markdown (70%), Python (20%) and text (10%) files of ~10 KB, each built from a seeded pool of
paragraphs (30% Chinese) plus a unique marker word, so every file has its own content hash.
Then, on the real adapters (`KnowledgeFiles`, `SqliteKnowledgeIndex`), FTS-only:

1. the first `index()`: MB/s = bytes read / seconds (walk, read, hash, chunk, FTS5 insert);
2. `index()` of the unchanged tree (target ≤ 1 s): no file is read, one stat per file;
3. `search()` p50/p95 over `--samples` seeded queries at the chunk count the tree gives
   (~100k chunks for 200 MB): rare marker words, common vocabulary pairs, English questions
   and Chinese phrases, limit 5, with and without a path filter.

The auto-recall figure (what `before_turn` adds to a turn) is `make bench-recall`'s; this
bench does not repeat it. No figure is asserted by the test suite; the smoke test runs a tiny
tree.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pi_hermes_memory.adapters.knowledge_files import KnowledgeFiles
from pi_hermes_memory.adapters.sqlite.knowledge import SqliteKnowledgeIndex
from pi_hermes_memory.knowledge import KnowledgeBase

from tests.bench.run import _table, _workdir, machine_context, percentile

FILE_BYTES = 10_000
FOLDERS = 100
_EN = (
    "deploy", "cache", "index", "shard", "replica", "token", "rotate", "webhook", "queue",
    "worker", "scheduler", "lease", "snapshot", "restore", "migrate", "schema", "vector",
    "embed", "rank", "fusion", "budget", "latency", "throughput", "timeout", "retry",
    "backoff", "circuit", "breaker", "config", "secret", "vault", "policy", "audit", "trace",
    "metric", "alert", "pager", "runbook", "incident", "review", "rollout", "canary",
    "feature", "flag", "tenant", "quota", "billing",
)  # fmt: skip
_ZH = (
    "部署", "缓存", "索引", "分片", "副本", "令牌", "轮换", "队列", "调度", "快照",
    "恢复", "迁移", "向量", "检索", "排序", "延迟", "重试", "告警", "值班", "灰度",
)  # fmt: skip
_FILLER = (
    "the", "a", "of", "to", "and", "in", "is", "for", "with", "on", "that", "this", "it",
    "as", "be", "by", "are", "from", "at",
)  # fmt: skip


def _paragraph(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "".join(
            rng.choice(_ZH) + rng.choice("，的了在和") for _ in range(rng.randint(20, 60))
        )
    words = [
        rng.choice(_EN) if rng.random() < 0.45 else rng.choice(_FILLER)
        for _ in range(rng.randint(40, 110))
    ]
    return " ".join(words).capitalize() + "."


def generate_tree(root: Path, megabytes: float, seed: int = 7) -> tuple[int, int]:
    """Write the tree; returns (files, bytes)."""
    rng = random.Random(seed)
    pool = [_paragraph(rng) for _ in range(3_000)]
    target = int(megabytes * 1_000_000)
    written = files = 0
    while written < target:
        folder = root / f"area{files % FOLDERS:03d}" / f"topic{(files // FOLDERS) % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        kind = rng.random()
        marker = f"marker{files:06d}"
        parts: list[str] = []
        size = 0
        if kind < 0.7:
            name = f"doc{files:06d}.md"
            parts.append(f"# Document {files} {marker}\n")
            while size < FILE_BYTES:
                if rng.random() < 0.25:
                    parts.append(f"## {rng.choice(_EN).title()} {rng.choice(_EN)}\n")
                text = rng.choice(pool)
                parts.append(text + "\n")
                size += len(text.encode()) + 2
        elif kind < 0.9:
            name = f"mod{files:06d}.py"
            parts.append(f"# {marker}\n")
            while size < FILE_BYTES:
                fn = f"def {rng.choice(_EN)}_{rng.choice(_EN)}(x):\n"
                body = f'    """{rng.choice(pool)[:200]}"""\n    return x\n'
                parts.append(fn + body)
                size += len(fn) + len(body.encode()) + 1
        else:
            name = f"note{files:06d}.txt"
            parts.append(f"{marker}\n")
            while size < FILE_BYTES:
                text = rng.choice(pool)
                parts.append(text + "\n")
                size += len(text.encode()) + 2
        data = "\n".join(parts).encode()
        (folder / name).write_bytes(data)
        written += len(data)
        files += 1
    return files, written


def queries(files: int, count: int, seed: int = 11) -> list[tuple[str, str | None]]:
    rng = random.Random(seed)
    out: list[tuple[str, str | None]] = []
    for i in range(count):
        kind = i % 5
        if kind == 0:
            out.append((f"marker{rng.randrange(files):06d}", None))
        elif kind == 1:
            out.append((f"{rng.choice(_EN)} {rng.choice(_EN)}", None))
        elif kind == 2:
            out.append((f"how does the {rng.choice(_EN)} handle {rng.choice(_EN)}?", None))
        elif kind == 3:
            out.append((rng.choice(_ZH) + rng.choice(_ZH), None))
        else:
            out.append(
                (f"{rng.choice(_EN)} {rng.choice(_EN)}", f"area{rng.randrange(FOLDERS):03d}/")
            )
    return out


def run(megabytes: float, samples: int, workdir: Path | None) -> dict[str, Any]:
    with _workdir(workdir) as tmp:
        tree = tmp / "tree"
        started = time.perf_counter()
        files, size = generate_tree(tree, megabytes)
        generated_s = time.perf_counter() - started
        kb = KnowledgeBase(
            roots=[str(tree)],
            source=KnowledgeFiles(exclude=[tmp / "state"]),
            index=SqliteKnowledgeIndex(tmp / "state" / "knowledge.db"),
        )
        try:
            first = kb.index()
            again = kb.index()
            stats = kb.stats()
            timings: dict[str, list[float]] = {"all": [], "filtered": []}
            for query, path in queries(files, samples):
                t0 = time.perf_counter()
                kb.search(query, limit=5, path=path)
                timings["filtered" if path else "all"].append((time.perf_counter() - t0) * 1000)
        finally:
            kb.close()
        db_bytes = sum(p.stat().st_size for p in (tmp / "state").glob("knowledge.db*"))
    every = timings["all"] + timings["filtered"]
    return {
        "machine": machine_context(),
        "tree": {"files": files, "bytes": size, "generated_s": round(generated_s, 2)},
        "index": {
            "seconds": round(first.seconds, 2),
            "mb_per_second": round(first.mb_per_second, 2),
            "chunks": stats.chunks,
            "db_bytes": db_bytes,
            "skipped": first.skipped,
        },
        "reindex_unchanged": {
            "seconds": round(again.seconds, 3),
            "files_unchanged": again.files_unchanged,
            "bytes_read": again.bytes_read,
            "target_s": 1.0,
        },
        "search": {
            "samples": len(every),
            "p50_ms": round(percentile(every, 50), 2),
            "p95_ms": round(percentile(every, 95), 2),
            "filtered_p50_ms": round(percentile(timings["filtered"], 50), 2)
            if timings["filtered"]
            else None,
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="tree size in MB (default 200)")
    parser.add_argument("--samples", type=int, default=300, help="search samples (default 300)")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    result = run(args.mb, args.samples, args.dir)
    idx, re_idx, search = result["index"], result["reindex_unchanged"], result["search"]
    print(
        _table(
            ["tree", "files", "chunks", "index MB/s", "index s", "unchanged re-index s"],
            [
                [
                    f"{result['tree']['bytes'] / 1e6:.0f} MB",
                    result["tree"]["files"],
                    idx["chunks"],
                    idx["mb_per_second"],
                    idx["seconds"],
                    f"{re_idx['seconds']} (target ≤ 1 s: "
                    f"{'met' if re_idx['seconds'] <= 1.0 else 'MISSED'})",
                ]
            ],
        )
    )
    print()
    print(
        _table(
            ["search samples", "p50 ms", "p95 ms", "path-filtered p50 ms"],
            [[search["samples"], search["p50_ms"], search["p95_ms"], search["filtered_p50_ms"]]],
        )
    )
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
