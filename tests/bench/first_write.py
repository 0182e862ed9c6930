"""The first write of a new process, by store size (issue 29, ADR 0084).

    python -m tests.bench.first_write [--quick] [--sizes 1000,100000] [--repeats 3]

For each size N (entries in the `memory` target, appended as `memory.added.v1` events through
`SqliteStorage` by `tests/bench/run.py`'s `prefill`, which also advances the persisted write
index; one untimed open, search and close then render MEMORY.md), child processes open the store,
add two new entries and close it, printing wall and CPU time of each step and the resident size
after the adds and after the close. Two modes, interleaved in one run so that the machine's load
hits both alike:

- `indexed`: the library as it is (a new process decides its add on the persisted write index,
  and its render appends the new entries to the files on disk, ADR 0088);
- `rewrite`: the same, with the append turned off (`MemoryService._append_tail` answers None):
  every render writes the whole file from the index's rows, as before ADR 0088;
- `ref` (with `--ref REV`, ADR 0100): `indexed` run by that git revision's library;
- `folded`: the same process with the indexed add turned off (`MemoryService._indexed_add`
  answers None): the write path folds the document first, as before ADR 0084.

The child's CPU from its start through the first add (interpreter, every import wherever it
happens, open, first add) is printed beside: a library that moves imports from `open()` into
the first write (ADR 0105) shifts time between the open and first-add columns, not out of this
one. The ratio folded / indexed of the first add's median, wall and CPU, and rewrite / indexed of
the close (which renders the lagging large file at 100k) are the figures to compare;
the targets of issue 29 are printed beside (first add ≤ 50 ms at 100k, ≤ 20 ms at 1k; resident
size ≤ 100 MiB at 100k after writes). `make bench` runs it; no figure is asserted by the test
suite (`tests/bench/test_first_write_smoke.py` runs a tiny size).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.bench.run import TextGenerator, _open, _table, _workdir, prefill

FULL_SIZES = (1_000, 100_000)
QUICK_SIZES = (1_000,)
#: issue 29's targets: first add after open (ms) by size, resident size after writes (MiB)
FIRST_ADD_TARGET_MS = {1_000: 20.0, 100_000: 50.0}
RSS_TARGET_MIB = 100.0
MODES = ("indexed", "rewrite", "folded")

_CHILD = r"""
import json, sys, time
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None
def clocks():
    return time.perf_counter(), time.process_time()
from pathlib import Path
import pi_hermes_memory
from pi_hermes_memory.memory.service import MemoryService
from tests.bench.run import _open
if sys.argv[2] == "folded":
    MemoryService._indexed_add = lambda self, command: None
if sys.argv[2] == "rewrite":
    MemoryService._append_tail = lambda self, uow, stream, version, **kw: None
import secrets  # before the clocks: its import (hmac) is the bench's, not the add's (ADR 0109)
def words(n):  # fresh words: every child's adds are new facts, never near-duplicates
    return " ".join(secrets.token_hex(3) for _ in range(n))
out = {}
w, c = clocks()
memory = _open(Path(sys.argv[1]))
w1, c1 = clocks()
out["open_ms"], out["open_cpu_ms"] = 1000 * (w1 - w), 1000 * (c1 - c)
first = memory.add(f"a new fact about {words(4)} on the {words(2)} host")
w2, c2 = clocks()
out["add1_ms"], out["add1_cpu_ms"] = 1000 * (w2 - w1), 1000 * (c2 - c1)
out["process_cpu_ms"] = 1000 * c2  # the whole process through the first add: imports included
second = memory.add(f"another fact: {words(3)} runs before {words(3)}")
w3, c3 = clocks()
out["add2_ms"], out["add2_cpu_ms"] = 1000 * (w3 - w2), 1000 * (c3 - c2)
out["rss_after_adds_mib"] = rss()
memory.close()
w4, c4 = clocks()
out["close_ms"], out["close_cpu_ms"] = 1000 * (w4 - w3), 1000 * (c4 - c3)
out["rss_after_close_mib"] = rss()
out["statuses"] = [first.status, second.status]
print(json.dumps(out))
"""


def _child(root: Path, mode: str, library: str | None = None) -> dict[str, Any]:
    """One child in `mode`; `library` (the `ref` mode): a folder put first on its path, holding
    another revision's `pi_hermes_memory`, which then runs as `indexed` (ADR 0100)."""
    paths = [library, *sys.path] if library is not None else sys.path
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    if library is not None:  # its bytecode is cached as this checkout's is (installed wheel)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), "indexed" if mode == "ref" else mode],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} child failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def bench_size(
    entries: int, repeats: int = 3, root: Path | None = None, ref: str | None = None
) -> dict[str, Any]:
    """Prefill `entries`, then `repeats` interleaved children per mode; medians per mode.
    `ref`: a folder holding another revision's library, measured as the mode `ref`."""
    modes = MODES if ref is None else ("ref", *MODES)
    with _workdir(root) as work:
        prefill(work, entries, iter(TextGenerator(seed=3)))
        with _open(work) as memory:  # renders MEMORY.md once, as any write would
            memory.search("alpha")
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        if ref is not None:
            _child(work, "ref", ref)  # untimed: writes the exported library's bytecode
        for _ in range(repeats):
            for mode in modes:
                runs[mode].append(_child(work, mode, ref if mode == "ref" else None))
    row: dict[str, Any] = {"entries": entries, "repeats": repeats}
    for mode, results in runs.items():
        for key in results[0]:
            if key == "statuses":
                row[f"{mode}_statuses"] = [r[key] for r in results]
                continue
            row[f"{mode}_{key}"] = statistics.median(r[key] for r in results)
    row["ratio_add1"] = row["folded_add1_ms"] / row["indexed_add1_ms"]
    row["ratio_add1_cpu"] = row["folded_add1_cpu_ms"] / row["indexed_add1_cpu_ms"]
    row["ratio_close"] = row["rewrite_close_ms"] / max(row["indexed_close_ms"], 1e-3)
    row["ratio_close_cpu"] = row["rewrite_close_cpu_ms"] / max(row["indexed_close_cpu_ms"], 1e-3)
    return row


