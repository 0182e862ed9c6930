"""The knowledge base on real directory trees: the walk's rules, incremental runs, files that
change while read, interrupted runs, search (English, CJK, path filters) and the hybrid
ranking, over the real SQLite index (ADR 0048)."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from pi_hermes_memory.adapters.files.knowledge_folders import KnowledgeFiles
from pi_hermes_memory.adapters.sqlite.knowledge import SqliteKnowledgeIndex
from pi_hermes_memory.errors import InvalidArgument, KnowledgeBusy, KnowledgeNotConfigured
from pi_hermes_memory.knowledge.service import BATCH_FILES, KnowledgeBase
from pi_hermes_memory.ports.knowledge import SourceFile
from pi_hermes_memory.search.embedding import EmbeddingService
from pi_hermes_memory.search.hybrid import HybridSettings

from tests.support.embedders import BagEmbedder


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _kb(tmp_path: Path, roots: Sequence[Path], **kw: object) -> KnowledgeBase:
    source = kw.pop("source", None) or KnowledgeFiles(exclude=[tmp_path / "state"])
    return KnowledgeBase(
        roots=[str(r) for r in roots],
        source=source,  # type: ignore[arg-type]
        index=SqliteKnowledgeIndex(tmp_path / "state" / "knowledge.db"),
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    _write(root / "guide.md", "# Guide\n\nInstall with flock support.\n\n## Usage\n\nRun it.\n")
    _write(root / "notes.txt", "plain text about rotating keys\n")
    _write(root / "src" / "app.py", "def handler():\n    return 'webhook'\n")
    return root


def _paths(kb: KnowledgeBase, query: str, **kw: object) -> list[str]:
    return [h.rel for h in kb.search(query, **kw)]  # type: ignore[arg-type]


def test_every_walk_rule_on_a_real_tree(tmp_path: Path, docs: Path) -> None:
    outside = _write(tmp_path / "outside" / "secret.md", "outside secret zebra\n")
    _write(docs / ".hidden.md", "hidden zebra\n")
    _write(docs / ".git" / "config.md", "hidden dir zebra\n")
    _write(docs / "image.md", b"PNG\x00\x01binary zebra")
    _write(docs / "latin1.txt", "caf\xe9 zebra".encode("latin-1"))
    _write(docs / "huge.md", "zebra " * 200_000)
    _write(docs / ".gitignore", "ignored.md\nbuild/\n!keep.md\n")
    _write(docs / "ignored.md", "ignored zebra\n")
    _write(docs / "build" / "out.md", "built zebra\n")
    _write(docs / "sub" / ".gitignore", "*.txt\n")
    _write(docs / "sub" / "skip.txt", "nested ignored zebra\n")
    _write(docs / "sub" / "keep.md", "kept zebra\n")
    _write(docs / "photo.jpg", "zebra\n")
    os.symlink(outside, docs / "link-out.md")
    os.symlink(outside.parent, docs / "dir-out")
    os.symlink(docs, docs / "sub" / "loop")  # a loop back to the root
    os.symlink(docs / "guide.md", docs / "alias.md")  # a second name inside the root
    os.mkfifo(docs / "pipe.md")
    kb = _kb(tmp_path, [docs], max_file_bytes=1_000_000)
    report = kb.index()
    assert sorted(h.rel for h in kb.search("zebra", limit=20)) == ["sub/keep.md"]
    assert report.skipped == {
        "already_seen": 2,  # the loop and the alias
        "binary": 2,
        "gitignored": 3,
        "hidden": 4,  # .hidden.md, .git, and the two .gitignore files
        "special": 1,
        "symlink_outside": 2,
        "too_large": 1,
        "unsupported": 1,
    }
    assert report.files_new == 4  # guide, notes, app.py, sub/keep.md
    stats = kb.stats()
    assert (stats.files, stats.missing_roots) == (4, ())
    assert stats.last_run is not None and stats.last_run["files_new"] == 4


def test_unchanged_files_are_not_read_and_changes_renames_deletes_are_followed(
    tmp_path: Path, docs: Path
) -> None:
    kb = _kb(tmp_path, [docs])
    first = kb.index()
    assert (first.files_new, first.files_unchanged) == (3, 0)
    again = kb.index()
    assert (again.files_unchanged, again.bytes_read, again.chunks_written) == (3, 0, 0)
    # a touched file with the same content is read but not re-chunked
    os.utime(docs / "notes.txt", ns=(1, 1))
    touched = kb.index()
    assert (touched.files_unchanged, touched.chunks_written) == (3, 0)
    assert touched.bytes_read > 0
    _write(docs / "notes.txt", "plain text about rotating certificates\n")
    (docs / "guide.md").rename(docs / "manual.md")
    (docs / "src" / "app.py").unlink()
    changed = kb.index()
    assert (changed.files_new, changed.files_changed, changed.files_removed) == (1, 1, 2)
    assert _paths(kb, "certificates") == ["notes.txt"]
    assert _paths(kb, "keys") == []
    assert _paths(kb, "flock") == ["manual.md"]
    assert _paths(kb, "webhook") == []
    assert kb.stats().files == 2
    # a file that becomes excluded loses its chunks too
    _write(docs / ".gitignore", "manual.md\n")
    assert kb.index().files_removed == 1
    assert _paths(kb, "flock") == []


def test_search_cjk_english_and_path_filters(tmp_path: Path, docs: Path) -> None:
    _write(docs / "zh" / "说明.md", "# 部署\n\n用pytest运行测试，知识库检索很快。\n")
    _write(docs / "other" / "guide.md", "# Other\n\nflock elsewhere\n")
    kb = _kb(tmp_path, [docs])
    kb.index()
    [hit] = kb.search("知识库")
    assert (hit.rel, hit.heading, hit.start_line, hit.end_line) == ("zh/说明.md", "部署", 1, 3)
    assert "知识库" in hit.snippet and hit.score > 0
    assert _paths(kb, "pytest") == ["zh/说明.md"]
    assert sorted(_paths(kb, "flock")) == ["guide.md", "other/guide.md"]
    assert _paths(kb, "flock", path="other/") == ["other/guide.md"]
    assert _paths(kb, "flock", path=str(docs / "other")) == ["other/guide.md"]
    assert _paths(kb, "flock", path="*/guide.md") == ["other/guide.md"]
    assert sorted(_paths(kb, "flock", path="*guide.md")) == ["guide.md", "other/guide.md"]
    assert _paths(kb, "flock", path="nowhere/") == []
    assert _paths(kb, "flock", path=str(docs / "*" / "guide.md")) == ["other/guide.md"]
    # every word first, then any word
    hits = kb.search("elsewhere support flock")
    assert [(h.rel, h.heading) for h in hits] == [
        ("other/guide.md", "Other"),
        ("guide.md", "Guide"),
    ]
    assert _paths(kb, "flock support") == ["guide.md", "other/guide.md"]
    with pytest.raises(InvalidArgument, match="nothing to search"):
        kb.search("?!")
    with pytest.raises(InvalidArgument, match="limit"):
        kb.search("flock", limit=0)


def test_no_folders_is_a_clear_error(tmp_path: Path) -> None:
    kb = _kb(tmp_path, [])
    for call in (kb.index, kb.stats, lambda: kb.search("x")):
        with pytest.raises(KnowledgeNotConfigured, match=r"knowledge\.paths"):
            call()


def test_a_missing_folder_is_reported(tmp_path: Path, docs: Path) -> None:
    kb = _kb(tmp_path, [docs, tmp_path / "gone"])
    assert kb.index().skipped == {"missing_root": 1}
    assert kb.stats().missing_roots == (str(tmp_path / "gone"),)


class _Changing(KnowledgeFiles):
    """Appends to the file between the read's two stats, `times` times: a real change on disk
    while the indexer reads it."""

    def __init__(self, times: int, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.times = times

    def _read_bytes(self, path: str, limit: int) -> bytes:
        data = super()._read_bytes(path, limit)
        if self.times > 0 and path.endswith("notes.txt"):
            self.times -= 1
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("appended while read\n")
        return data


def test_a_file_changing_while_read_is_reread_or_left_for_the_next_run(
    tmp_path: Path, docs: Path
) -> None:
    kb = _kb(tmp_path, [docs], source=_Changing(1, exclude=[tmp_path / "state"]))
    kb.index()  # changed once: read again, the second read is whole
    [hit] = kb.search("appended")
    assert hit.text.count("appended while read") == 1
    _write(docs / "notes.txt", "second version about rotating tokens\n")
    kb = _kb(tmp_path, [docs], source=_Changing(5, exclude=[tmp_path / "state"]))
    report = kb.index()
    assert report.files_deferred == 1 and report.files_removed == 0
    # the old chunks stay (never half a file); the next quiet run takes the new content
    assert _paths(kb, "appended") == ["notes.txt"] and _paths(kb, "tokens") == []
    kb = _kb(tmp_path, [docs])
    assert kb.index().files_changed == 1
    assert _paths(kb, "tokens") == ["notes.txt"]


class _Interrupted(KnowledgeFiles):
    def __init__(self, after: int, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.after = after

    def scan(self, roots: Sequence[str], skipped: Counter[str]) -> Iterator[SourceFile]:
        for n, file in enumerate(super().scan(roots, skipped)):
            if n == self.after:
                raise KeyboardInterrupt
            yield file


def test_an_interrupted_run_keeps_its_batches_and_the_next_run_resumes(tmp_path: Path) -> None:
    root = tmp_path / "many"
    count = BATCH_FILES * 2 + 10
    for i in range(count):
        _write(root / f"f{i:04d}.md", f"# File {i}\n\nmarker{i} body text\n")
    kb = _kb(tmp_path, [root], source=_Interrupted(BATCH_FILES * 2 + 5, exclude=[]))
    with pytest.raises(KeyboardInterrupt):
        kb.index()
    kb.close()
    kb = _kb(tmp_path, [root])
    assert kb.stats().files == BATCH_FILES * 2  # two whole batches committed
    report = kb.index()
    assert (report.files_unchanged, report.files_new) == (BATCH_FILES * 2, 10)
    assert kb.stats().files == count and _paths(kb, f"marker{count - 1}") == [
        f"f{count - 1:04d}.md"
    ]


def test_one_indexer_at_a_time(tmp_path: Path, docs: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    class Slow(KnowledgeFiles):
        def scan(self, roots: Sequence[str], skipped: Counter[str]) -> Iterator[SourceFile]:
            entered.set()
            release.wait(10)
            yield from super().scan(roots, skipped)

    slow = _kb(tmp_path, [docs], source=Slow(exclude=[]))
    worker = threading.Thread(target=slow.index)
    worker.start()
    try:
        assert entered.wait(10)
        with pytest.raises(KnowledgeBusy, match="another process"):
            _kb(tmp_path, [docs]).index()
    finally:
        release.set()
        worker.join(10)
    assert _kb(tmp_path, [docs]).index().files_unchanged == 3


def test_the_state_folder_inside_a_root_is_never_walked(tmp_path: Path) -> None:
    root = tmp_path / "home"
    _write(root / "doc.md", "visible words\n")
    state = root / "memory"
    _write(state / "MEMORY.md", "remembered words\n")
    kb = KnowledgeBase(
        roots=[str(root)],
        source=KnowledgeFiles(exclude=[state]),
        index=SqliteKnowledgeIndex(state / "knowledge.db"),
    )
    report = kb.index()
    assert report.skipped == {"state_dir": 1} and report.files_new == 1
    assert _paths(kb, "remembered") == []


def test_hybrid_search_fuses_the_cosine_ranking(tmp_path: Path, docs: Path) -> None:
    embedder = BagEmbedder()
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
    from pi_hermes_memory.adapters.sqlite.vectors import SqliteVectorStore

    storage = SqliteStorage(tmp_path / "mem" / "sessions.db")
    embeddings = EmbeddingService(embedder=embedder, store=SqliteVectorStore(storage))
    try:
        kb = _kb(tmp_path, [docs], embeddings=embeddings, hybrid=HybridSettings())
        report = kb.index()
        assert report.vectors_written == 4 and kb.stats().vectors == 4  # guide.md: 2 chunks
        assert {kind for kind, _ in embedder.calls} == {"passage"}
        assert kb.index().vectors_written == 0  # vectors are kept
        hits = kb.search("flock", limit=10)
        assert hits[0].rel == "guide.md"
        # the cosine ranking adds chunks no word matched, the path filter still applies
        assert {h.rel for h in hits} == {"guide.md", "notes.txt", "src/app.py"}
        assert _paths(kb, "flock", path="src/", limit=10) == ["src/app.py"]
        # a failing provider degrades to the FTS ranking
        embedder.fail = True
        assert [h.rel for h in kb.search("flock")] == ["guide.md"]
        embedder.fail = False
        # qa15: the cosine ranking never brings back a folder no longer configured
        kb.close()
        narrower = _kb(tmp_path, [docs / "src"], embeddings=embeddings, hybrid=HybridSettings())
        found = narrower.search("flock", limit=10)
        assert {h.path for h in found} == {str((docs / "src" / "app.py").resolve())}
    finally:
        storage.close()


_CHILD = """
import sys, time
from pathlib import Path
from pi_hermes_memory.adapters.files.knowledge_folders import KnowledgeFiles
from pi_hermes_memory.adapters.sqlite.knowledge import SqliteKnowledgeIndex
from pi_hermes_memory.knowledge.service import KnowledgeBase

