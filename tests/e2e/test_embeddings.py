"""Embeddings end to end: `pi_hermes_memory.open` and the CLI with a config file pointing at the
local fixture server and the key in an environment variable (ADR 0015)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pi_hermes_memory
import pytest
from pi_hermes_memory import HermesMemoryError, Memory
from pi_hermes_memory.config.settings import EmbeddingDisabledReason

from tests.support.embedding_server import FIXTURE_KEY, SECRET_PATH, EmbeddingServer

KEY_ENV = "PHM_TEST_EMBEDDING_KEY"
PARAPHRASE_A = "Production deploys use the blue green script"
PARAPHRASE_B = "Prod deployments use the blue-green script"


def embedding_section(server: EmbeddingServer | None) -> dict[str, Any]:
    """The `embedding` config section pointing at the fixture server ({} without one)."""
    if server is None:
        return {}
    return {
        "provider": "openai-compatible",
        "baseUrl": server.url,
        "model": "fixture-embed",
        "apiKeyEnv": KEY_ENV,
        "timeoutMs": 2000,
    }


def write_config(root: Path, server: EmbeddingServer | None, **embedding: Any) -> None:
    section = embedding_section(server)
    section.update(embedding)
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps({"embedding": section}))


def open_memory(root: Path, key: str | None = FIXTURE_KEY, **kw: Any) -> Memory:
    environ = {"HOME": str(root.parent)}
    if key is not None:
        environ[KEY_ENV] = key
    return pi_hermes_memory.open(agent_root=root, cwd=root.parent, environ=environ, **kw)


def vectors(root: Path) -> dict[str, tuple[int, str]]:
    conn = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    try:
        return {
            str(text): (len(blob), str(model))
            for text, blob, model in conn.execute(
                "SELECT text, embedding, embedding_model FROM memories WHERE embedding IS NOT NULL"
            )
        }
    finally:
        conn.close()


def test_open_with_a_provider_embeds_writes_and_blocks_paraphrases(
    root: Path, server: EmbeddingServer
) -> None:
    write_config(root, server)
    with open_memory(root, project="web") as m:
        assert m.embeddings is not None
        assert m.embeddings.model_id == "openai-compatible/fixture-embed"
        assert m.add(PARAPHRASE_A, target="project").status == "added"
        blocked = m.add(PARAPHRASE_B, target="project")
        assert blocked.status == "near_duplicate" and blocked.candidates[0].basis == "cosine"
        assert m.search("blue green").status == "ok"  # FTS search is unchanged
    assert vectors(root) == {PARAPHRASE_A: (4 * 64, "openai-compatible/fixture-embed")}
    assert server.requests[0]["authorization"] == f"Bearer {FIXTURE_KEY}"
    assert server.requests[0]["path"] == SECRET_PATH + "/embeddings"


def test_the_memory_tool_gets_the_cosine_rule_too(root: Path, server: EmbeddingServer) -> None:
    write_config(root, server)
    with open_memory(root) as m:
        m.call_tool("memory", {"action": "add", "target": "memory", "content": PARAPHRASE_A})
        result = m.call_tool(
            "memory", {"action": "add", "target": "memory", "content": PARAPHRASE_B}
        )
    assert result["status"] == "near_duplicate"
    assert FIXTURE_KEY not in json.dumps(result)


def test_without_a_provider_nothing_changes(root: Path) -> None:
    with open_memory(root) as m:
        assert m.embeddings is None
        assert m.config.embedding_disabled_reason is EmbeddingDisabledReason.PROVIDER_OFF
        m.add(PARAPHRASE_A)
        assert m.add(PARAPHRASE_B).status == "added"  # token rule only
        with pytest.raises(HermesMemoryError, match=r"embedding\.provider is 'off'"):
            m.reembed()
    assert vectors(root) == {}


def test_a_missing_key_turns_embeddings_off(root: Path, server: EmbeddingServer) -> None:
    write_config(root, server)
    with open_memory(root, key=None) as m:
        assert m.embeddings is None
        assert m.config.embedding_disabled_reason is EmbeddingDisabledReason.API_KEY_MISSING
        m.add(PARAPHRASE_A)
        with pytest.raises(HermesMemoryError, match=r"apiKeyEnv is unset or empty"):
            m.reembed()
    assert server.requests == []


def test_open_without_embeddings_loads_neither_httpx_nor_numpy(root: Path) -> None:
    code = (
        "import sys, pi_hermes_memory as p; "
        f"m = p.open(agent_root={str(root)!r}, cwd={str(root.parent)!r}, environ={{}}); "
        "m.add('a fact'); m.search('fact'); m.close(); "
        "print([n for n in ('httpx', 'numpy') if n in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_down_provider_never_fails_a_write(root: Path, server: EmbeddingServer) -> None:
    write_config(root, server, timeoutMs=200)
    server.mode, server.delay = "timeout", 5.0
    with open_memory(root) as m:
        assert m.add(PARAPHRASE_A).status == "added"
        assert m.add(PARAPHRASE_B).status == "added"
    assert vectors(root) == {}


def test_reembed_fills_rows_written_while_the_provider_was_off(
    root: Path, server: EmbeddingServer
) -> None:
    with open_memory(root) as m:  # no provider yet
        for i in range(5):
            m.add(f"fact number {i} about subject{i}")
    write_config(root, server)
    seen: list[tuple[int, int]] = []
    with open_memory(root) as m:
        report = m.reembed(lambda p: seen.append((p.done, p.total)), batch_size=2)
    assert (report.total, report.embedded, report.failed, report.batches) == (5, 5, 0, 3)
    assert seen == [(2, 5), (4, 5), (5, 5)]
    assert len(vectors(root)) == 5


# --- the CLI ----------------------------------------------------------------------------------


def cli(root: Path, *args: str, key: str | None = FIXTURE_KEY) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    env.pop(KEY_ENV, None)
    if key is not None:
        env[KEY_ENV] = key
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=60,
    )


def test_cli_reembed_reports_progress_and_json(root: Path, server: EmbeddingServer) -> None:
    root.mkdir(parents=True)
    for i in range(3):
        assert cli(root, "add", f"fact number {i} about subject{i}").returncode == 0
    write_config(root, server)
    done = cli(root, "reembed", "--batch-size", "2")
    assert done.returncode == 0, done.stderr
    assert "reembed: 2/3 entries" in done.stderr and "reembed: 3/3 entries" in done.stderr
    assert "entries/s" in done.stderr
    assert done.stdout.startswith("Embedded 3 of 3 entries with openai-compatible/fixture-embed")
    again = cli(root, "reembed", "--all", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["success"] is True and report["all"] is True
    assert (report["total"], report["embedded"], report["failed"]) == (3, 3, 0)
    assert report["model"] == "openai-compatible/fixture-embed"


def test_cli_reembed_with_the_provider_off(root: Path) -> None:
    root.mkdir(parents=True)
    off = cli(root, "reembed")
    assert off.returncode == 1
    assert "cannot reembed: embeddings are off: embedding.provider is 'off'" in off.stderr


def test_cli_reembed_fails_when_the_provider_does(root: Path, server: EmbeddingServer) -> None:
    root.mkdir(parents=True)
    assert cli(root, "add", "a fact to embed").returncode == 0
    write_config(root, server)
    bad = cli(root, "reembed", "--json", key="sk-wrong-key-for-this-server")
    assert bad.returncode == 1
    report = json.loads(bad.stdout)
    assert (report["embedded"], report["failed"]) == (0, 1)
    output = bad.stdout + bad.stderr
    assert "sk-wrong-key" not in output and SECRET_PATH not in output
    assert FIXTURE_KEY not in output


def test_cli_output_never_shows_the_key_or_the_url(root: Path, server: EmbeddingServer) -> None:
    write_config(root, server)
    server.mode, server.status = "status", 500
    added = cli(root, "add", PARAPHRASE_A)
    assert added.returncode == 0, added.stderr
    output = added.stdout + added.stderr
    assert FIXTURE_KEY not in output and SECRET_PATH not in output
    assert str(server.port) not in output
