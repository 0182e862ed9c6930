"""A read proves the Markdown replicas unchanged by a stamp recorded outside the store
(issue 29, ADR 0089): real files, real stores, the public API.

After a search has read and hashed a replica, the next process takes the digest recorded for
the replica's exact stamp (file and sidecar) instead of reading it; every kind of hand edit
changes the stamp, so it is still read and imported; the record lives in the cache folder,
never in the store's folder; an unwritable cache only means reading as before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.markdown import store as markdown_store
from pi_hermes_memory.adapters.markdown.proofs import RACY_NS, MarkdownProofs, cache_dir
from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.model import Target

FACTS = [
    "the deploy window is tuesday afternoon",
    "staging runs on the blue cluster",
    "the release train leaves every second friday",
]


def _open(root: Path, cache: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(
        agent_root=root / "agent",
        cwd=root,
        environ={"PI_HERMES_MEMORY_CACHE_DIR": str(cache)},
    )


def _memory_md(root: Path) -> Path:
    return root / "agent" / "pi-hermes-memory" / "MEMORY.md"


def _sidecar(root: Path) -> Path:
    return root / "agent" / "pi-hermes-memory" / ".MEMORY.md.meta"


def _past_racy_window() -> None:
    """Let the files' last change fall outside the racy window (the rule is the point)."""
    time.sleep(RACY_NS / 1e9 + 0.05)


class _Reads:
    """Counts the real reads of the global MEMORY.md (they still happen: only counted)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = MarkdownFiles.read

        def counted(files: MarkdownFiles, target: Target) -> bytes | None:
            if target is Target.MEMORY:
                self.count += 1
            return real(files, target)

        monkeypatch.setattr(markdown_store.MarkdownFiles, "read", counted)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    cache = tmp_path / "cache"
    with _open(tmp_path, cache) as memory:
        for fact in FACTS:
            assert memory.add(fact).success
    _past_racy_window()
    with _open(tmp_path, cache) as memory:  # reads, hashes and records the proofs
        assert memory.search("deploy").hits
    yield tmp_path, cache


def test_a_search_after_a_proof_reads_no_replica(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = store
    assert len(list((cache / "replicas").glob("*.json"))) == 4  # one per replica
    reads = _Reads(monkeypatch)
    with _open(root, cache) as memory:
        hits = memory.search("staging").hits
    assert [h.text for h in hits] == ["staging runs on the blue cluster"]
    assert reads.count == 0


def _same_size(root: Path) -> None:
    path = _memory_md(root)
    data = path.read_bytes()
    assert b"tuesday" in data
    with open(path, "r+b") as f:  # in place: same inode, same size
        f.write(data.replace(b"tuesday", b"thursda"))


def _mtime_restored(root: Path) -> None:
    path = _memory_md(root)
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"blue cluster", b"teal cluster"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _truncated(root: Path) -> None:
    path = _memory_md(root)
    data = path.read_bytes()
    cut = data.index(b"the release train")
    with open(path, "r+b") as f:
        f.truncate(cut)


def _sidecar_replaced(root: Path) -> None:
    path = _sidecar(root)
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)  # the same bytes, a new file


def _sidecar_removed(root: Path) -> None:
    _sidecar(root).unlink()


@pytest.mark.parametrize(
    ("edit", "query", "expected"),
    [
        (_same_size, "thursda", "the deploy window is thursda afternoon"),
        (_mtime_restored, "teal", "staging runs on the teal cluster"),
        (_truncated, "release", None),
        (_sidecar_replaced, "tuesday", "the deploy window is tuesday afternoon"),
        (_sidecar_removed, "tuesday", "the deploy window is tuesday afternoon"),
    ],
)
def test_every_hand_edit_is_still_read_and_imported(
    store: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    edit: object,
    query: str,
    expected: str | None,
) -> None:
    root, cache = store
    assert callable(edit)
    edit(root)
    reads = _Reads(monkeypatch)
    with _open(root, cache) as memory:
        texts = [h.text for h in memory.search(query).hits]
        listed = [e.text for e in memory.entries(Target.MEMORY)]
    assert reads.count >= 1  # the stamp differs: read and hashed as before
    if expected is None:
        assert texts == [] and not any("release train" in t for t in listed)
    else:
        assert expected in texts and expected in listed


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            st = path.stat()
            out[str(path.relative_to(folder))] = (path.read_bytes(), st.st_mtime_ns, st.st_ino)
    return out


def test_a_search_leaves_the_store_folder_byte_for_byte(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with _open(tmp_path, cache) as memory:
        assert memory.add(FACTS[0]).success
    _past_racy_window()
    before = _snapshot(tmp_path / "agent")
    for _ in range(2):  # the first records its proofs, the second uses them
        with _open(tmp_path, cache) as memory:
            assert memory.search("deploy").hits
    assert _snapshot(tmp_path / "agent") == before
    assert list((cache / "replicas").glob("*.json"))  # the records went to the cache


def test_an_unwritable_cache_only_means_reading_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cache.write_text("not a folder")  # nothing can be created below it
    with _open(tmp_path, cache) as memory:
        assert memory.add(FACTS[1]).success
    _past_racy_window()
    for _ in range(2):
        reads = _Reads(monkeypatch)
        with _open(tmp_path, cache) as memory:
            assert [h.text for h in memory.search("staging").hits] == [FACTS[1]]
        assert reads.count >= 1
    assert cache.read_text() == "not a folder"


def test_a_garbled_record_is_ignored(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = store
    for record in (cache / "replicas").glob("*.json"):
        record.write_text('{"file": [1, 2], "digest": 7}')
    reads = _Reads(monkeypatch)
    with _open(root, cache) as memory:
        assert memory.search("deploy").hits
    assert reads.count >= 1


def test_a_file_changed_within_the_racy_window_is_never_recorded(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with _open(tmp_path, cache) as memory:
        assert memory.add(FACTS[2]).success
    files = MarkdownFiles(tmp_path / "agent" / "pi-hermes-memory", tmp_path / "x")
    stream = stream_for(Target.MEMORY)
    changed = max(
        st
        for p in (_memory_md(tmp_path), _sidecar(tmp_path))
        for st in (p.stat().st_mtime_ns, p.stat().st_ctime_ns)
    )
    folder = tmp_path / "proofs"
    soon = MarkdownProofs(files, folder, now_ns=lambda: changed + RACY_NS // 2)
    token = soon.token(stream)
    soon.prove(stream, token, "d" * 64)
    assert soon.proven(stream) is None and not (folder / "replicas").exists()
    later = MarkdownProofs(files, folder, now_ns=lambda: changed + RACY_NS + 1)
    later.prove(stream, token, "d" * 64)
    assert later.proven(stream) == "d" * 64
    # a token taken before a change is not recorded for the changed file
    path = _memory_md(tmp_path)
    path.write_bytes(path.read_bytes().replace(b"friday", b"monday"))
    later.prove(stream, token, "e" * 64)
    assert later.proven(stream) is None


def test_the_cache_folder_comes_from_the_environment() -> None:
    assert cache_dir({"PI_HERMES_MEMORY_CACHE_DIR": "/c", "HOME": "/h"}) == Path("/c")
    assert cache_dir({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/pi-hermes-memory")
    assert cache_dir({"XDG_CACHE_HOME": "rel", "HOME": "/h"}) == Path("/h/.cache/pi-hermes-memory")
    assert cache_dir({"HOME": "/h"}) == Path("/h/.cache/pi-hermes-memory")
    assert cache_dir({}) is None
