"""`migrate DIR` reads the second seed's LanceDB directory, run as a real process (ADR 0075).

The table is written with the Python lancedb package in the schema of memory-lancedb-pro's
`src/store.ts` (id, text, vector as a fixed-size float32 list, category, scope, importance and
timestamp as doubles, metadata as a JSON string); the embedding provider is the local fixture
server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import lancedb  # the [lancedb] extra, installed by `make dev`
import numpy as np
import pyarrow as pa
import pytest

from tests.e2e.test_embeddings import KEY_ENV, write_config
from tests.support.embedding_server import FIXTURE_KEY, EmbeddingServer

SECRET = "ghp_" + "R7kPq2ZxW9mLs4TbVn8YcJ3hFd6GaE1uKo5i"
UUID = "0b6f3c1e-1111-4000-8000-000000000001"
JAN_1_2026_MS = 1767225600000.0
GOOD_TEXTS = {
    "User prefers dark mode in every editor",
    "Bob maintains the Go services",
    "The web project uses pnpm workspaces",
    "A row whose id has a space",
}


def _schema(dim: int) -> pa.Schema:
    """The columns `src/store.ts` creates (its schema row: strings, a number[] vector, numbers)."""
    return pa.schema(
        [
            ("id", pa.utf8()),
            ("text", pa.utf8()),
            ("vector", pa.list_(pa.float32(), dim)),
            ("category", pa.utf8()),
            ("scope", pa.utf8()),
            ("importance", pa.float64()),
            ("timestamp", pa.float64()),
            ("metadata", pa.utf8()),
        ]
    )


def _vector(i: int, dim: int) -> list[float]:
    """A vector the fixture server would never compute (so reuse is visible)."""
    v = np.zeros(dim)
    v[i % dim], v[(3 * i + 1) % dim] = 1.0, -0.5
    return [float(x) for x in v]


def _row(i: int, dim: int, id_: str, text: str, **kw: Any) -> dict[str, Any]:
    row = {
        "id": id_,
        "text": text,
        "vector": _vector(i, dim),
        "category": "fact",
        "scope": "global",
        "importance": 0.7,
        "timestamp": JAN_1_2026_MS,
        "metadata": "{}",
    }
    row.update(kw)
    return row


def _seed_table(folder: Path, dim: int = 64) -> Path:
    meta = {"l0_abstract": "dark mode", "tier": "core", "last_accessed_at": 1769904000000}
    rows = [
        _row(
            1,
            dim,
            UUID,
            "User prefers dark mode in every editor",
            category="preference",
            importance=0.9,
            metadata=json.dumps(meta),
        ),
        # an old row: timestamp in seconds (the seed's v1 rows)
        _row(2, dim, "m-2", "Bob maintains the Go services", scope="agent:bob", timestamp=1.7e9),
        _row(3, dim, "m-3", "The web project uses pnpm workspaces", scope="project:web"),
        _row(4, dim, "x y", "A row whose id has a space", category="decision"),
        _row(5, dim, "m-secret", f"The deploy token is {SECRET}"),
        _row(6, dim, "m-empty", "   "),
        _row(7, dim, "m-scope", "A row of an unknown scope", scope="team:ops"),
        _row(
            8,
            dim,
            "m-old",
            "The test command was make check",
            metadata=json.dumps({"invalidated_at": 1767225600000, "superseded_by": "m-new"}),
        ),
        _row(9, dim, "m-2", "Bob maintains the Go services twice"),
    ]
    table = lancedb.connect(str(folder)).create_table("memories", schema=_schema(dim))
    table.add(rows)
    return folder


def run(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    environ[KEY_ENV] = FIXTURE_KEY
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=root.parent,
        timeout=120,
    )


def _stored_vectors(root: Path) -> dict[str, tuple[np.ndarray[Any, Any], str]]:
    conn = apsw.Connection(str(root / "pi-hermes-memory" / "sessions.db"))
    try:
        return {
            str(i): (np.frombuffer(blob, dtype="<f4"), str(model))
            for i, blob, model in conn.execute(
                "SELECT id, embedding, embedding_model FROM memories WHERE embedding IS NOT NULL"
            )
        }
    finally:
        conn.close()


def _texts(root: Path) -> set[str]:
    done = run(root, "--agent", "bob", "--project", "web", "list", "--json")
    assert done.returncode == 0, done.stderr
    return {e["text"] for e in json.loads(done.stdout)}


@pytest.fixture
def root(tmp_path: Path, server: EmbeddingServer) -> Path:
    root = tmp_path / "agent"
    write_config(root, server, dimensions=64)
    assert run(root, "add", "An entry that was here before").returncode == 0
    return root


def test_dry_run_real_run_and_second_run(
    root: Path, tmp_path: Path, server: EmbeddingServer
) -> None:
    source = _seed_table(tmp_path / "lancedb")
    before = _texts(root)
    dry = run(
        root, "migrate", str(source), "--source-model", "fixture-embed", "--dry-run", "--json"
    )
    report = json.loads(dry.stdout)
    assert report["status"] == "preview" and len(report["added"]) == 4, dry.stdout
    assert _texts(root) == before  # a dry run writes nothing

    server.reset()
    done = run(root, "migrate", str(source), "--source-model", "fixture-embed", "--json")
    assert done.returncode == 1, done.stderr  # some rows were skipped: a partial import
    report = json.loads(done.stdout)
    assert report["status"] == "partial" and len(report["added"]) == 4
    reasons = {r["ids"][0]: r["reason"] for r in report["refused"]}
    assert set(reasons) == {"m-secret", "m-empty", "m-scope", "m-old", "m-2"}, reasons
    assert SECRET not in done.stdout + done.stderr  # the refusal never echoes the secret
    assert "malformed" in reasons["m-empty"] and "malformed" in reasons["m-scope"]
    assert "no longer current" in reasons["m-old"] and "twice" in reasons["m-2"]
    assert "x y" in report["id_mapping"]
    assert any("vectors are reused" in n for n in report["notes"]), report["notes"]
    assert any("4 vectors reused" in n for n in report["notes"]), report["notes"]
    assert any("l0_abstract (1)" in n and "tier (1)" in n for n in report["notes"])
    # every kept row, and the entry that was there before
    assert _texts(root) == before | GOOD_TEXTS
    # the vectors were reused, not computed again by the provider
    assert not GOOD_TEXTS & set(server.embedded_texts())
    stored = _stored_vectors(root)
    vector, model = stored[UUID]
    expected = np.asarray(_vector(1, 64))
    assert model == "openai-compatible/fixture-embed"
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
    got = json.loads(run(root, "get", UUID, "--json").stdout)
    assert (got["kind"], got["importance"], got["created"]) == ("preference", 0.9, "2026-01-01")
    assert got["last_referenced"] == "2026-02-01"  # metadata last_accessed_at
    bob = json.loads(run(root, "--agent", "bob", "get", "m-2", "--json").stdout)
    assert bob["created"] == "2023-11-14"  # a timestamp in seconds

    again = run(root, "migrate", str(source), "--source-model", "fixture-embed", "--json")
    report = json.loads(again.stdout)
    assert report["added"] == [] and len(report["unchanged"]) == 4, again.stdout
    assert _texts(root) == before | GOOD_TEXTS

    text = run(root, "migrate", str(source), "--source-model", "fixture-embed")
    assert text.stdout.startswith("Imported 0 entries, 4 already in the store")
    assert "refused m-scope: malformed row" in text.stdout


def test_another_model_or_dimension_is_re_embedded(
    root: Path, tmp_path: Path, server: EmbeddingServer
) -> None:
    source = _seed_table(tmp_path / "lancedb")
    done = run(root, "migrate", str(source), "--source-model", "text-embedding-3-small")
    assert done.returncode == 1, done.stderr
    assert "are of text-embedding-3-small (--source-model)" in done.stderr
    assert "re-embedding" in done.stderr
    assert set(server.embedded_texts()) >= GOOD_TEXTS
    stored = _stored_vectors(root)
    expected = np.asarray(_vector(1, 64))
    assert not np.allclose(stored[UUID][0], expected / np.linalg.norm(expected), atol=1e-3)

    other = tmp_path / "other" / "agent"
    write_config(other, server, dimensions=64)
    narrow = _seed_table(tmp_path / "narrow", dim=8)
    done = run(other, "migrate", str(narrow), "--source-model", "fixture-embed")
    assert "8 dimensions, the configured" in done.stderr and "re-embedding" in done.stderr
    assert all(len(v) == 64 for v, _ in _stored_vectors(other).values())


def test_the_model_is_read_from_openclaw_json(
    root: Path, tmp_path: Path, server: EmbeddingServer
) -> None:
    config = tmp_path / "openclaw.json"
    plugin = {"embedding": {"model": "fixture-embed", "apiKey": "${OPENAI_API_KEY}"}}
    config.write_text(json.dumps({"plugins": {"entries": {"pi-memory": {"config": plugin}}}}))
    source = _seed_table(tmp_path / "lancedb")
    done = run(
        root, "migrate", str(source / "memories.lance"), env={"PI_MEMORY_CONFIG": str(config)}
    )
    assert f"embedding.model of {config}" in done.stderr, done.stderr
    assert "vectors are reused" in done.stderr
    assert not GOOD_TEXTS & set(server.embedded_texts())


def test_without_the_extra_one_clean_line(tmp_path: Path) -> None:
    """A lancedb that cannot be imported (as when the extra is not installed): one line."""
    shadow = tmp_path / "shadow" / "lancedb"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'lancedb'\")\n")
    source = _seed_table(tmp_path / "lancedb")
    root = tmp_path / "agent"
    done = run(root, "migrate", str(source), env={"PYTHONPATH": str(tmp_path / "shadow")})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "pi-hermes-memory[lancedb]" in done.stderr
    # the core package and the CLI never import lancedb on their own
    probe = (
        "import sys, pi_hermes_memory, pi_hermes_memory.adapters.cli.app; "
        "assert 'lancedb' not in sys.modules and 'pyarrow' not in sys.modules"
    )
    assert subprocess.run([sys.executable, "-c", probe], timeout=60).returncode == 0


def test_a_folder_without_a_table_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    (tmp_path / "empty").mkdir()
    done = run(root, "migrate", str(tmp_path / "empty"))
    assert done.returncode != 0 and "memories.lance" in done.stderr
    assert "Traceback" not in done.stderr
