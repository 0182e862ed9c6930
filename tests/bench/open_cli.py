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

and, per process (issue 29, ADR 0080), on an empty store, at 1k and (full mode) at 100k
entries: the whole-process wall and CPU time of CLI `search` and CLI `add` (add at empty and
1k only: the first add at 100k is the write path's figure) and of a child that runs
`import pi_hermes_memory` + `open()` + one `search`, with the issue's targets beside them and the
interpreter floor (`python -c "import apsw, attrs"`) as the in-run reference. With
`--compare DIR` the same children also run with `PYTHONPATH=DIR` (a checkout of another
revision laid out as the package, see `link_tree`), interleaved, and the ratio is printed.

`make bench` runs it (after tests/bench/run.py's benchmarks). No figure is asserted by the test
suite; `tests/bench/test_open_cli_smoke.py` runs tiny sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.bench.run import PROJECT, TextGenerator, _table, _workdir, prefill

_ROOT = Path(__file__).resolve().parents[2]

FULL_SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SIZES = (100, 1_000)
#: the CLI target of issue 17 (a warm machine)
CLI_TARGET_MS = 250.0
#: issue 29: CLI `search`/`add` whole process; import + open() + one search, whole process
START_CLI_TARGET_MS = 150.0
START_API_TARGET_MS = 120.0
START_SIZES_FULL = (0, 1_000, 100_000)
START_SIZES_QUICK = (0, 1_000)
#: sizes at which the CLI `add` is measured (issue 29: empty and 100k; the 100k figure holds
#: the first add after open, which the write path's benchmarks take apart)
ADD_SIZES = (0, 1_000, 100_000)

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


def _env(root: Path | None = None, pythonpath: Path | None = None) -> dict[str, str]:
    """The children's environment: a warm machine caches bytecode (a CI setting of
    PYTHONDONTWRITEBYTECODE would make every run compile every module)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if root is not None:
        env.update({"HOME": str(root), "PI_CODING_AGENT_DIR": str(root / "agent")})
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
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


# the child of `import pi_hermes_memory` + open() + one search, whole process
_API_CHILD = (
    "import sys, pi_hermes_memory; "
    "m = pi_hermes_memory.open(project=sys.argv[1]); m.search('alpha'); m.close()"
)
_FLOOR_CHILD = "import apsw, attrs"
_PASS_CHILD = "pass"


def _cli_args() -> list[str]:
    """The CLI as installed: the console script of this interpreter's environment (the
    wheel's entry point, `pi_hermes_memory.adapters.cli.app:main`), run by this interpreter
    as its shebang would; the same entry point through `-c` when no script is installed."""
    script = Path(sys.executable).with_name("pi-hermes-memory")
    return [str(script)] if script.is_file() else ["-c", _CLI]


def _child_ms(
    args: Sequence[str], root: Path, pythonpath: Path | None = None
) -> tuple[float, float]:
    """Wall and CPU (user + system of the child) milliseconds of one `python ARGS` child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *args],
        env=_env(root, pythonpath),
        cwd=root,
        capture_output=True,
        check=True,
        timeout=900,
    )
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def _start_children(entries: int) -> dict[str, list[str]]:
    cli = _cli_args()
    children = {
        "cli_search": [*cli, "search", "alpha", "--project", PROJECT],
        "api_search": ["-c", _API_CHILD, PROJECT],
        "floor": ["-c", _FLOOR_CHILD],
        "pass": ["-c", _PASS_CHILD],
    }
    if entries in ADD_SIZES:
        children["cli_add"] = [*cli, "add", "TEXT", "--project", PROJECT]
    return children


def bench_start(
    entries: int, *, repeats: int = 5, compare: Path | None = None, root: Path | None = None
) -> dict[str, Any]:
    """Whole-process wall and CPU medians of CLI search/add and import+open+search at one
    size (issue 29); with `compare`, the same children with PYTHONPATH=compare, interleaved."""
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {"new": {}, "old": {}}
    variants: list[tuple[str, Path | None]] = [("new", None)]
    with _workdir(root) as work, contextlib.ExitStack() as stack:
        if compare is not None:
            # both sides import through a PYTHONPATH tree: the editable install's finder on one
            # side only slanted the ratio by ~5 % against this checkout (ADR 0116's note)
            here = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hermes-new-")))
            variants = [("new", link_tree(_ROOT, here)), ("old", compare)]
        if entries:
            build_store(work, entries)
        else:  # empty: the store exists (one open), with no entry
            prefill(work, 0, iter(()))
        children = _start_children(entries)
        serial = 0
        for repeat in range(repeats + 1):  # the first round warms the page cache and .pyc
            for name, template in children.items():
                # the order alternates: the first child of a pair runs on a colder machine
                for variant, path in variants[:: -1 if repeat % 2 else 1]:
                    serial += 1  # a new text each time: a duplicate would take another path
                    text = f"start bench note {serial} z{serial * 7919}"
                    args = [text if a == "TEXT" else a for a in template]
                    figure = _child_ms(args, work, path)
                    if repeat:
                        runs[variant].setdefault(name, []).append(figure)
    out: dict[str, Any] = {"entries": entries}
    for variant, figures in runs.items():
        for name, pairs in figures.items():
            key = name if variant == "new" else f"{name}_old"
            out[f"{key}_ms"] = statistics.median(wall for wall, _ in pairs)
            out[f"{key}_cpu_ms"] = statistics.median(cpu for _, cpu in pairs)
    return out


