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
    with open_memory(root) as m:
        a = m.add("Postgres 15 in production").entry_id
        b = m.update(str(a), "Postgres 16 in production").entry_id
    assert a and b
    with open_memory(root) as m:
        assert [e.id for e in m.entries("memory")] == [b]
        c = m.update(str(b), "Postgres 17 in production").entry_id
        hits = m.search("Postgres", include_superseded=True).hits
        assert {h.id for h in hits} == {a, b, c}
    with open_memory(root) as m:
        chain = m.history(str(a))
        assert [e.id for e in chain] == [a, b, c]
        assert [e.text for e in chain][-1] == "Postgres 17 in production"
        assert [e.superseded_by for e in chain] == [b, c, None]
        assert m.update(str(a), "Postgres 18").status == "superseded"
        assert m.delete(str(c)).status == "removed"
    with open_memory(root) as m:
        assert m.get(str(c)) is None
        assert m.delete(str(c)).status == "gone"
        assert [e.id for e in m.history(str(b))] == [a, b]


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
        assert [e.id for e in m.history(p)] == [p, g]
        assert [e.id for e in m.history(g)] == [p, g]  # followed back across documents too
        assert m.delete(p).status == "superseded"
