"""The command line starts light (ADR 0038): `import pi_hermes_memory` loads its modules only
when a name is used, `--help` lists every command without loading the store's modules, and a
store of any history opens by a hash check (tests/integration/test_open_lazy.py)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import pi_hermes_memory
import pytest
from pi_hermes_memory.adapters.cli import app as cli

from tests.support.processes import run

COMMANDS = {
    "add",
    "consolidate",
    "doctor",
    "export",
    "delete",
    "delete-bulk",
    "demote",
    "get",
    "history",
    "import",
    "index-sessions",
    "insights",
    "interview",
    "knowledge",
    "learn",
    "learn-skill",
    "list",
    "migrate",
    "preview-context",
    "promote",
    "purge",
    "recover",
    "reembed",
    "restore",
    "review-status",
    "search",
    "session-search",
    "skill-governance",
    "skill-stats",
    "skill-visibility",
    "skills",
    "stats",
    "switch-project",
    "serve",
    "setup",
    "bridge",
    "hook",
    "mcp",
    "sync-markdown",
    "tool",
    "tools",
    "update",
}
#: modules only a store needs: none loads for `--help` or a bare `import pi_hermes_memory`
HEAVY = (
    "apsw",
    "cattrs",
    "httpx",
    "numpy",
    "pi_hermes_memory.api",
    "pi_hermes_memory.bootstrap",
    "pi_hermes_memory.memory.service",
    "pi_hermes_memory.domain.scanning.scanner",
    "mcp",
    "starlette",
    "uvicorn",
    "pi_hermes_memory.adapters.server.app",
    # agent frameworks (issue 31, ADR 0095): only their front ends import them
    "langgraph",
    "langchain_core",
    "agents",  # the OpenAI Agents SDK (ADR 0098)
    "anthropic",  # the memory tool backend (ADR 0097)
)


def _loaded_after(code: str) -> list[str]:
    script = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted(sys.modules)))\n"
    done = run([sys.executable, "-c", script])
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_the_parser_has_every_command_and_help_lists_them() -> None:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == COMMANDS
    for module in cli._EXTRA:
        assert module.COMMANDS <= COMMANDS and module.WRITES <= module.COMMANDS
    done = run([sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", "--help"])
    # the grouped command list (ADR 0078): `  NAME  help` lines before the options
    commands = done.stdout.split("\ncommands", 1)[1].split("\noptions:", 1)[0]
    listed = re.findall(r"^  ([a-z][a-z-]*)  ", commands, flags=re.MULTILINE)
    assert sorted(listed) == sorted(COMMANDS)


def test_help_loads_none_of_the_store_modules() -> None:
    loaded = _loaded_after(
        "from pi_hermes_memory.adapters.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert "pi_hermes_memory.adapters.cli.app" in loaded
    assert [m for m in HEAVY if m in loaded] == []


def test_importing_the_package_loads_names_on_first_use() -> None:
    assert [m for m in HEAVY if m in _loaded_after("import pi_hermes_memory")] == []
    loaded = _loaded_after("import pi_hermes_memory\npi_hermes_memory.Target")
    assert "pi_hermes_memory.domain.memory.model" in loaded and "pi_hermes_memory.api" not in loaded
    for name in pi_hermes_memory.__all__:  # every exported name resolves
        assert getattr(pi_hermes_memory, name) is not None
    assert pi_hermes_memory.open.__module__ == "pi_hermes_memory.bootstrap"


#: modules a CLI `search` or `add` on a plain store never needs (issue 29, ADR 0080)
NOT_FOR_ONE_CALL = (
    "numpy",
    "httpx",
    "cattrs",
    "apsw.ext",
    "apsw.bestpractice",
    "importlib.resources",
    "pi_hermes_memory.search.hybrid",
    "pi_hermes_memory.search.retrieval",
    "pi_hermes_memory.ports.knowledge",
    "pi_hermes_memory.history.search",
    "pi_hermes_memory.memory.sync",
    "pi_hermes_memory.memory.insights",
    # the other commands' modules (ADR 0099): a call imports only its command's module
    *(
        f"pi_hermes_memory.adapters.cli.{name}"
        for name in cli._EXTRA_COMMANDS
        if name != "porting"  # `list --scope` parses with its scope_name
    ),
    "pi_hermes_memory.adapters.cli.help",
    # the session index, skill events and session history load with their first use
    "pi_hermes_memory.adapters.sqlite.sessions",
    "pi_hermes_memory.ports.history",
    "pi_hermes_memory.domain.history.transcripts",
    "pi_hermes_memory.domain.skills.events",
)


#: the write side (ADR 0099, round two): a write imports it, `open()` and a search do not
NOT_FOR_A_SEARCH = (
    *NOT_FOR_ONE_CALL,
    "pi_hermes_memory.domain.memory.commands",
    "pi_hermes_memory.domain.memory.decide",
    "pi_hermes_memory.domain.memory.move",
    "pi_hermes_memory.domain.memory.purge",
    "pi_hermes_memory.domain.memory.restore",
    "pi_hermes_memory.domain.memory.chain",
    "pi_hermes_memory.domain.memory.identity",
    "pi_hermes_memory.memory.by_id",
    "pi_hermes_memory.memory.purging",
)


#: the read path a caught-up store does not need (ADR 0105): a search whose replicas are proven
#: what the ledger recorded for the journal's head loads neither the write pipeline nor the
#: document fold, the events, their codec, snapshots, the hand-edit merge or the row projection
NOT_FOR_A_CAUGHT_UP_SEARCH = (
    *NOT_FOR_A_SEARCH,
    "pi_hermes_memory.journal.pipeline",
    "pi_hermes_memory.journal.codec",
    "pi_hermes_memory.journal.snapshots",
    "pi_hermes_memory.memory.documents",
    "pi_hermes_memory.memory.indexed",
    "pi_hermes_memory.memory.mirror",
    "pi_hermes_memory.domain.memory.document",
    "pi_hermes_memory.domain.memory.events",
    "pi_hermes_memory.domain.memory.reconcile",
    "pi_hermes_memory.domain.memory.rows",
    "pi_hermes_memory.domain.memory.write_rows",
    "pi_hermes_memory.adapters.sqlite.mirror",
    # loaded for a constant or an annotation only, before ADR 0105
    "pi_hermes_memory.ports.vectors",
    "pi_hermes_memory.ports.memory",
    "pi_hermes_memory.domain.knowledge.chunks",
    "pi_hermes_memory.results",  # the write and listing results
    "pi_hermes_memory.adapters.files.legacy_layout",  # the migration: its probe found nothing
    # ADR 0110: the LLM plan loads with the first look at an LLM the configuration turns off,
    # and `logging` (with the CLI's handler) with the first log event
    "pi_hermes_memory.learning.llm",
    "pi_hermes_memory.adapters.providers.llm_factory",
    "pi_hermes_memory.adapters.cli.log_lines",
    "logging",
    # the memory and memory_search tools: loaded by the first tool look-up or `--json`
    "pi_hermes_memory.tools.registry",
    "pi_hermes_memory.search.search_tool",
    "pi_hermes_memory.domain.search.similarity",  # the near-duplicate rule (query terms: cjk)
)
#: a caught-up store whose replicas a process already proved by their stamps (the first
#: process after a write reads a file whose mtime cannot tell yet, ADR 0100): the Markdown
#: format and the sidecar join load with the first read or render of a file (ADR 0110)
NOT_FOR_A_SETTLED_SEARCH = (
    *NOT_FOR_A_CAUGHT_UP_SEARCH,
    "pi_hermes_memory.adapters.markdown.format",
    "pi_hermes_memory.adapters.markdown.shared",
    "pi_hermes_memory.domain.memory.markdown_doc",
    # ADR 0112: the read-model row values load with the first row read (a keyword search
    # reads none)
    "pi_hermes_memory.ports.read_model",
)
#: the modules whose loading tells that a process took the write path
PIPELINE = ("pi_hermes_memory.journal.pipeline", "pi_hermes_memory.domain.memory.events")


def _one_call(
    tmp_path: Path, *argv: str, watch: tuple[str, ...] = NOT_FOR_ONE_CALL
) -> tuple[int, list[str], int, int]:
    """Run one CLI command in a child on the store under `tmp_path`: its exit status, the
    heavy modules it loaded, and how many of the scanner's patterns it compiled (of all)."""
    code = (
        "import json, sys\n"
        "from pi_hermes_memory.adapters.cli.app import main\n"
        f"code = main({list(argv)!r})\n"
        "from pi_hermes_memory.domain.scanning import lazy_re\n"
        f"heavy = [m for m in {watch!r} if m in sys.modules]\n"
        "print(json.dumps([code, heavy, lazy_re.compiled_count(), lazy_re.pattern_count()]))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    done = run([sys.executable, "-c", code], env=env, cwd=tmp_path)
    code_, heavy, compiled, patterns = json.loads(done.stdout.strip().splitlines()[-1])
    return code_, heavy, compiled, patterns


def test_a_search_and_an_add_load_only_what_they_use(tmp_path: Path) -> None:
    """A one-shot command (a hook, an agent's CLI call) pays for what it uses: no HTTP client,
    numpy, cattrs or apsw.ext, no hybrid ranking without embeddings, and the scanner (which
    checks the query before echoing it, and the text of an add) compiles only the patterns
    whose keywords occur, not its whole table. No clock: the gain is frozen by what loads."""
    assert _one_call(tmp_path, "search", "hello", watch=NOT_FOR_A_SEARCH)[:2] == (0, [])
    code, heavy, compiled, patterns = _one_call(tmp_path, "add", "the deploy window is friday")
    assert (code, heavy) == (0, [])
    assert 0 < compiled < patterns // 5
    code, heavy, compiled, patterns = _one_call(
        tmp_path, "search", "deploy window", watch=NOT_FOR_A_SEARCH
    )
    assert (code, heavy) == (0, [])
    assert 0 < compiled < patterns // 5


def test_an_add_loads_the_write_side_it_needs(tmp_path: Path) -> None:
    """The write side a search leaves out is what an add uses: the list above names modules
    that load, not misspelt ones."""
    _, loaded, _, _ = _one_call(
        tmp_path, "add", "the deploy window is friday", watch=NOT_FOR_A_SEARCH
    )
    assert "pi_hermes_memory.domain.memory.commands" in loaded
    assert "pi_hermes_memory.domain.memory.decide" in loaded
    # an add resolves no reference: ids and chains load with the first by-id write (ADR 0109)
    by_id = ("identity", "chain", "move", "purge", "restore")
    assert [m for m in loaded if m.rsplit(".", 1)[-1] in by_id] == []


#: what an add does not use (ADR 0111): the other event kinds (each builds on its first use),
#: `logging` (no event at WARNING or above), `tempfile` and `random` (the Markdown's temp file),
#: the mirror's repair plan and report, the hand-edit merge
NOT_FOR_AN_ADD = (
    *NOT_FOR_ONE_CALL,
    *(
        f"pi_hermes_memory.domain.memory_events.{module}"
        for module in ("replaced", "superseded", "removed", "referenced", "moved", "merged")
    ),
    *(f"pi_hermes_memory.domain.memory_events.{m}" for m in ("retagged", "restored", "purged")),
    "logging",
    "tempfile",
    "random",
    "pi_hermes_memory.ports.memory",
    "pi_hermes_memory.memory.mirror",
    "pi_hermes_memory.domain.memory.reconcile",
    # the other command kinds and the results of other calls (a batch, a listing, a tool)
    *(f"pi_hermes_memory.domain.memory_commands.{m}" for m in ("replace", "remove", "move")),
    "pi_hermes_memory.call_results",
)


def test_an_add_builds_its_event_kind_only(tmp_path: Path) -> None:
    """A CLI add, on a new store and on one with history, builds the one event class it
    writes and loads none of `NOT_FOR_AN_ADD`; a duplicate writes no event and builds none.
    The event modules named are real (a misspelt name would never load)."""
    import importlib.util

    for text in ("the deploy window is friday", "the canary runs on tuesdays"):
        code, heavy, _, _ = _one_call(tmp_path, "add", text, watch=NOT_FOR_AN_ADD)
        assert (code, heavy) == (0, [])
    added = "pi_hermes_memory.domain.memory_events.added"
    code, loaded, _, _ = _one_call(tmp_path, "add", "the canary runs on tuesdays", watch=(added,))
    assert (code, loaded) == (0, [])
    code, loaded, _, _ = _one_call(tmp_path, "add", "the freeze starts in may", watch=(added,))
    assert (code, loaded) == (0, [added])
    for name in NOT_FOR_AN_ADD:
        if name.startswith(("pi_hermes_memory.domain.memory_", "pi_hermes_memory.call_")):
            assert importlib.util.find_spec(name) is not None, name


def test_a_search_in_a_new_process_imports_a_hand_edit(tmp_path: Path) -> None:
    """Opening for a search does not load the write side, yet a Markdown file edited by hand
    since the last render is still imported (through the pipeline) before the search answers;
    the next process finds it in the journal."""
    assert _one_call(tmp_path, "add", "the deploy window is friday")[0] == 0
    memory_md = tmp_path / "agent" / "pi-hermes-memory" / "MEMORY.md"
    text = memory_md.read_text(encoding="utf-8")
    memory_md.write_text(text.rstrip("\n") + "\n§\nthe canary runs on tuesdays\n", "utf-8")
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    for _ in range(2):  # the importing process, then one that reads the journal only
        app = [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app"]
        done = run([*app, "--json", "search", "canary"], env=env, cwd=tmp_path)
        assert "the canary runs on tuesdays" in done.stdout
    assert "the canary runs on tuesdays" in memory_md.read_text(encoding="utf-8")


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = sub.choices[command]
    return found


def test_the_command_table_names_each_module_s_commands() -> None:
    """The static command → module table (ADR 0099) is what each module declares."""
    for name, commands in cli._EXTRA_COMMANDS.items():
        assert set(commands) == cli._extra_module(name).COMMANDS, name
    assert cli._BUILTIN_COMMANDS | set(cli._EXTRA_OF) == COMMANDS
    assert not cli._BUILTIN_COMMANDS & set(cli._EXTRA_OF)


def test_one_command_s_parser_is_the_full_parser_s() -> None:
    """Building only the invoked command's parser changes no help, usage or parse: each
    command's help is byte-equal to the full parser's, the top usage too, and sample command
    lines parse to equal namespaces."""
    full = cli._parser()
    for command in sorted(COMMANDS):
        alone = cli._parser(command)
        assert alone.format_usage() == full.format_usage()
        assert (
            _subparser(alone, command).format_help() == _subparser(full, command).format_help()
        ), command
    samples = [
        ["search", "deploy window", "--limit", "3", "--target", "memory"],
        ["--project", "p", "--json", "add", "x", "--category", "insight", "--force"],
        ["--cwd=/tmp", "update", "01ABC", "new text", "--category", "failure"],
        ["list", "--scope", "project:p", "--limit", "2"],
        ["--agent", "a1", "stats", "--json"],
        ["doctor"],
    ]
    for argv in samples:
        assert cli._command_of(argv) == next(t for t in argv if t in COMMANDS)
        assert cli._parser(cli._command_of(argv)).parse_args(argv) == full.parse_args(argv)


def test_an_unusual_command_line_builds_every_parser() -> None:
    """Anything the pre-dispatch cannot tell for sure goes to the full parser: the help, the
    version, an abbreviated option, `--`, an unknown command, a missing value."""
    for argv in (
        [],
        ["--help"],
        ["--version"],
        ["--proj", "p", "search", "x"],
        ["--", "search"],
        ["serach", "x"],
        ["--project"],
        ["-h", "search"],
    ):
        assert cli._command_of(argv) is None, argv
    assert cli._command_of(["--project", "search", "add", "x"]) == "add"
    assert cli._command_of(["--project=p", "--json", "search", "x"]) == "search"


def test_a_usage_error_reads_as_before(tmp_path: Path) -> None:
    """A usage error inside one command (built alone) prints the same usage and message as
    the full parser does."""
    for argv in (["search"], ["add", "x", "--target", "nope"], ["list", "--limit", "-1"]):
        errors = []
        for only in (None, argv[0]):
            code = (
                "import sys\n"
                "from pi_hermes_memory.adapters.cli import app\n"
                f"app._parser({only!r}).parse_args({argv!r})"
            )
            done = run([sys.executable, "-c", code], cwd=tmp_path, expect=2)
            errors.append(done.stderr)
        assert errors[0] == errors[1], argv


def test_the_api_s_session_search_default_is_the_port_s() -> None:
    """`Memory.session_search` spells its default limit out, so that opening a store does
    not load the session history's port (ADR 0099): it must stay the port's default."""
    import inspect

    from pi_hermes_memory.ports.history import DEFAULT_SESSIONS

    limit = inspect.signature(pi_hermes_memory.Memory.session_search).parameters["limit"]
    assert limit.default == DEFAULT_SESSIONS


def _search(tmp_path: Path, *argv: str) -> tuple[str, list[str]]:
    """A CLI `--json search` in a child: its output and which of `PIPELINE` it loaded."""
    code = (
        "import json, sys\n"
        "from pi_hermes_memory.adapters.cli.app import main\n"
        f"code = main(['--json', 'search', *{list(argv)!r}])\n"
        f"print(json.dumps([m for m in {PIPELINE!r} if m in sys.modules]))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    done = run([sys.executable, "-c", code], env=env, cwd=tmp_path)
    *out, loaded = done.stdout.strip().splitlines()
    return "\n".join(out), json.loads(loaded)


def test_a_search_on_a_caught_up_store_loads_no_write_path(tmp_path: Path) -> None:
    """Once every replica is what the ledger recorded for the journal's head, `open()` and a
    search prove it (a stat, a query, the replica proofs) and load none of the pipeline, the
    fold, the events or the row projection (ADR 0105); an add does load them (the names are
    real modules)."""
    assert _one_call(tmp_path, "add", "the deploy window is friday")[0] == 0
    for watch in (NOT_FOR_A_CAUGHT_UP_SEARCH, NOT_FOR_A_SETTLED_SEARCH):
        code, heavy, _, _ = _one_call(tmp_path, "search", "deploy window", watch=watch)
        assert (code, heavy) == (0, [])
    _, loaded, _, _ = _one_call(
        tmp_path, "add", "the canary runs on tuesdays", watch=NOT_FOR_A_CAUGHT_UP_SEARCH
    )
    assert set(PIPELINE) <= set(loaded)
    assert "pi_hermes_memory.memory.documents" in loaded
    # the process after an add proves the render that add recorded
    code, heavy, _, _ = _one_call(tmp_path, "search", "canary", watch=NOT_FOR_A_CAUGHT_UP_SEARCH)
    assert (code, heavy) == (0, [])


_API_SEARCH = """
import json, sys
import pi_hermes_memory
memory = pi_hermes_memory.open(project="web")
hits = [h.text for h in memory.search("deploy window").hits]
heavy = [m for m in WATCH if m in sys.modules]
llm_off = memory.llm_off is not None  # read after the look: loads the LLM status
print(json.dumps([hits, heavy, llm_off]))
"""


def test_the_api_s_open_and_search_on_a_caught_up_store_load_no_write_path(
    tmp_path: Path,
) -> None:
    """`import pi_hermes_memory` + `open()` + a search benefit as the CLI does (ADR 0105,
    ADR 0110); the LLM status is still there when asked for."""
    assert _one_call(tmp_path, "add", "the deploy window is friday")[0] == 0
    assert _one_call(tmp_path, "search", "deploy")[0] == 0  # proves the add's render
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    code = f"WATCH = {NOT_FOR_A_SETTLED_SEARCH!r}\n" + _API_SEARCH
    done = run([sys.executable, "-c", code], env=env, cwd=tmp_path)
    hits, heavy, llm_off = json.loads(done.stdout.strip().splitlines()[-1])
    assert (hits, heavy, llm_off) == (["the deploy window is friday"], [], True)


def _replica_of(tmp_path: Path, text: str) -> Path:
    found = [
        p
        for p in (tmp_path / "agent").rglob("*.md")
        if text in p.read_text(encoding="utf-8", errors="replace")
    ]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("target", "extra"),
    [
        ("memory", ()),
        ("user", ()),
        ("project", ("--project", "web")),
        ("failure", ("--category", "failure")),
    ],
)
def test_a_hand_edit_of_each_replica_fails_the_proof(
    tmp_path: Path, target: str, extra: tuple[str, ...]
) -> None:
    """A person's edit of any replica a search reads, between two CLI calls, fails the proof:
    that search takes the write path, imports the edit and finds it; the next process finds
    it in the journal and proves the file rendered by the import again (ADR 0105)."""
    project = list(extra[:2]) if extra[:1] == ("--project",) else []
    category = list(extra) if extra[:1] == ("--category",) else []
    assert (
        _one_call(
            tmp_path, *project, "add", "the kestrel nests high", "--target", target, *category
        )[0]
        == 0
    )
    path = _replica_of(tmp_path, "the kestrel nests high")
    text = path.read_text(encoding="utf-8")
    # a project row needs its attribution to be searchable (unattributed ones stay in Markdown)
    line = "the heron fishes at dawn" + (" <!-- project=web -->" if project else "")
    path.write_text(text.rstrip("\n") + f"\n§\n{line}\n", "utf-8")
    out, loaded = _search(tmp_path, *project, "heron", "--target", target)
    assert "the heron fishes at dawn" in out and loaded == list(PIPELINE)
    out, loaded = _search(tmp_path, *project, "heron", "--target", target)
    assert "the heron fishes at dawn" in out and loaded == []
    assert "the heron fishes at dawn" in path.read_text(encoding="utf-8")


def test_a_journal_written_by_another_process_fails_the_proof(tmp_path: Path) -> None:
    """Events another process appended (with their rows) whose Markdown replica was not
    rendered: the ledger lags the journal's head, so the next search takes the write path,
    which renders the file; the process after it proves the new render."""
    from datetime import UTC, datetime

    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
    from pi_hermes_memory.domain.memory.document import stream_for
    from pi_hermes_memory.domain.memory.events import MemoryAdded
    from pi_hermes_memory.domain.memory.model import Target

    assert _one_call(tmp_path, "add", "the deploy window is friday")[0] == 0
    assert _search(tmp_path, "deploy")[1] == []
    at = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
    storage = SqliteStorage(tmp_path / "agent" / "pi-hermes-memory" / "sessions.db")
    try:
        with storage.transaction() as uow:
            stream = stream_for(Target.MEMORY)
            event = MemoryAdded(
                stream=stream,
                version=uow.journal.version(stream) + 1,
                at=at,
                entry_id="01J0000000000000000000OWL1",
                target=Target.MEMORY,
                text="the owl hunts at night",
                project=None,
                category=None,
                created=at.date(),
                last_referenced=at.date(),
            )
            uow.journal.append(stream, event.version - 1, [event])
            uow.projection.apply([event])
    finally:
        storage.close()
    memory_md = tmp_path / "agent" / "pi-hermes-memory" / "MEMORY.md"
    assert "the owl hunts at night" not in memory_md.read_text(encoding="utf-8")
    out, loaded = _search(tmp_path, "owl")
    assert "the owl hunts at night" in out and loaded == list(PIPELINE)
    assert "the owl hunts at night" in memory_md.read_text(encoding="utf-8")
    out, loaded = _search(tmp_path, "owl")
    assert "the owl hunts at night" in out and loaded == []


def test_a_store_being_migrated_fails_the_proof(tmp_path: Path) -> None:
    """A project file of the old layout dropped into the agent root after the store was
    proven is merged into the flat project file by the next open (ADR 0013): the file changed,
    so the search takes the write path and finds the merged entry."""
    assert _one_call(tmp_path, "--project", "alpha", "add", "the deploy window is friday")[0] == 0
    assert _search(tmp_path, "--project", "alpha", "deploy")[1] == []
    legacy = tmp_path / "agent" / "alpha" / "MEMORY.md"
    legacy.parent.mkdir(parents=True)
    legacy.write_text("Alpha deploys with fly\n", encoding="utf-8")
    out, loaded = _search(tmp_path, "--project", "alpha", "fly", "--target", "project")
    assert "Alpha deploys with fly" in out and loaded == list(PIPELINE)
    assert not legacy.exists()
    out, loaded = _search(tmp_path, "--project", "alpha", "fly", "--target", "project")
    assert "Alpha deploys with fly" in out and loaded == []


def test_the_api_s_reembed_batch_default_is_the_port_s() -> None:
    """`Memory.reembed` spells its default batch out, so that opening a store does not load
    the vector port (ADR 0105): it must stay the port's default."""
    import inspect

    from pi_hermes_memory.ports.vectors import REEMBED_BATCH

    batch = inspect.signature(pi_hermes_memory.Memory.reembed).parameters["batch_size"]
    assert batch.default == REEMBED_BATCH


_COLLECTIONS = """
import gc, json, sys
from pi_hermes_memory.adapters.cli.app import main
passes = []
gc.callbacks.append(lambda phase, info: passes.append(phase) if phase == "start" else None)
code = main(json.loads(sys.argv[1]))
gc.callbacks.clear()
print(json.dumps([code, len(passes), gc.isenabled()]))
"""


def test_a_one_entry_command_runs_without_the_collector_and_turns_it_back_on(
    tmp_path: Path,
) -> None:
    """An add and a search run with the cyclic collector off from the parse to the end (ADR
    0111): no collection at all, though an add imports the write side and builds its classes;
    it is on again when `main` returns. Another command has it on while it runs (ADR 0080)."""
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    for argv in (
        ["add", "the deploy window is friday"],
        ["add", "the canary runs on tuesdays", "--target", "user"],
        ["search", "deploy window"],
    ):
        done = run([sys.executable, "-c", _COLLECTIONS, json.dumps(argv)], env=env, cwd=tmp_path)
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, 0, True], argv
    probe = (
        "import gc\nfrom pi_hermes_memory.adapters.cli import app\n"
        "app._run = lambda *a: print(gc.isenabled()) or 0\n"
        "print(app.main(['list']), gc.isenabled())"
    )
    done = run([sys.executable, "-c", probe], env=env, cwd=tmp_path)
    assert done.stdout.split() == ["True", "0", "True"]
