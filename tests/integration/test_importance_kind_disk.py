"""importance and kind (ADR 0045) on the real store: SQLite journal and snapshots, the Markdown
files, reopening, hand edits, and journals written before the fields existed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.journal import pipeline
from pi_hermes_memory.journal.snapshots import decode_document


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


def _document(root: Path) -> str:
    """MEMORY.md as the store reads it: joined with its sidecar, which keeps the version line
    and the keys the TypeScript extension's spelling has no place for (ADR 0077)."""
    data = MarkdownFiles(root / "pi-hermes-memory", root / "projects-memory").read(Target.MEMORY)
    assert data is not None
    return data.decode("utf-8")


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
    assert "importance" not in _memory_md(tmp_path).read_text()  # the file: created, last
    lines = _document(tmp_path).splitlines()
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
    body = _document(tmp_path).splitlines()[1]
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
    assert _document(tmp_path).splitlines()[1].endswith(", importance=0.9, kind=decision -->")


def test_update_through_the_tool_survives_reopen(tmp_path: Path) -> None:
    with _open(tmp_path) as m:
        first = m.call_tool("memory_store", {"text": "Releases are cut on Thursdays"})["id"]
        out = m.call_tool("memory_update", {"id": first, "importance": 0.2})
        assert out["success"], out
    with _open(tmp_path) as m:
        (view,) = m.entries(Target.MEMORY)
        assert (view.id, view.importance, view.kind) == (out["id"], 0.2, "other")
        assert [h.id for h in m.history(view.id)] == [first, view.id]


def test_a_hand_edit_of_importance_and_kind_is_imported(tmp_path: Path) -> None:
    with _open(tmp_path) as m:
        m.add("Releases are cut on Thursdays", importance=0.9, kind="decision")
        m.add("The CI runners use Ubuntu 24.04")
    path = _memory_md(tmp_path)
    text = path.read_text()
    # the keys typed into the entry's comment (the file holds only created and last)
    typed = "Thursdays <!-- importance=0.5, kind=fact, created=2"
    text = text.replace("Thursdays <!-- created=2", typed)
    text = text.replace("24.04 <!-- created=2", "24.04 <!-- importance=1, created=2")
    path.write_text(text)
    with _open(tmp_path) as m:
        views = m.entries(Target.MEMORY)
        assert [(v.importance, v.kind) for v in views] == [(0.5, "fact"), (1.0, None)]
        ids = [v.id for v in views]
    with _open(tmp_path) as m:  # same ids: a retag, not a new version
        assert [v.id for v in m.entries(Target.MEMORY)] == ids
    assert "importance=0.5, kind=fact -->" in _document(tmp_path)


@pytest.mark.parametrize("bad", ["importance=2", "importance=high", "kind=opinion"])
def test_an_invalid_hand_edit_is_ignored_with_a_warning(tmp_path: Path, bad: str) -> None:
    with _open(tmp_path) as m:
        m.add("Releases are cut on Thursdays", importance=0.9, kind="decision")
    path = _memory_md(tmp_path)
    key = bad.split("=")[0]
    path.write_text(path.read_text().replace("Thursdays <!-- ", f"Thursdays <!-- {bad}, "))
    with _open(tmp_path) as m:
        (view,) = m.entries(Target.MEMORY)
        assert (view.text, view.importance, view.kind) == (
            "Releases are cut on Thursdays",
            0.9,
            "decision",
        )
        assert any(key in w and "keeps its stored value" in w for w in m.warnings)


def test_the_keys_live_in_the_sidecar_and_a_text_edit_keeps_them(tmp_path: Path) -> None:
    with _open(tmp_path) as m:
        m.add("Releases are cut on Thursdays", importance=0.9, kind="decision")
    path = _memory_md(tmp_path)
    # the file holds neither key (they live in the sidecar); an edit of the text keeps them
    assert "importance" not in path.read_text()
    path.write_text(path.read_text().replace("Thursdays", "Thursdays."))
    with _open(tmp_path) as m:
        (view,) = m.entries(Target.MEMORY)
        assert (view.importance, view.kind) == (0.9, "decision")
