"""T01: concurrent writer processes on one store lose nothing and duplicate nothing.

8 separate interpreters (subprocess running ``sys.executable``; nothing is shared but the files)
each add 250 unique facts through the public API, all released at once so that they contend
for the store lock and the SQLite write lock the whole time. Afterwards the journal, the SQLite
read model (+ FTS) and the Markdown files must agree and hold every fact exactly once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target

from tests.support.consistency import WORDS, check_store, db_path, open_memory, write_config

WRITERS = 8
ADDS_PER_WRITER = 250
PROJECTS = ("alpha", "beta")

# The worker: import and open first, then wait for "go" on stdin so that every writer starts
# at the same moment; report one JSON line with every result and its latency.
WORKER = r"""
import json, random, sys, time
root, writer, count, project = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
import pi_hermes_memory
WORDS = sys.argv[5].split(",")
TARGETS = ["memory", "user", "project", "failure", "memory"]
m = pi_hermes_memory.open(agent_root=root, cwd=root, project=project, environ={"HOME": root})
print("ready", flush=True)
sys.stdin.readline()
results = []
for i in range(count):
    rng = random.Random(writer * 100_003 + i)
    text = f"writer {writer} fact {i} tag w{writer}n{i} " + " ".join(rng.sample(WORDS, 3))
    target = TARGETS[(i + writer) % len(TARGETS)]
    t0 = time.perf_counter()
    r = m.add(text, target=target)
    results.append([text, target, r.success, r.status, time.perf_counter() - t0])
m.close()
print(json.dumps(results), flush=True)
"""


@pytest.mark.slow
def test_concurrent_writers_no_loss(tmp_path: Path) -> None:
    root = tmp_path
    write_config(root)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(root),
                str(w),
                str(ADDS_PER_WRITER),
                PROJECTS[w % 2],
                ",".join(WORDS),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            assert line == "ready\n", (line, p.stderr.read() if p.stderr else "")
        started = time.perf_counter()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outputs = [p.communicate(timeout=300) for p in procs]
        elapsed = time.perf_counter() - started
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (_out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err

    results = [row for out, _ in outputs for row in json.loads(out)]
    assert len(results) == WRITERS * ADDS_PER_WRITER
    failures = [r for r in results if not (r[2] and r[3] == "added")]
    assert failures == [], failures[:5]
    latencies = sorted(r[4] for r in results)
    p99_ms = latencies[int(0.99 * (len(latencies) - 1))] * 1000
    written = {r[0]: r[1] for r in results}
    assert len(written) == len(results)  # the texts themselves are unique

    docs = check_store(root)
    # every text exactly once, in the target it was written to, in journal and Markdown
    active = [(e.text, e.target.value) for d in docs.values() for e in d.active]
    lost = set(written) - {text for text, _ in active}
    duplicated = len(active) - len(set(active))
    assert lost == set()
    assert duplicated == 0
    assert sorted(active) == sorted(written.items())
    for target, doc in docs.items():
        for e in doc.active:
            if target in (Target.PROJECT, Target.FAILURE):
                writer = int(e.text.split()[1])
                assert e.project == PROJECTS[writer % 2], e
    # the SQLite read model: active rows == the written facts
    storage = SqliteStorage(db_path(root))
    try:
        conn = storage.connection
        rows = sorted(conn.execute("SELECT text, target FROM memories WHERE superseded_by IS NULL"))
        assert rows == sorted(written.items())
        events = conn.execute("SELECT count(*) FROM events").get
        assert events == WRITERS * ADDS_PER_WRITER
    finally:
        storage.close()
    # every process saw the same final state when reopening through the public API
    with open_memory(root, PROJECTS[0]) as m:
        seen = {v.text for v in m.entries()}
    visible_expected = {
        text
        for text, target in written.items()
        if target in ("memory", "user") or int(text.split()[1]) % 2 == 0
    }
    assert seen == visible_expected

    total = len(results)
    print(
        f"\nT01 multi-process: {WRITERS}x{ADDS_PER_WRITER} = {total} writes in {elapsed:.2f} s, "
        f"{total / elapsed:.0f} writes/s, p99 add latency {p99_ms:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms, lost {len(lost)}, duplicated {duplicated}"
    )
