"""The installed command's vocabulary and exit statuses agree across commands (ADR 0120): the
ids they print, the scope names, the removed counts, and what exit 2 and exit 1 mean. Each
test runs the real command line as a child process on a real store (SQLite, Markdown)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import cli


def _id_line(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("id: ")]
    return line.removeprefix("id: ")


# --- purge names the memory's stable id ---------------------------------------------------------


def test_purge_prints_the_memorys_stable_id_as_add_and_update_do(root: Path) -> None:
    added = cli(root, "add", "The deploy host is alpha")
    memory_id = _id_line(added.stdout)
    updated = cli(root, "update", memory_id, "The deploy host is beta")
    assert _id_line(updated.stdout) == memory_id
    version_id = json.loads(cli(root, "get", memory_id, "--json").stdout)["version_id"]
    assert version_id != memory_id
    preview = cli(root, "purge", "beta")
    assert preview.returncode == 1 and _id_line(preview.stdout) == memory_id
    out = json.loads(cli(root, "purge", "beta", "--json").stdout)
    assert (out["entry_id"], out["version_id"]) == (memory_id, version_id)
    assert sorted(out["entry_ids"]) == sorted([memory_id, version_id])
    done = cli(root, "purge", memory_id, "--yes")
    assert done.returncode == 0 and _id_line(done.stdout) == memory_id


# --- stats counts as removed what restore lists ------------------------------------------------


def _removed(root: Path, *args: str) -> tuple[dict[str, int], dict[str, int]]:
    """Per target: stats' removed count and the number of entries `restore` lists."""
    stats = json.loads(cli(root, *args, "stats", "--json").stdout)["targets"]
    counted = {t: stats[t]["removed"] for t in stats}
    listed = {
        t: len(json.loads(cli(root, *args, "restore", "--target", t, "--json").stdout))
        for t in stats
    }
    return counted, listed


def test_a_promote_then_demote_is_a_move_not_a_removal(root: Path) -> None:
    web = ("--project", "web")
    assert cli(root, *web, "add", "Deploy uses blue green", "--target", "project").returncode == 0
    assert cli(root, *web, "promote", "blue green").returncode == 0
    assert cli(root, *web, "demote", "blue green").returncode == 0
    counted, listed = _removed(root, *web)
    assert counted == listed == {"user": 0, "memory": 0, "project": 0, "failure": 0}
    # a real removal is counted and listed, on the real store, and leaves the count on restore
    assert cli(root, *web, "add", "Tabs are wider than spaces").returncode == 0
    assert cli(root, *web, "add", "Builds use clang 18", "--target", "project").returncode == 0
    removed = cli(
        root, *web, "tool", "memory", '{"action": "remove", "target": "memory", "old_text": "Tabs"}'
    )
    assert removed.returncode == 0, removed.stdout
    assert cli(root, *web, "promote", "clang").returncode == 0
    counted, listed = _removed(root, *web)
    assert counted == listed == {"user": 0, "memory": 1, "project": 0, "failure": 0}
    assert cli(root, *web, "restore", "Tabs").returncode == 0
    counted, listed = _removed(root, *web)
    assert counted == listed == {"user": 0, "memory": 0, "project": 0, "failure": 0}


# --- one scope vocabulary ----------------------------------------------------------------------


def test_json_rows_name_their_scope_as_list_scope_and_stats_do(root: Path) -> None:
    web = ("--project", "web")
    assert cli(root, *web, "add", "Deploys need a tag", "--target", "project").returncode == 0
    assert cli(root, *web, "add", "Prefers short answers", "--target", "user").returncode == 0
    rows = json.loads(cli(root, *web, "list", "--json").stdout)
    scopes = {r["text"]: r["scope"] for r in rows}
    assert scopes == {"Deploys need a tag": "project:web", "Prefers short answers": "global"}
    stats = json.loads(cli(root, *web, "stats", "--json").stdout)
    assert stats["scopes"] == {"global": 1, "project:web": 1}
    for row in rows:  # a row's scope selects it again
        again = json.loads(cli(root, *web, "list", "--scope", row["scope"], "--json").stdout)
        assert [r["id"] for r in again] == [row["id"]]
        got = json.loads(cli(root, *web, "get", row["id"], "--json").stdout)
        assert got["scope"] == row["scope"]
        (version,) = json.loads(cli(root, *web, "history", row["id"], "--json").stdout)
        assert version["scope"] == row["scope"]
    assert cli(root, *web, "delete", rows[0]["id"]).returncode == 0
    (removed,) = json.loads(
        cli(root, *web, "restore", "--target", rows[0]["target"], "--json").stdout
    )
    assert removed["scope"] == rows[0]["scope"]


