"""The REST API against a real `pi-hermes-memory serve` process (ADR 0044): the envelope on
every answer, hostile bodies, Origin/Host checks, tenancy, concurrent clients."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.memory_server import RunningServer, command, environment, running


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running(tmp_path_factory.mktemp("rest")) as s:
        yield s


@pytest.fixture
def client(srv: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        yield c


def _rpc_refusal(response: httpx.Response, status: int) -> dict[str, Any]:
    """A refused /mcp request: the HTTP status and a JSON-RPC error (ADR 0076)."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["jsonrpc"] == "2.0" and set(body) == {"jsonrpc", "id", "error"}
    assert isinstance(body["error"]["code"], int) and body["error"]["message"]
    return body


def _envelope(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"success", "data", "error"}
    assert body["success"] is (200 <= status < 300)
    if not body["success"]:
        assert isinstance(body["error"], str) and body["error"]
        assert "Traceback" not in body["error"]
    return body


def test_health_is_status_and_version_and_status_reports_memory_but_no_content(
    client: httpx.Client,
) -> None:
    from pi_hermes_memory import __version__

    _envelope(client.post("/api/memory/store", json={"content": "health secretless fact"}), 201)
    assert _envelope(client.get("/health"), 200)["data"] == {
        "status": "ok",
        "version": __version__,
    }
    data = _envelope(client.get("/api/status"), 200)["data"]
    assert data["status"] == "ok" and data["version"] == __version__
    assert data["rss_bytes"] > 0
    assert data["stores"] and "fact" not in str(data)
    # no embedding section configured: each store's own config decides, here off
    assert data["embedding"] is None and data["rerank"] is None
    assert all(store["embeddings"] is None for store in data["stores"])


def test_store_search_list_get_patch_delete(client: httpx.Client) -> None:
    added = _envelope(
        client.post("/api/memory/store", json={"content": "The deploy script is bin/ship"}), 201
    )["data"]
    entry_id = added["entry_id"]
    hits = _envelope(client.post("/api/memory/search", json={"query": "deploy script"}), 200)
    assert entry_id in [h["id"] for h in hits["data"]["results"]]
    page = _envelope(client.get("/api/memory/list", params={"limit": 500}), 200)["data"]
    assert entry_id in [e["id"] for e in page["entries"]]
    assert page["total"] >= 1 and page["offset"] == 0
    assert _envelope(client.get(f"/api/memory/{entry_id}"), 200)["data"]["id"] == entry_id
    patched = _envelope(
        client.patch(f"/api/memory/{entry_id}", json={"content": "The deploy script is bin/go"}),
        200,
    )["data"]
    assert patched["status"] == "replaced" and patched["entry_id"] == entry_id  # ADR 0074
    # the first version's id, pinned as ID@1, is history now: a conflict naming the memory
    assert entry_id in _envelope(client.delete(f"/api/memory/{entry_id}@1"), 409)["error"]
    assert _envelope(client.delete(f"/api/memory/{entry_id}"), 200)["data"]["status"] == "removed"
    _envelope(client.delete(f"/api/memory/{entry_id}"), 404)
    _envelope(client.get("/api/memory/01NOSUCHENTRY0000000000000"), 404)


