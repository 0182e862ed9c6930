"""Pi session JSONL lines, projects and file changes
(`pi_hermes_memory.domain.history.transcripts`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.history.transcripts import (
    MAX_LINE_BYTES,
    FileChange,
    FileProgress,
    HeaderLine,
    LineSkip,
    MessageLine,
    SessionFile,
    SkippedLine,
    classify,
    cwd_within,
    digest,
    fallback_session_id,
    fingerprints_match,
    normalize_cwd,
    parse_line,
    parse_time,
    project_of,
)


def line(entry: object) -> bytes:
    return json.dumps(entry, ensure_ascii=False).encode()


def msg(role: str, content: object, **extra: object) -> bytes:
    return line(
        {
            "type": "message",
            "id": "a1b2c3d4",
            "parentId": None,
            "timestamp": "2026-07-01T09:00:01.000Z",
            "message": {"role": role, "content": content, **extra},
        }
    )


def skipped(raw: bytes) -> LineSkip:
    parsed = parse_line(raw)
    assert isinstance(parsed, SkippedLine), parsed
    return parsed.reason


# --- headers --------------------------------------------------------------------------------


def test_header() -> None:
    parsed = parse_line(
        line(
            {
                "type": "session",
                "version": 3,
                "id": "uuid-1",
                "timestamp": "2026-07-01T09:00:00.000Z",
                "cwd": "/home/me/web",
            }
        )
    )
    assert parsed == HeaderLine(
        session_id="uuid-1", cwd="/home/me/web", started=datetime(2026, 7, 1, 9, tzinfo=UTC)
    )


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "session", "cwd": "/x"},
        {"type": "session", "id": "  ", "cwd": "/x"},
        {"type": "session", "id": 7},
        {"type": "session", "id": "a", "cwd": ["/x"]},
    ],
)
def test_header_without_a_usable_id_or_cwd_is_a_bad_entry(entry: object) -> None:
    assert skipped(line(entry)) is LineSkip.BAD_ENTRY


def test_header_without_cwd_or_time() -> None:
    assert parse_line(line({"type": "session", "id": "s"})) == HeaderLine(
        session_id="s", cwd=None, started=None
    )


# --- messages -------------------------------------------------------------------------------


def test_user_message_with_string_content() -> None:
    parsed = parse_line(msg("user", "How do we deploy?"))
    assert parsed == MessageLine(
        role="user",
        text="How do we deploy?",
        at=datetime(2026, 7, 1, 9, 0, 1, tzinfo=UTC),
        message_id="a1b2c3d4",
    )


def test_assistant_blocks_text_tools_thinking() -> None:
    content = [
        {"type": "thinking", "thinking": "secret reasoning about kafka"},
        {"type": "text", "text": "Running the tests."},
        {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "make test"}},
        {"type": "tool_use", "id": "c2", "name": "read", "input": {}},
        {"type": "toolCall", "id": "c3", "name": "bash", "arguments": {}},
        {"type": "text", "text": "   "},
        {"type": "text", "text": "Then the build."},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        "not a block",
        {"type": "text", "text": 42},
    ]
    parsed = parse_line(msg("assistant", content))
    assert isinstance(parsed, MessageLine)
    assert parsed.text == "Running the tests.\nThen the build."
    assert parsed.tools == ("bash", "read")
    assert "kafka" not in parsed.text


def test_tool_only_assistant_turn_is_kept_for_its_tools() -> None:
    parsed = parse_line(msg("assistant", [{"type": "toolCall", "name": "edit", "arguments": {}}]))
    assert isinstance(parsed, MessageLine) and parsed.text == "" and parsed.tools == ("edit",)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (msg("toolResult", [{"type": "text", "text": "output"}]), LineSkip.TOOL_RESULT),
        (msg("user", [{"type": "tool_result", "content": "output"}]), LineSkip.TOOL_RESULT),
        (msg("assistant", [{"type": "thinking", "thinking": "hmm"}]), LineSkip.NO_TEXT),
        (msg("user", [{"type": "image", "data": "AAAA"}]), LineSkip.NO_TEXT),
        (msg("user", ""), LineSkip.NO_TEXT),
        (msg("user", None), LineSkip.NO_TEXT),
        (msg("bashExecution", "ls"), LineSkip.OTHER_ROLE),
        (msg("custom", "injected"), LineSkip.OTHER_ROLE),
        (msg("compactionSummary", "summary"), LineSkip.OTHER_ROLE),
        (msg("user", 42), LineSkip.BAD_ENTRY),
        (line({"type": "message", "message": "hello"}), LineSkip.BAD_ENTRY),
        (line({"type": "message", "message": {"content": "no role"}}), LineSkip.BAD_ENTRY),
        (line({"type": "model_change", "provider": "x", "modelId": "y"}), LineSkip.OTHER_TYPE),
        (line({"type": "compaction", "summary": "kafka"}), LineSkip.OTHER_TYPE),
        (line({"no": "type"}), LineSkip.OTHER_TYPE),
    ],
)
def test_lines_skipped_by_design_or_damage(raw: bytes, reason: LineSkip) -> None:
    assert skipped(raw) is reason


def test_pi_tool_results_are_recognised_without_parsing() -> None:
    raw = (
        b'{"type":"message","id":"1","parentId":"0","timestamp":"t","message":'
        b'{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"'
        + b"x" * 100_000
        + b'"}]}}'
    )
    assert skipped(raw) is LineSkip.TOOL_RESULT
    # the same words inside a string are not the marker: escaped quotes
    inside = msg("user", 'see "message":{"role":"toolResult" here')
    assert isinstance(parse_line(inside), MessageLine)


def test_message_time_falls_back_to_the_message_timestamp() -> None:
    entry = {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 0}}
    parsed = parse_line(line(entry))
    assert isinstance(parsed, MessageLine) and parsed.at == datetime(1970, 1, 1, tzinfo=UTC)
    entry["timestamp"] = "not a time"
    assert parse_line(line(entry)).at == datetime(1970, 1, 1, tzinfo=UTC)  # type: ignore[union-attr]


# --- damaged lines --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"type": "message", "message": {', LineSkip.MALFORMED_JSON),
        (b"garbage", LineSkip.MALFORMED_JSON),
        (b"[" * 100_000 + b"]" * 100_000, LineSkip.MALFORMED_JSON),
        (b'{"n": ' + b"9" * 10_000 + b"}", LineSkip.MALFORMED_JSON),
        (b"[1, 2]", LineSkip.NOT_AN_OBJECT),
        (b'"text"', LineSkip.NOT_AN_OBJECT),
        (b"null", LineSkip.NOT_AN_OBJECT),
        (b'{"type": "message", "x": "\xff\xfe"}', LineSkip.NOT_UTF8),
        (b"", LineSkip.EMPTY),
        (b"  \t\r", LineSkip.EMPTY),
    ],
)
def test_damaged_lines_are_reasons_not_exceptions(raw: bytes, reason: LineSkip) -> None:
    assert skipped(raw) is reason


def test_too_long_lines_are_not_parsed() -> None:
    raw = msg("user", "x" * MAX_LINE_BYTES)
    assert skipped(raw) is LineSkip.TOO_LONG


def test_problems_and_design_skips() -> None:
    assert LineSkip.MALFORMED_JSON.is_problem and LineSkip.TOO_LONG.is_problem
    assert LineSkip.EXTRA_HEADER.is_problem and LineSkip.NOT_UTF8.is_problem
    assert not LineSkip.TOOL_RESULT.is_problem and not LineSkip.OTHER_TYPE.is_problem
    assert not LineSkip.EMPTY.is_problem and not LineSkip.NO_TEXT.is_problem


def test_bom_and_crlf() -> None:
    assert isinstance(
        parse_line(b"\xef\xbb\xbf" + line({"type": "session", "id": "s"})), HeaderLine
    )
    assert isinstance(parse_line(msg("user", "hi") + b"\r"), MessageLine)


def test_lone_surrogates_are_replaced() -> None:
    parsed = parse_line(
        b'{"type":"message","id":"\\udc00","message":{"role":"user","content":"a\\ud800b"}}'
    )
    assert isinstance(parsed, MessageLine)
    assert parsed.text == "a\ufffdb" and parsed.message_id == "\ufffd"
    parsed.text.encode("utf-8")


@given(st.binary(max_size=300))
def test_any_bytes_parse_without_raising(raw: bytes) -> None:
    assert isinstance(parse_line(raw), HeaderLine | MessageLine | SkippedLine)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    st.sampled_from(["message", "session", "other", None]),
    st.sampled_from(["user", "assistant", "system", "toolResult", None, 3]),
    _JSON,
    _JSON,
)
def test_any_json_entry_parses_and_text_is_storable(
    kind: str | None, role: object, content: object, extra: object
) -> None:
    entry = {"type": kind, "id": extra, "cwd": extra, "timestamp": extra}
    entry["message"] = {"role": role, "content": content, "timestamp": extra}
    parsed = parse_line(json.dumps(entry).encode())
    if isinstance(parsed, MessageLine):
        parsed.text.encode("utf-8")
        assert parsed.role in ("user", "assistant", "system")


# --- times ----------------------------------------------------------------------------------


def test_parse_time() -> None:
    assert parse_time("2026-07-01T09:00:00Z") == datetime(2026, 7, 1, 9, tzinfo=UTC)
    assert parse_time("2026-07-01T11:00:00+02:00") == datetime(2026, 7, 1, 9, tzinfo=UTC)
    assert parse_time("2026-07-01 09:00") == datetime(2026, 7, 1, 9, tzinfo=UTC)
    assert parse_time(1_782_896_400_000) == datetime(2026, 7, 1, 9, tzinfo=UTC)
    for bad in ("yesterday", "", True, None, [1], 10**30, float("inf")):
        assert parse_time(bad) is None


# --- projects -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cwd", "project"),
    [
        ("/home/me/web", "web"),
        ("/home/me/web/", "web"),
        ("/home/me/web/../api", "api"),
        ("C:\\Users\\me\\app", "app"),
        ("/home/me/My Projects/game", "game"),
        ("/home/me/项目/文档站", "文档站"),
        ("/", None),
        ("", None),
        (None, None),
        ("/home/me/a,b", None),
    ],
)
def test_project_is_the_last_path_segment(cwd: str | None, project: str | None) -> None:
    assert project_of(cwd) == project


def test_project_map_longest_prefix_on_path_boundaries() -> None:
    mapping = {"/home/me/work": "work", "/home/me/work/api": "api-main", "/srv": "servers"}
    assert project_of("/home/me/work/api/sub", mapping) == "api-main"
    assert project_of("/home/me/work/api", mapping) == "api-main"
    assert project_of("/home/me/work/web", mapping) == "work"
    assert project_of("/home/me/workshop", mapping) == "workshop"
    assert project_of("/srv/x", mapping) == "servers"
    assert project_of("/opt/tool", mapping) == "tool"


def test_cwds() -> None:
    assert normalize_cwd("/a/b/") == "/a/b" and normalize_cwd("/") == "/"
    assert normalize_cwd("C:\\x\\y") == "C:/x/y" and normalize_cwd("  ") == ""
    assert cwd_within("/a/b/c", "/a/b") and cwd_within("/a/b", "/a/b/")
    assert not cwd_within("/a/bc", "/a/b") and not cwd_within(None, "/a")
    assert cwd_within("/x", "/")


def test_fallback_session_id() -> None:
    assert fallback_session_id("/s/--x--/2026-01-01T10-00-00-000Z_abc-123.jsonl") == "abc-123"
    assert fallback_session_id("/s/plain.jsonl") == "plain"


# --- file changes ---------------------------------------------------------------------------


def _file(size: int = 100, mtime: int = 5, inode: int = 9) -> SessionFile:
    return SessionFile(path="/s/a.jsonl", size=size, mtime_ns=mtime, device=1, inode=inode)


def _stored(size: int = 100, offset: int = 90) -> FileProgress:
    return FileProgress(path="/s/a.jsonl", size=size, mtime_ns=5, device=1, inode=9, offset=offset)


def test_classify() -> None:
    assert classify(_file(), None) is FileChange.NEW
    assert classify(_file(), _stored()) is FileChange.UNCHANGED
    assert classify(_file(size=150), _stored()) is FileChange.CHANGED
    assert classify(_file(mtime=6), _stored()) is FileChange.CHANGED
    assert classify(_file(size=95), _stored()) is FileChange.CHANGED  # partial tail shrank
    assert classify(_file(size=80), _stored()) is FileChange.REWRITTEN
    assert classify(_file(inode=10), _stored()) is FileChange.REWRITTEN


def test_fingerprints() -> None:
    head, tail = b"head bytes", b"tail bytes"
    stored = FileProgress(
        path="p",
        size=1,
        mtime_ns=1,
        device=1,
        inode=1,
        head_len=len(head),
        head_sha=digest(head),
        tail_sha=digest(tail),
    )
    assert fingerprints_match(stored, head, tail)
    assert not fingerprints_match(stored, b"HEAD bytes", tail)
    assert not fingerprints_match(stored, head, b"tail bytez")
    assert not fingerprints_match(stored, head[:-1], tail)
