"""Incremental session indexing on the in-memory source and index (`SessionIndexer`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.inmemory.history import InMemorySessionFiles, InMemorySessionIndex
from pi_hermes_memory.domain.history.transcripts import MAX_LINE_BYTES
from pi_hermes_memory.history.indexer import IndexProgress, SessionIndexer

from tests.support.fakes import StepClock

T0 = datetime(2026, 7, 1, 9, tzinfo=UTC)


def header(session_id: str = "S1", cwd: str = "/home/me/web") -> bytes:
    entry = {"type": "session", "version": 3, "id": session_id, "cwd": cwd}
    entry["timestamp"] = "2026-07-01T09:00:00Z"
    return (json.dumps(entry) + "\n").encode()


def turn(text: str, role: str = "user", minute: int = 0) -> bytes:
    at = (T0 + timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    entry = {"type": "message", "id": f"m{minute}", "timestamp": at}
    entry["message"] = {"role": role, "content": content}
    return (json.dumps(entry, ensure_ascii=False) + "\n").encode()


def tool_result(output: str) -> bytes:
    entry = {"type": "message", "id": "r", "timestamp": "2026-07-01T09:00:00Z"}
    entry["message"] = {"role": "toolResult", "content": [{"type": "text", "text": output}]}
    return (json.dumps(entry, separators=(",", ":")) + "\n").encode()


class Recording(InMemorySessionFiles):
    """Remembers every read (path, offset, length)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int, int]] = []

    def read(self, path: str, offset: int, length: int) -> bytes:
        self.calls.append((path, offset, length))
        return super().read(path, offset, length)


@pytest.fixture
def files() -> Recording:
    return Recording()


@pytest.fixture
def index() -> InMemorySessionIndex:
    return InMemorySessionIndex()


def indexer(files: Any, index: Any, **kw: Any) -> SessionIndexer:
    return SessionIndexer(source=files, index=index, clock=StepClock(T0), **kw)


def texts(index: InMemorySessionIndex) -> list[tuple[object, ...]]:
    return [(path, line, m.text) for path, _, _, _, line, _, m in index.dump()]  # type: ignore[attr-defined]


# --- incremental cases ----------------------------------------------------------------------


def test_a_new_file_is_indexed_and_an_unchanged_one_not_read(files: Recording, index: Any) -> None:
    files.write(
        "/s/a.jsonl",
        header() + turn("deploy the api") + tool_result("ok") + turn("done", "assistant", 1),
    )
    first = indexer(files, index).index_all()
    assert (first.files_seen, first.files_new, first.messages, first.lines) == (1, 1, 2, 4)
    assert first.skipped == {"tool-result": 1} and first.problems == 0
    assert first.bytes_read == len(files.read("/s/a.jsonl", 0, 10**9))
    assert texts(index) == [("/s/a.jsonl", 2, "deploy the api"), ("/s/a.jsonl", 4, "done")]
    files.calls.clear()
    again = indexer(files, index).index_all()
    assert (again.files_unchanged, again.messages, again.bytes_read) == (1, 0, 0)
    assert files.calls == []


def test_a_grown_file_is_read_from_where_the_last_run_stopped(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header() + turn("first"))
    indexer(files, index).index_all()
    size = index.progress_of("/s/a.jsonl").offset
    files.append("/s/a.jsonl", turn("second", minute=1))
    files.calls.clear()
    report = indexer(files, index).index_all()
    assert (report.files_appended, report.messages, report.lines) == (1, 1, 1)
    reads = [c for c in files.calls if c[2] > 4096 or c[1] >= size]
    assert reads and all(offset >= size for _, offset, _ in reads)
    assert texts(index) == [("/s/a.jsonl", 2, "first"), ("/s/a.jsonl", 3, "second")]


def test_a_partial_last_line_waits_for_its_end(files: Recording, index: Any) -> None:
    whole = header() + turn("complete") + turn("being written", minute=1)
    files.write("/s/a.jsonl", whole[:-20])
    report = indexer(files, index).index_all()
    assert report.messages == 1 and report.problems == 0 and report.skipped == {}
    assert indexer(files, index).index_all().files_unchanged == 1
    files.append("/s/a.jsonl", whole[-20:])
    report = indexer(files, index).index_all()
    assert (report.files_appended, report.messages, report.problems) == (1, 1, 0)
    assert texts(index)[-1] == ("/s/a.jsonl", 3, "being written")


