"""How the cost of `Memory.add` grows with the store (issue 17, ADR 0039).

    python -m tests.bench.add_growth [--ref main] [--sizes 100,1000,10000,100000]
                                     [--samples 50] [--fill 250,500,1000,2000]

Two figures, on a real on-disk store (as `tests.bench.run`): the add latency at N entries in
scope (`run.bench_add`: p50/p95 and the first add, timed separately), and the fill curve: the
time to add the first N entries one by one through `Memory.add` on an empty store, with the
mean per add over each stretch, so that growth shows as a rising per-add cost.

With `--ref`, the same figures are measured for that git revision's library too, in one run: its
tree is exported (`git archive`) into a temporary folder laid out as the installed package and
imported by a child process instead of this checkout's; the benchmark code is this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from tests.bench import run

_ROOT = Path(__file__).resolve().parents[2]


@attrs.frozen(kw_only=True)
class FillCurve:
    checkpoints: tuple[int, ...]  # entries added so far
    elapsed_s: tuple[float, ...]  # total seconds of add calls at each checkpoint
    statuses: dict[str, int]

    def per_add_ms(self) -> list[float]:
        """Mean milliseconds per add over each stretch between checkpoints."""
        out, done, spent = [], 0, 0.0
        for n, s in zip(self.checkpoints, self.elapsed_s, strict=True):
            out.append((s - spent) * 1000 / (n - done))
            done, spent = n, s
        return out


def bench_fill(checkpoints: Sequence[int], *, seed: int = 5, root: Path | None = None) -> FillCurve:
    """Add max(checkpoints) distinct entries one by one to an empty store; the time spent in
    `add` calls when each checkpoint is reached."""
    marks = sorted(set(checkpoints))
    if not marks or marks[0] < 1:
        raise ValueError("checkpoints must be positive")
    texts = run.TextGenerator(seed)
    statuses: dict[str, int] = {}
    elapsed: list[float] = []
    with run._workdir(root) as work:
        run._write_config(work)
        memory = run._open(work)
        try:
            spent = 0.0
            for i in range(1, marks[-1] + 1):
                text = next(texts)
                started = time.perf_counter()
                result = memory.add(text, target="memory")
                spent += time.perf_counter() - started
                statuses[result.status] = statuses.get(result.status, 0) + 1
                if i in marks:
                    elapsed.append(spent)
        finally:
            memory.close()
    return FillCurve(checkpoints=tuple(marks), elapsed_s=tuple(elapsed), statuses=statuses)


def measure(sizes: Sequence[int], samples: int, fill: Sequence[int]) -> dict[str, Any]:
    adds = []
    for entries in sizes:
        print(f"… add latency at {entries:,} entries", file=sys.stderr, flush=True)
        result = run.bench_add(entries, samples)
        adds.append({k: v for k, v in attrs.asdict(result).items() if k != "latencies_ms"})
    print(f"… fill curve to {max(fill):,} entries", file=sys.stderr, flush=True)
    curve = bench_fill(fill)
    return {"add": adds, "fill": attrs.asdict(curve), "fill_per_add_ms": curve.per_add_ms()}


def _exported(ref: str, into: Path) -> Path:
    """`ref`'s library laid out as the installed package (the three folders, ADR 0006)."""
    tree = into / "tree"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", ref, "application", "domain", "adapters"],
        cwd=_ROOT,
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    package = into / "pkg" / "pi_hermes_memory"
    shutil.copytree(tree / "application", package)
    shutil.copytree(tree / "domain", package / "domain")
    shutil.copytree(tree / "adapters", package / "adapters")
    return into / "pkg"


def _child(pythonpath: str | None, args: list[str]) -> dict[str, Any]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath, str(_ROOT)])
    else:
        env["PYTHONPATH"] = str(_ROOT)
    out = subprocess.run(
        [sys.executable, "-m", "tests.bench.add_growth", "--worker", *args],
        cwd=_ROOT,
        env=env,
        check=True,
        stdout=subprocess.PIPE,
    ).stdout
    data: dict[str, Any] = json.loads(out)
    return data


def render(results: dict[str, dict[str, Any]]) -> list[str]:
    names = list(results)
    out = ["## `add` latency by entries in scope (memory target, SQLite + Markdown on disk)", ""]
    header = ["entries in scope"]
    for name in names:
        header += [f"{name} p50 ms", f"{name} p95 ms", f"{name} p99 ms", f"{name} max ms"]
        header += [f"{name} CPU p50 ms", f"{name} first add ms", f"{name} close ms"]
    if len(names) == 2:
        header.append(f"p50 {names[0]} / {names[1]}")
    rows = []
    for i, add in enumerate(results[names[0]]["add"]):
        row: list[object] = [f"{add['entries']:,}"]
        for name in names:
            other = results[name]["add"][i]
            row += [f"{other['p50_ms']:.2f}", f"{other['p95_ms']:.2f}"]
            row += [f"{other.get('p99_ms', 0.0):.2f}", f"{other.get('max_ms', 0.0):.2f}"]
            row.append(f"{other.get('cpu_p50_ms', 0.0):.2f}")
            row.append(f"{other['first_add_ms']:.1f}")
            row.append(f"{other.get('close_ms', 0.0):.1f}")
        if len(names) == 2:
            a, b = (results[n]["add"][i]["p50_ms"] for n in names)
            c, d = (results[n]["add"][i].get("cpu_p50_ms", 0.0) for n in names)
            row.append(f"{a / b:.1f}× (CPU {c / d:.1f}×)" if d else f"{a / b:.1f}×")
        rows.append(row)
    out.append(run._table(header, rows))
    out += ["", "## Filling an empty store through `add`, one entry at a time", ""]
    header = ["entries added"]
    for name in names:
        header += [f"{name} total s", f"{name} ms per add (this stretch)"]
    rows = []
    first = results[names[0]]["fill"]
    for i, n in enumerate(first["checkpoints"]):
        row = [f"{n:,}"]
        for name in names:
            data = results[name]
            row += [f"{data['fill']['elapsed_s'][i]:.2f}", f"{data['fill_per_add_ms'][i]:.2f}"]
        rows.append(row)
    out.append(run._table(header, rows))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.add_growth", description=__doc__)
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--fill", default="250,500,1000,2000")
    parser.add_argument("--ref", help="also measure this git revision's library (e.g. main)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    fill = [int(s) for s in args.fill.split(",") if s]
    if args.worker:
        import pi_hermes_memory

        print(f"… library at {Path(pi_hermes_memory.__file__).parent}", file=sys.stderr)
        print(json.dumps(measure(sizes, args.samples, fill)))
        return 0
    passed = ["--sizes", args.sizes, "--samples", str(args.samples), "--fill", args.fill]
    results: dict[str, dict[str, Any]] = {}
    if args.ref:
        with tempfile.TemporaryDirectory(prefix="hermes-ref-") as tmp:
            print(f"… {args.ref}", file=sys.stderr, flush=True)
            results[args.ref] = _child(str(_exported(args.ref, Path(tmp))), passed)
    print("… this checkout", file=sys.stderr, flush=True)
    results["this"] = _child(None, passed)
    print("\n".join(render(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
