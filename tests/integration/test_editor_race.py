"""A person saving stale editor buffers while agent processes write (issue 9 §1, ADR 0022).

Four writer processes add unique facts through the public API while an "editor" in this
process keeps loading MEMORY.md, waiting (the agents write meanwhile), and saving its buffer
plus one new line of its own, in place (truncate, then write: what most editors do). Every add
the agents were told was saved, and every line the person typed, must be active afterwards.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pi_hermes_memory.domain.memory.model import Target

from tests.support.consistency import check_store, markdown_path, open_memory, write_config

WRITERS = 4
SECONDS = 4.0

WORKER = r"""
import json, sys, time
root, writer, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
import pi_hermes_memory
m = pi_hermes_memory.open(agent_root=root, cwd=root, environ={"HOME": root})
print("ready", flush=True)
sys.stdin.readline()
acked, i, end = [], 0, time.monotonic() + seconds
while time.monotonic() < end:
    text = f"agent {writer} wrote fact number {i} marker a{writer}x{i}"
    if m.add(text, force=True).status == "added":
        acked.append(text)
    i += 1
m.close()
print(json.dumps(acked), flush=True)
"""


@pytest.mark.slow
def test_stale_editor_saves_racing_writers_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path
    write_config(root)
    with open_memory(root, "alpha") as m:
        assert m.add("seed fact before anyone edits").success
    path = markdown_path(root, Target.MEMORY)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), str(w), str(SECONDS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    typed: list[str] = []
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        rng = random.Random(7)
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            buffer = path.read_bytes()
            time.sleep(rng.uniform(0.01, 0.15))  # the agents write while the person types
            line = f"typed by hand number {len(typed)} marker h{len(typed)}"
            with path.open("wb") as f:  # in place: truncate, then write
                f.write(buffer.rstrip(b"\n") + f"\n§\n{line}\n".encode())
            typed.append(line)
        acked: list[str] = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            acked += json.loads(out.strip().splitlines()[-1])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    with open_memory(root, "alpha") as m:
        active = {e.text for e in m.entries("memory")}
    assert acked and typed
    lost = [t for t in acked if t not in active]
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged adds lost, e.g. {lost[:3]}"
    missing = [t for t in typed if t not in active]
    assert not missing, f"{len(missing)} of {len(typed)} typed lines lost, e.g. {missing[:3]}"
    assert "seed fact before anyone edits" in active
    # nothing else: a save read half-written would add a cut entry (ADR 0115)
    extra = active - set(acked) - set(typed) - {"seed fact before anyone edits"}
    assert not extra, f"entries nobody wrote: {sorted(extra)[:3]}"
    check_store(root)
