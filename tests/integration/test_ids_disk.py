"""Entries by id on a real store (SQLite on disk, Markdown files): ids survive reopening and
history follows a chain of replaces, across sessions and a hand edit (ADR 0028)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agent"


def open_memory(root: Path, **kw: Any) -> Memory:
    return pi_hermes_memory.open(
        agent_root=root, environ={"HOME": str(root.parent)}, cwd=root.parent, **kw
    )


def test_ids_survive_reopen_and_history_chains(root: Path) -> None:
    """ADR 0074: the id `add` returned names the memory in every later session."""
    with open_memory(root) as m:
        a = str(m.add("Postgres 15 in production").entry_id)
        b = str(m.update(a, "Postgres 16 in production").version_id)
    with open_memory(root) as m:
        assert [(e.id, e.version_id) for e in m.entries("memory")] == [(a, b)]
        updated = m.update(a, "Postgres 17 in production")
        assert (updated.entry_id, updated.version) == (a, 3)
        c = str(updated.version_id)
        hits = m.search("Postgres", include_superseded=True).hits
        assert {h.id for h in hits} == {a, b, c}  # a hit is a row: its version id
        assert {h.memory_id for h in hits} == {a}
    with open_memory(root) as m:
        chain = m.history(a)
        assert [(e.id, e.version_id, e.version) for e in chain] == [(a, a, 1), (a, b, 2), (a, c, 3)]
        assert [e.text for e in chain][-1] == "Postgres 17 in production"
        assert [e.superseded_by for e in chain] == [b, c, None]
        assert m.update(f"{a}@1", "Postgres 18").status == "superseded"
        assert m.update(b, "Postgres 18").status == "superseded"
        assert m.delete(a).status == "removed"
    with open_memory(root) as m:
        assert m.get(a) is None and m.get(c) is None
        assert m.get(f"{a}@2") is not None
        assert m.delete(a).status == "gone"
        assert [e.version_id for e in m.history(b)] == [a, b]


def test_a_store_with_an_old_snapshot_derives_its_ids_from_the_journal(root: Path) -> None:
    """A snapshot written before ADR 0074 (format 1, entries without memory_id/version_no) is
    set aside and the journal folded: the stable ids appear without any event rewritten."""
    import json

    import apsw
    from pi_hermes_memory.domain.memory.model import Target
    from pi_hermes_memory.journal.snapshots import encode_document

    with open_memory(root) as m:
        a = str(m.add("Redis 6 caches sessions").entry_id)
        m.update(a, "Redis 7 caches sessions")
        m.update(a, "Valkey 8 caches sessions")
        doc = m._service.document(Target.MEMORY)
    old = json.loads(encode_document(doc))
    old["format"] = 1
    for row in [*old["document"]["active"], *old["document"]["history"]]:
        del row["memory_id"], row["version_no"]
    db = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    try:
        db.execute(
            "INSERT OR REPLACE INTO snapshots (stream, version, data) VALUES (?, ?, ?)",
            ("memory:memory", doc.version, json.dumps(old)),
        )
        events = [r[0] for r in db.execute("SELECT data FROM events ORDER BY seq")]
    finally:
        db.close()
    with open_memory(root) as m:
        view = m.get(a)
        assert view is not None and (view.text, view.version) == ("Valkey 8 caches sessions", 3)
        assert m.update(a, "Valkey 9 caches sessions").entry_id == a
        assert [e.version for e in m.history(a)] == [1, 2, 3, 4]
    db = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    try:
        after = [r[0] for r in db.execute("SELECT data FROM events ORDER BY seq")]
    finally:
        db.close()
    assert set(events) <= set(after)  # no stored event was rewritten


def test_a_hand_edit_keeps_the_id_of_an_untouched_entry(root: Path) -> None:
    with open_memory(root) as m:
        kept = m.add("Releases are tagged vX.Y.Z").entry_id
        m.add("The wiki lives in Notion")
    path = root / "pi-hermes-memory" / "MEMORY.md"
    text = path.read_text()
    path.write_text("\n".join(line for line in text.split("\n") if "Notion" not in line))
    with open_memory(root) as m:
        assert [e.id for e in m.entries("memory")] == [kept]
        assert m.get(str(kept)) is not None


def test_promote_by_id_on_disk_then_history_crosses_documents(root: Path) -> None:
    with open_memory(root, project="web") as m:
        p = str(m.add("Use uv for Python installs", target="project").entry_id)
        out = m.call_tool("memory", {"action": "promote", "id": p})
        assert out["status"] == "promoted", out
    with open_memory(root, project="web") as m:
        moved = m.get(p)
        assert moved is not None and moved.target == "memory"
        assert [e.id for e in m.history(p)] == [p]


def test_history_follows_a_merge_into_another_document(root: Path) -> None:
    with open_memory(root, project="web") as m:
        g = str(m.add("Use uv for Python installs").entry_id)
        p = str(m.add("Use uv for Python installs", target="project").entry_id)
        out = m.call_tool("memory", {"action": "promote", "id": p})
        assert out["status"] == "merged", out
    with open_memory(root, project="web") as m:
        assert [e.version_id for e in m.history(p)] == [p, g]
        assert [e.version_id for e in m.history(g)] == [p, g]  # followed back across documents
        # the absorbed id is an alias of the survivor (ADR 0074)
        got = m.get(p)
        assert got is not None and got.id == g
        assert m.delete(p).status == "removed" and m.get(g) is None


def test_a_hand_edit_of_the_text_keeps_the_memory_id(root: Path) -> None:
    """ADR 0074: a person's edit of an entry's text in the Markdown is a new version of the
    same memory: the id a client holds names it."""
    with open_memory(root) as m:
        a = str(m.add("The staging host is stg-1").entry_id)
    path = root / "pi-hermes-memory" / "MEMORY.md"
    path.write_text(path.read_text().replace("stg-1", "stg-2"))
    with open_memory(root) as m:
        view = m.get(a)
        assert view is not None and (view.text, view.version) == ("The staging host is stg-2", 2)
        assert m.update(a, "The staging host is stg-3").entry_id == a