def run(sizes: Sequence[int], repeats: int = 3, ref: str | None = None) -> list[dict[str, Any]]:
    """Per size, `bench_size`; `ref`, a git revision (e.g. main), adds its library as the mode
    `ref` (exported once, as `add_growth --ref` does)."""
    import tempfile

    from tests.bench.add_growth import _exported

    with tempfile.TemporaryDirectory(prefix="hermes-first-ref-") as tmp:
        library = None
        if ref is not None:
            (Path(tmp) / "ref").mkdir()
            library = str(_exported(ref, Path(tmp) / "ref"))
        rows = []
        for entries in sizes:
            print(f"… first write of a new process at {entries:,} entries", file=sys.stderr)
            rows.append(bench_size(entries, repeats, ref=library))
    return rows


def _target(entries: int) -> str:
    target = FIRST_ADD_TARGET_MS.get(entries)
    return "—" if target is None else f"≤ {target:g} ms"


def render(rows: Sequence[dict[str, Any]]) -> str:
    header = (
        "entries",
        "mode",
        "open ms (CPU)",
        "first add ms (CPU)",
        "target",
        "process CPU through the first add ms",
        "second add ms",
        "close ms (CPU)",
        f"RSS after adds / close MiB (target ≤ {RSS_TARGET_MIB:g})",
    )
    table = []
    for row in rows:
        for mode in ("ref", *MODES) if "ref_add1_ms" in row else MODES:
            table.append(
                (
                    f"{row['entries']:,}",
                    mode,
                    f"{row[f'{mode}_open_ms']:.0f} ({row[f'{mode}_open_cpu_ms']:.0f})",
                    f"{row[f'{mode}_add1_ms']:.1f} ({row[f'{mode}_add1_cpu_ms']:.1f})",
                    _target(row["entries"]),
                    f"{row[f'{mode}_process_cpu_ms']:.0f}",
                    f"{row[f'{mode}_add2_ms']:.1f}",
                    f"{row[f'{mode}_close_ms']:.0f} ({row[f'{mode}_close_cpu_ms']:.0f})",
                    f"{row[f'{mode}_rss_after_adds_mib']:.0f} / "
                    f"{row[f'{mode}_rss_after_close_mib']:.0f}",
                )
            )
    ratios = "; ".join(
        f"{r['entries']:,}: folded/indexed first add {r['ratio_add1']:.1f}× wall, "
        f"{r['ratio_add1_cpu']:.1f}× CPU; rewrite/indexed close {r['ratio_close']:.1f}× wall, "
        f"{r['ratio_close_cpu']:.1f}× CPU"
        for r in rows
    )
    return "\n".join(
        [
            "\n## First write of a new process (issue 29, ADRs 0084, 0088; medians, interleaved)\n",
            _table(header, table),
            "",
            f"Ratios in this run: {ratios}.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.first_write", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1k only")
    parser.add_argument("--sizes", help="comma-separated entry counts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--ref", help="also measure this git revision's library (e.g. main)")
    args = parser.parse_args(argv)
    sizes = (
        tuple(int(s) for s in args.sizes.split(","))
        if args.sizes
        else (QUICK_SIZES if args.quick else FULL_SIZES)
    )
    rows = run(sizes, args.repeats, args.ref)
    print(render(rows))
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