def test_a_rewritten_file_is_indexed_again(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header() + turn("old text about graphql") + turn("more"))
    indexer(files, index).index_all()
    files.write("/s/a.jsonl", header() + turn("new text about grpc"))  # new inode
    report = indexer(files, index).index_all()
    assert (report.files_reindexed, report.messages) == (1, 1)
    assert texts(index) == [("/s/a.jsonl", 2, "new text about grpc")]


def test_a_shorter_file_is_indexed_again(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header() + turn("one") + turn("two"))
    indexer(files, index).index_all()
    files.overwrite("/s/a.jsonl", header() + turn("uno"))  # same inode, truncated
    assert indexer(files, index).index_all().files_reindexed == 1
    assert texts(index) == [("/s/a.jsonl", 2, "uno")]


def test_a_file_rewritten_in_place_is_caught_by_its_fingerprint(
    files: Recording, index: Any
) -> None:
    files.write("/s/a.jsonl", header() + turn("alpha beta"))
    indexer(files, index).index_all()
    files.overwrite("/s/a.jsonl", header() + turn("gamma beta"))  # same size and inode
    report = indexer(files, index).index_all()
    assert report.files_reindexed == 1
    assert texts(index) == [("/s/a.jsonl", 2, "gamma beta")]
    files.overwrite("/s/a.jsonl", header() + turn("gamma beta") + turn("appended"))
    files.touch("/s/a.jsonl")
    report = indexer(files, index).index_all()
    assert (report.files_appended, report.files_reindexed, report.messages) == (1, 0, 1)


def test_a_touched_file_is_checked_but_not_read_again(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header() + turn("stable"))
    indexer(files, index).index_all()
    files.touch("/s/a.jsonl")
    report = indexer(files, index).index_all()
    assert (report.files_appended, report.messages, report.bytes_read) == (1, 0, 0)
    assert indexer(files, index).index_all().files_unchanged == 1


def test_deleted_files_are_forgotten(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header() + turn("kept"))
    files.write("/s/b.jsonl", header("S2") + turn("gone"))
    indexer(files, index).index_all()
    files.delete("/s/b.jsonl")
    report = indexer(files, index).index_all()
    assert report.files_removed == 1 and report.files_seen == 1
    assert set(index.files()) == {"/s/a.jsonl"}
    assert [t[2] for t in texts(index)] == ["kept"]


def test_corrupt_lines_are_counted_and_good_lines_kept(files: Recording, index: Any) -> None:
    files.write(
        "/s/a.jsonl",
        header()
        + b"{not json\n"
        + turn("good one")
        + b"\xff\xfe\n"
        + b"[1,2]\n"
        + header("again")
        + b"\n"
        + turn("good two", minute=1),
    )
    report = indexer(files, index).index_all()
    assert report.messages == 2 and report.lines == 8
    assert report.skipped == {
        "malformed-json": 1,
        "not-utf8": 1,
        "not-an-object": 1,
        "extra-header": 1,
        "empty": 1,
    }
    assert report.problems == 4
    assert texts(index) == [("/s/a.jsonl", 3, "good one"), ("/s/a.jsonl", 8, "good two")]


def test_a_file_without_header_is_indexed_under_its_file_name(files: Recording, index: Any) -> None:
    files.write("/s/--w--/2026-01-01T00-00-00-000Z_abc.jsonl", turn("no header here"))
    report = indexer(files, index).index_all()
    assert report.files_without_header == 1 and report.messages == 1
    ((_, session_id, cwd, project, *_),) = index.dump()
    assert (session_id, cwd, project) == ("abc", None, None)


def test_lines_longer_than_the_limit_are_skipped(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header() + turn("x" * MAX_LINE_BYTES) + turn("after", minute=1))
    report = indexer(files, index).index_all()
    assert report.skipped == {"too-long": 1} and report.messages == 1
    assert texts(index) == [("/s/a.jsonl", 3, "after")]