# --- a file or request it cannot use is a usage error (exit 2), said in plain words -----------

#: every command that reads a file it is given, with the option naming it
_READERS = (
    ("import",),
    ("migrate",),
    ("interview", "--answers"),
    ("learn-skill", "--file"),
)


def _unusable_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Files no command can read, each with the words its refusal must hold."""
    folder = tmp_path / "a-folder"
    folder.mkdir(parents=True)
    binary = tmp_path / "latin1.txt"
    binary.write_bytes("caf\xe9 notes\n".encode("latin-1"))
    return {
        "missing": (tmp_path / "no-such.jsonl", "no such file"),
        "folder": (folder, "folder"),
        "binary": (binary, "not UTF-8"),
    }


def test_a_file_that_cannot_be_read_exits_2_naming_it(root: Path, tmp_path: Path) -> None:
    for command in _READERS:
        for kind, (path, says) in _unusable_files(tmp_path / command[0]).items():
            if command == ("migrate",) and kind == "folder":
                says = "LanceDB"  # a folder is what migrate reads a LanceDB table from
            done = cli(root, *command, str(path))
            assert done.returncode == 2, (command, kind, done.stderr)
            assert str(path) in done.stderr and says in done.stderr, (command, kind, done.stderr)
            assert "Errno" not in done.stderr and "Traceback" not in done.stderr, done.stderr
            as_json = json.loads(cli(root, *command, str(path), "--json").stdout)
            assert as_json["status"] == "invalid_arguments" and says in as_json["message"]


def test_content_that_is_not_what_the_command_reads_exits_2(root: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "pi-hermes-memory-export"\n')
    for command in (("import",), ("migrate",), ("interview", "--answers")):
        done = cli(root, *command, str(broken))
        assert done.returncode == 2, (command, done.stderr)
        assert "not JSON" in done.stderr and "Errno" not in done.stderr, (command, done.stderr)
    assert cli(root, "tool", "memory", "{bad").returncode == 2
    request = cli(root, "session-search", "--request", "all: flock")
    assert request.returncode == 2 and "all: is a list" in request.stderr
    as_json = cli(root, "session-search", "--request", "all: flock", "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["status"] == "invalid_arguments"
    # a query without words ran and found nothing to search for: exit 1, as `search`
    assert cli(root, "session-search", "?!").returncode == 1
    assert cli(root, "search", "?!").returncode == 1


def test_an_export_path_that_cannot_be_written_exits_2_naming_it(
    root: Path, tmp_path: Path
) -> None:
    for path, says in (
        (tmp_path / "no-such-folder" / "out.jsonl", "folder does not exist"),
        (tmp_path, "folder"),
    ):
        done = cli(root, "export", "--output", str(path))
        assert done.returncode == 2 and f"cannot write {path}: " in done.stderr, done.stderr
        assert says in done.stderr and "Errno" not in done.stderr, done.stderr
    assert not list(tmp_path.glob("*.partial"))


def test_delete_bulk_names_the_memorys_stable_id_as_list_does(root: Path) -> None:
    memory_id = _id_line(cli(root, "add", "The build uses make").stdout)
    assert cli(root, "update", memory_id, "The build uses ninja").returncode == 0
    (listed,) = json.loads(cli(root, "list", "--json").stdout)
    assert listed["id"] == memory_id != listed["version_id"]
    preview = cli(root, "delete-bulk", "--scope", "global", "--dry-run")
    assert preview.stdout.startswith(f"{memory_id}  [memory global] The build uses ninja")
    done = json.loads(cli(root, "delete-bulk", "--scope", "global", "--json").stdout)
    (matched,) = done["matched"]
    assert (matched["id"], matched["version_id"]) == (memory_id, listed["version_id"])
    assert done["removed"] == [memory_id]
    (removed,) = json.loads(cli(root, "restore", "--json").stdout)
    assert removed["id"] == memory_id


def test_a_malformed_skill_id_is_a_usage_error_in_every_skill_command(root: Path) -> None:
    for command in (
        ("skills", "view", "nope"),
        ("skill-governance", "explain", "nope"),
        ("skill-governance", "promote", "nope"),
    ):
        done = cli(root, *command)
        assert done.returncode == 2 and "'nope' is not a skill id" in done.stderr, command
