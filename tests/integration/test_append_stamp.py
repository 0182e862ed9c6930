"""ADR 0100: an appended replica is proven by its stamp, so the next add does not read it back.

Real stores (SQLite file, Markdown files in tmp_path), one `Memory` per test making consecutive
adds (after its first, each one is decided on the write index and rendered by appending, ADR
0088). The file reads are observed through Python's `open` audit event, not mocked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pi_hermes_memory
import pytest

_OPENED: list[str] = []
_WATCHING: list[bool] = [False]


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _WATCHING[0] and event == "open" and isinstance(args[0], str | Path):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)  # process-wide and permanent: it records only while watching


@pytest.fixture
def watched() -> Iterator[list[str]]:
    _OPENED.clear()
    _WATCHING[0] = True
    try:
        yield _OPENED
    finally:
        _WATCHING[0] = False


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(agent_root=root / "agent", environ={"HOME": str(root)}, cwd=root)


def _memory_file(root: Path) -> Path:
    return root / "agent" / "pi-hermes-memory" / "MEMORY.md"


FACTS = [
    "the build uses redis for the cache layer",
    "deploys run on fridays after the integration tests",
    "ravi owns the payments queue and its alerts",
    "the sdk pins protobuf below version five",
    "flaky tests are quarantined in a separate job",
    "the staging database is refreshed every monday",
]


def test_consecutive_adds_read_the_sidecar_only_to_copy_it(
    tmp_path: Path, watched: list[str]
) -> None:
    with _open(tmp_path) as first:  # a new process holds no folded state: indexed adds
        assert first.add(FACTS[0], target="memory").status == "added"
    memory = _open(tmp_path)
    try:
        assert memory.add(FACTS[1], target="memory").status == "added"
        sidecar = str(_memory_file(tmp_path).with_name(".MEMORY.md.meta"))
        watched.clear()
        for fact in FACTS[2:]:
            assert memory.add(fact, target="memory").status == "added"
        reads = [p for p in watched if p.endswith(".MEMORY.md.meta") and ".tmp" not in p]
        # one open per add: the append's copy. Before ADR 0100 each add also read the file and
        # its sidecar back (twice) to prove them unedited
        assert len(reads) == len(FACTS[2:]), reads
        assert all(Path(p).name == Path(sidecar).name for p in reads)
    finally:
        memory.close()
    text = _memory_file(tmp_path).read_text()
    assert all(fact in text for fact in FACTS)
    again = _open(tmp_path)
    try:
        assert sorted(e.text for e in again.entries(target="memory")) == sorted(FACTS)
    finally:
        again.close()


@pytest.mark.parametrize("edit", ["append", "same_size"])
def test_a_save_between_two_appending_adds_is_imported_never_overwritten(
    tmp_path: Path, edit: str
) -> None:
    with _open(tmp_path) as first:
        assert first.add(FACTS[0], target="memory").status == "added"
    memory = _open(tmp_path)
    path = _memory_file(tmp_path)
    try:
        for fact in FACTS[1:3]:  # the later ones append and prove the file by its stamp
            assert memory.add(fact, target="memory").status == "added"
        before = path.read_text()
        if edit == "append":
            path.write_text(before + "§\na hand written fact about zebras\n")
            expected_hand = "a hand written fact about zebras"
        else:  # in place, same size: only the mtime (and ctime) tell it changed
            changed = before.replace("ravi owns", "mira owns", 1)
            assert len(changed) == len(before)
            with path.open("r+") as file:
                file.write(changed)
            expected_hand = "mira owns the payments queue and its alerts"
        assert memory.add(FACTS[3], target="memory").status == "added"
    finally:
        memory.close()
    text = path.read_text()
    assert expected_hand in text and FACTS[3] in text
    again = _open(tmp_path)
    try:
        texts = {e.text for e in again.entries(target="memory")}
    finally:
        again.close()
    assert expected_hand in texts and FACTS[3] in texts
