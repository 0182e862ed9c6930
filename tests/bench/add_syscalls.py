"""What one steady-state `Memory.add` asks of the kernel (issue 29, ADR 0085).

    python -m tests.bench.add_syscalls [--entries 1000] [--adds 50]

A child process opens a store holding `--entries` entries (`run.prefill`), makes a few warm-up
adds, then `--adds` timed ones between two marker `stat` calls; it runs under
`strace -f -c`-style tracing (`strace -f -o`), and the calls between the markers are counted
per add: fsync and fdatasync (each one a wait for the disk), stat/lstat, openat, rename. The
figure beside them is the ADR's: 5 syncs per add (the journal's commit, the event log's append,
the Markdown file's and its sidecar's temp files, one folder sync). Without `strace` on the PATH
the figures are not measured (`None`), and the report says so.

`compare` (ADR 0100; `--ref main --entries 1000,100000`) measures this checkout and a git
revision's library (exported as `add_growth --ref` does) in one run on one store per size:
per library a timed child (p50/p95 wall and CPU per add, untraced) and a traced one.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[2]
#: the syncs ADR 0085 keeps per add (before it: 7)
SYNCS_PER_ADD = 5
_START, _END = "/phm-bench-mark-start", "/phm-bench-mark-end"
_TRACED = "fsync,fdatasync,stat,lstat,newfstatat,statx,openat,rename,renameat,renameat2,mkdir"

_CHILD = r"""
import json, os, secrets, sys, time
from pathlib import Path
from tests.bench import run
entries, adds, root = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
texts = run.TextGenerator(1)
if not (root / "agent").exists():
    run.prefill(root, entries, texts)
def fresh():  # new words: every run's adds are new facts, never near-duplicates
    words = " ".join(secrets.token_hex(3) for _ in range(6))
    return f"a new fact about {words} on this host"
memory = run._open(root)
for _ in range(run.WARMUP_ADDS):
    memory.add(fresh(), target="memory")
if sys.argv[6] == "folded":  # as a session does: its memory block reads (folds) the document
    memory.entries("memory")
walls, cpus, statuses = [], [], []
os.path.exists(sys.argv[4])
for _ in range(adds):
    w, c = time.perf_counter(), time.process_time()
    statuses.append(memory.add(fresh(), target="memory").status)
    walls.append(1000 * (time.perf_counter() - w))
    cpus.append(1000 * (time.process_time() - c))
