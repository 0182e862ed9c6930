"""The public API on a shared PostgreSQL store (issue 16): hosts with their own agent roots
and Markdown files share one journal, configured by `storage` with the DSN in the
environment."""

from __future__ import annotations

import json
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory import Memory
from pi_hermes_memory.errors import ConfigError, StorageFailed

CONFIG = {"storage": {"backend": "postgres", "dsnEnv": "TEAM_MEMORY_DSN"}}


def host(tmp_path: Path, name: str, dsn: str, config: object = CONFIG) -> Memory:
    root = tmp_path / name / "agent"
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(config))
    return pi_hermes_memory.open(
        agent_root=root,
        cwd=tmp_path / name,
        project="web",
        environ={"HOME": str(tmp_path / name), "TEAM_MEMORY_DSN": dsn},
    )


def memory_file(tmp_path: Path, name: str) -> Path:
    return tmp_path / name / "agent" / "pi-hermes-memory" / "MEMORY.md"


def test_hosts_share_one_journal_and_each_keeps_its_replica(tmp_path: Path, pg_dsn: str) -> None:
    with host(tmp_path, "a", pg_dsn) as a, host(tmp_path, "b", pg_dsn) as b:
        assert a.add("Staging deploys need the VPN").status == "added"
        assert [h["text"] for h in b.call_tool("memory_search", {"query": "VPN"})["results"]] == [
            "Staging deploys need the VPN"
        ]
        assert b.add("The build server is ci-3").status == "added"
        a_text = [e.text for e in a.entries("memory")]
        assert sorted(a_text) == ["Staging deploys need the VPN", "The build server is ci-3"]
        # a hand edit on host b is imported once, and reaches host a through the journal
        path_b = memory_file(tmp_path, "b")
        path_b.write_text(path_b.read_text().rstrip("\n") + "\n§\nAdded by hand on b\n")
        assert "Added by hand on b" in [e.text for e in b.entries("memory")]
        want = ["Added by hand on b", "Staging deploys need the VPN", "The build server is ci-3"]
        for memory in (a, b, a, b):
            assert sorted(e.text for e in memory.entries("memory")) == want
        # b's render is never a hand edit on a: a's replica converges to the same bytes
        assert memory_file(tmp_path, "a").read_bytes() == path_b.read_bytes()
    with host(tmp_path, "a", pg_dsn) as a:
        assert sorted(e.text for e in a.entries("memory")) == want  # imported once only


def test_a_missing_dsn_is_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    with pytest.raises(ConfigError, match="TEAM_MEMORY_DSN is not set"):
        pi_hermes_memory.open(agent_root=root, environ={"HOME": str(tmp_path)})
    assert not (root / "pi-hermes-memory" / "sessions.db").exists()


def test_an_unreachable_server_names_it_without_the_password(tmp_path: Path) -> None:
    dsn = f"host={tmp_path / 'no-socket'} dbname=team user=bot password=s3cret connect_timeout=1"
    with pytest.raises(StorageFailed) as raised:
        host(tmp_path, "a", dsn)
    assert "team" in str(raised.value) and "s3cret" not in str(raised.value)


def test_doctor_and_recover_say_they_are_sqlite_only(tmp_path: Path, pg_dsn: str) -> None:
    from pi_hermes_memory.errors import DoctorFailed

    with host(tmp_path, "a", pg_dsn) as a, pytest.raises(DoctorFailed, match="PostgreSQL"):
        a.doctor()
    with pytest.raises(StorageFailed, match="PostgreSQL"):
        pi_hermes_memory.recover(
            agent_root=tmp_path / "a" / "agent",
            environ={"HOME": str(tmp_path / "a"), "TEAM_MEMORY_DSN": pg_dsn},
        )


def test_skill_statistics_are_shared_by_the_hosts(tmp_path: Path, pg_dsn: str) -> None:
    from datetime import UTC, datetime

    with host(tmp_path, "a", pg_dsn) as a, host(tmp_path, "b", pg_dsn) as b:
        telemetry_a = a.skills.telemetry
        assert telemetry_a is not None
        telemetry_a.record_loads(["deploy-web"], "web", datetime.now(UTC).date())
        telemetry_b = b.skills.telemetry
        assert telemetry_b is not None
        assert telemetry_b.load_counts(None) == {"deploy-web": 1}


def test_opposite_moves_on_two_hosts_never_deadlock(tmp_path: Path, pg_dsn: str) -> None:
    """A promote (project → global) and a demote (global → project) each write both
    streams; two hosts doing them at once take the stream locks in one order (ADR 0051):
    every move lands, none fails."""
    import threading

    from tests.bench.run import TextGenerator

    texts = TextGenerator(3)
    ups, downs = [next(texts) for _ in range(12)], [next(texts) for _ in range(12)]
    with host(tmp_path, "a", pg_dsn) as a, host(tmp_path, "b", pg_dsn) as b:
        for up, down in zip(ups, downs, strict=True):
            assert a.add(up, target="project").status == "added"
            assert b.add(down, target="memory").status == "added"
        failures: list[BaseException] = []
        statuses: list[str] = []

        def moves(memory: Memory, kind: str) -> None:
            try:
                for text in ups if kind == "promote" else downs:
                    move = memory.promote if kind == "promote" else memory.demote
                    statuses.append(move(text).status)
            except BaseException as exc:
                failures.append(exc)

        threads = [
            threading.Thread(target=moves, args=(a, "promote")),
            threading.Thread(target=moves, args=(b, "demote")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        assert sorted(e.text for e in a.entries("memory")) == sorted(ups)
        assert sorted(e.text for e in b.entries("project")) == sorted(downs)
        assert len(statuses) == 24
