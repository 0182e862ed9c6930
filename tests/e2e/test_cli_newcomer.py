"""CLI papercuts a newcomer hits (issue 28 §4, ADR 0078), each run as a person would: the
command as a real process on a real store."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from pi_hermes_memory.adapters.cli import app
from pi_hermes_memory.adapters.cli.help import GROUPS, ungrouped

from tests.e2e.test_cli import cli
from tests.support.fake_llm import FAKE_LLM


def _config(root: Path, **config: object) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(config))


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += [child, *_subparsers(child)]
    return found


# --- help ---------------------------------------------------------------------------------------


def test_no_command_prints_the_grouped_help_and_exits_0(root: Path) -> None:
    done = cli(root)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    for title, _names, example in GROUPS:
        assert f"\n{title}:\n" in done.stdout
        assert f"  e.g. {example}" in done.stdout
    assert "add               add an entry" in done.stdout
    assert "{tool,add," not in done.stdout  # the choices are not printed a second time
    assert not (root / "pi-hermes-memory").exists()  # the help opens no store


def test_every_command_is_in_a_group_and_no_help_speaks_jargon() -> None:
    parser = app._parser()
    assert ungrouped(parser) == []
    for sub in [parser, *_subparsers(parser)]:
        text = sub.format_help()
        assert not re.search(r"ADR \d|second.seed|first.seed", text), sub.prog


def test_add_target_has_help() -> None:
    add = next(p for p in _subparsers(app._parser()) if p.prog.endswith(" add"))
    text = " ".join(add.format_help().split())
    assert "user: about the person" in text and "- to read it from stdin" in text


# --- add, list, search ------------------------------------------------------------------------


def test_add_dash_reads_the_text_from_stdin(root: Path) -> None:
    added = cli(root, "add", "-", stdin="The test command is make test\n")
    assert added.returncode == 0, added.stderr
    listed = cli(root, "list", "--json")
    assert [e["text"] for e in json.loads(listed.stdout)] == ["The test command is make test"]


def test_list_and_search_show_the_ids_that_get_takes(root: Path) -> None:
    assert cli(root, "add", "The test command is make test").returncode == 0
    assert cli(root, "add", "Deploys go through make deploy").returncode == 0
    listed = cli(root, "list").stdout.splitlines()
    ids = [line.split()[0] for line in listed]
    assert len(ids) == 2
    for entry_id, line in zip(ids, listed, strict=True):
        got = cli(root, "get", entry_id)
        assert got.returncode == 0 and line.split("] ", 1)[1] in got.stdout
    found = cli(root, "search", "test command").stdout.splitlines()
    assert found[0].startswith("1 memory matches")
    hit = r"\[1\] ([01]\.\d\d) (\S+) \(memory, [0-9-]+\) The test command.*"
    match = re.fullmatch(hit, found[1])
    assert match is not None, found
    assert 0.0 <= float(match[1]) <= 1.0 and match[2] in ids


def test_list_of_another_project_from_another_directory(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    added = cli(root, "add", "Deploy with make deploy", "--target", "project", "--project", "p1")
    assert added.returncode == 0, added.stderr
    assert "project:p1 1" in cli(root, "stats", cwd=elsewhere).stdout
    for query in (("--of-project", "p1"), ("--scope", "project:p1")):
        listed = cli(root, "list", *query, cwd=elsewhere)
        assert "[project/p1] Deploy with make deploy" in listed.stdout, listed.stdout
    other = cli(root, "list", "--of-project", "p1", "--project", "p2", cwd=elsewhere)
    assert "run with --project p1" in other.stdout


# --- skills -------------------------------------------------------------------------------------


def test_skill_input_errors_and_list(root: Path) -> None:
    hidden = cli(root, "skill-visibility", "hide", "global:no-such-skill", "--project", "p1")
    assert hidden.returncode == 1
    assert "No global skill 'global:no-such-skill'" in hidden.stderr
    made = cli(
        root,
        "tool",
        "skill",
        json.dumps(
            {
                "action": "create",
                "scope": "global",
                "name": "release",
                "description": "Cut a release",
                "procedure_steps": ["Tag it"],
            }
        ),
    )
    assert made.returncode == 1
    assert json.loads(made.stdout)["status"] == "invalid_arguments"
    listed = cli(root, "tool", "skill", '{"action": "list"}')
    assert json.loads(listed.stdout)["status"] == "no_results", listed.stdout


# --- messages -----------------------------------------------------------------------------------


def test_a_full_target_is_named_once(root: Path) -> None:
    _config(root, memoryCharLimit=30)
    refused = cli(root, "add", "A fact that is longer than thirty characters for sure")
    assert refused.returncode == 1
    assert "memory memory" not in refused.stdout
    assert refused.stdout.startswith("Refused: memory would hold "), refused.stdout


def test_learn_skill_with_the_llm_off_says_it_once(root: Path) -> None:
    _config(root, projectName="web")
    done = cli(root, "learn-skill", "--text", "We tag releases after the notes.")
    assert done.returncode == 1
    assert done.stdout.count("the LLM is off") == 1, done.stdout


def test_a_host_without_logging_gets_one_line_for_a_malformed_curation_reply(
    root: Path, tmp_path: Path
) -> None:
    _config(
        root,
        projectName="web",
        llm={"provider": "command", "command": [sys.executable, FAKE_LLM, "--reply", "no JSON"]},
    )
    host = tmp_path / "host.py"
    host.write_text(
        textwrap.dedent(
            """
            import pi_hermes_memory

            with pi_hermes_memory.open() as memory:
                made = memory.call_tool("skill", {
                    "action": "create", "scope": "project", "name": "release-notes",
                    "description": "Write the release notes", "content": "Group the PRs.",
                })
                assert made["success"], made
                result = memory.skill_governance.curate()
                print(result.reason_code)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(host)],
        capture_output=True,
        text=True,
        env={"PI_CODING_AGENT_DIR": str(root), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "classifier-error"
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("skills.curation.failed "), lines
    assert "holds no JSON object" in lines[0]


def test_reembed_with_embeddings_off_suggests_local(root: Path) -> None:
    done = cli(root, "reembed")
    assert done.returncode == 1
    assert "'local'" in done.stderr and "'openai-compatible'" in done.stderr


# --- sync-markdown ------------------------------------------------------------------------------


def test_sync_markdown_reports_the_hand_edit_that_opening_imported(root: Path) -> None:
    assert cli(root, "add", "The test command is make test").returncode == 0
    memory_md = root / "pi-hermes-memory" / "MEMORY.md"
    memory_md.write_text(memory_md.read_text() + "Deploys go through make deploy\n")
    synced = cli(root, "sync-markdown", "--json")
    assert synced.returncode == 0, synced.stderr
    report = json.loads(synced.stdout)
    assert report["imported"] >= 1, report
    again = json.loads(cli(root, "sync-markdown", "--json").stdout)
    assert again["imported"] == 0
    assert "Deploys go through make deploy" in cli(root, "list").stdout


# --- ids a person can use ----------------------------------------------------------------------


def test_add_prints_the_id_and_search_shows_the_memorys_id_after_updates(root: Path) -> None:
    """The id `add` prints is the one search shows, get/update/delete take, and it stays the
    same across updates (ADR 0074): a person copies it from either output."""
    added = cli(root, "add", "The staging API listens on port 8443")
    assert added.returncode == 0, added.stderr
    ids = re.findall(r"^id: (\S+)$", added.stdout, re.M)
    assert len(ids) == 1
    memory_id = ids[0]
    for port in (9443, 10443):
        updated = cli(root, "update", memory_id, f"The staging API listens on port {port}")
        assert updated.returncode == 0, updated.stderr
        assert f"id: {memory_id}" in updated.stdout
    found = cli(root, "search", "staging port")
    assert re.search(rf"^\[1\] [01]\.\d\d {memory_id} \(memory, ", found.stdout, re.M), found.stdout
    assert "port 10443" in found.stdout
    assert cli(root, "delete", memory_id).returncode == 0