def test_stats_is_what_stats_json_prints(srv: RunningServer, client: httpx.Client) -> None:
    _envelope(client.post("/api/memory/store", json={"content": "Stats count this row"}), 201)
    served = _envelope(client.get("/api/memory/stats"), 200)["data"]
    printed = subprocess.run(
        command("stats", "--json"),
        cwd=srv.root.parent / "work",
        env=environment(srv.root),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert served == json.loads(printed.stdout)
    assert served["targets"]["memory"]["active"] >= 1


def test_list_pagination(client: httpx.Client) -> None:
    for i in range(5):
        text = f"pagination fact number {i} with marker qpage"
        _envelope(client.post("/api/memory/store", json={"content": text, "force": True}), 201)
    everything = _envelope(client.get("/api/memory/list", params={"limit": 1000}), 200)["data"]
    ids = [e["id"] for e in everything["entries"]]
    pages = []
    for offset in range(0, len(ids), 2):
        page = client.get("/api/memory/list", params={"limit": 2, "offset": offset})
        pages += [e["id"] for e in _envelope(page, 200)["data"]["entries"]]
    assert pages == ids
    _envelope(client.get("/api/memory/list", params={"limit": "many"}), 400)
    _envelope(client.get("/api/memory/list", params={"limit": 0}), 400)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b"", "JSON object"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (b'{"a":' * 50 + b"1" + b"}" * 50, "nested too deeply"),
        (b'{"content": 5}', "content must be a string"),
        (b'{"content": "x", "force": "yes"}', "force must be a boolean"),
        (b'{"body": "x"}', "unknown field"),
        (b'{"text": 5}', "text must be a string"),
        (b'{"content": "x", "target": "nowhere"}', "target must be one of"),
        # JSON's type names, as the tools answer, never Python's (int, list, NoneType)
        (b'{"content": 5}', "content must be a string, got number"),
        (b'{"content": ["x"]}', "content must be a string, got array"),
        (b'{"content": "x", "force": "yes"}', "force must be a boolean, got string"),
        (b"null", "the body must be a JSON object, got null"),
        (b"[1, 2]", "the body must be a JSON object, got array"),
    ],
)
def test_bad_store_bodies_get_400(client: httpx.Client, body: bytes, needle: str) -> None:
    response = client.post(
        "/api/memory/store", content=body, headers={"content-type": "application/json"}
    )
    assert needle in _envelope(response, 400)["error"]


@pytest.mark.parametrize("value", ["maybe", "2", "on-ish"])
def test_a_history_flag_that_is_no_boolean_gets_400(client: httpx.Client, value: str) -> None:
    """`history` is a boolean query parameter (the OpenAPI document says so): a value that is
    neither true nor false is refused, not read as false."""
    error = _envelope(client.get("/api/memory/list", params={"history": value}), 400)["error"]
    assert "history" in error and value in error


@pytest.mark.parametrize(("value", "shows_history"), [("true", True), ("1", True), ("0", False)])
def test_a_boolean_history_flag_is_read(
    client: httpx.Client, value: str, shows_history: bool
) -> None:
    project = {"X-Project": "history-flag"}
    added = _envelope(
        client.post("/api/memory/store", json={"content": "The flag fact v1"}, headers=project), 201
    )["data"]
    _envelope(
        client.patch(
            f"/api/memory/{added['entry_id']}",
            json={"content": "The flag fact, second wording"},
            headers=project,
        ),
        200,
    )
    listed = _envelope(
        client.get("/api/memory/list", params={"history": value}, headers=project), 200
    )["data"]
    texts = {e["text"] for e in listed["entries"]}
    assert ("The flag fact v1" in texts) is shows_history


def test_bad_search_arguments_get_400(client: httpx.Client) -> None:
    _envelope(client.post("/api/memory/search", json={"query": 5}), 400)
    _envelope(client.post("/api/memory/search", json={"query": "x", "limit": "ten"}), 400)
    _envelope(client.post("/api/memory/search", json={}), 400)


