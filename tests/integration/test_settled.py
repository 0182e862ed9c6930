"""`Memory.settled` on the real adapters (ADR 0083): whether a read needs a write first. The
server's reader processes ask it before every read and hand the read to the store's writer
when it says no, so a hand edit is imported by the writer, never by a reader."""

from __future__ import annotations

from pathlib import Path

import pi_hermes_memory
from pi_hermes_memory import Memory


def _open(root: Path) -> Memory:
    return pi_hermes_memory.open(
        agent_root=root, cwd=root.parent, environ={"HOME": str(root.parent)}
    )


def test_a_hand_edit_unsettles_every_open_store_until_a_writer_imports_it(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    with _open(root) as writer, _open(root) as reader:
        assert writer.add("Deploys go through staging first").success
        # the writer rendered the file: the reader sees a changed file the ledger recorded
        assert reader.settled()
        memory_md = root / "pi-hermes-memory" / "MEMORY.md"
        with memory_md.open("a", encoding="utf-8") as f:
            f.write("\n§\nThe release train leaves on Thursdays\n")
        assert not reader.settled()
        assert not reader.settled()  # asking imports nothing
        assert not writer.settled()
        hits = writer.search("release train")  # the writer imports the edit, then answers
        assert any("Thursdays" in h.text for h in hits.hits)
        assert writer.settled()
        assert reader.settled()
        assert any("Thursdays" in h.text for h in reader.search("release train").hits)


def test_a_write_by_another_store_leaves_a_reader_settled(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    with _open(root) as writer, _open(root) as reader:
        assert reader.settled()
        for i in range(3):
            assert writer.add(f"fact number {i} about caching qz{i}").success
            assert reader.settled()
            assert [h.text for h in reader.search(f"qz{i}").hits] == [
                f"fact number {i} about caching qz{i}"
            ]
