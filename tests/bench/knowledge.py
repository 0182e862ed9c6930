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
import functools
import itertools
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pi_hermes_memory.adapters.files.knowledge_folders import KnowledgeFiles
from pi_hermes_memory.adapters.sqlite.knowledge import SqliteKnowledgeIndex
from pi_hermes_memory.knowledge.service import KnowledgeBase

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


_SYLLABLES = (
    "ka", "lo", "mi", "ter", "pan", "dor", "vex", "ul", "sen", "ri", "bo", "tak", "zen",
    "qua", "fi", "mor", "nel", "ash", "gri", "pet", "su", "von", "lek", "ha",
)  # fmt: skip
_HAN = (
    "数据服务配置节点任务日志存储网络接口版本用户权限模型文件系统进程线程"
    "内存磁盘请求响应错误状态集群监控指标脚本测试发布回滚备份策略规则"
)


@functools.cache
def vocabulary() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(English, Chinese) words by falling frequency (Zipf: rank r has weight 1/(r + 1)):
    the tech words spread among 4,000 pseudo-words, 600 two-character Chinese words."""
    rng = random.Random(3)
    words: set[str] = set()
    while len(words) < 4_000 - len(_EN):
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    english = sorted(words)
    rng.shuffle(english)
    for i, word in enumerate(_EN):  # the named words at ranks 20, 60, 100, ...
        english.insert(20 + 40 * i, word)
    chinese: set[str] = set(_ZH)
    while len(chinese) < 600:
        chinese.add(rng.choice(_HAN) + rng.choice(_HAN))
    rest = sorted(chinese - set(_ZH))
    rng.shuffle(rest)
    return tuple(english), (*_ZH, *rest)


@functools.cache
def _weights(size: int) -> tuple[float, ...]:
    return tuple(itertools.accumulate(1 / (r + 1) for r in range(size)))


def _paragraph(rng: random.Random) -> str:
    english, chinese = vocabulary()
    if rng.random() < 0.3:
        picks = rng.choices(chinese, cum_weights=_weights(len(chinese)), k=rng.randint(20, 60))
        return "".join(w + rng.choice("，的了在和") for w in picks)
    count = rng.randint(40, 110)
    picks = rng.choices(english, cum_weights=_weights(len(english)), k=count)
    words = [w if rng.random() < 0.5 else rng.choice(_FILLER) for w in picks]
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


#: query classes, in the order they repeat
CLASSES = ("marker", "topic", "question", "cjk", "path", "common")


def queries(files: int, count: int, seed: int = 11) -> list[tuple[str, str, str | None]]:
    """(class, query, path filter): a file's unique marker; two words of ranks 50-1,000;
    an English question around such words; two Chinese words of ranks 20-300; topic words
    in one of the 100 folders; two of the ten most frequent words (the worst case: each in
    most chunks)."""
    rng = random.Random(seed)
    english, chinese = vocabulary()
    out: list[tuple[str, str, str | None]] = []
    for i in range(count):
        kind = CLASSES[i % len(CLASSES)]
        a, b = rng.choice(english[50:1000]), rng.choice(english[50:1000])
        if kind == "marker":
            out.append((kind, f"marker{rng.randrange(files):06d}", None))
        elif kind == "topic":
            out.append((kind, f"{a} {b}", None))
        elif kind == "question":
            out.append((kind, f"how does the {a} handle {b}?", None))
        elif kind == "cjk":
            out.append((kind, rng.choice(chinese[20:300]) + rng.choice(chinese[20:300]), None))
        elif kind == "path":
            out.append((kind, f"{a} {b}", f"area{rng.randrange(FOLDERS):03d}/"))
        else:
            out.append((kind, f"{rng.choice(english[:10])} {rng.choice(english[:10])}", None))
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
            timings: dict[str, list[float]] = {kind: [] for kind in CLASSES}
            found: Counter[str] = Counter()
            for kind, query, path in queries(files, samples):
                t0 = time.perf_counter()
                hits = kb.search(query, limit=5, path=path)
                timings[kind].append((time.perf_counter() - t0) * 1000)
                found[kind] += bool(hits)
        finally:
            kb.close()
        db_bytes = sum(p.stat().st_size for p in (tmp / "state").glob("knowledge.db*"))
    every = [t for values in timings.values() for t in values]
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
            "by_class": {
                kind: {
                    "samples": len(values),
                    "p50_ms": round(percentile(values, 50), 2),
                    "p95_ms": round(percentile(values, 95), 2),
                    "answered": found[kind],
                }
                for kind, values in timings.items()
                if values
            },
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
    rows: list[list[object]] = [["all", search["samples"], search["p50_ms"], search["p95_ms"], ""]]
    for kind, row in search["by_class"].items():
        rows.append([kind, row["samples"], row["p50_ms"], row["p95_ms"], row["answered"]])
    print(_table(["queries", "samples", "p50 ms", "p95 ms", "with hits"], rows))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
