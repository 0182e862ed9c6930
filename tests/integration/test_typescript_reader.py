"""Every memory file this library writes reads back entry for entry in the TypeScript extension
(chandra447/pi-hermes-memory), while our version and metadata live on in the sidecar (ADR 0077).

Two readers check the files: a faithful Python port of the extension's split and regex, and the
extension's own parse functions (tests/support/typescript/memory_reader.mjs) run by node as a
child process. Every entry's text must come back equal, with its created/last dates and project.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import date
from pathlib import Path
from typing import Any

import pi_hermes_memory
import pytest

from tests.support.typescript.port import TS_DELIMITER, ts_parse

READER = Path(__file__).parents[1] / "support" / "typescript" / "memory_reader.mjs"
CONFIG = {"scopes": {"agentAccess": {"coder": ["global", "agent:coder", "custom:team"]}}}


def ts_port_read(path: Path) -> list[dict[str, Any]]:
    return ts_parse(path.read_bytes().decode("utf-8"))


def ts_node_read(paths: list[Path]) -> dict[str, list[dict[str, Any]]]:
    node = shutil.which("node")
    assert node is not None, "node is needed to run the TypeScript extension's reader"
    done = subprocess.run(
        [node, str(READER), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    parsed: dict[str, list[dict[str, Any]]] = json.loads(done.stdout)
    return parsed


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(json.dumps(CONFIG))
    return root


def session(root: Path, project: str = "shop") -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(
        agent_root=root,
        environ={"HOME": str(root.parent)},
        cwd=root.parent,
        agent_id="coder",
        project=project,
    )


def seed(root: Path) -> None:
    with session(root) as m:
        for content, kw in [
            ("Use pnpm, not npm", {"scope": "agent:coder"}),
            ("The team deploys on Tuesdays", {"scope": "custom:team"}),
            ("Release notes go in CHANGELOG.md\nunder Unreleased, newest first", {}),
            ("Postgres runs on port 5433 here", {"importance": 0.9, "kind": "fact"}),
            ("Prefers short answers", {"target": "user"}),
            ("Build with make dev", {"target": "project"}),
            ("pytest -n needs xdist", {"target": "failure", "category": "tool-quirk"}),
            ("Arrows -> and <- are fine; so is a comma, here", {}),
        ]:
            assert m.add(content, **kw).status == "added", content
    with session(root, "café-api") as m:
        assert m.add("The API pins Python 3.11", target="project").status == "added"
        assert m.add("curl needs --http1.1 on CI", target="failure").status == "added"


def files(root: Path) -> list[Path]:
    folder = root / "pi-hermes-memory"
    return [
        folder / "MEMORY.md",
        folder / "USER.md",
        folder / "failures.md",
        root / "projects-memory" / "MEMORY.md",
    ]


def expected(root: Path) -> dict[str, list[tuple[str, str, str, str | None]]]:
    """Per file, each entry as (text, created, last, project), from the journal."""
    out: dict[str, list[tuple[str, str, str, str | None]]] = {}
    with session(root) as m, session(root, "café-api") as api:
        for target, path in zip(("memory", "user", "failure", "project"), files(root), strict=True):
            views = {v.id: v for v in [*m.entries(target), *api.entries(target)]}
            out[str(path)] = sorted(
                (
                    v.text,
                    v.created.isoformat(),
                    v.last_referenced.isoformat(),
                    v.project if target in ("project", "failure") else None,
                )
                for v in views.values()
                if v.target == target
            )
    return out


def as_tuples(entries: list[dict[str, Any]]) -> list[tuple[str, str, str, str | None]]:
    assert all(e["metadata"] for e in entries), entries
    return sorted((e["text"], e["created"], e["lastReferenced"], e["project"]) for e in entries)


def test_every_file_reads_entry_for_entry_in_the_ported_reader(root: Path) -> None:
    seed(root)
    want = expected(root)
    assert sum(len(v) for v in want.values()) == 10
    for path in files(root):
        assert as_tuples(ts_port_read(path)) == want[str(path)], path


def test_every_file_reads_entry_for_entry_in_the_extensions_own_parser(root: Path) -> None:
    seed(root)
    want = expected(root)
    got = ts_node_read(files(root))
    for path in files(root):
        assert as_tuples(got[str(path)]) == want[str(path)], path


def test_our_metadata_and_version_live_in_the_sidecar(root: Path) -> None:
    seed(root)
    memory = (root / "pi-hermes-memory" / "MEMORY.md").read_text()
    assert "pi-hermes-memory:" not in memory and "scope=" not in memory
    sidecar = (root / "pi-hermes-memory" / ".MEMORY.md.meta").read_text()
    assert "<!-- pi-hermes-memory: memory v" in sidecar
    assert "scope=agent:coder" in sidecar and "importance=0.9, kind=fact" in sidecar
    with session(root) as m:
        by_text = {v.text: v for v in m.entries("memory")}
        failures = {v.text: v for v in m.entries("failure")}
    assert by_text["Use pnpm, not npm"].scope == "agent:coder"
    assert by_text["The team deploys on Tuesdays"].scope == "custom:team"
    assert (by_text["Postgres runs on port 5433 here"].importance, "fact") == (
        0.9,
        by_text["Postgres runs on port 5433 here"].kind,
    )
    assert failures["pytest -n needs xdist"].category == "tool-quirk"


def test_a_hand_edit_keeps_the_metadata_of_what_it_did_not_touch(root: Path) -> None:
    seed(root)
    path = root / "pi-hermes-memory" / "MEMORY.md"
    text = path.read_text()
    text = text.replace("Use pnpm, not npm", "Use pnpm 9, not npm")
    # the TypeScript extension appends in its own spelling
    text += "§\nWritten by the extension <!-- created=2026-01-02, last=2026-01-03 -->\n"
    path.write_text(text)
    with session(root) as m:
        views = {v.text: v for v in m.entries("memory")}
    assert views["Use pnpm 9, not npm"].scope == "agent:coder"  # a revision keeps its scope
    assert views["The team deploys on Tuesdays"].scope == "custom:team"
    assert views["Postgres runs on port 5433 here"].importance == 0.9
    assert views["Written by the extension"].created == date(2026, 1, 2)
    assert "Use pnpm, not npm" not in views
    # rendered again in the shared spelling, readable by the extension
    got = ts_node_read([path])[str(path)]
    assert all(e["metadata"] for e in got)
    assert {e["text"] for e in got} == set(views)


def test_a_deletion_in_the_file_is_merged_against_the_sidecars_version(root: Path) -> None:
    """The extension rewrites the file without an entry: merged against the version in the
    sidecar, it is a deletion, and the other entries keep their metadata."""
    seed(root)
    path = root / "pi-hermes-memory" / "MEMORY.md"
    blocks = path.read_text().rstrip("\n").split(TS_DELIMITER)
    kept = [b for b in blocks if not b.startswith("The team deploys")]
    path.write_text(TS_DELIMITER.join(kept) + "\n")
    with session(root) as m:
        texts = [v.text for v in m.entries("memory")]
        scopes = {v.text: v.scope for v in m.entries("memory")}
        assert m.restore("The team deploys on Tuesdays").status in ("restored", "ok", "added")
    assert "The team deploys on Tuesdays" not in texts and len(texts) == 4
    assert scopes["Use pnpm, not npm"] == "agent:coder"


def test_a_file_in_the_old_spelling_is_read_and_rewritten_shared(root: Path) -> None:
    folder = root / "pi-hermes-memory"
    folder.mkdir()
    (folder / "MEMORY.md").write_text(
        "Old entry <!-- created=2026-01-01, last=2026-01-02, scope=agent:coder -->\n"
    )
    with session(root) as m:
        assert [(v.text, v.scope) for v in m.entries("memory")] == [("Old entry", "agent:coder")]
        assert m.add("New entry").status == "added"
    assert as_tuples(ts_port_read(folder / "MEMORY.md")) == [
        ("New entry", date.today().isoformat(), date.today().isoformat(), None),
        ("Old entry", "2026-01-01", "2026-01-02", None),
    ]
