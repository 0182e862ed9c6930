"""`migrate --to postgres` and export/import between the local and the shared store, through
the CLI as a subprocess (issue 16)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CONFIG = {"storage": {"backend": "postgres", "dsnEnv": "TEAM_DSN"}}


def cli(root: Path, dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    env["TEAM_DSN"] = dsn
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=120,
    )


def texts(root: Path, dsn: str) -> list[str]:
    done = cli(root, dsn, "list", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return sorted(e["text"] for e in data)


def test_migrate_to_postgres_copies_the_journal_once(tmp_path: Path, pg_dsn: str) -> None:
    root = tmp_path / "agent"
    for text in ("Deploys need the VPN", "The build server is ci-3", "Prefers short answers"):
        assert cli(root, pg_dsn, "add", text).returncode == 0
    local = texts(root, pg_dsn)
    done = cli(root, pg_dsn, "migrate", "--to", "postgres", "--dsn-env", "TEAM_DSN", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["events"] >= 3 and report["refused"] == [] and report["store_id_adopted"]
    again = json.loads(
        cli(root, pg_dsn, "migrate", "--to", "postgres", "--dsn-env", "TEAM_DSN", "--json").stdout
    )
    assert again["events"] == 0 and again["already_there"] == report["events"]  # idempotent
    before = (root / "pi-hermes-memory" / "MEMORY.md").read_bytes()
    (root / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    assert texts(root, pg_dsn) == local  # the same entries, none imported twice
    assert (root / "pi-hermes-memory" / "MEMORY.md").read_bytes() == before
    # another host joins with an empty root: it renders the shared entries
    other = tmp_path / "other" / "agent"
    other.mkdir(parents=True)
    (other / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    assert texts(other, pg_dsn) == local
    # and export from the shared store imports into a fresh local one
    exported = tmp_path / "team.jsonl"
    assert cli(other, pg_dsn, "export", "-o", str(exported)).returncode == 0
    fresh = tmp_path / "fresh" / "agent"
    fresh.mkdir(parents=True)
    done = cli(fresh, pg_dsn, "import", str(exported))
    assert done.returncode == 0, done.stderr
    assert texts(fresh, pg_dsn) == local


def test_migrate_to_postgres_without_a_dsn_is_a_usage_error(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    done = cli(root, "", "migrate", "--to", "postgres", "--dsn-env", "TEAM_DSN")
    assert done.returncode == 2 and "TEAM_DSN" in done.stderr and "not set" in done.stderr
    done = cli(root, "", "migrate")
    assert done.returncode != 0 and "FILE" in done.stderr


def test_an_unparsable_dsn_is_refused_without_quoting_the_password(tmp_path: Path) -> None:
    # libpq's parser quotes the text around the fault: for these, part or all of the password
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    for dsn, secret in (
        ("postgresql://bot:Qv7%zzKj2@db.internal/team", "Qv7"),
        ("host=db.internal dbname=team user=bot password=Qv7 Kj2", "Kj2"),
    ):
        for args in (("list",), ("migrate", "--to", "postgres", "--dsn-env", "TEAM_DSN")):
            if args[0] == "migrate":
                (root / "pi-hermes-memory").mkdir(exist_ok=True)
                (root / "pi-hermes-memory" / "sessions.db").touch()
            done = cli(root, dsn, *args)
            assert done.returncode == 1, (args, done.stderr)
            assert "DSN cannot be parsed" in done.stderr, done.stderr
            assert secret not in done.stderr and secret not in done.stdout, done.stderr
            assert "Traceback" not in done.stderr


def test_an_unknown_backend_opens_no_local_store_in_its_place(tmp_path: Path) -> None:
    # a typo once fell back to a local SQLite store: this host then wrote a store of its own,
    # unseen by the team, after importing the shared entries from its files as hand edits
    root = tmp_path / "agent"
    memory_md = root / "pi-hermes-memory" / "MEMORY.md"
    memory_md.parent.mkdir(parents=True)
    memory_md.write_text("Rendered from the team's journal\n")
    for storage, named in (
        ({"backend": "postgresql", "dsnEnv": "TEAM_DSN"}, "storage.backend"),
        ("postgres", "storage: expected an object"),
    ):
        (root / "hermes-memory-config.json").write_text(json.dumps({"storage": storage}))
        for args in (("add", "A note"), ("list",), ("tool", "memory_search", '{"query": "x"}')):
            done = cli(root, "host=/nowhere dbname=team", *args)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            assert named in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert not (root / "pi-hermes-memory" / "sessions.db").exists()
        assert memory_md.read_text() == "Rendered from the team's journal\n"
        done = cli(root, "", "doctor", "--json")
        assert done.returncode == 1 and named in done.stdout, (done.stdout, done.stderr)
        done = cli(root, "", "recover")
        assert done.returncode != 0 and named in done.stderr, done.stderr
        assert not (root / "pi-hermes-memory" / "sessions.db").exists()


def test_an_empty_dsn_variable_is_named_as_empty(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    done = cli(root, "  ", "list")
    assert done.returncode == 2 and "TEAM_DSN is not set or is empty" in done.stderr, done.stderr


def test_switching_the_config_before_the_copy_still_copies_everything(
    tmp_path: Path, pg_dsn: str
) -> None:
    # issue 26 §4: the config switched first, then any command opened the empty shared store,
    # imported this host's files as new entries, and `migrate` copied 0 events ("a different
    # history"), exit 1, with no way forward
    root = tmp_path / "agent"
    for text in ("Deploys need the VPN", "The build server is ci-3"):
        assert cli(root, pg_dsn, "add", text).returncode == 0
    assert (
        cli(
            root, pg_dsn, "delete", json.loads(cli(root, pg_dsn, "list", "--json").stdout)[0]["id"]
        ).returncode
        == 0
    )
    local = texts(root, pg_dsn)
    before = (root / "pi-hermes-memory" / "MEMORY.md").read_bytes()
    (root / "hermes-memory-config.json").write_text(json.dumps(CONFIG))

    opened = cli(root, pg_dsn, "list")  # before the copy: refused, with the step to take
    assert opened.returncode == 1, opened.stderr
    assert "pi-hermes-memory migrate --to postgres" in opened.stderr
    assert "Traceback" not in opened.stderr
    assert (root / "pi-hermes-memory" / "MEMORY.md").read_bytes() == before

    done = cli(root, pg_dsn, "migrate", "--to", "postgres", "--json")  # dsnEnv from the config
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["refused"] == [] and report["events"] >= 3 and report["store_id_adopted"]
    assert texts(root, pg_dsn) == local  # no entry imported twice, none lost
    assert (root / "pi-hermes-memory" / "MEMORY.md").read_bytes() == before
    assert report["events"] >= 3  # two adds and the delete: the history came along


def test_a_refused_stream_says_what_becomes_of_this_hosts_entries(
    tmp_path: Path, pg_dsn: str
) -> None:
    # a team store already in use: this host's history of `memory` cannot be copied into it
    team = tmp_path / "team" / "agent"
    team.mkdir(parents=True)
    (team / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    assert cli(team, pg_dsn, "add", "The team uses trunk-based development").returncode == 0
    root = tmp_path / "agent"
    assert cli(root, pg_dsn, "add", "Deploys need the VPN").returncode == 0
    (root / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    done = cli(root, pg_dsn, "migrate", "--to", "postgres")
    assert done.returncode == 1
    assert "PostgreSQL holds a different history" in done.stderr
    assert "the first command on the shared store" in done.stderr
    assert str(root / "pi-hermes-memory" / "sessions.db") in done.stderr
    # as said: the next command merges this host's entries in
    both = ["Deploys need the VPN", "The team uses trunk-based development"]
    assert texts(root, pg_dsn) == both
    assert texts(team, pg_dsn) == both