os.path.exists(sys.argv[5])
memory.close()
print(json.dumps({"wall_ms": walls, "cpu_ms": cpus, "statuses": sorted(set(statuses))}))
"""

_CALL = re.compile(r"^\d+\s+([a-z0-9_]+)\(")


def _run_child(
    entries: int,
    adds: int,
    store: Path,
    library: str | None,
    strace: str | None,
    trace: Path,
    *,
    folded: bool = False,
) -> dict[str, Any]:
    mode = "folded" if folded else "fresh"
    command = [sys.executable, "-c", _CHILD, str(entries), str(adds), str(store), _START, _END]
    command.append(mode)
    if strace is not None:
        command = [strace, "-f", "-o", str(trace), "-e", f"trace={_TRACED}", *command]
    path = os.pathsep.join(p for p in (library, str(_ROOT)) if p)
    done = subprocess.run(
        command,
        cwd=_ROOT,
        env={**os.environ, "PYTHONPATH": path},
        check=True,
        capture_output=True,
        text=True,
    )
    timings: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return timings


def _per_add(trace: Path, adds: int) -> dict[str, float]:
    calls: collections.Counter[str] = collections.Counter()
    inside = False
    for line in trace.read_text(errors="replace").splitlines():
        if _START in line:
            inside = True
            continue
        if _END in line:
            break
        found = _CALL.match(line)
        if inside and found:
            calls[found.group(1)] += 1
    return {name: n / adds for name, n in sorted(calls.items())}


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def count(
    entries: int,
    adds: int,
    *,
    library: str | None = None,
    store: Path | None = None,
    folded: bool = False,
) -> dict[str, Any]:
    """Per-add counts of the traced calls, or `{"measured": False}` without strace; with
    `store`, that (prefilled) store is used, else a new one. `library`: a folder put first on
    the child's PYTHONPATH (another revision's `pi_hermes_memory`)."""
    strace = shutil.which("strace")
    if strace is None:
        return {"measured": False, "entries": entries, "adds": adds}
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        trace = Path(tmp) / "trace.txt"
        root = store if store is not None else Path(tmp) / "store"
        _run_child(entries, adds, root, library, strace, trace, folded=folded)
        per_add = _per_add(trace, adds)
    stats = sum(per_add.get(n, 0.0) for n in ("stat", "lstat", "newfstatat", "statx"))
    return {
        "measured": True,
        "entries": entries,
        "adds": adds,
        "syncs_per_add": per_add.get("fsync", 0.0) + per_add.get("fdatasync", 0.0),
        "stats_per_add": stats,
        "per_add": per_add,
    }


def timed(
    entries: int, adds: int, store: Path, *, library: str | None = None, folded: bool = False
) -> dict[str, Any]:
    """p50/p95 wall and CPU milliseconds of `adds` steady adds on `store` (untraced);
    `folded`: after the process read the document (a session's memory block), ADR 0104."""
    out = _run_child(entries, adds, store, library, None, store / "unused", folded=folded)
    walls, cpus = out["wall_ms"], out["cpu_ms"]
    return {
        "p50_ms": _percentile(walls, 0.5),
        "p95_ms": _percentile(walls, 0.95),
        "cpu_p50_ms": _percentile(cpus, 0.5),
        "cpu_p95_ms": _percentile(cpus, 0.95),
        "statuses": out["statuses"],
    }


def compare(
    sizes: Sequence[int], adds: int, ref: str | None, rounds: int = 3, *, folded: bool = False
) -> list[dict[str, Any]]:
    """Per size, one store; `rounds` rounds of one timed child per library (this checkout,
    and `ref`'s when given), the libraries alternating so that the machine's load hits both;
    the medians of the rounds' percentiles; then one traced child per library. `folded`: the
    children read the document before their timed adds, as a session does (ADR 0104)."""
    from tests.bench.add_growth import _exported

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hermes-bench-cmp-") as tmp:
        libraries: dict[str, str | None] = {"this": None}
        if ref is not None:
            (Path(tmp) / "ref").mkdir()
            libraries = {ref: str(_exported(ref, Path(tmp) / "ref")), "this": None}
        for entries in sizes:
            store = Path(tmp) / f"store-{entries}"
            print(f"… steady adds at {entries:,} entries", file=sys.stderr, flush=True)
            _run_child(entries, 1, store, None, None, store / "unused")  # prefill once
            timings: dict[str, list[dict[str, Any]]] = {name: [] for name in libraries}
            order = list(libraries.items())
            for turn in range(max(1, rounds)):
                for name, library in order if turn % 2 == 0 else reversed(order):
                    timings[name].append(
                        timed(entries, adds, store, library=library, folded=folded)
                    )
            for name, library in libraries.items():
                row: dict[str, Any] = {
                    "library": name + (" (after a read)" if folded else ""),
                    "entries": entries,
                    "rounds": rounds,
                }
                for key in ("p50_ms", "p95_ms", "cpu_p50_ms", "cpu_p95_ms"):
                    row[key] = statistics.median(t[key] for t in timings[name])
                row["statuses"] = sorted({s for t in timings[name] for s in t["statuses"]})
                row["trace"] = count(entries, adds, library=library, store=store, folded=folded)
                rows.append(row)
    return rows


def render_compare(rows: Sequence[dict[str, Any]]) -> list[str]:
    from tests.bench.run import _table

    header = (
        "entries",
        "library",
        "add p50 / p95 ms",
        "CPU p50 / p95 ms",
        "fsync+fdatasync per add",
        "stat calls per add",
        "openat per add",
    )
    table = []
    for row in rows:
        trace = row["trace"]
        measured = trace["measured"]
        table.append(
            (
                f"{row['entries']:,}",
                row["library"],
                f"{row['p50_ms']:.2f} / {row['p95_ms']:.2f}",
                f"{row['cpu_p50_ms']:.2f} / {row['cpu_p95_ms']:.2f}",
                f"{trace['syncs_per_add']:.1f}" if measured else "—",
                f"{trace['stats_per_add']:.1f}" if measured else "—",
                f"{trace['per_add'].get('openat', 0.0):.1f}" if measured else "—",
            )
        )
    return [
        "",
        "## Steady add, libraries side by side (issue 29: p50 ≤ 5 ms at 1k and 100k; ADR 0100;"
        " medians of alternating rounds)",
        "",
        _table(header, table),
    ]


def render(result: dict[str, Any]) -> list[str]:
    out = ["", f"## System calls per steady add ({result['entries']:,} entries, ADR 0085)", ""]
    if not result["measured"]:
        return [*out, "(not measured: strace is not installed)"]
    calls = ", ".join(f"{name} {n:.1f}" for name, n in result["per_add"].items())
    out.append(
        f"fsync + fdatasync per add: {result['syncs_per_add']:.1f} (ADR 0085 keeps "
        f"{SYNCS_PER_ADD}; 7 before it); stat/lstat per add: "
        f"{result['stats_per_add']:.1f} (56 before it, in the same trace)"
    )
    out += ["", f"All traced calls per add: {calls}."]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.add_syscalls")
    parser.add_argument("--entries", default="1000", help="comma-separated entry counts")
    parser.add_argument("--adds", type=int, default=50)
    parser.add_argument("--ref", help="also measure this git revision's library (e.g. main)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timed rounds")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.entries.split(",") if s]
    if args.ref is None and len(sizes) == 1:
        print("\n".join(render(count(sizes[0], args.adds))))
        return 0
    print("\n".join(render_compare(compare(sizes, args.adds, args.ref, args.rounds))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
