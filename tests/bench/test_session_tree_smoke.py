"""The synthetic Pi sessions tree is well-formed, Pi-shaped and deterministic."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.bench.session_tree import (
    COMMON_TERMS,
    PROJECTS,
    RARE_TERMS,
    VOCABULARY,
    TreeStats,
    encode_cwd,
    main,
    write_session_tree,
)

SESSIONS = 20
MESSAGES = 400


def _files(root: Path) -> list[Path]:
    return sorted((root / "sessions").rglob("*.jsonl"))


def _read(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.decode("utf-8").split("\n")[:-1]]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TreeStats]:
    root = tmp_path_factory.mktemp("agent")
    return root, write_session_tree(root, sessions=SESSIONS, messages=SESSIONS * MESSAGES, seed=7)


def test_counts_match_the_stats(tree: tuple[Path, TreeStats]) -> None:
    root, stats = tree
    files = _files(root)
    assert stats.files == len(files) == SESSIONS
    assert stats.bytes == sum(path.stat().st_size for path in files)
    entries = [entry for path in files for entry in _read(path)]
    assert stats.lines == len(entries)
    assert stats.messages == SESSIONS * MESSAGES == sum(e["type"] == "message" for e in entries)


def test_layout_is_pi_s(tree: tuple[Path, TreeStats]) -> None:
    root, _ = tree
    base = root / "sessions"
    folders = {path.parent for path in _files(root)}
    assert base in folders  # a few sessions at the root of sessions/
    for folder in folders - {base}:
        assert folder.parent == base
        assert folder.name.startswith("--") and folder.name.endswith("--")
    for path in _files(root):
        header = _read(path)[0]
        stamp, _, session_id = path.stem.partition("_")
        assert session_id == header["id"]
        assert stamp == header["timestamp"].replace(":", "-").replace(".", "-")
        if path.parent != base:
            assert path.parent.name == encode_cwd(header["cwd"])
        assert header["cwd"] in PROJECTS
    assert encode_cwd("/home/me/work/proj") == "--home-me-work-proj--"


def test_every_file_is_a_valid_session(tree: tuple[Path, TreeStats]) -> None:
    root, _ = tree
    roles: Counter[str] = Counter()
    blocks: Counter[str] = Counter()
    for path in _files(root):
        header, *entries = _read(path)
        assert header["type"] == "session" and header["version"] == 3
        assert set(header) == {"type", "version", "id", "timestamp", "cwd"}
        assert all(entry["type"] != "session" for entry in entries)
        times = [header["timestamp"]] + [entry["timestamp"] for entry in entries]
        assert times == sorted(times) and len(set(times)) == len(times)  # strictly increasing
        parent = None
        for entry in entries:
            assert entry["parentId"] == parent
            assert len(entry["id"]) == 8
            parent = entry["id"]
            if entry["type"] != "message":
                assert entry["type"] in {
                    "model_change",
                    "thinking_level_change",
                    "session_info",
                    "custom",
                }
                continue
            role, content = entry["message"]["role"], entry["message"]["content"]
            roles[role] += 1
            if role == "user":
                assert isinstance(content, str) and content
                continue
            assert isinstance(content, list)
            blocks.update(block["type"] for block in content)
            if role == "toolResult":
                assert [block["type"] for block in content] == ["text"]
    assert set(roles) == {"user", "assistant", "toolResult"}
    assert {"thinking", "text", "toolCall"} <= set(blocks)


def test_tool_results_follow_their_calls(tree: tuple[Path, TreeStats]) -> None:
    root, _ = tree
    for path in _files(root):
        pending: list[str] = []
        for entry in _read(path)[1:]:
            if entry["type"] != "message":
                continue
            message = entry["message"]
            if message["role"] == "toolResult":
                assert message["toolCallId"] == pending.pop(0)
            else:
                assert not pending
                if message["role"] == "assistant":
                    calls = [b for b in message["content"] if b["type"] == "toolCall"]
                    pending = [call["id"] for call in calls]
                    assert message["stopReason"] == ("toolUse" if calls else "stop")


def test_query_terms_come_from_the_vocabulary() -> None:
    assert len(set(VOCABULARY)) == len(VOCABULARY)
    rank = {word: index for index, word in enumerate(VOCABULARY)}
    assert max(rank[t] for t in COMMON_TERMS) < 60
    assert min(rank[t] for t in RARE_TERMS) > len(VOCABULARY) - 100
    assert all(word.isascii() and word.isalnum() for word in VOCABULARY)  # safe in JSON as is


def test_some_text_is_chinese(tree: tuple[Path, TreeStats]) -> None:
    root, _ = tree
    users = [
        entry["message"]["content"]
        for path in _files(root)
        for entry in _read(path)
        if entry["type"] == "message" and entry["message"]["role"] == "user"
    ]
    chinese = sum(any("\u4e00" <= ch <= "\u9fff" for ch in text) for text in users)
    assert 0.03 < chinese / len(users) < 0.2


def test_same_seed_same_bytes_and_workers_do_not_matter(tmp_path: Path) -> None:
    one = write_session_tree(tmp_path / "a", sessions=6, messages=300, seed=3)
    two = write_session_tree(tmp_path / "b", sessions=6, messages=300, seed=3, workers=2)
    other = write_session_tree(tmp_path / "c", sessions=6, messages=300, seed=4)
    assert one == two
    files_a, files_b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert [p.relative_to(tmp_path / "a") for p in files_a] == [
        p.relative_to(tmp_path / "b") for p in files_b
    ]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(files_a, files_b, strict=True))
    assert other.messages == one.messages and other.bytes != one.bytes


def test_fewer_messages_than_sessions(tmp_path: Path) -> None:
    stats = write_session_tree(tmp_path, sessions=5, messages=2)
    assert (stats.files, stats.messages) == (5, 2)
    assert sum(len(_read(path)) for path in _files(tmp_path)) == stats.lines


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path), "--sessions", "3", "--messages", "50", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert (figures["files"], figures["messages"]) == (3, 50)
    assert figures["bytes"] == sum(path.stat().st_size for path in _files(tmp_path))
