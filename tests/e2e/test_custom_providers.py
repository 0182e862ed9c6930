"""Adapters named in the configuration by import path (ADR 0057): a real module in a temporary
folder on the import path, used through `open()` and through the command line; a wrong path
is a ConfigError naming it, never a silent default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.config.settings import ConfigError

ADAPTERS = '''
"""Host adapters for the import-path test: each appends a line to options["marker"]."""
import zlib

import numpy as np


def _note(options, line):
    with open(options["marker"], "a", encoding="utf-8") as f:
        f.write(line + "\\n")


class MarkerEmbedder:
    def __init__(self, options):
        self.options = dict(options)
        self.model_id = "custom/marker-" + options["model"]
        self.dimension = 32
        self.closed = False

    def embed(self, texts, *, kind):
        _note(self.options, f"embed {kind} {len(texts)}")
        matrix = np.zeros((len(texts), 32), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                matrix[i, zlib.crc32(word.encode()) % 32] += 1.0
            matrix[i, 31] += 0.01
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    def close(self):
        _note(self.options, "close")


class FixedReranker:
    def __init__(self, options):
        self.options = options

    def rerank(self, query, documents):
        _note(self.options, f"rerank {len(documents)}")
        return [0.5 for _ in documents]


class EchoCompleter:
    def __init__(self, options):
        self.options = options

    def complete(self, system, user, *, timeout):
        return "{}"


def broken(options):
    raise RuntimeError("no model here")
'''


@pytest.fixture
def adapters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "host_adapters.py").write_text(textwrap.dedent(ADAPTERS), encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    return folder


def _config(root: Path, document: dict[str, Any]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(document), encoding="utf-8")


def _lines(marker: Path) -> list[str]:
    return marker.read_text(encoding="utf-8").splitlines() if marker.exists() else []


def test_open_builds_the_embedder_reranker_and_llm_named_by_import_path(
    tmp_path: Path, adapters: Path
) -> None:
    root, marker = tmp_path / "agent", tmp_path / "marker.txt"
    _config(
        root,
        {
            "embedding": {
                "provider": "host_adapters:MarkerEmbedder",
                "model": "m1",
                "marker": str(marker),
            },
            "retrieval": {
                "rerank": {"provider": "host_adapters:FixedReranker", "marker": str(marker)}
            },
            "llm": {"provider": "host_adapters:EchoCompleter"},
        },
    )
    with pi_hermes_memory.open(agent_root=root, cwd=tmp_path, environ={}) as memory:
        assert memory.embeddings is not None
        assert memory.embeddings.model_id == "custom/marker-m1"
        assert memory.llm_off is None
        assert type(memory.llm).__name__ == "EchoCompleter"
        memory.add("Deploys go through blue-green switching")
        memory.add("The staging database is refreshed nightly")
        hits = memory.search("blue-green deploys").hits
        assert hits and hits[0].text == "Deploys go through blue-green switching"
    lines = _lines(marker)
    assert "embed passage 1" in lines and any(line.startswith("embed query") for line in lines)
    assert any(line.startswith("rerank ") for line in lines)
    assert lines[-1] == "close"  # the store closed the embedder


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("host_adapters:Missing", "has no attribute 'Missing'"),
        ("no_such_host_module:Embedder", "cannot import the module 'no_such_host_module'"),
        ("host_adapters:broken", "failed to build the adapter: RuntimeError: no model here"),
    ],
)
def test_a_wrong_import_path_is_a_config_error_naming_it(
    tmp_path: Path, adapters: Path, path: str, says: str
) -> None:
    root = tmp_path / "agent"
    _config(root, {"embedding": {"provider": path, "model": "m1"}})
    with pytest.raises(ConfigError) as raised:
        pi_hermes_memory.open(agent_root=root, cwd=tmp_path, environ={})
    assert str(raised.value).startswith("embedding.provider: ")
    assert says in str(raised.value) and (path in str(raised.value) or "no_such" in path)


def test_custom_without_a_path_is_refused_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    _config(root, {"embedding": {"provider": "custom"}, "llm": {"provider": "custom"}})
    with pi_hermes_memory.open(agent_root=root, cwd=tmp_path, environ={}) as memory:
        assert memory.embeddings is None and memory.llm_off is not None
        assert any(w.startswith("embedding.provider: name your adapter") for w in memory.warnings)
        assert any(w.startswith("llm.provider: name your adapter") for w in memory.warnings)


def _cli(root: Path, adapters: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PI_CODING_AGENT_DIR": str(root),
        "HOME": str(root.parent),
        "PYTHONPATH": os.pathsep.join([str(adapters), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=60,
    )


def test_the_cli_uses_the_embedder_named_by_import_path(tmp_path: Path, adapters: Path) -> None:
    root, marker = tmp_path / "agent", tmp_path / "marker.txt"
    embedding = {"provider": "host_adapters:MarkerEmbedder", "model": "m1", "marker": str(marker)}
    _config(root, {"embedding": embedding})
    added = _cli(root, adapters, "add", "Deploys go through blue-green switching")
    assert added.returncode == 0, added.stderr
    found = _cli(root, adapters, "search", "blue-green deploys")
    assert found.returncode == 0, found.stderr
    assert "Deploys go through blue-green switching" in found.stdout
    lines = _lines(marker)
    assert "embed passage 1" in lines and any(line.startswith("embed query") for line in lines)
    _config(root, {"embedding": {**embedding, "provider": "host_adapters:Nope"}})
    wrong = _cli(root, adapters, "search", "blue-green")
    assert wrong.returncode != 0
    assert "host_adapters:Nope" in wrong.stderr and "Traceback" not in wrong.stderr