def test_bodies_over_the_limit_get_413(client: httpx.Client) -> None:
    big = b'{"content": "' + b"a" * (10 * 1024 * 1024) + b'"}'
    _envelope(client.post("/api/memory/store", content=big), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        yield b'{"content": "'
        for _ in range(40):
            yield b"b" * 65536
        yield b'"}'

    json_type = {"content-type": "application/json"}
    _envelope(client.post("/api/memory/store", content=chunks(), headers=json_type), 413)
    _rpc_refusal(client.post("/mcp", content=big, headers={"accept": "application/json"}), 413)


def test_unknown_routes_and_methods(client: httpx.Client) -> None:
    assert "no route" in _envelope(client.get("/nowhere"), 404)["error"]
    _envelope(client.get("/api/memory/a/b"), 404)
    _envelope(client.put("/api/memory/store"), 405)
    _envelope(client.get("/api/memory/search"), 405)


def test_foreign_origin_and_host_are_refused(client: httpx.Client) -> None:
    for origin in ("http://attacker.example", "null", "http://127.0.0.1.attacker.example"):
        headers = {"origin": origin}
        _envelope(client.get("/health", headers=headers), 403)
        _envelope(client.post("/api/memory/search", json={"query": "x"}, headers=headers), 403)
        refused = client.post("/mcp", json={"jsonrpc": "2.0", "id": 7}, headers=headers)
        assert _rpc_refusal(refused, 403)["id"] == 7
    _envelope(client.get("/health", headers={"host": "attacker.example"}), 403)
    # another local port is another origin (issue 26: any local page could write memory)
    _envelope(client.get("/health", headers={"origin": "http://localhost:3000"}), 403)
    own = str(client.base_url).rstrip("/")
    _envelope(client.get("/health", headers={"origin": own}), 200)
    # no CORS headers unless an allowlist is configured
    answer = client.get("/health", headers={"origin": own})
    assert not any(k.lower().startswith("access-control-") for k in answer.headers)


def test_openapi_document_is_plain_valid_openapi_naming_every_route(
    client: httpx.Client,
) -> None:
    from openapi_spec_validator import validate
    from pi_hermes_memory.adapters.server.app import _ROUTES

    doc = client.get("/openapi.json").json()
    assert "success" not in doc  # not in the envelope
    validate(doc)
    assert doc["openapi"].startswith("3.")
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    by_id = {(m, "/api/memory/{id}") for m in ("GET", "PATCH", "DELETE")}
    assert {*_ROUTES, *by_id, ("POST", "/mcp")} == documented
    assert doc["paths"]["/health"]["get"]["security"] == []


def test_tenancy_by_header_and_query(client: httpx.Client) -> None:
    body = {"content": "alpha project uses tabs", "target": "project"}
    _envelope(client.post("/api/memory/store", json=body, headers={"X-Project": "alpha"}), 201)

    def project_texts(**kw: Any) -> list[str]:
        page = client.get(
            "/api/memory/list",
            params={"target": "project", **kw.get("q", {})},
            headers=kw.get("h", {}),
        )
        return [e["text"] for e in _envelope(page, 200)["data"]["entries"]]

    assert "alpha project uses tabs" in project_texts(h={"X-Project": "alpha"})
    assert "alpha project uses tabs" in project_texts(q={"project": "alpha"})
    assert "alpha project uses tabs" not in project_texts(h={"X-Project": "beta"})
    # an unsafe project name is the library's InvalidArgument: 400, not 500
    _envelope(client.get("/api/memory/list", headers={"X-Project": "../etc"}), 400)


def test_agent_scopes_apply(client: httpx.Client) -> None:
    own = {"content": "agent a1 private note zq", "scope": "agent:a1"}
    _envelope(client.post("/api/memory/store", json=own, headers={"X-Agent": "a1"}), 201)
    other = {"content": "agent a2 writing into a1 zq", "scope": "agent:a1"}
    refused = client.post("/api/memory/store", json=other, headers={"X-Agent": "a2"})
    assert refused.status_code in (400, 403), refused.text

    def texts(agent: str) -> list[str]:
        page = client.get("/api/memory/list", params={"limit": 1000}, headers={"X-Agent": agent})
        return [e["text"] for e in _envelope(page, 200)["data"]["entries"]]

    assert "agent a1 private note zq" in texts("a1")
    assert "agent a1 private note zq" not in texts("a2")


def test_eight_concurrent_clients_lose_and_duplicate_nothing(srv: RunningServer) -> None:
    writers, per_writer = 8, 12
    failures: list[str] = []

    def work(w: int) -> None:
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            for s in range(per_writer):
                text = f"concurrency writer {w} step {s} token cw{w}x{s}"
                r = c.post(
                    "/api/memory/store",
                    json={"content": text, "force": True},
                    headers={"X-Project": "conc"},
                )
                if r.status_code != 201:
                    failures.append(r.text)
                hit = c.post(
                    "/api/memory/search",
                    json={"query": f"cw{w}x{s}"},
                    headers={"X-Project": "conc"},
                )
                if hit.status_code != 200:
                    failures.append(hit.text)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        page = c.get("/api/memory/list", params={"limit": 1000}, headers={"X-Project": "conc"})
        texts = [e["text"] for e in _envelope(page, 200)["data"]["entries"]]
    mine = [t for t in texts if t.startswith("concurrency writer")]
    assert len(mine) == writers * per_writer
    assert len(set(mine)) == len(mine)


def test_request_log_has_no_bodies_or_keys(srv: RunningServer, client: httpx.Client) -> None:
    client.post("/api/memory/search", json={"query": "logcanary7781"})
    log = Path(srv.log).read_text()
    assert '"event": "request"' in log and '"path": "/api/memory/search"' in log
    assert "logcanary7781" not in log


def test_the_second_seeds_importance_and_category_over_rest(client: httpx.Client) -> None:
    """`importance` and the seed's `category` (or `kind`) are stored by POST /store, changed
    by PATCH (alone too: a new version, the old one kept), filter GET /list; a failure
    entry's `category` stays its failure category; bad values are a 400."""
    project = {"X-Project": "seedfields"}
    body = {"content": "Staging runs in eu-west-1", "category": "fact", "importance": 0.9}
    first = _envelope(client.post("/api/memory/store", json=body, headers=project), 201)["data"]
    body = {"content": "Kafka carries the events", "kind": "decision"}
    _envelope(client.post("/api/memory/store", json=body, headers=project), 201)
    body = {"content": "Flaky seed test", "target": "failure", "category": "preference"}
    _envelope(client.post("/api/memory/store", json=body, headers=project), 201)
    for bad, needle in (
        ({"importance": 3}, "importance must be a number from 0 to 1"),
        ({"importance": "high"}, "importance must be a number from 0 to 1"),
        ({"kind": "mood"}, "kind must be one of"),
        ({"category": "fact", "kind": "entity"}, "different categories"),
    ):
        body = {"content": "A weight that is wrong", **bad}
        assert needle in _envelope(client.post("/api/memory/store", json=body), 400)["error"]

    def listed(**params: str) -> list[tuple[str, Any, Any, Any]]:
        page = _envelope(client.get("/api/memory/list", params=params, headers=project), 200)
        return [
            (e["text"], e["category"], e["importance"], e["kind"]) for e in page["data"]["entries"]
        ]

    assert listed(category="fact") == [("Staging runs in eu-west-1", None, 0.9, "fact")]
    assert listed(category="preference") == [("Flaky seed test", "preference", None, None)]
    _envelope(client.get("/api/memory/list", params={"category": "mood"}), 400)
    changed = client.patch(f"/api/memory/{first['entry_id']}", json={"importance": 0.2})
    second = _envelope(changed, 200)["data"]["entry_id"]
    _envelope(client.patch(f"/api/memory/{second}", json={}), 400)
    changed = client.patch(f"/api/memory/{second}", json={"category": "entity"})
    _envelope(changed, 200)
    assert listed(category="entity") == [("Staging runs in eu-west-1", None, 0.2, "entity")]
    history = listed(history="1", category="fact")
    assert sorted(history) == [
        ("Staging runs in eu-west-1", None, 0.2, "fact"),
        ("Staging runs in eu-west-1", None, 0.9, "fact"),
    ]


def test_a_non_ascii_project_header_names_the_same_project_as_the_query(
    client: httpx.Client,
) -> None:
    """Clients send header values as UTF-8 bytes: `X-Project: 项目` must be the project 项目
    (as `?project=项目` is), not a mojibake project made of its bytes read as latin-1."""
    body = {"content": "Unicode project keeps its name", "target": "project"}
    header = {"X-Project": "项目-ü".encode()}
    _envelope(client.post("/api/memory/store", json=body, headers=header), 201)
    page = client.get("/api/memory/list", params={"target": "project", "project": "项目-ü"})
    entries = _envelope(page, 200)["data"]["entries"]
    assert [(e["text"], e["project"]) for e in entries] == [(body["content"], "项目-ü")]
    stores = _envelope(client.get("/api/status"), 200)["data"]["stores"]
    assert all(s["project"] is None or s["project"].isprintable() for s in stores)
    assert not any("é" in (s["project"] or "") for s in stores)


def test_the_second_seeds_store_and_search_shapes(client: httpx.Client) -> None:
    """POST /store takes `text` (memory_store's field) as well as `content`; search takes the
    second seed's `scope`, `category` and `limit` (issue 28 §2)."""
    tenant = {"X-Project": "seedshapes", "X-Agent": "a7"}

    def store(body: dict[str, Any], status: int = 201) -> dict[str, Any]:
        return _envelope(client.post("/api/memory/store", json=body, headers=tenant), status)

    def search(body: dict[str, Any], status: int = 200) -> dict[str, Any]:
        return _envelope(client.post("/api/memory/search", json=body, headers=tenant), status)

    fact = store({"text": "The harbour crane lifts containers", "category": "fact"})["data"]
    store({"content": "The harbour crane is painted red", "category": "entity"})
    store({"text": "The harbour crane belongs to agent seven", "scope": "agent:a7"})
    both = store({"text": "harbour a", "content": "harbour b"}, 400)
    assert "not both" in both["error"]
    assert "text" in store({"category": "fact"}, 400)["error"]

    def texts(body: dict[str, Any]) -> list[str]:
        return sorted(
            h["text"] for h in search({"query": "harbour crane", **body})["data"]["results"]
        )

    assert texts({}) == [
        "The harbour crane belongs to agent seven",
        "The harbour crane is painted red",
        "The harbour crane lifts containers",
    ]
    assert texts({"category": "fact"}) == ["The harbour crane lifts containers"]
    assert texts({"category": "entity"}) == ["The harbour crane is painted red"]
    assert texts({"scope": "agent:a7"}) == ["The harbour crane belongs to agent seven"]
    assert texts({"scope": "global", "category": "fact"}) == ["The harbour crane lifts containers"]
    assert len(search({"query": "harbour crane", "limit": 2})["data"]["results"]) == 2
    assert (
        len(search({"query": "harbour crane", "category": "other", "limit": 1})["data"]["results"])
        <= 1
    )
    assert fact["entry_id"] in [
        h["id"] for h in search({"query": "harbour crane", "category": "fact"})["data"]["results"]
    ]
    for bad, needle in (
        ({"scope": "planet:mars"}, "scope must be one of"),
        ({"scope": 5}, "scope must be a string"),
        ({"scope": "agent:a7", "target": "user"}, "not user"),
        ({"category": "fact", "limit": 0}, "limit"),
        ({"category": "mood"}, "category"),
    ):
        assert needle in search({"query": "harbour", **bad}, 400)["error"]


def test_get_by_id_finds_another_projects_entry_without_a_project_header(
    client: httpx.Client,
) -> None:
    body = {"content": "Gamma project pins numpy", "target": "project"}
    added = client.post("/api/memory/store", json=body, headers={"X-Project": "gamma"})
    entry_id = _envelope(added, 201)["data"]["entry_id"]
    found = _envelope(client.get(f"/api/memory/{entry_id}"), 200)["data"]
    assert (found["id"], found["text"], found["project"]) == (entry_id, body["content"], "gamma")
    # a project that is named is the only one looked in
    _envelope(client.get(f"/api/memory/{entry_id}", headers={"X-Project": "delta"}), 404)
    _envelope(client.get("/api/memory/01NOSUCHENTRY0000000000001"), 404)