def link_tree(checkout: Path, dest: Path) -> Path:
    """A directory to put on PYTHONPATH so that `pi_hermes_memory` imports from `checkout` (a
    source tree of this repository, e.g. `git worktree add /tmp/old main`): the package is
    `application/` with `domain/` and `adapters/` inside, as setuptools maps them."""
    package = dest / "pi_hermes_memory"
    if package.exists():
        return dest
    package.mkdir(parents=True)
    for item in (checkout / "application").iterdir():
        (package / item.name).symlink_to(item.resolve())
    (package / "domain").symlink_to((checkout / "domain").resolve())
    (package / "adapters").symlink_to((checkout / "adapters").resolve())
    return dest


def exported(ref: str, into: Path) -> Path:
    """`ref`'s library laid out as the installed package (as tests/bench/add_growth.py does):
    a directory to put on PYTHONPATH."""
    tree = into / "tree"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", ref, "application", "domain", "adapters"],
        cwd=_ROOT,
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return link_tree(tree, into / "pkg")


def run_start(
    sizes: Sequence[int], *, repeats: int = 5, compare: Path | None = None
) -> list[dict[str, Any]]:
    rows = []
    for entries in sizes:
        print(f"… per-process start at {entries:,} entries", file=sys.stderr, flush=True)
        rows.append(bench_start(entries, repeats=repeats, compare=compare))
    return rows


def render_start(rows: Sequence[dict[str, Any]]) -> str:
    def cell(row: dict[str, Any], key: str) -> str:
        if f"{key}_ms" not in row:
            return "—"
        text = f"{row[f'{key}_ms']:.0f} ({row[f'{key}_cpu_ms']:.0f} CPU)"
        if f"{key}_old_ms" in row:
            text += (
                f"; old {row[f'{key}_old_ms']:.0f} ({row[f'{key}_old_cpu_ms']:.0f} CPU), "
                f"new/old CPU {row[f'{key}_cpu_ms'] / row[f'{key}_old_cpu_ms']:.2f}"
            )
        return text

    table = _table(
        (
            "entries",
            f"CLI search ms (target {START_CLI_TARGET_MS:.0f})",
            f"CLI add ms (target {START_CLI_TARGET_MS:.0f})",
            f"import+open+search ms (target {START_API_TARGET_MS:.0f})",
            "floor: import apsw, attrs",
            "floor: python -c pass",
        ),
        [
            (
                f"{r['entries']:,}",
                cell(r, "cli_search"),
                cell(r, "cli_add"),
                cell(r, "api_search"),
                cell(r, "floor"),
                cell(r, "pass"),
            )
            for r in rows
        ],
    )
    return "\n".join(
        [
            "",
            "## Per-process start: whole CLI and API processes (issue 29, ADR 0080)",
            "",
            "Each figure is one child process from interpreter start to exit, warm (one untimed "
            "round first), median wall ms with the child's CPU ms (user + system: the steadier "
            "figure on a loaded machine). The floors: the interpreter importing apsw and "
            "attrs, and the bare interpreter (`python -c pass`). CLI = the installed console "
            "script.",
            "",
            table,
        ]
    )


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


def run(
    sizes: Sequence[int],
    *,
    repeats: int = 3,
    start_sizes: Sequence[int] = START_SIZES_QUICK,
    compare: Path | None = None,
) -> dict[str, Any]:
    rows = []
    for entries in sizes:
        print(f"… open and CLI search at {entries:,} entries", file=sys.stderr, flush=True)
        rows.append(bench_size(entries, repeats=repeats))
    print("… import times", file=sys.stderr, flush=True)
    start = run_start(start_sizes, repeats=max(repeats, 5), compare=compare)
    return {"sizes": rows, "imports": bench_imports(), "start": start}


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
            *([render_start(result["start"])] if result.get("start") else []),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.open_cli", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--sizes", help="comma-separated entry counts (overrides --quick)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    parser.add_argument(
        "--compare",
        type=Path,
        help="a source checkout of another revision: its per-process figures run interleaved",
    )
    parser.add_argument(
        "--compare-rev",
        help="a git revision of this repository (e.g. main): exported with `git archive` and "
        "run interleaved, as --compare does with a checkout",
    )
    parser.add_argument("--start-only", action="store_true", help="only the per-process table")
    parser.add_argument(
        "--start-sizes", help="comma-separated entry counts of the per-process table"
    )
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    start_sizes = START_SIZES_QUICK if args.quick else START_SIZES_FULL
    if args.start_sizes:
        start_sizes = tuple(int(s) for s in args.start_sizes.split(","))
    compare = None
    if args.compare is not None:
        compare = link_tree(args.compare, Path(tempfile.mkdtemp(prefix="hermes-compare-")))
    elif args.compare_rev is not None:
        compare = exported(args.compare_rev, Path(tempfile.mkdtemp(prefix="hermes-compare-")))
    if args.start_only:
        rows = run_start(start_sizes, repeats=max(args.repeats, 5), compare=compare)
        print(render_start(rows))
        return 0
    result = run(sizes, repeats=args.repeats, start_sizes=start_sizes, compare=compare)
    print(render(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
