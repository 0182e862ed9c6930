"""Support-file names on real folders (issue 26 §6): a name as long as a file system allows is
written and rendered (the temp file of the atomic write is named short), every later write of
the folder still renders; a bidi control in a name is refused before anything is journaled."""

from __future__ import annotations

from pathlib import Path

import pytest
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage

from tests.integration.test_skill_service_disk import service


def _create(svc: object) -> str:
    made = svc.create(  # type: ignore[attr-defined]
        scope="global",
        name="Long Names",
        description="Holds long support names",
        when_to_use="When names are long",
        procedure_steps=["Read the reference"],
    )
    assert made.success, made.message
    return "global:long-names"


@pytest.mark.parametrize("length", [241, 242, 250, 255])
def test_a_255_byte_support_name_is_written_and_the_folder_keeps_rendering(
    tmp_path: Path, length: int
) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        svc = service(tmp_path, storage)
        sid = _create(svc)
        name = "n" * (length - 3) + ".md"
        wrote = svc.write_file(sid, f"references/{name}", "long name")
        assert wrote.success, wrote.message
        folder = tmp_path / "skills" / "long-names"
        assert (folder / "references" / name).read_text() == "long name"
        # the folder is rewritten by the next write: nothing is stuck behind the long name
        assert svc.write_file(sid, "references/short.md", "short").success
        assert (folder / "references" / "short.md").read_text() == "short"
        again = service(tmp_path, storage)
        skill = again.get(sid)
        assert skill is not None and f"references/{name}" in dict(skill.files)
        assert not [p for p in folder.rglob("*.tmp")]
    finally:
        storage.close()


def test_a_name_over_255_bytes_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        svc = service(tmp_path, storage)
        sid = _create(svc)
        refused = svc.write_file(sid, "references/" + "é" * 128 + ".md", "x")
        assert not refused.success and "longer than 255 bytes" in refused.message
    finally:
        storage.close()


@pytest.mark.parametrize("mark", ["\u202e", "\u202a", "\u2066", "\u2069", "\u200f", "\u061c"])
def test_a_bidi_control_in_a_support_name_is_refused(tmp_path: Path, mark: str) -> None:
    storage = SqliteStorage(tmp_path / "sessions.db")
    try:
        svc = service(tmp_path, storage)
        sid = _create(svc)
        refused = svc.write_file(sid, f"scripts/run{mark}dm.sh", "echo hi")
        assert not refused.success
        assert "bidi control" in refused.message and f"U+{ord(mark):04X}" in refused.message
        assert not (tmp_path / "skills" / "long-names" / "scripts").exists()
    finally:
        storage.close()


def test_atomic_write_takes_a_255_byte_name_cut_inside_a_character(tmp_path: Path) -> None:
    from pi_hermes_memory.adapters.markdown.atomic import atomic_write, stale_temp_files

    target = tmp_path / ("é" * 127 + "x")  # 255 bytes; the temp name's cut falls mid-"é"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
    assert stale_temp_files(tmp_path, older_than_s=0) == []


@pytest.mark.parametrize("mark", ["\u202e", "\u2067", "\u200e"])
def test_a_bidi_control_in_a_project_name_is_refused(tmp_path: Path, mark: str) -> None:
    import json

    import pi_hermes_memory
    from pi_hermes_memory.errors import ConfigError

    root = tmp_path / "agent"
    with pytest.raises(ConfigError, match="bidi"):
        pi_hermes_memory.open(agent_root=root, project=f"web{mark}gpj.exe", environ={})
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps({"projectName": f"a{mark}b"}))
    with pi_hermes_memory.open(agent_root=root, cwd=tmp_path / "site", environ={}) as memory:
        assert memory.project == "site"
        assert any("bidi" in w for w in memory.warnings)