class Slow(KnowledgeFiles):
    def _read_bytes(self, path, limit):
        time.sleep(0.005)
        return super()._read_bytes(path, limit)

index = SqliteKnowledgeIndex(Path(sys.argv[2]))
kb = KnowledgeBase(roots=[sys.argv[1]], source=Slow(), index=index)
kb.index(lambda p: print(p.files_indexed, flush=True))
"""


def test_a_killed_indexer_leaves_whole_batches_and_the_next_run_resumes(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    root = tmp_path / "many"
    count = BATCH_FILES * 6
    for i in range(count):
        _write(root / f"d{i % 7}" / f"f{i:04d}.md", f"# File {i}\n\nkillmarker{i} text\n")
    db = tmp_path / "state" / "knowledge.db"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), str(db)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for line in child.stdout:  # kill it inside the third batch
        if int(line) >= BATCH_FILES * 2 + BATCH_FILES // 2:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    kb = _kb(tmp_path, [root])
    done = kb.stats().files
    # whole batches only (the third one unless the kill came late)
    assert done % BATCH_FILES == 0 and BATCH_FILES * 2 <= done < count
    report = kb.index()
    assert (report.files_unchanged, report.files_new) == (done, count - done)
    assert kb.stats().files == count
    assert _paths(kb, f"killmarker{count - 1}") == [f"d{(count - 1) % 7}/f{count - 1:04d}.md"]


def test_a_missing_folder_keeps_its_chunks_until_it_is_no_longer_configured(
    tmp_path: Path, docs: Path
) -> None:
    other = _write(tmp_path / "other" / "o.md", "other folder words\n").parent
    _kb(tmp_path, [docs, other]).index()
    docs.rename(tmp_path / "unmounted")
    kb = _kb(tmp_path, [docs, other])
    report = kb.index()
    assert (report.skipped, report.files_removed) == ({"missing_root": 1}, 0)
    assert kb.stats().missing_roots == (str(docs),) and _paths(kb, "flock") == ["guide.md"]
    (tmp_path / "unmounted").rename(docs)
    assert _kb(tmp_path, [docs, other]).index().files_unchanged == 4
    kb = _kb(tmp_path, [other])  # the folder is no longer configured: its files go
    assert kb.index().files_removed == 3 and _paths(kb, "flock") == []


def test_symlinks_inside_the_folders_are_second_names_never_a_way_around_the_rules(
    tmp_path: Path, docs: Path
) -> None:
    # qa15: a symlink sorting before its target was indexed under the link's name (a path
    # filter on the real folder missed it), and a link to a hidden or ignored folder exposed it
    _write(docs / ".gitignore", "private/\n")
    _write(docs / "private" / "p.md", "private gnu\n")
    _write(docs / ".secrets" / "s.md", "hidden gnu\n")
    _write(docs / "manual" / "m.md", "manual gnu\n")
    os.symlink(docs / "private", docs / "notes")
    os.symlink(docs / ".secrets", docs / "s")
    os.symlink(docs / ".secrets" / "s.md", docs / "visible.md")
    os.symlink(docs / "manual", docs / "a-manual")  # sorts before its target
    os.symlink(docs / "guide.md", docs / "alias.md")  # likewise
    kb = _kb(tmp_path, [docs])
    report = kb.index()
    hits = kb.search("gnu", limit=20)
    assert [(h.rel, h.path) for h in hits] == [
        ("manual/m.md", str((docs / "manual" / "m.md").resolve()))
    ]
    assert _paths(kb, "gnu", path="manual/") == ["manual/m.md"]
    assert _paths(kb, "flock") == ["guide.md"]
    assert _paths(kb, "flock", path="guide*") == ["guide.md"]
    assert report.skipped["already_seen"] == 5
    assert report.files_new == 4  # guide, notes.txt, app.py, manual/m.md


def test_a_file_under_another_configured_folder_gets_its_new_relative_path(
    tmp_path: Path, docs: Path
) -> None:
    # qa15: an unchanged file kept the root and relative path of the folder it was first
    # indexed under, so path filters and `root` answered for a folder no longer configured
    kb = _kb(tmp_path, [docs])
    kb.index()
    assert _paths(kb, "webhook", path="src/") == ["src/app.py"]
    kb.close()
    narrower = _kb(tmp_path, [docs / "src"])
    report = narrower.index()
    assert (report.files_unchanged, report.bytes_read, report.files_removed) == (1, 0, 2)
    assert _paths(narrower, "webhook", path="app*") == ["app.py"]
    (hit,) = narrower.search("webhook")
    assert (hit.root, hit.rel) == (str((docs / "src").resolve()), "app.py")


def test_an_absolute_path_filter_may_name_the_folder_as_configured(
    tmp_path: Path, docs: Path
) -> None:
    # qa15: with the folder configured through a symlink, `--path <that folder>/src` found
    # nothing: the index keeps real paths
    link = tmp_path / "link-to-docs"
    os.symlink(docs, link)
    kb = _kb(tmp_path, [link])
    kb.index()
    assert _paths(kb, "webhook", path=f"{link}/src") == ["src/app.py"]
    assert _paths(kb, "webhook", path=f"{link}/src/*.py") == ["src/app.py"]
    assert _paths(kb, "webhook", path=f"{docs.resolve()}/src") == ["src/app.py"]
    assert _paths(kb, "webhook", path=f"{link}/guide") == []
    assert _paths(kb, "webhook", path="./src/") == ["src/app.py"]


def test_a_fifo_never_hangs_the_run(tmp_path: Path, docs: Path) -> None:
    # qa15: a `.gitignore` made with mkfifo blocked the indexer forever (holding its lock),
    # and so would a document swapped for a FIFO between the walk and the read
    os.mkfifo(docs / "src" / ".gitignore")
    swapped = _write(docs / "swapped.md", "soon a pipe\n")

    class Swapping(KnowledgeFiles):
        def scan(self, roots: Sequence[str], skipped: Counter[str]) -> Iterator[SourceFile]:
            for found in super().scan(roots, skipped):
                if found.rel == "swapped.md":
                    swapped.unlink()
                    os.mkfifo(swapped)
                yield found

    kb = _kb(tmp_path, [docs], source=Swapping(exclude=[tmp_path / "state"]))
    done = threading.Event()
    outcome: list[object] = []

    def run() -> None:
        outcome.append(kb.index())
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(30), "the indexer hung on a FIFO"
    (report,) = outcome
    assert report.files_new == 3  # type: ignore[attr-defined]
    assert report.skipped["unreadable"] == 1  # type: ignore[attr-defined]
    assert _paths(kb, "webhook") == ["src/app.py"]


def test_a_folder_no_longer_configured_is_not_searched_before_the_next_run(
    tmp_path: Path, docs: Path
) -> None:
    # qa15: until the next `knowledge index`, search still answered from a folder the user had
    # removed from knowledge.paths
    other = _write(tmp_path / "other" / "o.md", "other folder flock words\n").parent
    kb = _kb(tmp_path, [docs, other])
    kb.index()
    assert sorted(_paths(kb, "flock")) == ["guide.md", "o.md"]
    kb.close()
    narrower = _kb(tmp_path, [other])
    assert _paths(narrower, "flock") == ["o.md"]
    assert _paths(narrower, "flock", path="*.md") == ["o.md"]
    assert _paths(narrower, "webhook") == []
    assert narrower.index().files_removed == 3
    assert _paths(narrower, "flock") == ["o.md"]
