"""A real `pi-hermes-memory serve` configured by an openclaw.json (ADR 0047): its embedding
section points at the local fixture server, the reranker and the store folder come from the
environment; a stored memory gets a vector and hybrid search works through REST."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.support.embedding_server import FIXTURE_KEY, SECRET_PATH, EmbeddingServer
from tests.support.memory_server import running

DEPLOY = "Production deploys use the blue green script"
ROLLBACK = "Rollback runbook: deploy the previous tag"
QUESTION = "prod deployments"  # shares no word with DEPLOY: only its vector matches


def _data(response: httpx.Response, status: int) -> Any:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is (status < 400)
    return body["data"]


def test_openclaw_json_and_environment_configure_the_server(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    openclaw = tmp_path / "openclaw.json"
    embedding = {"apiKey": "${FIXTURE_EMBED_KEY}", "baseURL": server.url, "model": "fixture"}
    config = {"embedding": embedding, "autoCapture": True}
    openclaw.write_text(
        json.dumps({"plugins": {"entries": {"pi-memory": {"enabled": True, "config": config}}}})
    )
    store_dir = tmp_path / "store"
    env = {
        "FIXTURE_EMBED_KEY": FIXTURE_KEY,
        "PI_MEMORY_DB_PATH": str(store_dir),
        "PI_MEMORY_RERANK_API_KEY": FIXTURE_KEY,
        "PI_MEMORY_RERANK_ENDPOINT": f"{server.url}/rerank",
    }
    with running(tmp_path, "--config", str(openclaw), env=env) as srv:
        with httpx.Client(base_url=srv.url, timeout=30) as client:
            for text in (DEPLOY, ROLLBACK):
                _data(client.post("/api/memory/store", json={"content": text}), 201)
            assert DEPLOY in server.embedded_texts()  # the stored memory got its vector
            found = _data(client.post("/api/memory/search", json={"query": QUESTION}), 200)
            assert [r["text"] for r in found["results"]][:1] == [DEPLOY]
            health = _data(client.get("/api/status"), 200)
            assert health["embedding"] == {
                "enabled": True,
                "model": "fixture",
                "dimensions": None,
                "disabled_reason": None,
            }
            assert health["rerank"]["enabled"] is True
            models = [s["embeddings"]["model"] for s in health["stores"]]
            assert models == ["openai-compatible/fixture"]
            assert FIXTURE_KEY not in json.dumps(health) and server.url not in json.dumps(health)
            server.rerank_scores = {ROLLBACK: 1.0, DEPLOY: 0.0}
            found = _data(client.post("/api/memory/search", json={"query": "deploy script"}), 200)
            assert found["results"][0]["text"] == ROLLBACK
        log = srv.log.read_text()
    assert "autoCapture" not in log  # read (ADR 0075), no longer "not a known key"
    assert FIXTURE_KEY not in log and SECRET_PATH not in log
    rerank_calls = [r for r in server.requests if r["path"].endswith("/rerank")]
    assert rerank_calls and rerank_calls[0]["authorization"] == f"Bearer {FIXTURE_KEY}"
    # PI_MEMORY_DB_PATH is the database's folder (memoryDir, ADR 0075): sessions.db is there
    assert (store_dir / "sessions.db").is_file()
    assert not list((tmp_path / "agent").rglob("sessions.db"))


def test_a_literal_key_in_openclaw_json_stops_start_with_exit_2(tmp_path: Path) -> None:
    import subprocess

    from tests.support.memory_server import command, environment

    openclaw = tmp_path / "openclaw.json"
    config = {"embedding": {"apiKey": "sk-literal-9876543210", "model": "m"}}
    openclaw.write_text(json.dumps({"plugins": {"entries": {"pi-memory": {"config": config}}}}))
    done = subprocess.run(
        command("serve", "--config", str(openclaw)),
        env=environment(tmp_path / "agent"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "${ENV_NAME}" in done.stderr and "sk-literal" not in done.stderr + done.stdout


def test_the_pi_memory_server_script_answers_version_and_usage_errors() -> None:
    script = "from pi_hermes_memory.adapters.cli.server import main; raise SystemExit(main())"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60
        )

    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("pi-hermes-memory "), version
    bad = run("--port", "notaport")
    assert bad.returncode == 2 and "--port" in bad.stderr and "Traceback" not in bad.stderr
