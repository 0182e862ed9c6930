"""Benchmarks of opening a store and of one CLI call, by history size (issue 17, ADR 0038).

    python -m tests.bench.open_cli [--quick] [--sizes 100,1000] [--out results.json]

For each size N (100 / 1k / 10k / 100k entries in the `memory` target, appended as
`memory.added.v1` events directly through `SqliteStorage`, as `tests/bench/run.py` does; one
untimed first open then renders MEMORY.md and stores the snapshot, as any write would):

- open: `pi_hermes_memory.open(...)` in a fresh child process (median of the repeats; the
  modules `pi_hermes_memory.open` needs at module level are imported before the clock starts,
  the ones it imports inside the call are timed), with
  the resident size (RSS, from /proc) of that process after the open, after a `search`, and
  after reading every entry (`entries()`, which decodes the whole document);
- CLI search: the wall time of `pi-hermes-memory search <word>` as a child process (the
  console script's entry point), warm (one untimed run first), median of the repeats;

and once, independent of N:

- `python -X importtime -c "import pi_hermes_memory"`: the import time (sum of the top-level
  cumulative times) and the number of modules it loads; the same for the CLI module and for a
  whole CLI `search` run (every module the command imports on its way).

`make bench` runs it (after tests/bench/run.py's benchmarks). No figure is asserted by the test
suite; `tests/bench/test_open_cli_smoke.py` runs tiny sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.bench.run import PROJECT, TextGenerator, _table, _workdir, prefill

FULL_SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SIZES = (100, 1_000)
#: the CLI target of issue 17 (a warm machine)
CLI_TARGET_MS = 250.0

_CLI = "import sys; from pi_hermes_memory.adapters.cli.app import main; sys.exit(main())"

# the child that opens the store: prints one JSON line of timings and resident sizes
_OPEN_CHILD = r"""
import json, sys, time
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None
started = time.perf_counter()
import pi_hermes_memory
open_memory = pi_hermes_memory.open  # the modules `open` imports at module level
imported = time.perf_counter()
root = sys.argv[1]
memory = open_memory(
    agent_root=root + "/agent", environ={"HOME": root}, cwd=root, project=sys.argv[2]
)
opened = time.perf_counter()
out = {"import_s": imported - started, "open_s": opened - imported, "rss_open_mib": rss()}
t = time.perf_counter()
memory.search("alpha")
out["search_s"] = time.perf_counter() - t
out["rss_search_mib"] = rss()
t = time.perf_counter()
out["entries"] = len(memory.entries())
out["entries_s"] = time.perf_counter() - t
out["rss_entries_mib"] = rss()
memory.close()
print(json.dumps(out))
"""


def _env(root: Path | None = None) -> dict[str, str]:
    """The children's environment: a warm machine caches bytecode (a CI setting of
    PYTHONDONTWRITEBYTECODE would make every run compile every module)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if root is not None:
        env.update({"HOME": str(root), "PI_CODING_AGENT_DIR": str(root / "agent")})
    return env


def build_store(root: Path, entries: int, *, seed: int = 17) -> dict[str, float]:
    """A store of `entries` memory entries under `root`, settled by one first open."""
    prefill_s = prefill(root, entries, iter(TextGenerator(seed)))
    first = _child_open(root)
    return {"prefill_s": prefill_s, "first_open_s": first["open_s"]}


def _child_open(root: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_CHILD, str(root), PROJECT],
        env=_env(root),
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cli_search_ms(root: Path, word: str = "alpha") -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one CLI `search` child. On a shared,
    loaded machine the CPU time is the steadier figure: wall time there includes waiting for
    a core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", _CLI, "search", word, "--project", PROJECT],
        env=_env(root),
        cwd=root,
        capture_output=True,
        check=True,
        timeout=900,
    )
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def bench_size(entries: int, *, repeats: int = 3, root: Path | None = None) -> dict[str, Any]:
    with _workdir(root) as work:
        built = build_store(work, entries)
        opens = [_child_open(work) for _ in range(repeats)]
        cli_search_ms(work)  # warm: the page cache, the interpreter's own .pyc files
        cli = [cli_search_ms(work) for _ in range(repeats)]
    last = opens[-1]
    return {
        "entries": entries,
        **built,
        "open_s": statistics.median(o["open_s"] for o in opens),
        "search_s": statistics.median(o["search_s"] for o in opens),
        "entries_s": statistics.median(o["entries_s"] for o in opens),
        "rss_open_mib": last["rss_open_mib"],
        "rss_search_mib": last["rss_search_mib"],
        "rss_entries_mib": last["rss_entries_mib"],
        "cli_search_ms": statistics.median(wall for wall, _ in cli),
        "cli_search_cpu_ms": statistics.median(cpu for _, cpu in cli),
    }


