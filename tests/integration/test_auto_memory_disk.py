"""Auto-capture and auto-recall on the real SQLite store (issue 15 §3, ADR 0049): a re-stated
fact is not stored twice, a secret is blocked by the scanner (and never reaches the status
file), recall respects its time budget with a slowed embedder, and the CLI's
`review-status` shows what the session did."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.cli import app as cli
from pi_hermes_memory.domain.memory.model import Target

from tests.support.consistency import open_memory
from tests.support.embedders import BagEmbedder

SECRET = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _config(root: Path, **keys: Any) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(keys), encoding="utf-8")


def test_capture_dedups_and_blocks_secrets(tmp_path: Path) -> None:
    _config(tmp_path)
    with open_memory(tmp_path, "alpha") as memory:
        session = memory.session("s-disk")
        first = session.after_turn("We decided to use PostgreSQL for the event store.")
        again = session.after_turn("We decided to use PostgreSQL for the event store.")
        near = session.after_turn("OK. We have decided to use PostgreSQL for the event store!")
        assert [o.status for o in (*first, *again, *near)] == ["added", "noop", "near_duplicate"]
        (secret,) = session.after_turn(f"Remember that my GitHub token is {SECRET}")
        assert secret.status == "blocked" and SECRET not in secret.text
        views = memory.entries(Target.PROJECT)
        assert [(v.text, v.kind, v.importance) for v in views] == [
            ("We decided to use PostgreSQL for the event store.", "decision", 0.7)
        ]
    with open_memory(tmp_path, "alpha") as memory:  # what was stored is on disk
        assert len(memory.entries(Target.PROJECT)) == 1
    status_file = (tmp_path / "pi-hermes-memory" / "review-status.json").read_text()
    assert SECRET not in status_file
    capture = json.loads(status_file)["auto_memory"]["capture"]
    assert capture == {"added": 1, "blocked": 1, "near_duplicate": 1, "noop": 1, "turns": 4}


def test_recall_budget_with_a_slow_embedder(tmp_path: Path) -> None:
    _config(tmp_path, autoRecallTimeoutMs=150)
    embedder = BagEmbedder()
    gate = threading.Event()
    slow = threading.Event()

    def hold_queries(kind: str, texts: list[str]) -> None:
        if kind == "query" and slow.is_set():
            gate.wait(10)

    embedder.on_call = hold_queries
    memory = pi_hermes_memory.open(
        agent_root=tmp_path,
        cwd=tmp_path,
        project="alpha",
        environ={"HOME": str(tmp_path)},
        embedder=embedder,
    )
    try:
        memory.add("The release train leaves every Tuesday", target="project", kind="fact")
        session = memory.session("s-slow")
        fast = session.before_turn("when does the release train leave?")
        assert fast is not None and "[fact:project] The release train leaves" in fast
        slow.set()
        started = time.monotonic()
        assert session.before_turn("when does the release train leave again?") is None
        waited = time.monotonic() - started
        assert 0.14 <= waited < 1.0, waited
        assert any(kind == "query" for kind, _ in embedder.calls)
        gate.set()
        status = session.review_status().auto
        assert status is not None
        assert status.recall == {"injected": 1, "timed_out": 1}
    finally:
        gate.set()
        memory.close()


def test_review_status_cli_shows_auto_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _config(tmp_path)
    with open_memory(tmp_path, "alpha") as memory:
        session = memory.session("s-cli")
        assert session.before_turn("好的") is None
        session.after_turn("我喜欢用深色模式写代码")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli.main(["review-status", "--project", "alpha", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    auto = shown["auto_memory"]
    assert auto["session_id"] == "s-cli" and auto["skip_reasons"] == {"confirmation": 1}
    assert auto["last_captures"][0]["category"] == "preference"
    assert cli.main(["review-status", "--project", "alpha"]) == 0
    out = capsys.readouterr().out
    assert "Auto-memory (session s-cli)" in out and "capture: added 1, turns 1" in out
    assert "captured: added [preference] 我喜欢用深色模式写代码" in out


def test_capture_keeps_what_the_user_asks_not_to_forget(tmp_path: Path) -> None:
    # qa15: "don't forget that …" was refused as a "forget" request, "I'm a …" matched no
    # trigger (only "I am a …" did), "please don't store secrets in …" was taken for a
    # memory-management request
    _config(tmp_path)
    with open_memory(tmp_path, "alpha") as memory:
        session = memory.session("s-qa15")
        outcomes = session.after_turn(
            "Don't forget that staging needs the VPN. I'm a backend developer at Acme. "
            "Please don't store secrets in .env files."
        )
        assert [(o.text, o.category, o.status) for o in outcomes] == [
            ("Staging needs the VPN.", "fact", "added"),
            ("I'm a backend developer at Acme.", "entity", "added"),
            ("Please don't store secrets in .env files.", "preference", "added"),
        ]
        assert session.after_turn("Forget that staging needs the VPN.") == ()
