"""Parsing session files in a helper process (ADR 0020): the index and the report are exactly
those of reading in this process, a source that cannot be pickled is read here, and a stale
file's remaining windows are dropped as in this process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.files.session_files import PiSessionFiles
from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex, _tools_json
from pi_hermes_memory.domain.history.transcripts import FileChange, SessionChunk
from pi_hermes_memory.errors import StaleProgress
from pi_hermes_memory.history.indexer import SessionIndexer, can_start_python_worker
from pi_hermes_memory.history.reading import FileDone, FileReader, parse_in_worker

from tests.integration.test_sessions_disk import T0, header, tool_result, turn, write
from tests.support.fakes import StepClock


def fill(tree: Path) -> None:
    (tree / "--w-web--").mkdir()
    write(
        tree / "--w-web--" / "a.jsonl",
        header("A", "/w/web")
        + b"".join(turn(f"deploy step {i} needs the VPN", minute=i) for i in range(40))
        + tool_result("x" * 20_000)
        + turn("构建命令是 make build", role="assistant", minute=50, tools=("bash", 'q"x'))
        + b"{broken\n\xff\xfe\n"
        + b'{"type":"message","message":{"role":"user","content":"'
        + b"y" * 30_000
        + b'"}}\n',
    )
    write(tree / "2026-07-01T09-00-00-000Z_nohead.jsonl", turn("no header here") * 3)
    write(tree / "b.jsonl", header("B", "/w/api") + turn("flock timeout in sqlite"))


def snapshot(index: SqliteSessionIndex) -> dict[str, Any]:
    with index._read() as c:
        return {
            "files": sorted(
                c.execute(
                    "SELECT path, size, read_to, lines, head_len, head_sha, tail_sha "
                    "FROM session_files"
                )
            ),
            "sessions": sorted(
                c.execute("SELECT session_id, cwd, project, started, headed FROM sessions")
            ),
            "messages": list(
                c.execute(
                    "SELECT rowid, session, turn, line, role, at, tools, message_id, text, grams "
                    "FROM session_messages ORDER BY rowid"
                )
            ),
            "fts": list(
                c.execute(
                    "SELECT rowid FROM session_messages_fts WHERE session_messages_fts "
                    'MATCH \'{text grams} : "vpn" OR grams : "构建"\' ORDER BY rowid'
                )
            ),
        }


def report(r: Any) -> dict[str, Any]:
    out = dict(r.to_json())
    out.pop("seconds")
    out.pop("mb_per_second")
    return out


def indexer(tree: Path, index: SqliteSessionIndex, worker: bool, **kw: Any) -> SessionIndexer:
    return SessionIndexer(
        source=kw.pop("source", PiSessionFiles(tree)),
        index=index,
        clock=StepClock(T0),
        window_bytes=8192,
        parse_in_worker=worker,
        worker_min_bytes=0,
        **kw,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    root.mkdir()
    return root


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[SqliteSessionIndex, SqliteSessionIndex]]:
    here, there = SqliteSessionIndex(tmp_path / "here.db"), SqliteSessionIndex(tmp_path / "w.db")
    yield here, there
    here.close()
    there.close()


def test_the_helper_process_indexes_exactly_like_this_process(
    tree: Path, pair: tuple[SqliteSessionIndex, SqliteSessionIndex]
) -> None:
    fill(tree)
    here, there = pair
    in_process, in_worker = indexer(tree, here, False), indexer(tree, there, True)
    first = report(in_process.index_all())
    assert first["messages"] == 45 and first["skipped"]["malformed-json"] == 1
    assert report(in_worker.index_all()) == first
    assert snapshot(there) == snapshot(here)
    jobs = [(f, None, FileChange.NEW) for f in PiSessionFiles(tree).files()]
    events = parse_in_worker(FileReader(source=PiSessionFiles(tree), window=8192), jobs)
    assert events is not None  # the helper process did run
    assert sum(isinstance(e, FileDone) for e in events) == 3
    with open(tree / "b.jsonl", "ab") as f:  # grow one file, rewrite another
        f.write(turn("the lock is held by the indexer", minute=9))
    write(tree / "--w-web--" / "a.jsonl", header("A", "/w/web") + turn("only this now"))
    again = report(in_process.index_all())
    assert again["files"]["appended"] == 1 and again["files"]["reindexed"] == 1
    assert report(in_worker.index_all()) == again
    assert snapshot(there) == snapshot(here)


def test_a_reader_that_cannot_be_pickled_is_read_in_this_process(
    tree: Path, pair: tuple[SqliteSessionIndex, SqliteSessionIndex]
) -> None:
    fill(tree)
    source = PiSessionFiles(tree)
    source.hook = lambda: None  # type: ignore[attr-defined]  # lambdas do not pickle
    file = next(iter(source.files()))
    reader = FileReader(source=source, window=8192)
    assert parse_in_worker(reader, [(file, None, FileChange.NEW)]) is None
    here, there = pair
    expected = report(indexer(tree, here, False).index_all())
    assert report(indexer(tree, there, True, source=source).index_all()) == expected
    assert snapshot(there) == snapshot(here)


class StaleOnce:
    """An index whose first apply of `path` fails as if another indexer got there first."""

    def __init__(self, index: SqliteSessionIndex, name: str) -> None:
        self.index, self.name, self.failed = index, name, False

    def apply(self, chunk: SessionChunk) -> None:
        if chunk.progress.path.endswith(self.name) and not self.failed:
            self.failed = True
            raise StaleProgress(chunk.progress.path)
        self.index.apply(chunk)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)


def test_a_stale_file_is_left_alone_in_both_ways(
    tree: Path, pair: tuple[SqliteSessionIndex, SqliteSessionIndex]
) -> None:
    fill(tree)
    here, there = pair
    expected = report(indexer(tree, StaleOnce(here, "a.jsonl"), False).index_all())  # type: ignore[arg-type]
    assert expected["files"]["without_header"] == 1
    assert expected["messages"] == 4  # a.jsonl's windows were all dropped
    got = indexer(tree, StaleOnce(there, "a.jsonl"), True).index_all()  # type: ignore[arg-type]
    assert report(got) == expected
    assert snapshot(there) == snapshot(here)


@given(st.lists(st.text(max_size=12), max_size=4))
def test_tool_names_are_stored_as_json_dumps_writes_them(names: list[str]) -> None:
    cleaned = tuple(n.encode("utf-8", "replace").decode() for n in names)
    expected = json.dumps(list(cleaned), ensure_ascii=False) if cleaned else None
    assert _tools_json(cleaned) == expected


@pytest.mark.parametrize(
    ("executable", "frozen", "expected"),
    [
        ("/usr/bin/python3", False, True),
        ("/work/.venv/bin/python3.11", False, True),
        ("C:\\Python311\\python.exe", False, True),
        ("/usr/bin/pypy3", False, True),
        ("/usr/bin/python3", True, False),  # a frozen application
        ("/Applications/Blender.app/Contents/MacOS/Blender", False, False),  # embeds Python
        ("/usr/bin/uwsgi", False, False),
        ("", False, False),
    ],
)
def test_the_helper_starts_only_from_a_plain_interpreter(
    executable: str, frozen: bool, expected: bool
) -> None:
    assert can_start_python_worker(executable, frozen=frozen) is expected
