"""Storage-side adapters named in the configuration (ADR 0060), through the programs that read
only the configuration: the `pi-hermes-memory` CLI in a child process and a real
`pi-hermes-memory serve` on 127.0.0.1, with a real module on PYTHONPATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx

from tests.support.memory_server import running

HOST = '''
"""A search index that records every query beside the store, over the default one."""


class Recording:
    def __init__(self, inner, log):
        self._inner = inner
        self._log = log

    def search(self, query):
        with open(self._log, "a", encoding="utf-8") as f:
            f.write(query.text + "\\n")
        return self._inner.search(query)

    def rows(self, ids, query):
        return self._inner.rows(ids, query)


def recording_index(backend):
    return Recording(backend.search_index, backend.config.agent_root / "queries.log")


def broken(backend):
    raise RuntimeError("the index server is down")
'''


def _setup(tmp_path: Path, adapters: dict[str, str]) -> tuple[Path, Path]:
    host = tmp_path / "host"
    host.mkdir()
    (host / "host_index.py").write_text(textwrap.dedent(HOST), encoding="utf-8")
    root = tmp_path / "agent"
    root.mkdir()
    _config(root, adapters)
    return root, host


def _config(root: Path, adapters: dict[str, str]) -> None:
    document: dict[str, Any] = {"adapters": adapters}
    (root / "hermes-memory-config.json").write_text(json.dumps(document), encoding="utf-8")


def _cli(root: Path, host: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PI_CODING_AGENT_DIR": str(root),
        "HOME": str(root.parent),
        "PYTHONPATH": os.pathsep.join([str(host), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=60,
    )


def _queries(root: Path) -> list[str]:
    log = root / "queries.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_the_cli_uses_the_search_index_named_in_the_config(tmp_path: Path) -> None:
    root, host = _setup(tmp_path, {"searchIndex": "host_index:recording_index"})
    added = _cli(root, host, "add", "Deploys go through blue-green switching")
    assert added.returncode == 0, added.stderr
    found = _cli(root, host, "search", "blue-green deploys")
    assert found.returncode == 0, found.stderr
    assert "Deploys go through blue-green switching" in found.stdout
    assert "blue-green deploys" in _queries(root)


def test_the_cli_refuses_a_wrong_entry_naming_field_and_path(tmp_path: Path) -> None:
    root, host = _setup(tmp_path, {"searchIndex": "host_index:nope"})
    wrong = _cli(root, host, "search", "anything")
    assert wrong.returncode != 0
    assert "adapters.searchIndex" in wrong.stderr and "host_index:nope" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    _config(root, {"searchIndex": "host_index:broken"})
    failing = _cli(root, host, "add", "a fact")
    assert failing.returncode != 0 and "the index server is down" in failing.stderr
    _config(root, {"vectorstore": "host_index:recording_index"})
    typo = _cli(root, host, "list")
    assert typo.returncode != 0 and "adapters.vectorstore: names no part" in typo.stderr
    assert _queries(root) == []


def test_the_server_uses_the_search_index_named_in_the_config(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "host_index.py").write_text(textwrap.dedent(HOST), encoding="utf-8")
    root = tmp_path / "agent"
    root.mkdir()
    _config(root, {"searchIndex": "host_index:recording_index"})
    pythonpath = os.pathsep.join([str(host), os.environ.get("PYTHONPATH", "")])
    with (
        running(tmp_path, env={"PYTHONPATH": pythonpath}) as srv,
        httpx.Client(base_url=srv.url, timeout=30) as client,
    ):
        stored = client.post("/api/memory/store", json={"content": "The CI runs on Buildkite"})
        assert stored.status_code == 201, stored.text
        found = client.post("/api/memory/search", json={"query": "Buildkite CI"})
        assert found.status_code == 200, found.text
        texts = [hit["text"] for hit in found.json()["data"]["results"]]
    assert "The CI runs on Buildkite" in texts
    assert "Buildkite CI" in _queries(root)