def test_lines_longer_than_a_window_are_skipped_without_reading_them_whole(
    files: Recording, index: Any
) -> None:
    files.write("/s/a.jsonl", header() + turn("y" * 50_000) + turn("after", minute=1))
    report = indexer(files, index, window_bytes=8192).index_all()
    assert report.skipped == {"too-long": 1} and report.messages == 1
    assert max(length for *_, length in files.calls) <= 8192
    assert texts(index) == [("/s/a.jsonl", 3, "after")]
    files.append("/s/a.jsonl", turn("z" * 30_000))  # an unfinished long line waits
    files.overwrite("/s/a.jsonl", files.read("/s/a.jsonl", 0, 10**9)[:-1])
    assert indexer(files, index, window_bytes=8192).index_all().lines == 0


def test_small_windows_commit_as_they_go(files: Recording, index: Any) -> None:
    body = header() + b"".join(turn(f"turn number {i}", minute=i) for i in range(200))
    files.write("/s/a.jsonl", body)
    seen: list[IndexProgress] = []
    report = indexer(files, index, window_bytes=4097 + 4096).index_all(seen.append)
    assert report.messages == 200 and report.bytes_read == len(body)
    assert len(seen) > 3 and seen[-1].files_done == 1 and seen[-1].messages == 200
    assert [t[1] for t in texts(index)] == list(range(2, 202))


def test_progress_reports_every_file(files: Recording, index: Any) -> None:
    for i in range(3):
        files.write(f"/s/{i}.jsonl", header(f"S{i}") + turn("hello"))
    seen: list[IndexProgress] = []
    indexer(files, index).index_all(seen.append)
    assert [(p.files_done, p.files_total) for p in seen] == [(1, 3), (2, 3), (3, 3)]
    assert seen[-1].messages == 3 and seen[-1].mb_per_second >= 0


def test_unreadable_files_are_reported_and_retried(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header() + turn("hello"))

    class Broken(Recording):
        def read(self, path: str, offset: int, length: int) -> bytes:
            raise PermissionError(13, "Permission denied", path)

    broken = Broken()
    broken.write("/s/a.jsonl", header() + turn("hello"))
    report = indexer(broken, index).index_all()
    assert report.files_failed == 1 and report.failures == ("/s/a.jsonl: Permission denied",)
    assert index.files() == {}
    assert indexer(files, index).index_all().messages == 1


def test_project_map_and_reprojection(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header(cwd="/home/me/work/api") + turn("hello"))
    indexer(files, index).index_all()
    assert index.dump()[0][3] == "api"
    indexer(files, index, project_map={"/home/me/work": "work"}).index_all()
    assert index.dump()[0][3] == "work"


# --- live indexing --------------------------------------------------------------------------


def test_index_file_reads_one_file(files: Recording, index: Any) -> None:
    files.write("/s/a.jsonl", header() + turn("mine"))
    files.write("/s/b.jsonl", header("S2") + turn("not read"))
    live = indexer(files, index)
    report = live.index_file("/s/a.jsonl")
    assert (report.files_seen, report.messages) == (1, 1)
    assert set(index.files()) == {"/s/a.jsonl"}
    files.calls.clear()
    assert live.index_file("/s/a.jsonl").files_unchanged == 1 and files.calls == []
    files.append("/s/a.jsonl", turn("next", minute=1))
    assert live.index_file("/s/a.jsonl").messages == 1
    files.delete("/s/a.jsonl")
    assert live.index_file("/s/a.jsonl").files_removed == 1


# --- recorded turns -------------------------------------------------------------------------


def test_record_appends_turns(index: Any, files: Recording) -> None:
    rec = indexer(files, index)
    one = rec.record("chat-1", "user", "What is our deploy command?", cwd="/home/me/web")
    two = rec.record("chat-1", "assistant", "make deploy", at=T0)
    assert (one.turn, one.project, two.turn) == (1, "web", 2)
    dump = index.dump()
    assert [(d[0], d[1], d[4], d[6].role) for d in dump] == [
        (None, "chat-1", 1, "user"),
        (None, "chat-1", 2, "assistant"),
    ]
    assert dump[0][6].at == T0 and dump[1][6].at == T0
    assert rec.record("chat-2", "system", "hi", project="explicit").project == "explicit"


