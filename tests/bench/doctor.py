"""Benchmark: the doctor's cross-scope near-duplicate scan and the whole doctor (issue 13 §4).

    python -m tests.bench.doctor [--rows 20000] [--projects 50] [--dim 384]

The scan: `rows` active rows, a fifth in the global layer and the rest spread over `projects`
projects, seeded sentences of 8-14 words from a 400-word vocabulary (a third Chinese, about 5%
written as a near-duplicate of an earlier row in another scope); timed with no vectors (token
rule only) and with a stored unit vector (dimension `dim`) on every row (cosine rule; near
duplicates get a nearby vector). Every pair above the thresholds is found: no pair budget, and
the figure shows how many cross-scope pairs brute force would compare (the seed stops after
250,000). The doctor: the same rows written as the two Markdown files, opened once (imported
into sessions.db), vectors stored for every row, then `diagnose()` timed on that store.
Part of `make bench` (`tests.bench.run`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from pi_hermes_memory.doctor.cross_scope import GLOBAL_SCOPE, ScanRow, cross_scope_pairs
from pi_hermes_memory.doctor.report import brute_force_pairs

_HAN = "构建测试部署项目命令检查类型合并代码运行覆盖率要求每次之前完整服务端口配置"
SEED_PAIR_BUDGET = 250_000
_KEY_ENV = "PHM_BENCH_DOCTOR_KEY"


@attrs.frozen(kw_only=True)
class ScanTime:
    rows: int
    projects: int
    vectors: bool
    dim: int
    seconds: float
    cpu_s: float  # CPU time of every thread (the BLAS product runs on all cores)
    candidates: int
    brute_force_pairs: int


@attrs.frozen(kw_only=True)
class DoctorTime:
    rows: int
    projects: int
    build_s: float
    doctor_s: float
    doctor_cpu_s: float
    scan_s: float
    candidates: int
    healthy: bool


def corpus(rows: int, projects: int, seed: int = 13) -> list[tuple[str, str]]:
    """(scope, text) rows."""
    rng = random.Random(seed)
    words = [f"w{k}" for k in range(400)]
    scopes = [GLOBAL_SCOPE] + [f"project:p{k:02d}" for k in range(projects)]
    out: list[tuple[str, str]] = []
    for i in range(rows):
        scope = GLOBAL_SCOPE if i % 5 == 0 else scopes[1 + rng.randrange(projects)]
        if out and rng.random() < 0.05:
            base = rng.choice(out)[1]
            text = base + (" again" if base.isascii() else "再")
            scope = rng.choice(scopes)
        elif rng.random() < 0.33:
            text = "".join(rng.choice(_HAN) for _ in range(rng.randint(10, 24)))
        else:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(8, 14)))
        out.append((scope, text))
    return out


def vectors(texts: Sequence[str], dim: int, seed: int = 17) -> np.ndarray:
    """One unit vector per row; a text that extends an earlier one gets a nearby vector."""
    rng = np.random.default_rng(seed)
    out = rng.standard_normal((len(texts), dim)).astype(np.float32)
    first: dict[str, int] = {}
    for i, text in enumerate(texts):
        base = text.removesuffix(" again").removesuffix("再")
        if base != text and base in first:
            out[i] = out[first[base]] + 0.2 * rng.standard_normal(dim).astype(np.float32)
        first.setdefault(text, i)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def bench_scan(rows: int, projects: int, *, with_vectors: bool, dim: int) -> ScanTime:
    data = corpus(rows, projects)
    matrix = vectors([t for _, t in data], dim) if with_vectors else None
    scan = [
        ScanRow(
            entry_id=f"e{i:06d}",
            scope=scope,
            text=text,
            vector=None if matrix is None else matrix[i],
        )
        for i, (scope, text) in enumerate(data)
    ]
    started, cpu = time.perf_counter(), time.process_time()
    pairs = cross_scope_pairs(scan)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    sizes = Counter(scope for scope, _ in data)
    return ScanTime(
        rows=rows,
        projects=projects,
        vectors=with_vectors,
        dim=dim,
        seconds=seconds,
        cpu_s=cpu,
        candidates=len(pairs),
        brute_force_pairs=brute_force_pairs(list(sizes.values())),
    )


def bench_doctor(rows: int, projects: int, *, dim: int, root: Path | None = None) -> DoctorTime:
    """Build the store on disk (hand-written Markdown, one open, vectors stored), then time
    the doctor on it."""
    import apsw
    import pi_hermes_memory
    from pi_hermes_memory.adapters.doctor import diagnose

    work = Path(tempfile.mkdtemp(prefix="phm-doctor-", dir=root))
    try:
        agent = work / "agent"
        agent.mkdir()
        limit = 10**9
        config = {
            "memoryCharLimit": limit,
            "projectCharLimit": limit,
            "embedding": {
                "provider": "openai-compatible",
                "baseUrl": "http://127.0.0.1:9/v1",
                "model": "bench",
                "apiKeyEnv": _KEY_ENV,
            },
        }
        (agent / "hermes-memory-config.json").write_text(json.dumps(config))
        data = corpus(rows, projects)
        glob = [t for s, t in data if s == GLOBAL_SCOPE]
        proj = [
            f"{t} <!-- project={s.removeprefix('project:')} -->"
            for s, t in data
            if s != GLOBAL_SCOPE
        ]
        (agent / "pi-hermes-memory").mkdir()
        (agent / "projects-memory").mkdir()
        (agent / "pi-hermes-memory" / "MEMORY.md").write_text("\n§\n".join(glob) + "\n")
        (agent / "projects-memory" / "MEMORY.md").write_text("\n§\n".join(proj) + "\n")
        env = {"HOME": str(work), _KEY_ENV: "bench-key", "PI_CODING_AGENT_DIR": str(agent)}
        started = time.perf_counter()
        # embeddings off while building (no provider at this address): rows come in as text
        build_env = {k: v for k, v in env.items() if k != _KEY_ENV}
        with pi_hermes_memory.open(cwd=work, environ=build_env) as m:
            assert m.embeddings is None
        db = agent / "pi-hermes-memory" / "sessions.db"
        conn = apsw.Connection(str(db))
        texts = [str(r[1]) for r in conn.execute("SELECT id, text FROM memories ORDER BY id")]
        ids = [str(r[0]) for r in conn.execute("SELECT id FROM memories ORDER BY id")]
        matrix = vectors(texts, dim)
        with conn:
            conn.executemany(
                "UPDATE memories SET embedding_model = ?, embedding = ? WHERE id = ?",
                [
                    ("openai-compatible/bench", matrix[k].astype("<f4").tobytes(), ids[k])
                    for k in range(len(ids))
                ],
            )
        conn.close()
        build_s = time.perf_counter() - started
        started, cpu = time.perf_counter(), time.process_time()
        report = diagnose(cwd=work, environ=env)
        doctor_s, cpu = time.perf_counter() - started, time.process_time() - cpu
        return DoctorTime(
            rows=report.near_duplicates.rows,
            projects=projects,
            build_s=build_s,
            doctor_s=doctor_s,
            doctor_cpu_s=cpu,
            scan_s=report.near_duplicates.seconds,
            candidates=report.near_duplicates.total,
            healthy=report.healthy,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(rows: int, projects: int, dim: int, *, doctor: bool = True) -> dict[str, Any]:
    scans = [bench_scan(rows, projects, with_vectors=v, dim=dim) for v in (False, True)]
    out: dict[str, Any] = {"scan": [attrs.asdict(s) for s in scans]}
    if doctor:
        out["doctor"] = attrs.asdict(bench_doctor(rows, projects, dim=dim))
    return out


def render(figures: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Doctor: cross-scope near-duplicate scan (every pair, no budget)",
        "",
        "| rows | projects | vectors | time | CPU | candidates | cross-scope pairs (brute force) |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for s in figures["scan"]:
        vec = f"dim {s['dim']}" if s["vectors"] else "none (token rule)"
        lines.append(
            f"| {s['rows']:,} | {s['projects']} | {vec} | {s['seconds']:.2f} s | "
            f"{s['cpu_s']:.2f} s | {s['candidates']:,} | {s['brute_force_pairs']:,} |"
        )
    lines.append(
        f'\nThe seed stops after {SEED_PAIR_BUDGET:,} pairs and reports "maybe incomplete".'
    )
    d = figures.get("doctor")
    if d:
        lines.append(
            f"\nWhole doctor on that store ({d['rows']:,} rows scanned, vectors on every row): "
            f"{d['doctor_s']:.2f} s, CPU {d['doctor_cpu_s']:.2f} s (scan {d['scan_s']:.2f} s, "
            f"{d['candidates']:,} candidates; building the store took {d['build_s']:.1f} s)"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.doctor", description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--projects", type=int, default=50)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--no-doctor", action="store_true", help="time the scan only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = run(args.rows, args.projects, args.dim, doctor=not args.no_doctor)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print("\n".join(render(figures)))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
