"""ADR 0088: SIGKILL a writer whose renders append to a file of thousands of entries.

A store of 3,000 entries (a 0.3 MB MEMORY.md, below the render lag's 1 MiB: every add renders)
is written by child processes that add unique entries in a loop; each add is decided on the
write index and rendered by copying the file and its sidecar with the new blocks after them
(`MarkdownFiles.append`). The parent kills each child at a random moment (seeded; the seed is
printed). After every kill, before anything reopens the store, each file is whole: valid UTF-8,
every entry with its metadata, and exactly the render the ledger recorded or the render of the
journal head (`test_kill_writer.check_not_torn`): never the old file with part of an entry
after it. Then the store is reopened: every add reported ok is there exactly once, nothing that
was never tried, the journal, the Markdown file and the SQLite rows agree.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import time
from pathlib import Path

import pytest
from pi_hermes_memory.domain.memory.model import Target

from tests.bench.run import TextGenerator, _open, prefill
from tests.integration.test_kill_writer import Child, check_not_torn
from tests.support.consistency import check_store, markdown_path, temp_files

KILLS = int(os.environ.get("PHM_APPEND_KILLS", "20"))
SEED = int(os.environ.get("PHM_KILL_SEED", "0")) or random.SystemRandom().randrange(1, 2**31)

CHILD = r"""
import sys
from pathlib import Path
from tests.bench.run import _open
root, run = Path(sys.argv[1]), int(sys.argv[2])
print("loaded", flush=True)
if sys.stdin.readline() != "go\n":
    sys.exit(0)
m = _open(root)
print("ready", flush=True)
i = 0
while True:
    text = f"appended{run}x{i} note about the staging host"
    print("try", "memory", text, flush=True)
    r = m.add(text)
    if not (r.success and r.status == "added"):
        print("bad", r.status, " ".join(r.message.split()), flush=True)
        sys.exit(3)
    print("ok", "memory", text, flush=True)
    i += 1
"""


class AppendChild(Child):
    def __init__(self, root: Path, run: int) -> None:
        import subprocess
        import sys

        self.run = run
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), str(run)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
        )
        self.lines = []


@pytest.mark.slow
def test_kill9_during_appending_renders(tmp_path: Path) -> None:
    print(f"\nappend kill test seed: {SEED} (rerun with PHM_KILL_SEED={SEED})")
    rng = random.Random(SEED)
    prefill(tmp_path, 3_000, iter(TextGenerator(seed=5)))
    with _open(tmp_path) as memory:  # renders MEMORY.md once, as any write would
        memory.search("alpha")
    agent = tmp_path / "agent"
    path = markdown_path(agent, Target.MEMORY)
    assert path.stat().st_size > 200_000
    confirmed: set[str] = set()
    unconfirmed: set[str] = set()
    windows: collections.Counter[str] = collections.Counter()
    torn: list[str] = []
    spare = AppendChild(tmp_path, 0)
    try:
        for run in range(KILLS):
            child, spare = spare, AppendChild(tmp_path, run + 1)
            before = {
                t: markdown_path(agent, t).read_bytes()
                if markdown_path(agent, t).exists()
                else None
                for t in Target
            }
            child.wait_for(b"loaded")
            child.go()
            if rng.random() < 0.3:
                child.wait_for(b"ready")
                time.sleep(rng.uniform(0, 0.15))
            else:  # inside an add: its decision, commit or render
                child.wait_for(b"try", rng.randint(1, 6))
                time.sleep(rng.uniform(0, 0.05))
            code, err = child.kill()
            assert code == -signal.SIGKILL, (run, code, err.decode(errors="replace"))
            assert not child.reported(b"bad"), child.lines[-3:]
            oks = [text for _, text in child.reported(b"ok")]
            tries = [text for _, text in child.reported(b"try")]
            confirmed.update(oks)
            unconfirmed.update(tries[len(oks) :])
            torn.extend(f"run {run}: {p}" for p in check_not_torn(agent, before, windows))

            with _open(tmp_path) as memory:
                present = collections.Counter(
                    v.text for v in memory.entries() if v.text.startswith("appended")
                )
            assert not [t for t, n in present.items() if n > 1], "duplicated"
            assert not [t for t in confirmed if present[t] != 1], "reported saved but missing"
            assert not set(present) - confirmed - unconfirmed, "present but never tried"
            docs = check_store(agent)
            assert len(docs[Target.MEMORY].active) == 3_000 + sum(present.values())
    finally:
        if spare.proc.poll() is None:
            spare.dismiss()
    print(f"append kill test: {KILLS} kills, {len(confirmed)} adds ok; file states {dict(windows)}")
    print(f"append kill test: MEMORY.md {path.stat().st_size:,} bytes")
    print(f"append kill test: leftover temp files {len(temp_files(agent, missing_ok=True))}")
    assert torn == [], torn[:5]
