"""Session indexing on real files and the real SQLite index: the Pi tree, incremental runs,
damaged lines, CJK search, the schema step, and the append invariant on disk."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.files.session_files import PiSessionFiles
from pi_hermes_memory.adapters.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.history.indexer import SessionIndexer
from pi_hermes_memory.history.search import SessionSearchService
from pi_hermes_memory.ports.history import AnchorQuery, SessionQuery

from tests.support.fakes import StepClock

T0 = datetime(2026, 7, 1, 9, tzinfo=UTC)


def header(session_id: str, cwd: str) -> bytes:
    entry = {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-07-01T09:00:00Z"}
    entry["cwd"] = cwd
    return (json.dumps(entry) + "\n").encode()


def turn(text: str, role: str = "user", minute: int = 0, tools: tuple[str, ...] = ()) -> bytes:
    at = (T0 + timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    blocks += [{"type": "toolCall", "id": "c", "name": n, "arguments": {}} for n in tools]
    content: Any = text if role == "user" else blocks
    entry = {"type": "message", "id": f"m{minute}", "parentId": None, "timestamp": at}
    entry["message"] = {"role": role, "content": content}
    return (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def tool_result(output: str) -> bytes:
    entry = {"type": "message", "id": "r", "parentId": None, "timestamp": "2026-07-01T09:00:00Z"}
    entry["message"] = {
        "role": "toolResult",
        "toolCallId": "c",
        "content": [{"type": "text", "text": output}],
    }
    return (json.dumps(entry, separators=(",", ":")) + "\n").encode()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "agent" / "sessions"
    root.mkdir(parents=True)
    return root


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SqliteSessionIndex]:
    ix = SqliteSessionIndex(tmp_path / "agent" / "pi-hermes-memory" / "sessions.db")
    yield ix
    ix.close()


def run(tree: Path, index: SqliteSessionIndex, **kw: Any) -> Any:
    return SessionIndexer(source=PiSessionFiles(tree), index=index, clock=StepClock(T0), **kw)


def lines_of(index: SqliteSessionIndex) -> list[tuple[str, int, str]]:
    with index._read() as c:
        return [
            (Path(path).name, line, text)
            for path, line, text in c.execute(
                "SELECT f.path, m.line, m.text FROM session_messages AS m "
                "JOIN sessions AS s ON s.id = m.session "
                "JOIN session_files AS f ON f.id = s.file ORDER BY f.path, m.turn"
            )
        ]


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


# --- the tree -------------------------------------------------------------------------------


def test_the_pi_tree_two_levels_no_links(tree: Path, tmp_path: Path) -> None:
    write(tree / "--home-me-web--" / "2026_a.jsonl", header("A", "/home/me/web"))
    write(tree / "root-level.jsonl", header("B", "/x"))
    write(tree / "--home-me-web--" / "subagent-artifacts" / "deep.jsonl", header("C", "/x"))
    write(tree / "--home-me-web--" / "notes.md", b"not a session")
    outside = tmp_path / "outside.jsonl"
    write(outside, header("D", "/x"))
    (tree / "--home-me-web--" / "link.jsonl").symlink_to(outside)
    source = PiSessionFiles(tree)
    names = sorted(Path(f.path).name for f in source.files())
    assert names == ["2026_a.jsonl", "root-level.jsonl"]
    found = source.stat(str(tree / "--home-me-web--" / "link.jsonl"))
    assert found is not None and found.path == str(outside.resolve())
    assert source.stat(str(tree / "missing.jsonl")) is None
    assert source.stat(str(tree)) is None
    assert list(PiSessionFiles(tmp_path / "nowhere").files()) == []


# --- incremental runs on real files ---------------------------------------------------------


def test_incremental_runs(tree: Path, index: SqliteSessionIndex) -> None:
    a = tree / "--home-me-web--" / "2026-07-01T09-00-00-000Z_A.jsonl"
    b = tree / "--home-me-api--" / "2026-07-01T09-00-00-000Z_B.jsonl"
    write(a, header("A", "/home/me/web") + turn("deploy the web app") + tool_result("x" * 5000))
    write(b, header("B", "/home/me/api") + turn("the api needs redis"))
    indexer = run(tree, index)
    first = indexer.index_all()
    assert (first.files_new, first.messages, first.skipped) == (2, 2, {"tool-result": 1})

    unchanged = indexer.index_all()
    assert (unchanged.files_unchanged, unchanged.bytes_read) == (2, 0)

    append(a, turn("and then the docs", "assistant", 1))
    grown = indexer.index_all()
    assert (grown.files_appended, grown.files_unchanged, grown.messages) == (1, 1, 1)
    assert grown.bytes_read == len(turn("and then the docs", "assistant", 1))

    partial = turn("half written line", minute=2)
    append(a, partial[:10])
    waiting = indexer.index_all()
    assert (waiting.messages, waiting.problems, waiting.lines) == (0, 0, 0)
    append(a, partial[10:])
    completed = indexer.index_all()
    assert completed.messages == 1 and completed.problems == 0

    replacement = b.with_suffix(".tmp")
    write(replacement, header("B", "/home/me/api") + turn("rewritten: postgres now"))
    os.replace(replacement, b)
    rewritten = indexer.index_all()
    assert (rewritten.files_reindexed, rewritten.messages) == (1, 1)

    with open(a, "r+b") as f:  # truncated below what was read
        f.truncate(len(header("A", "/home/me/web")) + 5)
    truncated = indexer.index_all()
    assert truncated.files_reindexed == 1
    assert [x for x in lines_of(index) if x[0] == a.name] == []

    b.unlink()
    removed = indexer.index_all()
    assert removed.files_removed == 1
    assert lines_of(index) == []
    assert index.counts().files == 1


def test_touch_without_change_is_checked_then_unchanged(
    tree: Path, index: SqliteSessionIndex
) -> None:
    a = tree / "a.jsonl"
    write(a, header("A", "/w") + turn("stable"))
    indexer = run(tree, index)
    indexer.index_all()
    st = a.stat()
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    touched = indexer.index_all()
    assert (touched.files_appended, touched.messages, touched.bytes_read) == (1, 0, 0)
    assert indexer.index_all().files_unchanged == 1


def test_corrupt_lines_counted_good_lines_kept(tree: Path, index: SqliteSessionIndex) -> None:
    a = tree / "a.jsonl"
    write(
        a,
        header("A", "/w/app")
        + b'{"type":"message","message":{"role":"user","content":"cut\n'
        + turn("first good line")
        + b"\xc3\x28 invalid utf-8\n"
        + b'"just a string"\n'
        + turn("x" * (4 * 1024 * 1024 + 10))
        + turn("second good line", minute=1),
    )
    report = run(tree, index).index_all()
    assert report.messages == 2
    assert report.skipped == {
        "malformed-json": 1,
        "not-utf8": 1,
        "not-an-object": 1,
        "too-long": 1,
    }
    assert report.problems == 4
    assert lines_of(index) == [
        ("a.jsonl", 3, "first good line"),
        ("a.jsonl", 7, "second good line"),
    ]


def test_cjk_and_english_search_on_disk(tree: Path, index: SqliteSessionIndex) -> None:
    write(
        tree / "--w-web--" / "a.jsonl",
        header("A", "/w/web")
        + turn("项目构建命令是什么？")
        + turn("构建命令是 make build", "assistant", 1, tools=("bash",))
        + turn("谢谢", minute=2),
    )
    write(tree / "--w-api--" / "b.jsonl", header("B", "/w/api") + turn("The build uses Bazel"))
    run(tree, index).index_all()
    search = SessionSearchService(index=index, current_project="api")
    found = search.search("构建命令")
    assert [h.session.session_id for h in found.hits] == ["A"]
    turns = found.hits[0].turns
    assert [(t.line, t.match) for t in turns] == [(2, True), (3, True), (4, False)]
    assert turns[1].tools == ("bash",)
    both = search.search("build")
    assert [h.session.session_id for h in both.hits] == ["B", "A"]  # current project first
    only = search.search("build", project="web")
    assert [h.session.session_id for h in only.hits] == ["A"]
    alike = search.search("build", project="*")
    assert {h.session.session_id for h in alike.hits} == {"A", "B"}


def test_anchors_on_disk(tree: Path, index: SqliteSessionIndex) -> None:
    from pi_hermes_memory.domain.history.request import parse_anchor_request

    a = tree / "--w-app--" / "a.jsonl"
    write(
        a,
        header("A", "/w/app")
        + turn("the flock call hangs")  # 2
        + turn("flock timeout after 10 s", "assistant", 1, tools=("bash",))  # 3
        + tool_result("strace output " * 100)  # 4
        + turn("flock works now with sqlite", "assistant", 2)  # 5
        + turn("unrelated", minute=3)  # 6
        + turn("flock again later", minute=4),  # 7
    )
    run(tree, index).index_all()
    search = SessionSearchService(index=index, current_project=None)
    result = search.anchors(
        parse_anchor_request("cwd: /w/app\nall:\n- flock\nany:\n- sqlite\n- timeout\n")
    )
    assert result.status == "ok"
    (r,) = result.ranges
    assert (r.path, r.start_line, r.end_line, r.session_id) == (str(a.resolve()), 3, 5, "A")
    assert r.cwd == "/w/app" and r.start_time == T0 + timedelta(minutes=1)
    assert r.end_time == T0 + timedelta(minutes=2)
    assert "timeout" in r.reason and "sqlite" in r.reason and r.score > 0
    every = search.anchors(parse_anchor_request("all:\n- flock\nlimit: 2\n"))
    assert len(every.ranges) == 2
    spans = sorted(
        (x.start_line, x.end_line)
        for x in search.anchors(parse_anchor_request("all:\n- flock\n")).ranges
    )
    assert spans == [(2, 5), (7, 7)]
    empty = search.anchors(parse_anchor_request("from: 2030-01-01\n"))
    assert empty.status == "no_results" and empty.ranges == ()


# --- the database ---------------------------------------------------------------------------


def test_schema_step_two_migrates_an_existing_store(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    conn = apsw.Connection(str(path))
    conn.execute(MIGRATIONS[0])
    conn.execute("PRAGMA user_version=1; PRAGMA application_id=0x50484D31")
    conn.close()
    storage = SqliteStorage(path)
    try:
        assert storage.connection.execute("PRAGMA user_version").get == SCHEMA_VERSION >= 2
        tables = {r[0] for r in storage.connection.execute("SELECT name FROM sqlite_schema")}
        assert {"session_files", "sessions", "session_messages", "session_messages_fts"} <= tables
    finally:
        storage.close()


def test_the_session_connection_is_lazy_and_not_fully_synchronous(tmp_path: Path) -> None:
    index = SqliteSessionIndex(tmp_path / "sessions.db")
    assert not (tmp_path / "sessions.db").exists()
    try:
        assert index.counts().files == 0
        conn = index._connection()
        assert conn.execute("PRAGMA synchronous").get == 1  # NORMAL
        assert str(conn.execute("PRAGMA journal_mode").get).lower() == "wal"
        assert conn.execute("PRAGMA foreign_keys").get == 1
    finally:
        index.close()
        index.close()


def test_memory_store_and_session_index_share_the_file(tmp_path: Path, tree: Path) -> None:
    import pi_hermes_memory

    write(tree / "a.jsonl", header("A", "/w/web") + turn("the deploy needs a VPN"))
    with pi_hermes_memory.open(agent_root=tmp_path / "agent", environ={}, project="web") as m:
        assert m.add("Deploys need the VPN", target="project").success
        assert m.index_sessions().messages == 1
        assert m.add("The API listens on 8080", target="project").success
        assert m.session_search("VPN").hits[0].session.session_id == "A"
        assert m.search("VPN").hits
    with pi_hermes_memory.open(agent_root=tmp_path / "agent", environ={}, project="web") as m:
        assert m.index_sessions().files_unchanged == 1


def test_fts_integrity_after_rewrites(tree: Path, index: SqliteSessionIndex) -> None:
    a = tree / "a.jsonl"
    write(a, header("A", "/w") + turn("one two") + turn("three"))
    indexer = run(tree, index)
    indexer.index_all()
    replacement = tree / "a.tmp"
    write(replacement, header("A", "/w") + turn("four"))
    os.replace(replacement, a)
    indexer.index_all()
    with index._write() as c:
        c.execute(
            "INSERT INTO session_messages_fts (session_messages_fts, rank) "
            "VALUES ('integrity-check', 1)"
        )
    assert index.search(SessionQuery(text="three")) == []
    assert index.anchor_lines(AnchorQuery(all_terms=("four",)))[0].line == 2


def test_recorded_and_indexed_turns_share_one_consistent_fts_index(
    tree: Path, index: SqliteSessionIndex
) -> None:
    write(tree / "a.jsonl", header("A", "/w") + turn("flock timeout") + turn("数据库锁超时"))
    run(tree, index).index_all()
    indexer = run(tree, index)
    for text in ("the flock again", "sqlite busy"):
        indexer.record("R", "user", text, project="w")
    with index._write() as c:
        c.execute(
            "INSERT INTO session_messages_fts (session_messages_fts, rank) "
            "VALUES ('integrity-check', 1)"
        )
        assert c.execute("SELECT count(*) FROM session_messages_fts_docsize").get == 4
    found = {h.session.session_id for h in index.search(SessionQuery(text="flock"))}
    assert found == {"A", "R"}
    assert [h.session.session_id for h in index.search(SessionQuery(text="锁超时"))] == ["A"]


# --- the invariant on disk ------------------------------------------------------------------

_LINES = st.one_of(
    st.builds(turn, st.text(min_size=1, max_size=300), st.sampled_from(["user", "assistant"])),
    st.builds(tool_result, st.text(max_size=300)),
    st.sampled_from([b"{broken\n", b"\n", b"\xff\n"]),
)


@settings(max_examples=25)
@given(lines=st.lists(_LINES, max_size=30), cuts=st.lists(st.integers(0, 12_000), max_size=5))
def test_appending_in_pieces_on_disk_equals_the_whole(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], cuts: list[int]
) -> None:
    base = tmp_path_factory.mktemp("inv")
    body = header("A", "/w") + b"".join(lines)
    results = []
    for pieces in ([len(body)], [*sorted(c % (len(body) + 1) for c in cuts), len(body)]):
        root = base / f"run{len(results)}"
        (root / "sessions").mkdir(parents=True)
        path = root / "sessions" / "a.jsonl"
        path.write_bytes(b"")
        index = SqliteSessionIndex(root / "s.db")
        done = 0
        for cut in pieces:
            if cut > done:
                append(path, body[done:cut])
                done = cut
            run(root / "sessions", index, window_bytes=4097).index_all()
        results.append(lines_of(index))
        index.close()
    assert results[0] == results[1]
    shutil.rmtree(base)
