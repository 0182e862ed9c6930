"""importance and kind (ADR 0045) on the real store: SQLite journal and snapshots, the Markdown
files, reopening, hand edits, and journals written before the fields existed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory, pipeline
from pi_hermes_memory.domain.model import Target
from pi_hermes_memory.snapshot_codec import decode_document


def _open(root: Path) -> Memory:
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"tools": {"sets": ["hermes", "pi-memory"]}})
    )
    return pi_hermes_memory.open(agent_root=root, cwd=root, environ={})


def _rows(root: Path, sql: str) -> list[Any]:
    conn = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


def _memory_md(root: Path) -> Path:
    return root / "pi-hermes-memory" / "MEMORY.md"


def test_fields_survive_reopen_and_show_in_markdown_only_when_set(tmp_path: Path) -> None:
    with _open(tmp_path) as m:
        rich = m.call_tool(
            "memory_store",
            {"text": "Releases are cut on Thursdays", "importance": 0.9, "category": "decision"},
        )["id"]
        plain = m.add("The CI runners use Ubuntu 24.04").entry_id
    with _open(tmp_path) as m:
        views = {v.id: v for v in m.entries(Target.MEMORY)}
        assert (views[rich].importance, views[rich].kind) == (0.9, "decision")
        assert (views[plain].importance, views[plain].kind) == (None, None)
    lines = _memory_md(tmp_path).read_text().splitlines()
    assert "Releases are cut on Thursdays <!-- created=" in lines[1]
    assert lines[1].endswith(", importance=0.9, kind=decision -->")
    assert "importance" not in lines[3] and "kind=" not in lines[3]
    payloads = [json.loads(d) for (d,) in _rows(tmp_path, "SELECT data FROM events ORDER BY seq")]
    assert [("importance" in p, "kind" in p) for p in payloads] == [(True, True), (False, False)]


def test_a_snapshot_keeps_the_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "SNAPSHOT_EVERY", 1)
    with _open(tmp_path) as m:
        m.add("Releases are cut on Thursdays", importance=0.25, kind="fact")
        m.add("The CI runners use Ubuntu 24.04")
    ((data,),) = _rows(tmp_path, "SELECT data FROM snapshots WHERE stream = 'memory:memory'")
    doc = decode_document(data)
    assert [(e.importance, e.kind) for e in doc.active] == [(0.25, "fact"), (None, None)]
    with _open(tmp_path) as m:
        assert [(v.importance, v.kind) for v in m.entries(Target.MEMORY)] == [
            (0.25, "fact"),
            (None, None),
        ]


def test_a_store_without_the_fields_renders_byte_identically(tmp_path: Path) -> None:
    with _open(tmp_path) as m:
        m.add("The CI runners use Ubuntu 24.04")
        m.add("Prefers answers in English", target=Target.USER)
    before = _memory_md(tmp_path).read_bytes()
    body = before.decode().splitlines()[1]
    assert body.startswith("The CI runners use Ubuntu 24.04 <!-- created=")
    assert body.count("=") == 2  # created and last, nothing else
    _memory_md(tmp_path).unlink()
    with _open(tmp_path) as m:
        m.sync_markdown()
        assert [v.importance for v in m.entries()] == [None, None]
    assert _memory_md(tmp_path).read_bytes() == before


def test_a_hand_edit_of_the_text_keeps_the_fields(tmp_path: Path) -> None:
    with _open(tmp_path) as m:
        m.add("Releases are cut on Thursdays", importance=0.9, kind="decision")
    path = _memory_md(tmp_path)
    path.write_text(path.read_text().replace("Thursdays", "Wednesdays"))
    with _open(tmp_path) as m:
        (view,) = m.entries(Target.MEMORY)
        assert view.text == "Releases are cut on Wednesdays"
        assert (view.importance, view.kind) == (0.9, "decision")
    assert path.read_text().splitlines()[1].endswith(", importance=0.9, kind=decision -->")


def test_update_through_the_tool_survives_reopen(tmp_path: Path) -> None:
    with _open(tmp_path) as m:
        first = m.call_tool("memory_store", {"text": "Releases are cut on Thursdays"})["id"]
        out = m.call_tool("memory_update", {"id": first, "importance": 0.2})
        assert out["success"], out
    with _open(tmp_path) as m:
        (view,) = m.entries(Target.MEMORY)
        assert (view.id, view.importance, view.kind) == (out["id"], 0.2, "other")
        assert [h.id for h in m.history(view.id)] == [first, view.id]