@pytest.mark.parametrize(
    ("args", "kw", "problem"),
    [
        (("", "user", "hi"), {}, "session_id"),
        (("x" * 201, "user", "hi"), {}, "session_id"),
        (("s", "toolResult", "hi"), {}, "role"),
        (("s", "user", "   "), {}, "text"),
        (("s", "user", "hi"), {"at": datetime(2026, 1, 1)}, "timezone"),
        (("s", "user", "hi"), {"project": "a/b"}, "project"),
    ],
)
def test_record_rejects_invalid_arguments(
    index: Any, files: Recording, args: tuple[str, str, str], kw: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        indexer(files, index).record(*args, **kw)
    assert index.counts().messages == 0


# --- the invariant --------------------------------------------------------------------------

_LINES = st.one_of(
    st.builds(turn, st.text(min_size=1, max_size=300), st.sampled_from(["user", "assistant"])),
    st.builds(tool_result, st.text(max_size=600)),
    st.sampled_from([b"{broken\n", b"\n", b"[1]\n", b"\xff\n", header("late")]),
)


@given(
    lines=st.lists(_LINES, max_size=25),
    cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=8),
    headed=st.booleans(),
)
def test_appending_in_any_pieces_indexes_like_the_whole_file(
    lines: list[bytes], cuts: list[int], headed: bool
) -> None:
    body = (header() if headed else b"") + b"".join(lines)
    whole_files, whole = InMemorySessionFiles(), InMemorySessionIndex()
    whole_files.write("/s/a.jsonl", body)
    expected = indexer(whole_files, whole).index_all()

    files, index = InMemorySessionFiles(), InMemorySessionIndex()
    files.write("/s/a.jsonl", b"")
    done, messages, problems = 0, 0, 0
    for cut in [*sorted(c % (len(body) + 1) for c in cuts), len(body)]:
        if cut > done:
            files.append("/s/a.jsonl", body[done:cut])
            done = cut
        report = indexer(files, index, window_bytes=4097).index_all()
        messages += report.messages
        problems += report.problems
    assert index.dump() == whole.dump()
    assert (messages, problems) == (expected.messages, expected.problems)
    ours, theirs = index.progress_of("/s/a.jsonl"), whole.progress_of("/s/a.jsonl")
    assert (ours.offset, ours.lines, ours.head_sha, ours.tail_sha, ours.headed) == (
        theirs.offset,
        theirs.lines,
        theirs.head_sha,
        theirs.tail_sha,
        theirs.headed,
    )


@pytest.mark.parametrize("seed", range(5))
def test_appending_a_large_file_in_random_pieces_indexes_like_the_whole(seed: int) -> None:
    import random

    rng = random.Random(seed)
    parts = [header()]
    for i in range(300):
        kind = rng.random()
        if kind < 0.5:
            parts.append(
                turn("word " * rng.randint(1, 80) + f"n{i}", rng.choice(["user", "assistant"]), i)
            )
        elif kind < 0.9:
            parts.append(tool_result("out " * rng.randint(0, 400)))
        else:
            parts.append(rng.choice([b"{broken\n", b"\n", b"\xff\n", header("late")]))
    body = b"".join(parts)
    whole_files, whole = InMemorySessionFiles(), InMemorySessionIndex()
    whole_files.write("/s/a.jsonl", body)
    expected = indexer(whole_files, whole, window_bytes=4097).index_all()
    files, index = InMemorySessionFiles(), InMemorySessionIndex()
    files.write("/s/a.jsonl", b"")
    done = messages = 0
    for cut in [*sorted(rng.randrange(len(body)) for _ in range(12)), len(body)]:
        files.append("/s/a.jsonl", body[done:cut])
        done = cut
        messages += indexer(files, index, window_bytes=4097).index_all().messages
    assert len(body) > 10 * 4097
    assert index.dump() == whole.dump() and messages == expected.messages


def test_a_concurrent_indexer_never_duplicates_turns(index: Any) -> None:
    class Racing(InMemorySessionFiles):
        """The first read of the new bytes lets another indexer index the file first."""

        other: SessionIndexer | None = None

        def read(self, path: str, offset: int, length: int) -> bytes:
            if self.other is not None and offset > 0 and length > 0:
                other, self.other = self.other, None
                other.index_all()
            return super().read(path, offset, length)

    files = Racing()
    files.write("/s/a.jsonl", header() + turn("one"))
    indexer(files, index).index_all()
    files.append("/s/a.jsonl", turn("two", minute=1))
    files.other = indexer(files, index)
    report = indexer(files, index).index_all()
    assert report.failures == ()
    assert [t[2] for t in texts(index)] == ["one", "two"]
