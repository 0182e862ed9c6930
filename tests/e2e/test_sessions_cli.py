"""`index-sessions`, `session-search` and the session_search tool, run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    web = agent / "sessions" / "--home-me-web--"
    api = agent / "sessions" / "--home-me-api--"
    web.mkdir(parents=True)
    api.mkdir(parents=True)
    (web / "2026-07-01T09-00-00-000Z_web1.jsonl").write_bytes(
        session("web1", "/home/me/web", ["the flock call times out", "use a timeout of 10 s"])
    )
    (api / "2026-07-02T09-00-00-000Z_api1.jsonl").write_bytes(
        session("api1", "/home/me/api", ["flock in the api worker", "项目构建命令是 make build"])
        + b"{corrupt line\n"
    )
    return agent


def session(session_id: str, cwd: str, texts: list[str]) -> bytes:
    day = session_id[-1]
    lines = [{"type": "session", "version": 3, "id": session_id, "cwd": cwd}]
    lines[0]["timestamp"] = f"2026-07-0{day}T09:00:00.000Z"
    for i, text in enumerate(texts):
        role = "user" if i % 2 == 0 else "assistant"
        content: object = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(
            {
                "type": "message",
                "id": f"{i:08x}",
                "parentId": None,
                "timestamp": f"2026-07-0{day}T09:0{i + 1}:00.000Z",
                "message": {"role": role, "content": content},
            }
        )
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()


def cli(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        input=stdin,
        timeout=60,
    )


def test_index_then_search(root: Path) -> None:
    first = cli(root, "index-sessions")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0].startswith("Indexed 4 messages from 2 of 2 session files")
    assert "malformed-json 1" in first.stdout and "(1 damaged)" in first.stdout
    again = cli(root, "index-sessions", "--json")
    report = json.loads(again.stdout)
    assert report["files"]["unchanged"] == 2 and report["messages"] == 0
    assert report["skipped"] == {} and report["problems"] == 0

    found = cli(root, "session-search", "flock", "--project", "web")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0] == '2 sessions match "flock" (project web first, best first):'
    assert lines[1] == "[1] 2026-07-01 web /home/me/web session web1"
    assert lines[2] == "  > user (line 2): the flock call times out"

    cjk = cli(root, "--json", "session-search", "构建命令")
    out = json.loads(cjk.stdout)
    assert out["status"] == "ok" and out["results"][0]["session_id"] == "api1"
    assert out["results"][0]["turns"][-1]["text"] == "项目构建命令是 make build"

    only = cli(root, "session-search", "flock", "--only-project", "api", "--json", "--role", "user")
    assert [r["session_id"] for r in json.loads(only.stdout)["results"]] == ["api1"]


def test_anchors_from_the_command_line_and_stdin(root: Path) -> None:
    assert cli(root, "index-sessions").returncode == 0
    ranges = cli(root, "session-search", "--request", "any:\n- flock\n- timeout\n")
    assert ranges.returncode == 0, ranges.stderr
    header, *rows = ranges.stdout.splitlines()
    assert header == "2 source ranges (best first):"
    row = next(r for r in map(json.loads, rows) if r["sessionId"] == "web1")
    assert (row["startLine"], row["endLine"]) == (2, 3)
    assert row["reason"] == "2 matching turns: any: flock, timeout"
    assert row["path"].endswith("_web1.jsonl") and row["cwd"] == "/home/me/web"
    piped = cli(root, "session-search", "--request", "-", "--json", stdin="cwd: /home/me/api\n")
    (only,) = json.loads(piped.stdout)["results"]
    assert (only["sessionId"], only["startLine"], only["endLine"]) == ("api1", 2, 3)
    assert only["score"] == 0 and "cwd" in only["reason"]
    bad = cli(root, "session-search", "--request", "all: flock")
    assert bad.returncode == 2 and bad.stderr.startswith("pi-hermes-memory: line 1: all: is a list")


def test_usage_errors(root: Path) -> None:
    both = cli(root, "session-search", "flock", "--request", "all:\n- x")
    assert both.returncode == 2 and "not both or neither" in both.stderr
    assert cli(root, "session-search").returncode == 2
    assert cli(root, "session-search", "x", "--limit", "21").returncode == 2
    assert cli(root, "session-search", "x", "--role", "tool").returncode == 2
    wordless = cli(root, "session-search", "?!")
    assert wordless.returncode == 1 and "nothing to search for" in wordless.stderr
    empty = cli(root, "session-search", "flock")
    assert empty.returncode == 0 and "run `index-sessions` first" in empty.stdout.lower()


def test_live_file_and_the_tool(root: Path) -> None:
    path = next((root / "sessions" / "--home-me-web--").iterdir())
    live = cli(root, "index-sessions", "--file", str(path), "--json")
    assert json.loads(live.stdout)["messages"] == 2
    with open(path, "ab") as f:
        f.write(
            session("web1", "/home/me/web", ["", "", "zookeeper appears now"]).splitlines(True)[-1]
        )
    again = json.loads(cli(root, "index-sessions", "--json", "--file", str(path)).stdout)
    assert again["files"]["appended"] == 1 and again["messages"] == 1
    reply = cli(root, "tool", "session_search", '{"query": "zookeeper"}')
    assert reply.returncode == 0, reply.stderr
    out = json.loads(reply.stdout)
    assert out["results"][0]["turns"][-1]["line"] == 4
    wrong = cli(root, "tool", "session_search", '{"request": "all:\\n- x"}')
    assert wrong.returncode == 1 and json.loads(wrong.stdout)["status"] == "invalid_arguments"


def test_anchors_variant_from_the_config(root: Path) -> None:
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"sessionSearch": {"variant": "anchors", "projectMap": {"/home/me": "mine"}}})
    )
    assert cli(root, "index-sessions").returncode == 0
    reply = cli(root, "tool", "session_search", json.dumps({"request": "any:\n- flock\n"}))
    out = json.loads(reply.stdout)
    assert out["status"] == "ok" and {r["sessionId"] for r in out["results"]} == {"web1", "api1"}
    legacy = json.loads(cli(root, "session-search", "flock", "--json").stdout)
    assert {r["project"] for r in legacy["results"]} == {"mine"}
