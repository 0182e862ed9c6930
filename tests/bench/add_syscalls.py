"""What one steady-state `Memory.add` asks of the kernel (issue 29, ADR 0085).

    python -m tests.bench.add_syscalls [--entries 1000] [--adds 50]

A child process opens a store holding `--entries` entries (`run.prefill`), makes a few warm-up
adds, then `--adds` timed ones between two marker `stat` calls; it runs under
`strace -f -c`-style tracing (`strace -f -o`), and the calls between the markers are counted
per add: fsync and fdatasync (each one a wait for the disk), stat/lstat, openat, rename. The
figure beside them is the ADR's: 5 syncs per add (the journal's commit, the event log's append,
the Markdown file's and its sidecar's temp files, one folder sync). Without `strace` on the PATH
the figures are not measured (`None`), and the report says so.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
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
import os, sys, time
from pathlib import Path
from tests.bench import run
entries, adds, root = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
texts = run.TextGenerator(1)
run.prefill(root, entries, texts)
memory = run._open(root)
for _ in range(run.WARMUP_ADDS):
    memory.add(next(texts), target="memory")
os.path.exists(sys.argv[4])
for _ in range(adds):
    memory.add(next(texts), target="memory")
os.path.exists(sys.argv[5])
memory.close()
"""

_CALL = re.compile(r"^\d+\s+([a-z0-9_]+)\(")


def count(entries: int, adds: int) -> dict[str, Any]:
    """Per-add counts of the traced calls, or `{"measured": False}` without strace."""
    strace = shutil.which("strace")
    if strace is None:
        return {"measured": False, "entries": entries, "adds": adds}
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        trace = Path(tmp) / "trace.txt"
        subprocess.run(
            [
                strace,
                "-f",
                "-o",
                str(trace),
                "-e",
                f"trace={_TRACED}",
                sys.executable,
                "-c",
                _CHILD,
                str(entries),
                str(adds),
                str(Path(tmp) / "store"),
                _START,
                _END,
            ],
            cwd=_ROOT,
            env={**os.environ, "PYTHONPATH": str(_ROOT)},
            check=True,
            capture_output=True,
        )
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
    per_add = {name: n / adds for name, n in sorted(calls.items())}
    stats = sum(per_add.get(n, 0.0) for n in ("stat", "lstat", "newfstatat", "statx"))
    return {
        "measured": True,
        "entries": entries,
        "adds": adds,
        "syncs_per_add": per_add.get("fsync", 0.0) + per_add.get("fdatasync", 0.0),
        "stats_per_add": stats,
        "per_add": per_add,
    }


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
    parser.add_argument("--entries", type=int, default=1_000)
    parser.add_argument("--adds", type=int, default=50)
    args = parser.parse_args(argv)
    print("\n".join(render(count(args.entries, args.adds))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