def _importtime(args: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """Sum of the top-level cumulative import times (ms) and the number of modules imported,
    from `python -X importtime` on `args`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    total_us = modules = 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|", 2)
        modules += 1
        if not name.startswith("  "):  # a top-level import: its cumulative time counts once
            total_us += int(cumulative)
    return {"import_ms": total_us / 1000, "modules": modules}


def bench_imports(root: Path | None = None) -> dict[str, Any]:
    out = {
        "package": _importtime(["-c", "import pi_hermes_memory"], _env()),
        "cli_module": _importtime(["-c", "import pi_hermes_memory.adapters.cli.app"], _env()),
    }
    with _workdir(root) as work:
        build_store(work, 100)
        _importtime(["-c", _CLI, "search", "alpha", "--project", PROJECT], _env(work))  # warm
        out["cli_search"] = _importtime(
            ["-c", _CLI, "search", "alpha", "--project", PROJECT], env=_env(work)
        )
        out["cli_help"] = _importtime(["-c", _CLI, "--help"], env=_env(work))
    return out


def run(sizes: Sequence[int], *, repeats: int = 3) -> dict[str, Any]:
    rows = []
    for entries in sizes:
        print(f"… open and CLI search at {entries:,} entries", file=sys.stderr, flush=True)
        rows.append(bench_size(entries, repeats=repeats))
    print("… import times", file=sys.stderr, flush=True)
    return {"sizes": rows, "imports": bench_imports()}


def render(result: dict[str, Any]) -> str:
    rows = [
        (
            f"{r['entries']:,}",
            f"{r['first_open_s']:.2f}",
            f"{r['open_s'] * 1000:.0f}",
            f"{r['search_s'] * 1000:.1f}",
            f"{r['entries_s'] * 1000:.0f}",
            f"{r['cli_search_ms']:.0f} ({r['cli_search_cpu_ms']:.0f} CPU)",
            f"{r['rss_open_mib']:.0f} / {r['rss_search_mib']:.0f} / {r['rss_entries_mib']:.0f}",
        )
        for r in result["sizes"]
    ]
    imports = result["imports"]
    import_rows = [
        (what, f"{imports[key]['import_ms']:.0f}", str(imports[key]["modules"]))
        for what, key in (
            ("`import pi_hermes_memory`", "package"),
            ("`import pi_hermes_memory.adapters.cli.app`", "cli_module"),
            ("`pi-hermes-memory --help` (whole run)", "cli_help"),
            ("`pi-hermes-memory search alpha` (whole run)", "cli_search"),
        )
    ]
    return "\n".join(
        [
            "",
            "## Open and CLI start-up by history size (issue 17, ADR 0038)",
            "",
            "Each open in a fresh process (median); `search`/`entries()` right after it in that "
            "process; RSS after open / after a search / after `entries()`; CLI `search` wall "
            f"time, warm (target <= {CLI_TARGET_MS:.0f} ms), with the child's CPU time (user + "
            "system: the steadier figure on a loaded machine). Embeddings off: no vector cache.",
            "",
            _table(
                (
                    "entries",
                    "first open (s)",
                    "open (ms)",
                    "search (ms)",
                    "entries() (ms)",
                    "CLI search ms (CPU)",
                    "RSS MiB",
                ),
                rows,
            ),
            "",
            "Imports (`python -X importtime`: sum of top-level cumulative times; modules loaded):",
            "",
            _table(("what", "import (ms)", "modules"), import_rows),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.open_cli", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--sizes", help="comma-separated entry counts (overrides --quick)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    result = run(sizes, repeats=args.repeats)
    print(render(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
