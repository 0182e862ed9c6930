"""Benchmark: what a Claude Code hook adds to a turn, and setup to the first fact (issue 30 §2,
ADR 0090).

    python -m tests.bench.hooks [--quick] [--entries 10000] [--repeats 20] [--out f.json]

A store of N memory entries (`tests.bench.open_cli.build_store`, the `run.py` prefill) and
the real CLI as Claude Code started it before ADR 0096: `pi-hermes-memory hook EVENT` as a
child process (in-process: cold), the documented payload on stdin; then the same calls as
`setup claude-code` now wires them: the thin `hook_client` against the warm hook server
(CPU: the client's plus what the server spent on the call, from /proc). Per event
(UserPromptSubmit with a prompt that recalls, UserPromptSubmit with a greeting that adaptive
retrieval skips, PostToolUse, SessionStart):
p50 / p95 of the wall time and the child's CPU time (one untimed warm-up run each). In the
same run, as references: the interpreter floor (`python -c "import apsw, attrs"`) and CLI
`search` (the cheapest command that opens the store). Then, on an empty HOME: the time from
`setup claude-code` to the first remembered fact (setup, SessionStart, a UserPromptSubmit
stating a preference, Stop: the auto-capture stores it), checked with `list`.

Part of `make bench` (`tests.bench.run`); `tests/bench/test_hooks_smoke.py` runs tiny sizes.
No figure is asserted by the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.bench.open_cli import build_store
from tests.bench.run import _table

#: the issue's budget for recall (p95, 10k store)
RECALL_P95_TARGET_MS = 300.0
_CLI = [sys.executable, "-m", "pi_hermes_memory.adapters.cli"]
_CLIENT = [sys.executable, "-m", "pi_hermes_memory.adapters.hosts.hook_client"]
#: the client's default deadline for a recall (hook_client.DEADLINES)
RECALL_DEADLINE_MS = 250.0
_FACT = "I prefer tabs over spaces in every Python file"


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed wheel has bytecode
    env.pop("PI_HERMES_MEMORY_CHILD", None)
    env.update({"HOME": str(root), "PI_CODING_AGENT_DIR": str(root / "agent")})
    return env


def _timed(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[float, float, bytes]:
    """Wall and CPU (user + system of the child) milliseconds, and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=300)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{argv[-1]} failed: {done.stderr.decode(errors='replace')}")
    return wall, cpu, done.stdout


def _payload(root: Path, event: str, **more: Any) -> bytes:
    return json.dumps(
        {
            "session_id": "bench-session",
            "transcript_path": str(root / "transcript.jsonl"),
            "cwd": str(root),
            "hook_event_name": event,
            **more,
        }
    ).encode()


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return round(statistics.median(ordered), 1), round(p95, 1)


def _series(argv: list[str], env: dict[str, str], stdin: bytes, repeats: int) -> dict[str, Any]:
    _timed(argv, env, stdin)  # warm-up: bytecode, page cache
    walls, cpus = [], []
    out = b""
    for _ in range(repeats):
        wall, cpu, out = _timed(argv, env, stdin)
        walls.append(wall)
        cpus.append(cpu)
    p50, p95 = _percentiles(walls)
    c50, c95 = _percentiles(cpus)
    return {"p50_ms": p50, "p95_ms": p95, "cpu_p50_ms": c50, "cpu_p95_ms": c95, "out": len(out)}


