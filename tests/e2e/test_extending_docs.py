"""docs/extending.md runs as written: every worked example, as a user would type it.

Each `## ` section is one scenario in a fresh folder (the folder is on PYTHONPATH and is the
agent root's parent, `PI_CODING_AGENT_DIR=<folder>/agent`). The doc is read top to bottom, so
the folder first holds the code files written by the sections before it (not their store:
nothing under `agent/`; their commands do not run again; a later block for the same NAME
wins). Then, in order, a fenced block whose info
string says `file=NAME` is written to NAME; a `sh` block runs in bash (`set -euo pipefail`)
with this interpreter's scripts first on PATH; a `text` block right after a `sh` block holds
lines its output must contain (a line `...` stands for lines left out; `<date>` stands for
today's date, YYYY-MM-DD).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.M | re.S)
KINDS = (
    "embedder",
    "reranker",
    "llm",
    "storage",
    "vector store",
    "search index",
    "session source",
)


@attrs.frozen
class Block:
    info: str
    body: str


def _file_name(block: Block) -> str | None:
    name = re.search(r"file=(\S+)", block.info)
    return name.group(1) if name else None


def _sections() -> tuple[dict[str, list[Block]], dict[str, list[Block]]]:
    """The runnable sections by title, and for each the file blocks of the sections before."""
    text = DOC.read_text(encoding="utf-8")
    found: dict[str, list[Block]] = {}
    earlier: dict[str, list[Block]] = {}
    written: list[Block] = []
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, rest = part.partition("\n")
        blocks = [Block(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(rest)]
        if any(b.info.startswith("sh") or _file_name(b) for b in blocks):
            found[title.strip()] = blocks
            earlier[title.strip()] = list(written)
        written.extend(b for b in blocks if _file_name(b) and not _in_store(b))
    return found, earlier


def _shown(line: str, output: str) -> bool:
    """`line` appears in `output`, `<date>` standing for any YYYY-MM-DD, `<score>` for a 0-1
    score with two decimals and `<id>` for an entry id."""
    stands = {"<date>": r"\d{4}-\d{2}-\d{2}", "<score>": r"[01]\.\d{2}", "<id>": r"[0-9A-Za-z]+"}
    parts = re.split(r"(<date>|<score>|<id>)", line)
    pattern = "".join(stands.get(part, re.escape(part)) for part in parts)
    return re.search(pattern, output) is not None


def _in_store(block: Block) -> bool:
    name = _file_name(block)
    return name is not None and Path(name).parts[0] == "agent"


SECTIONS, EARLIER_FILES = _sections()


def _write(block: Block, folder: Path) -> None:
    name = _file_name(block)
    assert name is not None and not Path(name).is_absolute() and ".." not in Path(name).parts
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.body, encoding="utf-8")


def test_every_adapter_kind_has_a_worked_example() -> None:
    titles = " | ".join(SECTIONS).lower()
    for kind in KINDS:
        assert kind in titles, f"docs/extending.md has no worked example for {kind}"


@pytest.mark.parametrize("title", sorted(SECTIONS))
def test_the_example_runs_as_written(title: str, tmp_path: Path) -> None:
    env = {  # nothing of the developer's own store or server settings leaks in
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PI_MEMORY_", "PI_CODING_AGENT", "PI_HERMES_"))
    }
    env.update(
        HOME=str(tmp_path),
        PYTHONPATH=str(tmp_path),
        PI_CODING_AGENT_DIR=str(tmp_path / "agent"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    for block in EARLIER_FILES[title]:
        _write(block, tmp_path)
    last_output: str | None = None
    ran = 0
    for block in SECTIONS[title]:
        if _file_name(block):
            _write(block, tmp_path)
            last_output = None
        elif block.info.split()[:1] == ["sh"]:
            done = subprocess.run(
                ["bash", "-c", "set -euo pipefail\n" + block.body],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{title}: {block.body}\n{done.stdout}\n{done.stderr}"
            last_output, ran = done.stdout, ran + 1
        elif block.info == "text":
            assert last_output is not None, f"{title}: a text block follows no sh block"
            for line in block.body.splitlines():
                if line.strip() and line.strip() != "...":
                    assert _shown(line.strip(), last_output), (
                        f"{title}: {line!r} not in\n{last_output}"
                    )
    assert ran, f"{title}: no command ran"
