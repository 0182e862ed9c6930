"""session_search (legacy and anchors) on the in-memory index: the service, range grouping, the
tool's arguments and results, and the Memory facade."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.inmemory.history import InMemorySessionFiles, InMemorySessionIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.history.request import AnchorRequest
from pi_hermes_memory.errors import ArgumentError
from pi_hermes_memory.history.search import SessionSearchService, group_ranges
from pi_hermes_memory.history.tool import run_anchors_tool, run_legacy_tool
from pi_hermes_memory.ports.history import AnchorLine, AnchorQuery, SessionInfo
from pi_hermes_memory.testing.session_contracts import T0, Sessions, message


@pytest.fixture
def index() -> InMemorySessionIndex:
    ix = InMemorySessionIndex()
    s = Sessions(ix)
    s.add("/s/web1.jsonl", ["how do we deploy the web app", "use make deploy"], cwd="/w/web")
    reply = message("helm upgrade --install", role="assistant", minutes=1)
    s.add("/s/api1.jsonl", ["deploy the api with helm", reply], cwd="/w/api")
    s.add("/s/api2.jsonl", ["the api deploy failed", "retry the deploy"], cwd="/w/api")
    return ix


def service(index: Any, project: str | None = "web") -> SessionSearchService:
    return SessionSearchService(index=index, current_project=project)


def ids(result: Any) -> list[str]:
    return [h.session.session_id for h in result.hits]


# --- legacy ---------------------------------------------------------------------------------


def test_current_project_first_then_the_others(index: Any) -> None:
    result = service(index).search("deploy")
    assert result.status == "ok" and ids(result)[0] == "web1.jsonl"
    assert set(ids(result)) == {"web1.jsonl", "api1.jsonl", "api2.jsonl"}
    lines = result.message.splitlines()
    assert lines[0] == '3 sessions match "deploy" (project web first, best first):'
    assert lines[1] == "[1] 2026-07-01 web /w/web session web1.jsonl"
    assert lines[2].startswith("  > user (line 2): how do we deploy")


def test_project_argument_overrides_the_order(index: Any) -> None:
    only_api = service(index).search("deploy", project="api")
    assert set(ids(only_api)) == {"api1.jsonl", "api2.jsonl"}
    assert "(project api, best first)" in only_api.message
    everything = service(index).search("deploy", project="*", limit=2)
    assert len(everything.hits) == 2 and "(all projects, best first)" in everything.message
    no_current = service(index, project=None).search("deploy")
    assert len(no_current.hits) == 3 and "(all projects" in no_current.message


def test_limit_role_and_no_results(index: Any) -> None:
    assert len(service(index).search("deploy", limit=1).hits) == 1
    helm = service(index).search("helm", role="user")
    assert [t.text for t in helm.hits[0].turns if t.match] == ["deploy the api with helm"]
    missing = service(index).search("kubernetes")
    assert missing.status == "no_results" and missing.success
    assert missing.message == 'No sessions match "kubernetes" (6 turns of 3 sessions indexed).'


def test_an_empty_index_says_how_to_fill_it() -> None:
    result = service(InMemorySessionIndex()).search("deploy")
    assert "index is empty" in result.message and "index-sessions" in result.message


def test_queries_without_words_and_bad_options(index: Any) -> None:
    result = service(index).search("?!? 😀")
    assert (result.success, result.status) == (False, "invalid_arguments")
    with pytest.raises(ValueError, match="limit"):
        service(index).search("deploy", limit=21)
    with pytest.raises(ValueError, match="role"):
        service(index).search("deploy", role="toolResult")
    with pytest.raises(ValueError, match="project"):
        service(index).search("deploy", project=" ")
    with pytest.raises(ValueError, match="query"):
        service(index).search(None)  # type: ignore[arg-type]


# --- anchors --------------------------------------------------------------------------------


def _line(
    path: str | None, turn: int, score: float = 1.0, minutes: int = 0, **kw: Any
) -> AnchorLine:
    session = SessionInfo(session_id=path or "rec", project=None, cwd="/w", started=T0, path=path)
    return AnchorLine(
        session=session,
        line=turn + 1,
        turn=turn,
        at=T0 + timedelta(minutes=minutes),
        score=score,
        **kw,
    )


def test_group_ranges_merges_consecutive_turns_of_one_session() -> None:
    lines = [
        _line("/a", 3, 1.0, 3),
        _line("/a", 1, 2.0, 1),
        _line("/a", 2, 1.5, 2, matched_any=("x",)),
        _line("/a", 5, 4.0, 5),
        _line("/b", 2, 0.5, 9),
        _line(None, 1, 0.25, 10),
    ]
    query = AnchorQuery(all_terms=("t",), any_terms=("x", "y"))
    ranges = group_ranges(lines, query)
    assert [(r.path, r.start_line, r.end_line, r.score) for r in ranges] == [
        ("/a", 2, 4, 4.5),
        ("/a", 6, 6, 4.0),
        ("/b", 3, 3, 0.5),
        (None, 2, 2, 0.25),
    ]
    first = ranges[0]
    assert first.start_time == T0 + timedelta(minutes=1)
    assert first.end_time == T0 + timedelta(minutes=3)
    assert first.reason == "3 matching turns: all of t; any: x"
    assert ranges[1].reason == "1 matching turn: all of t"


def test_ties_put_the_newest_range_first() -> None:
    ranges = group_ranges([_line("/a", 1, 1.0, 1), _line("/b", 1, 1.0, 9)], AnchorQuery())
    assert [r.path for r in ranges] == ["/b", "/a"]
    assert ranges[0].reason == "1 matching turn: in the requested index"


def test_anchors_service(index: Any) -> None:
    svc = service(index)
    result = svc.anchors(AnchorRequest(all_terms=("deploy",), any_terms=("helm", "retry")))
    assert result.status == "ok"
    assert {(r.session_id, r.start_line, r.end_line) for r in result.ranges} == {
        ("api1.jsonl", 2, 2),
        ("api2.jsonl", 3, 3),
    }
    assert {r.reason for r in result.ranges} == {
        "1 matching turn: all of deploy; any: helm",
        "1 matching turn: all of deploy; any: retry",
    }
    rows = [json.loads(x) for x in result.message.splitlines()[1:]]
    assert rows[0].keys() == {
        "path",
        "startLine",
        "endLine",
        "sessionId",
        "cwd",
        "startTime",
        "endTime",
        "score",
        "reason",
    }
    assert rows[0]["startTime"].endswith("Z")
    limited = svc.anchors(AnchorRequest(all_terms=("deploy",), limit=1))
    assert len(limited.ranges) == 1
    window = svc.anchors(AnchorRequest(cwd="/w/api", start=T0, end=T0))
    assert {(r.session_id, r.start_line) for r in window.ranges} == {
        ("api1.jsonl", 2),
        ("api2.jsonl", 2),
    }
    assert "time window and cwd" in window.ranges[0].reason
    nothing = svc.anchors(AnchorRequest(all_terms=("zookeeper",)))
    assert nothing.status == "no_results" and nothing.message.startswith("No session lines match")
    bad = svc.anchors(AnchorRequest(all_terms=("deploy",), any_terms=("!!!",)))
    assert bad.status == "invalid_arguments" and "any: term '!!!'" in bad.message


# --- the tool -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ([], "arguments must be a JSON object, got array"),
        ({}, "query is required"),
        ({"query": 3}, "query must be a string, got number"),
        ({"query": "x", "when": 1}, "unknown argument(s): when"),
        ({"query": "x", "role": "tool"}, "role must be one of user, assistant, system"),
        ({"query": "x", "limit": 0}, "limit must be between 1 and 20, got 0"),
        ({"query": "x", "limit": "5"}, "limit must be an integer, got string"),
        ({"query": "x", "limit": True}, "limit must be an integer, got boolean"),
        ({"query": "x", "project": ""}, "project must be a project name or '*'"),
    ],
)
def test_legacy_tool_arguments(index: Any, arguments: object, problem: str) -> None:
    with pytest.raises(ArgumentError) as err:
        run_legacy_tool(service(index), arguments)
    assert problem in str(err.value)


def test_legacy_tool_result(index: Any) -> None:
    out = run_legacy_tool(service(index), {"query": "helm", "limit": 2.0, "project": "api"})
    assert out["success"] and out["status"] == "ok"
    (session,) = out["results"]
    assert session.keys() == {"session_id", "project", "cwd", "started", "path", "score", "turns"}
    assert session["started"] == "2026-07-01T09:00:00Z" and session["project"] == "api"
    turns = session["turns"]
    assert [t["line"] for t in turns] == [2, 3] and all(t["match"] for t in turns)
    assert turns[0].keys() == {"line", "role", "time", "text", "match", "score"}
    invalid = run_legacy_tool(service(index), {"query": "..."})
    assert invalid["status"] == "invalid_arguments" and "results" not in invalid


def test_anchors_tool(index: Any) -> None:
    with pytest.raises(ArgumentError, match="request is required"):
        run_anchors_tool(service(index), {})
    with pytest.raises(ArgumentError, match="unknown argument"):
        run_anchors_tool(service(index), {"request": "all:\n- x", "query": "x"})
    bad = run_anchors_tool(service(index), {"request": "all: deploy"})
    assert bad["status"] == "invalid_arguments" and bad["message"].startswith("line 1: ")
    good = run_anchors_tool(service(index), {"request": "all:\n- deploy\nlimit: 2"})
    assert good["status"] == "ok" and len(good["results"]) == 2
    assert good["results"][0]["sessionId"].endswith(".jsonl")


# --- the facade -----------------------------------------------------------------------------


def _open(tmp_path: Path, variant: str | None = None, **kw: Any) -> Any:
    if variant is not None:
        (tmp_path / "hermes-memory-config.json").write_text(
            json.dumps({"sessionSearch": {"variant": variant}})
        )
    return pi_hermes_memory.open(
        agent_root=tmp_path,
        cwd=tmp_path / "web",
        environ={},
        storage=InMemoryStorage(),
        markdown=InMemoryMarkdown(),
        **kw,
    )


def _files() -> InMemorySessionFiles:
    files = InMemorySessionFiles()
    head = {"type": "session", "id": "S", "cwd": "/w/web", "timestamp": "2026-07-01T09:00:00Z"}
    turn = {"type": "message", "timestamp": "2026-07-01T09:01:00Z"}
    turn["message"] = {"role": "user", "content": "the flock timeout again"}
    files.write("/s/a.jsonl", (json.dumps(head) + "\n" + json.dumps(turn) + "\n").encode())
    return files


def test_facade_legacy(tmp_path: Path) -> None:
    with _open(tmp_path, session_index=InMemorySessionIndex(), session_source=_files()) as m:
        assert "session_search" in [t.name for t in m.tool_definitions()]
        schema = next(t for t in m.tool_definitions() if t.name == "session_search").parameters
        assert schema["required"] == ["query"]
        assert m.index_sessions().messages == 1
        assert m.index_live("/s/a.jsonl").files_unchanged == 1
        assert m.session_search("flock").hits[0].session.session_id == "S"
        recorded = m.record_message("chat", "assistant", "no flock here", cwd="/w/web")
        assert recorded.project == "web" and recorded.turn == 1
        reply = m.call_tool("session_search", {"query": "flock", "limit": 5})
        assert reply["status"] == "ok" and len(reply["results"]) == 2
        assert m.call_tool("session_search", {"query": 5})["status"] == "invalid_arguments"
        assert m.call_tool("session_search", "not json")["status"] == "invalid_arguments"
        with pytest.raises(ValueError):
            m.record_message("chat", "robot", "x")


def test_facade_anchors_variant(tmp_path: Path) -> None:
    with _open(
        tmp_path, "anchors", session_index=InMemorySessionIndex(), session_source=_files()
    ) as m:
        (tool,) = [t for t in m.tool_definitions() if t.name == "session_search"]
        assert tool.parameters["required"] == ["request"] and "JSONL" in tool.description
        m.index_sessions()
        reply = m.call_tool("session_search", {"request": "all:\n- flock\n"})
        assert reply["status"] == "ok"
        assert reply["results"][0]["path"] == "/s/a.jsonl"
        assert reply["results"][0]["startLine"] == 2
        assert m.session_anchors("any:\n- timeout").ranges[0].end_line == 2
        assert m.session_search("flock").hits  # both variants through the Python API
        bad = m.call_tool("session_search", {"query": "flock"})
        assert bad["status"] == "invalid_arguments"


def test_without_a_session_index_custom_storage_has_no_session_search(tmp_path: Path) -> None:
    with _open(tmp_path) as m:
        assert "session_search" not in [t.name for t in m.tool_definitions()]
        with pytest.raises(pi_hermes_memory.HermesMemoryError, match="session_index"):
            m.index_sessions()
        assert m.call_tool("session_search", {"query": "x"})["status"] == "unknown_tool"


def test_recorded_turn_time_defaults_to_the_clock(tmp_path: Path) -> None:
    index = InMemorySessionIndex()
    with _open(tmp_path, session_index=index, session_source=InMemorySessionFiles()) as m:
        m.record_message("c", "user", "hello", at=datetime(2026, 1, 2, tzinfo=UTC))
        m.record_message("c", "user", "again")
    first, second = (row[6] for row in index.dump())
    assert first.at == datetime(2026, 1, 2, tzinfo=UTC)
    assert second.at is not None and second.at.tzinfo is not None


def test_message_helper_is_utc() -> None:
    assert message("x").at == T0