def _server_cpu_ms(pid: int) -> float:
    """User + system CPU of a process that is not our child (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _warm_series(event: str, env: dict[str, str], stdin: bytes, repeats: int) -> dict[str, Any]:
    """The thin client against the warm server (started by an untimed first call): wall of
    the client, CPU of the client plus what the server spent on the call."""
    argv = [*_CLIENT, event]
    status = subprocess.run([*_CLIENT, "--status"], capture_output=True, env=env, check=True)
    pid = int(json.loads(status.stdout)["pid"])
    _timed(argv, env, stdin)  # warm-up
    walls, cpus = [], []
    out = b""
    for _ in range(repeats):
        before = _server_cpu_ms(pid)
        wall, cpu, out = _timed(argv, env, stdin)
        walls.append(wall)
        cpus.append(cpu + _server_cpu_ms(pid) - before)
    p50, p95 = _percentiles(walls)
    c50, c95 = _percentiles(cpus)
    over = sum(w > RECALL_DEADLINE_MS for w in walls)
    return {
        "p50_ms": p50,
        "p95_ms": p95,
        "cpu_p50_ms": c50,
        "cpu_p95_ms": c95,
        "out": len(out),
        "over_deadline": over,
    }


def bench_warm(root: Path, cases: dict[str, tuple[str, bytes]], repeats: int) -> dict[str, Any]:
    """The same calls through `hook_client` and the warm hook server (ADR 0096)."""
    runtime = Path(tempfile.mkdtemp(prefix="bench-run-"))
    runtime.chmod(0o700)
    env = {
        **_env(root),
        "XDG_RUNTIME_DIR": str(runtime),
        # measure the answer, not the deadline that would cut it off
        "PI_HERMES_MEMORY_HOOK_DEADLINE_MS": "60000",
    }
    pid = None
    try:
        event, stdin = cases["UserPromptSubmit (recall)"]
        _timed([*_CLIENT, event], env, stdin)  # in-process; starts the server
        for _ in range(600):
            status = subprocess.run([*_CLIENT, "--status"], capture_output=True, env=env)
            found = json.loads(status.stdout)
            if found.get("running"):
                pid = int(found["pid"])
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the hook server did not start")
        rows = {}
        for label, (event, stdin) in cases.items():
            rows[f"{label}, warm server"] = _warm_series(event, env, stdin, repeats)
        return rows
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(runtime, ignore_errors=True)


def bench_hooks(entries: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-hooks-") as tmp:
        root = Path(tmp)
        build_store(root, entries)
        env = _env(root)
        word = "alpha"  # the generator's texts: a word many entries share
        cases = {
            "UserPromptSubmit (recall)": (
                "UserPromptSubmit",
                _payload(root, "UserPromptSubmit", prompt=f"What do we know about {word} here?"),
            ),
            "UserPromptSubmit (greeting)": (
                "UserPromptSubmit",
                _payload(root, "UserPromptSubmit", prompt="hi"),
            ),
            "PostToolUse": ("PostToolUse", _payload(root, "PostToolUse", tool_name="Bash")),
            "SessionStart": ("SessionStart", _payload(root, "SessionStart", source="startup")),
        }
        rows: dict[str, Any] = {}
        for label, (event, stdin) in cases.items():
            rows[label] = _series([*_CLI, "hook", event], env, stdin, repeats)
        rows.update(bench_warm(root, cases, repeats))
        rows["floor: the hook client's imports"] = _series(
            [sys.executable, "-c", "import pi_hermes_memory.adapters.hosts.hook_client"],
            env,
            b"",
            repeats,
        )
        rows["floor: python -c 'import apsw, attrs'"] = _series(
            [sys.executable, "-c", "import apsw, attrs"], env, b"", repeats
        )
        rows["CLI search"] = _series([*_CLI, "search", word], env, b"", repeats)
        return {"entries": entries, "repeats": repeats, "rows": rows}


def bench_first_fact() -> dict[str, Any]:
    """`setup claude-code` to the first remembered fact on an empty HOME (no LLM involved:
    auto-capture at Stop stores the stated preference)."""
    with tempfile.TemporaryDirectory(prefix="bench-first-fact-") as tmp:
        root = Path(tmp)
        (root / "agent").mkdir()
        env = _env(root)
        steps: dict[str, float] = {}
        started = time.perf_counter()
        for label, argv, stdin in (
            ("setup", [*_CLI, "setup", "claude-code"], b""),
            ("SessionStart", [*_CLI, "hook", "SessionStart"], _payload(root, "SessionStart")),
            (
                "UserPromptSubmit",
                [*_CLI, "hook", "UserPromptSubmit"],
                _payload(root, "UserPromptSubmit", prompt=_FACT),
            ),
            ("Stop", [*_CLI, "hook", "Stop"], _payload(root, "Stop", stop_hook_active=False)),
        ):
            steps[label] = round(_timed(argv, env, stdin)[0], 1)
        total = (time.perf_counter() - started) * 1000
        listed = subprocess.run(
            [*_CLI, "list", "--json"], capture_output=True, text=True, env=env, cwd=root
        )
        return {"steps_ms": steps, "total_ms": round(total, 1), "stored": _FACT in listed.stdout}


def render(result: dict[str, Any], first: dict[str, Any]) -> str:
    rows = [
        [label, r["p50_ms"], r["p95_ms"], r["cpu_p50_ms"], r["cpu_p95_ms"]]
        for label, r in result["rows"].items()
    ]
    cold = result["rows"]["UserPromptSubmit (recall)"]["p95_ms"]
    warm_row = result["rows"]["UserPromptSubmit (recall), warm server"]
    warm = warm_row["p95_ms"]

    def verdict(p95: float) -> str:
        return "met" if p95 <= RECALL_P95_TARGET_MS else "MISSED"

    steps = ", ".join(f"{k} {v} ms" for k, v in first["steps_ms"].items())
    return "\n".join(
        [
            f"### Claude Code hooks ({result['entries']} entries, {result['repeats']} runs): "
            "`hook EVENT` in-process, and the thin client against the warm server",
            "",
            _table(["call", "wall p50 ms", "wall p95 ms", "CPU p50 ms", "CPU p95 ms"], rows),
            "",
            f"recall p95 target {RECALL_P95_TARGET_MS:g} ms: in-process {cold} ms "
            f"{verdict(cold)}; warm server {warm} ms {verdict(warm)} "
            f"({warm_row['over_deadline']}/{result['repeats']} warm recalls over the "
            f"{RECALL_DEADLINE_MS:g} ms deadline)",
            f"setup → first remembered fact: {first['total_ms']} ms ({steps}); "
            f"stored: {first['stored']}",
        ]
    )


def run(entries: int, repeats: int) -> dict[str, Any]:
    return {"hooks": bench_hooks(entries, repeats), "first_fact": bench_first_fact()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.hooks", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    entries, repeats = (1_000, 5) if args.quick else (args.entries, args.repeats)
    result = run(entries, repeats)
    print(render(result["hooks"], result["first_fact"]))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
