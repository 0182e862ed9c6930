"""The knowledge base contract suites: `KnowledgeIndex` and `KnowledgeSource` (ADR 0048).

`KnowledgeIndexContract`: provide a ``knowledge_index`` fixture returning a fresh, empty index
(closed by the fixture). The tests speak only the port's values (`FileChunks`, `KnowledgeQuery`)
and check what `KnowledgeBase` relies on: incremental writes that replace a file's chunks whole,
size/mtime-only updates that keep them, removal, the two-tier ranking and its path filters, the
vector cache and the run lock.

`KnowledgeSourceContract`: provide a ``knowledge_source`` fixture, a ``knowledge_base`` fixture
(a folder path in the source's medium, empty) and two hooks that change the medium behind the
source, given "/"-joined absolute paths below ``knowledge_base``::

    class TestMySource(KnowledgeSourceContract):
        @pytest.fixture
        def knowledge_source(self, tmp_path):
            return MySource()

        @pytest.fixture
        def knowledge_base(self, tmp_path):
            return str(tmp_path)

        def write_document(self, source, path, data): ...   # creating parent folders
        def remove_document(self, source, path): ...
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pi_hermes_memory.domain.knowledge.chunks import Chunk
from pi_hermes_memory.ports.knowledge import FileChunks, KnowledgeQuery, SourceFile

__all__ = ["KnowledgeIndexContract", "KnowledgeSourceContract"]

ROOT = "/kb/docs"
OTHER_ROOT = "/kb/notes"

_HOSTILE = ('"', "NEAR(", "deploy AND", "*", "'; DROP TABLE files; --", "猫", "x" * 5_000)


def _file(rel: str, *, root: str = ROOT, size: int = 100, mtime_ns: int = 1) -> SourceFile:
    return SourceFile(
        path=f"{root}/{rel}", root=root, rel=rel, size=size, mtime_ns=mtime_ns, kind="markdown"
    )


def _chunks(*texts: str, heading: str | None = None) -> tuple[Chunk, ...]:
    return tuple(
        Chunk(start_line=2 * i + 1, end_line=2 * i + 2, heading=heading, text=t)
        for i, t in enumerate(texts)
    )


def _put(index: Any, file: SourceFile, *texts: str, sha: str = "a" * 64) -> int:
    return int(index.write([FileChunks(file=file, sha256=sha, chunks=_chunks(*texts))]))


def _paths(index: Any, text: str, **kw: Any) -> list[str]:
    return [h.path for h in index.search(KnowledgeQuery(text=text, **kw))]


class KnowledgeIndexContract:
    """Every `KnowledgeIndex` passes these tests (SQLite, or your own)."""

    def test_an_empty_index_knows_nothing(self, knowledge_index: Any) -> None:
        assert knowledge_index.known() == {}
        assert knowledge_index.roots() == frozenset()
        assert knowledge_index.search(KnowledgeQuery(text="deploy")) == []
        assert knowledge_index.missing_vectors("m", 10) == []
        assert knowledge_index.last_run() is None
        counts = knowledge_index.counts("m")
        assert {k: counts[k] for k in ("files", "chunks", "bytes", "vectors")} == dict.fromkeys(
            ("files", "chunks", "bytes", "vectors"), 0
        )

    def test_written_files_are_known_with_their_stamp_and_root(self, knowledge_index: Any) -> None:
        a, b = _file("guide.md", size=10, mtime_ns=5), _file("x.md", root=OTHER_ROOT, size=7)
        written = knowledge_index.write(
            [
                FileChunks(file=a, sha256="1" * 64, chunks=_chunks("install", "usage")),
                FileChunks(file=b, sha256="2" * 64, chunks=_chunks("other")),
            ]
        )
        assert written == 3
        known = knowledge_index.known()
        assert set(known) == {a.path, b.path}
        got = known[a.path]
        assert (got.size, got.mtime_ns, got.sha256, got.root, got.rel) == (
            10,
            5,
            "1" * 64,
            ROOT,
            "guide.md",
        )
        assert knowledge_index.roots() == frozenset({ROOT, OTHER_ROOT})
        counts = knowledge_index.counts(None)
        assert (counts["files"], counts["chunks"], counts["bytes"]) == (2, 3, 17)

    def test_a_rewrite_replaces_the_files_chunks_whole(self, knowledge_index: Any) -> None:
        guide = _file("guide.md")
        _put(knowledge_index, guide, "zebra crossing", "zebra stripes", sha="1" * 64)
        _put(knowledge_index, _file("keep.md"), "zebra herd")
        _put(knowledge_index, guide, "giraffe neck", sha="2" * 64)
        assert _paths(knowledge_index, "zebra", limit=10) == [f"{ROOT}/keep.md"]
        assert _paths(knowledge_index, "giraffe") == [guide.path]
        assert knowledge_index.known()[guide.path].sha256 == "2" * 64
        assert knowledge_index.counts(None)["chunks"] == 2

    def test_a_stamp_only_update_keeps_the_chunks(self, knowledge_index: Any) -> None:
        guide = _file("guide.md", size=10, mtime_ns=1)
        _put(knowledge_index, guide, "zebra crossing", sha="1" * 64)
        moved = SourceFile(
            path=guide.path, root="/kb", rel="docs/guide.md", size=10, mtime_ns=9, kind="markdown"
        )
        assert knowledge_index.write([FileChunks(file=moved, sha256="1" * 64, chunks=None)]) == 0
        got = knowledge_index.known()[guide.path]
        assert (got.mtime_ns, got.sha256, got.root, got.rel) == (
            9,
            "1" * 64,
            "/kb",
            "docs/guide.md",
        )
        [hit] = knowledge_index.search(KnowledgeQuery(text="zebra"))
        assert (hit.path, hit.rel, hit.root) == (guide.path, "docs/guide.md", "/kb")

    def test_remove_drops_files_and_counts_the_indexed(self, knowledge_index: Any) -> None:
        a, b = _file("a.md"), _file("b.md")
        _put(knowledge_index, a, "zebra one")
        _put(knowledge_index, b, "zebra two")
        assert knowledge_index.remove([a.path, f"{ROOT}/never.md"]) == 1
        assert set(knowledge_index.known()) == {b.path}
        assert _paths(knowledge_index, "zebra") == [b.path]
        assert knowledge_index.remove([]) == 0

    def test_hits_carry_the_chunk(self, knowledge_index: Any) -> None:
        _put(knowledge_index, _file("guide.md"), "intro text", "flock support here")
        [hit] = knowledge_index.search(KnowledgeQuery(text="flock"))
        assert (hit.path, hit.rel, hit.root) == (f"{ROOT}/guide.md", "guide.md", ROOT)
        assert (hit.start_line, hit.end_line, hit.text) == (3, 4, "flock support here")
        assert hit.score > 0

    def test_hits_carry_the_redaction_count(self, knowledge_index: Any) -> None:
        # the service redacts before it writes (ADR 0063); the index keeps what it was told
        chunk = Chunk(
            start_line=1,
            end_line=1,
            heading=None,
            text="token [REDACTED github-pat] here",
            redacted=2,
        )
        file = _file("notes.md")
        knowledge_index.write([FileChunks(file=file, sha256="b" * 64, chunks=(chunk,))])
        [hit] = knowledge_index.search(KnowledgeQuery(text="token"))
        assert hit.redacted == 2
        [by_id] = knowledge_index.hits([hit.chunk_id], KnowledgeQuery(text=""))
        assert by_id.redacted == 2
        assert knowledge_index.counts(None)["redacted"] == 2

    def test_chunks_with_every_term_rank_first(self, knowledge_index: Any) -> None:
        _put(knowledge_index, _file("one.md"), "deploy deploy deploy deploy")
        _put(knowledge_index, _file("both.md"), "deploy to staging")
        _put(knowledge_index, _file("none.md"), "nothing relevant")
        paths = _paths(knowledge_index, "deploy staging", limit=10)
        assert paths == [f"{ROOT}/both.md", f"{ROOT}/one.md"]
        assert _paths(knowledge_index, "deploy staging", limit=1) == [f"{ROOT}/both.md"]

    def test_scores_descend_within_a_tier(self, knowledge_index: Any) -> None:
        for i in range(6):
            _put(knowledge_index, _file(f"f{i}.md"), "zebra " * (i + 1) + "filler " * 20)
        hits = knowledge_index.search(KnowledgeQuery(text="zebra", limit=6))
        assert len(hits) == 6
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)

    def test_the_path_filter_applies_before_the_limit(self, knowledge_index: Any) -> None:
        for i in range(80):  # more matches outside the filter than any first pass ranks
            _put(knowledge_index, _file(f"a/{i:02}.md"), "zebra zebra zebra")
        _put(knowledge_index, _file("b/deep/late.md"), "zebra filler " + "words " * 50)
        _put(knowledge_index, _file("late.txt", root=OTHER_ROOT), "zebra " + "more " * 50)
        assert _paths(knowledge_index, "zebra", path="b/") == [f"{ROOT}/b/deep/late.md"]
        assert _paths(knowledge_index, "zebra", path="b/*.md") == [f"{ROOT}/b/deep/late.md"]
        assert _paths(knowledge_index, "zebra", path=f"{OTHER_ROOT}/") == [f"{OTHER_ROOT}/late.txt"]
        assert _paths(knowledge_index, "zebra", path="*.txt") == [f"{OTHER_ROOT}/late.txt"]
        assert _paths(knowledge_index, "zebra", roots=(OTHER_ROOT,)) == [f"{OTHER_ROOT}/late.txt"]
        assert _paths(knowledge_index, "zebra", path="nowhere/") == []

    def test_hits_by_id_apply_the_path_filter(self, knowledge_index: Any) -> None:
        _put(knowledge_index, _file("a.md"), "alpha")
        _put(knowledge_index, _file("b/b.md"), "beta")
        ids = {
            h.path: h.chunk_id
            for t in ("alpha", "beta")
            for h in knowledge_index.search(KnowledgeQuery(text=t))
        }
        every = knowledge_index.hits([*sorted(ids.values()), 10**9], KnowledgeQuery(text=""))
        assert {h.path for h in every} == set(ids)
        assert all(h.score == 0 for h in every)
        only = knowledge_index.hits(list(ids.values()), KnowledgeQuery(text="", path="b/"))
        assert [h.path for h in only] == [f"{ROOT}/b/b.md"]
        assert knowledge_index.hits([], KnowledgeQuery(text="")) == []

    def test_any_text_is_a_valid_query(self, knowledge_index: Any) -> None:
        _put(knowledge_index, _file("a.md"), "deploy staging 猫")
        for text in (*_HOSTILE, "", "   ", "the"):
            assert isinstance(knowledge_index.search(KnowledgeQuery(text=text)), list)

    def test_vectors_fill_the_missing_chunks(self, knowledge_index: Any) -> None:
        import numpy as np

        _put(knowledge_index, _file("a.md"), "one", "two", "three")
        missing = knowledge_index.missing_vectors("m", 2)
        assert len(missing) == 2 and {t for _, t in missing} <= {"one", "two", "three"}
        rest = knowledge_index.missing_vectors("m", 10)
        assert len(rest) == 3
        ids = [cid for cid, _ in rest]
        matrix = np.eye(3, dtype=np.float32)
        assert knowledge_index.put_vectors("m", ids, matrix) == 3
        assert knowledge_index.missing_vectors("m", 10) == []
        assert len(knowledge_index.missing_vectors("other", 10)) == 3
        got_ids, got = knowledge_index.vectors("m")
        assert sorted(got_ids) == sorted(ids)
        for row, cid in enumerate(got_ids):
            assert np.array_equal(got[row], matrix[ids.index(cid)])
        assert knowledge_index.counts("m")["vectors"] == 3
        assert knowledge_index.counts("other")["vectors"] == 0

    def test_a_rewritten_file_needs_new_vectors(self, knowledge_index: Any) -> None:
        import numpy as np

        a = _file("a.md")
        _put(knowledge_index, a, "one")
        ids = [cid for cid, _ in knowledge_index.missing_vectors("m", 10)]
        knowledge_index.put_vectors("m", ids, np.ones((1, 4), dtype=np.float32))
        _put(knowledge_index, a, "one changed", sha="b" * 64)
        assert [t for _, t in knowledge_index.missing_vectors("m", 10)] == ["one changed"]
        assert knowledge_index.vectors("m")[0] == ()
        knowledge_index.remove([a.path])
        assert knowledge_index.missing_vectors("m", 10) == []

    def test_the_last_run_is_kept(self, knowledge_index: Any) -> None:
        knowledge_index.record_run({"files_seen": 3, "roots": ["/kb"]})
        knowledge_index.record_run({"files_seen": 4, "roots": ["/kb"]})
        assert knowledge_index.last_run() == {"files_seen": 4, "roots": ["/kb"]}

    def test_one_run_at_a_time(self, knowledge_index: Any) -> None:
        with knowledge_index.run_lock() as taken:
            assert taken is True
            with knowledge_index.run_lock() as again:
                assert again is False
        with knowledge_index.run_lock() as after:
            assert after is True


class KnowledgeSourceContract:
    """Every `KnowledgeSource` passes these tests (the real folders, or your own)."""

    # -- the hooks a subclass provides ------------------------------------------------------

    def write_document(self, source: Any, path: str, data: bytes) -> None:
        """Create (or replace) the file at the absolute `path`, with its parent folders."""
        raise NotImplementedError("a KnowledgeSourceContract subclass defines write_document")

    def remove_document(self, source: Any, path: str) -> None:
        """Delete the file at `path`."""
        raise NotImplementedError("a KnowledgeSourceContract subclass defines remove_document")

    # -- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _scan(source: Any, roots: list[str]) -> tuple[dict[str, SourceFile], Counter[str]]:
        skipped: Counter[str] = Counter()
        found = list(source.scan(roots, skipped))
        paths = [f.path for f in found]
        assert len(paths) == len(set(paths)), f"scan() reports every file once; got {paths}"
        return {f.rel: f for f in found}, skipped

    # -- the contract -------------------------------------------------------------------------

    def test_scan_reports_documents_below_each_root(
        self, knowledge_source: Any, knowledge_base: str
    ) -> None:
        docs, notes = f"{knowledge_base}/docs", f"{knowledge_base}/notes"
        self.write_document(knowledge_source, f"{docs}/guide.md", b"# Guide\n")
        self.write_document(knowledge_source, f"{docs}/src/app.py", b"print(1)\n")
        self.write_document(knowledge_source, f"{notes}/todo.txt", b"rotate keys\n")
        found, _ = self._scan(knowledge_source, [docs, notes])
        assert set(found) == {"guide.md", "src/app.py", "todo.txt"}
        real_docs = knowledge_source.real_path(docs)
        app = found["src/app.py"]
        assert app.root == real_docs
        assert app.path == knowledge_source.real_path(f"{docs}/src/app.py")
        assert (app.size, app.kind) == (9, "code")
        assert found["guide.md"].kind == "markdown"
        assert found["todo.txt"].root == knowledge_source.real_path(notes)

    def test_a_root_given_twice_is_walked_once(
        self, knowledge_source: Any, knowledge_base: str
    ) -> None:
        docs = f"{knowledge_base}/docs"
        self.write_document(knowledge_source, f"{docs}/guide.md", b"# Guide\n")
        found, _ = self._scan(knowledge_source, [docs, docs + "/", docs])
        assert list(found) == ["guide.md"]

    def test_what_is_left_out_is_counted(self, knowledge_source: Any, knowledge_base: str) -> None:
        docs = f"{knowledge_base}/docs"
        self.write_document(knowledge_source, f"{docs}/keep.md", b"kept\n")
        self.write_document(knowledge_source, f"{docs}/.hidden.md", b"hidden\n")
        self.write_document(knowledge_source, f"{docs}/.git/config.md", b"hidden\n")
        self.write_document(knowledge_source, f"{docs}/photo.jpg", b"\xff\xd8")
        self.write_document(knowledge_source, f"{docs}/.gitignore", b"ignored.md\nbuild/\n")
        self.write_document(knowledge_source, f"{docs}/ignored.md", b"ignored\n")
        self.write_document(knowledge_source, f"{docs}/build/out.md", b"built\n")
        found, skipped = self._scan(knowledge_source, [docs, f"{knowledge_base}/absent"])
        assert list(found) == ["keep.md"]
        assert skipped["hidden"] == 3  # .hidden.md, .git and .gitignore itself
        assert skipped["unsupported"] == 1
        assert skipped["gitignored"] == 2
        assert skipped["missing_root"] == 1

    def test_read_returns_the_bytes_and_the_current_stamp(
        self, knowledge_source: Any, knowledge_base: str
    ) -> None:
        docs = f"{knowledge_base}/docs"
        self.write_document(knowledge_source, f"{docs}/guide.md", b"# Guide\n\nInstall it.\n")
        found, _ = self._scan(knowledge_source, [docs])
        file = found["guide.md"]
        got = knowledge_source.read(file, 1_000)
        assert got is not None
        current, data = got
        assert data == b"# Guide\n\nInstall it.\n"
        assert current == file

    def test_read_stops_after_one_byte_more_than_asked(
        self, knowledge_source: Any, knowledge_base: str
    ) -> None:
        docs = f"{knowledge_base}/docs"
        self.write_document(knowledge_source, f"{docs}/big.md", b"x" * 1_000)
        found, _ = self._scan(knowledge_source, [docs])
        got = knowledge_source.read(found["big.md"], 10)
        assert got is not None
        current, data = got
        assert data == b"x" * 11
        assert current is not None and current.size == 1_000

    def test_a_file_rewritten_since_the_walk_reads_with_its_new_stamp(
        self, knowledge_source: Any, knowledge_base: str
    ) -> None:
        docs = f"{knowledge_base}/docs"
        self.write_document(knowledge_source, f"{docs}/guide.md", b"short\n")
        found, _ = self._scan(knowledge_source, [docs])
        self.write_document(knowledge_source, f"{docs}/guide.md", b"a longer text now\n")
        got = knowledge_source.read(found["guide.md"], 1_000)
        assert got is not None
        current, data = got
        assert data == b"a longer text now\n"
        assert current is not None and current.size == len(data)
        assert (current.path, current.root, current.rel) == (
            found["guide.md"].path,
            found["guide.md"].root,
            "guide.md",
        )

    def test_a_removed_file_cannot_be_read(
        self, knowledge_source: Any, knowledge_base: str
    ) -> None:
        docs = f"{knowledge_base}/docs"
        self.write_document(knowledge_source, f"{docs}/gone.md", b"soon gone\n")
        found, _ = self._scan(knowledge_source, [docs])
        self.remove_document(knowledge_source, f"{docs}/gone.md")
        assert knowledge_source.read(found["gone.md"], 1_000) is None
        assert self._scan(knowledge_source, [docs])[0] == {}

    def test_is_dir_and_real_path(self, knowledge_source: Any, knowledge_base: str) -> None:
        docs = f"{knowledge_base}/docs"
        self.write_document(knowledge_source, f"{docs}/guide.md", b"# Guide\n")
        assert knowledge_source.is_dir(docs) is True
        assert knowledge_source.is_dir(f"{docs}/guide.md") is False
        assert knowledge_source.is_dir(f"{knowledge_base}/absent") is False
        real = knowledge_source.real_path(docs)
        assert knowledge_source.real_path(real) == real
        assert knowledge_source.real_path(docs + "/") == real
