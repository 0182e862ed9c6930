"""T01: concurrent writer processes on one store lose nothing and duplicate nothing.

8 separate interpreters (subprocess running ``sys.executable``; nothing is shared but the files)
each add 250 unique facts through the public API, all released at once so that they contend
for the store lock and the SQLite write lock the whole time. Afterwards the journal, the SQLite
read model (+ FTS) and the Markdown files must agree and hold every fact exactly once.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.markdown.format import parse_document, render_document
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.model import Target

WRITERS = 8
ADDS_PER_WRITER = 250
PROJECTS = ("alpha", "beta")
LIMITS = {
    "memoryCharLimit": 10_000_000,
    "userCharLimit": 10_000_000,
    "projectCharLimit": 10_000_000,
}

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

WORDS = [
    "amber",
    "basin",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "glade",
    "harbor",
    "inlet",
    "juniper",
    "kestrel",
    "lagoon",
    "meadow",
    "nectar",
    "orchard",
    "prairie",
    "quarry",
    "ridge",
    "spruce",
    "tundra",
    "upland",
    "valley",
    "willow",
    "yarrow",
    "zephyr",
    "anchor",
    "beacon",
    "canyon",
    "dune",
    "estuary",
    "forest",
    "geyser",
    "hollow",
    "island",
    "jetty",
    "knoll",
    "ledge",
    "marsh",
    "north",
    "oasis",
    "pebble",
    "quay",
    "reef",
    "summit",
    "thicket",
    "umber",
    "vista",
    "wharf",
    "xylem",
    "yonder",
    "zenith",
]


def _write_config(root: Path) -> None:
    (root / "hermes-memory-config.json").write_text(json.dumps(LIMITS), encoding="utf-8")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _markdown_path(root: Path, target: Target) -> Path:
    if target is Target.PROJECT:
        return root / "projects-memory" / "MEMORY.md"
    name = {Target.MEMORY: "MEMORY.md", Target.USER: "USER.md", Target.FAILURE: "failures.md"}
    return root / "pi-hermes-memory" / name[target]


def check_store(root: Path) -> dict[Target, MemoryDocument]:
    """Journal replay == Markdown (bytes and parse) == SQLite rows; integrity checks pass."""
    storage = SqliteStorage(root / "pi-hermes-memory" / "sessions.db")
    try:
        conn = storage.connection
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        with storage.transaction() as uow:
            docs = {
                t: fold(MemoryDocument.empty(t), uow.journal.read(stream_for(t))) for t in Target
            }
            ledger = {t: uow.ledger.rendered(stream_for(t)) for t in Target}
            # raises apsw.CorruptError when the index and the content table disagree
            conn.execute(
                "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"
            )
        for target, doc in docs.items():
            data = _markdown_path(root, target).read_bytes()
            assert data == render_document(doc.active, target=target).encode(), target
            assert ledger[target] == (doc.version, _sha(data)), target
            parsed = parse_document(data.decode("utf-8"), target=target)
            assert parsed.warnings == ()
            assert [p.text for p in parsed.entries] == [e.text for e in doc.active]
            rows = {
                r[0]: (r[1], r[2])
                for r in conn.execute(
                    "SELECT id, text, superseded_by FROM memories WHERE target = ?",
                    (target.value,),
                )
            }
            assert rows == {
                e.id: (e.text, e.superseded_by)
                for e in doc.all_entries()
                if not (target is Target.PROJECT and e.project is None)
            }, target
        assert conn.execute("SELECT count(*) FROM memories_fts").get == (
            conn.execute("SELECT count(*) FROM memories").get
        )
        return docs
    finally:
        storage.close()


@pytest.mark.slow
def test_concurrent_writers_no_loss(tmp_path: Path) -> None:
    root = tmp_path
    _write_config(root)
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
    storage = SqliteStorage(root / "pi-hermes-memory" / "sessions.db")
    try:
        conn = storage.connection
        rows = sorted(conn.execute("SELECT text, target FROM memories WHERE superseded_by IS NULL"))
        assert rows == sorted(written.items())
        events = conn.execute("SELECT count(*) FROM events").get
        assert events == WRITERS * ADDS_PER_WRITER
    finally:
        storage.close()
    # every process saw the same final state when reopening through the public API
    import pi_hermes_memory

    with pi_hermes_memory.open(
        agent_root=root, cwd=root, project=PROJECTS[0], environ={"HOME": str(root)}
    ) as m:
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
