"""`python -m pi_hermes_memory.testing.run` (`make contracts`, ADR 0058) end to end: a real
child process runs a shipped contract suite against a toy adapter in a temporary folder."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOY = textwrap.dedent(
    '''
    import hashlib
    import time

    import numpy as np
    from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, EmbeddingFailed


    class ToyEmbedder:
        """Hashed characters: deterministic, 16 components, unit length."""

        model_id = "toy/hash-16"
        dimension = 16

        def embed(self, texts, *, kind):
            rows = np.zeros((len(texts), 16), dtype=np.float64)
            for i, text in enumerate(texts):
                for ch in text:
                    rows[i, hashlib.blake2b(ch.encode()).digest()[0] % 16] += 1.0
                rows[i, 0] += 1.0
            rows /= np.linalg.norm(rows, axis=1, keepdims=True).clip(min=1e-12)
            return rows.astype(np.float32)


    class DownEmbedder(ToyEmbedder):
        def embed(self, texts, *, kind):
            raise EmbeddingFailed("transport", detail="nothing listens")


    class LeakyEmbedder(ToyEmbedder):
        """The bug the contract is for: a library's exception escapes."""

        def embed(self, texts, *, kind):
            raise ConnectionRefusedError("[Errno 111] Connection refused")


    class ToyCompleter:
        closed = False

        def complete(self, system, user, *, timeout):
            return "ok"

        def close(self):
            ToyCompleter.closed = True


    class SlowCompleter:
        def complete(self, system, user, *, timeout):
            time.sleep(timeout)
            raise CompletionFailed(CompletionFailure.TIMEOUT, "toy", f"no reply in {timeout} s")
    '''
)


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "toy_adapters.py").write_text(TOY, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.testing.run", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_a_conforming_embedder_passes(tmp_path: Path) -> None:
    done = run(
        tmp_path,
        "--kind",
        "embedder",
        "--adapter",
        "toy_adapters:ToyEmbedder",
        "--failing",
        "toy_adapters:DownEmbedder",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout and "failed" not in done.stdout
    assert "no slow_embedder fixture" in done.stdout  # skipped, saying why


def test_an_embedder_leaking_a_foreign_exception_fails_naming_it(tmp_path: Path) -> None:
    done = run(
        tmp_path,
        "--kind",
        "embedder",
        "--adapter",
        "toy_adapters:ToyEmbedder",
        "--failing",
        "toy_adapters:LeakyEmbedder",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed" in done.stdout
    assert "ConnectionRefusedError" in done.stdout and "EmbeddingFailed" in done.stdout


def test_a_completer_with_its_timeout_passes(tmp_path: Path) -> None:
    done = run(
        tmp_path,
        "--kind",
        "completer",
        "--adapter",
        "toy_adapters:ToyCompleter",
        "--slow",
        "toy_adapters:SlowCompleter",
        "--timeout",
        "0.2",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no failing_completer fixture" in done.stdout


@pytest.mark.parametrize(
    ("adapter", "said"),
    [("toy_adapters:Nope", "AttributeError"), ("no_such_module:x", "ModuleNotFoundError")],
)
def test_an_adapter_that_cannot_be_loaded_is_a_usage_error(
    tmp_path: Path, adapter: str, said: str
) -> None:
    done = run(tmp_path, "--kind", "reranker", "--adapter", adapter)
    assert done.returncode == 2
    assert said in done.stderr and adapter in done.stderr
