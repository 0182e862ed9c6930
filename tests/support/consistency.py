"""Store-consistency helpers shared by the multi-process, kill -9 and crash-injection tests.

`check_store` is the union of what each of those tests checked on its own: journal replay ==
Markdown (bytes, parse, ledger) == SQLite rows (all and active), no duplicate active text in a
target, ``PRAGMA integrity_check`` and the FTS5 integrity check pass.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pi_hermes_memory
from pi_hermes_memory.adapters.markdown.format import parse_document, render_document
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.events import Event
from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.domain.memory.model import Target

# word pool for the generated (unique, seeded) texts of the writer processes
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

# limits high enough that no add of a stress test is ever rejected for capacity
NO_LIMITS = {
    "memoryCharLimit": 10_000_000,
    "userCharLimit": 10_000_000,
    "projectCharLimit": 10_000_000,
}


def write_config(root: Path, config: dict[str, int] = NO_LIMITS) -> None:
    (root / "hermes-memory-config.json").write_text(json.dumps(config), encoding="utf-8")


def open_memory(root: Path, project: str) -> Memory:
    """Open the store under `root` through the public API, as the tests' processes do."""
    return pi_hermes_memory.open(
        agent_root=root, cwd=root, project=project, environ={"HOME": str(root)}
    )


def db_path(root: Path) -> Path:
    return root / "pi-hermes-memory" / "sessions.db"


def markdown_path(root: Path, target: Target) -> Path:
    if target is Target.PROJECT:
        return root / "projects-memory" / "MEMORY.md"
    name = {Target.MEMORY: "MEMORY.md", Target.USER: "USER.md", Target.FAILURE: "failures.md"}
    return root / "pi-hermes-memory" / name[target]


def document_bytes(root: Path, target: Target) -> bytes:
    """The document as the store reads it: the Markdown file joined with its sidecar (the
    version line and the metadata the TypeScript extension's spelling leaves out, ADR 0077)."""
    data = MarkdownFiles(root / "pi-hermes-memory", root / "projects-memory").read(target)
    assert data is not None, target
    return data


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def temp_files(root: Path, *, missing_ok: bool = False) -> list[Path]:
    """Leftover ``*.tmp`` files of atomic writes; a missing directory raises unless `missing_ok`."""
    return [
        p
        for d in (root / "pi-hermes-memory", root / "projects-memory")
        if not missing_ok or d.exists()
        for p in d.iterdir()
        if p.name.endswith(".tmp")
    ]


def replica_of(storage: SqliteStorage, target: Target) -> str:
    """The replica name of a target's file in the default layout (db in <root>/pi-hermes-memory)."""
    memory_dir = storage.path.parent
    return MarkdownFiles(memory_dir, memory_dir.parent / "projects-memory").replica(target)


def render_head(storage: SqliteStorage, doc: MemoryDocument) -> bytes:
    """What the store writes for `doc`: its version line (ADR 0022), then the entries."""
    with storage.transaction() as uow:
        store = uow.ledger.store_id()
    stamp = VersionLine(target=doc.target.value, version=doc.version, store=store)
    return render_document(doc.active, target=doc.target, stamp=stamp).encode()


def read_journal(
    storage: SqliteStorage,
) -> tuple[dict[Target, MemoryDocument], dict[Target, tuple[int, str] | None]]:
    """Every target's journal replayed, and what the ledger says was rendered into its file."""
    with storage.transaction() as uow:
        docs = {t: fold(MemoryDocument.empty(t), uow.journal.read(stream_for(t))) for t in Target}
        ledger = {t: uow.ledger.rendered(stream_for(t), replica_of(storage, t)) for t in Target}
    return docs, ledger


def journal_events(root: Path, target: Target) -> list[Event]:
    """The raw journal of one target, read without opening the store through the API."""
    storage = SqliteStorage(db_path(root))
    try:
        with storage.transaction() as uow:
            return list(uow.journal.read(stream_for(target)))
    finally:
        storage.close()


def check_store(root: Path) -> dict[Target, MemoryDocument]:
    """Journal replay == Markdown (bytes and parse) == SQLite rows; integrity checks pass."""
    storage = SqliteStorage(db_path(root))
    try:
        conn = storage.connection
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        docs, ledger = read_journal(storage)
        with storage.transaction():
            # raises apsw.CorruptError when the index and the content table disagree
            conn.execute(
                "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"
            )
        for target, doc in docs.items():
            data = document_bytes(root, target)
            assert data == render_head(storage, doc), target
            assert ledger[target] == (doc.version, sha(data)), target
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
            active_rows = sorted(
                conn.execute(
                    "SELECT text FROM memories WHERE target = ? AND superseded_by IS NULL",
                    (target.value,),
                )
            )
            assert active_rows == sorted((e.text,) for e in doc.active), target
            texts = [e.text for e in doc.active]
            assert len(texts) == len(set(texts)), f"duplicate in {target}"
        assert conn.execute("SELECT count(*) FROM memories_fts").get == (
            conn.execute("SELECT count(*) FROM memories").get
        )
        return docs
    finally:
        storage.close()
