"""docs/frameworks.md runs as written (issue 31, ADR 0095).

Each `## ` section is one scenario in a fresh folder (`PI_CODING_AGENT_DIR=<folder>/agent`):
its `file=NAME` blocks are written, its `sh` blocks run in bash with this interpreter's scripts
first on PATH, and the `text` block after a `sh` block lists lines its output must hold.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.support.processes import run

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "frameworks.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.M | re.S)


def _sections() -> dict[str, list[tuple[str, str]]]:
    found = {}
    for part in re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.M)[1:]:
        title, _, rest = part.partition("\n")
        blocks = [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(rest)]
        if any(info.startswith("sh") for info, _ in blocks):
            found[title.strip()] = blocks
    return found


SECTIONS = _sections()


def test_the_doc_has_one_runnable_section_per_framework() -> None:
    assert set(SECTIONS) == {
        "mem0's API",
        "LangGraph store",
        "OpenAI Agents SDK",
        "Claude's memory tool",
    }
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/frameworks.md" in readme and "LangGraph" in readme and "mem0" in readme
    assert "OpenAI Agents" in readme
    assert "PiHermesMemoryTool" in readme


@pytest.mark.parametrize("title", sorted(SECTIONS))
def test_section_runs_as_written(title: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(tmp_path),
    }
    output = None
    ran = 0
    for info, body in SECTIONS[title]:
        name = re.search(r"file=(\S+)", info)
        if name:
            (tmp_path / name.group(1)).write_text(body, encoding="utf-8")
        elif info.startswith("sh"):
            script = "set -euo pipefail\n" + body
            done = run(["bash", "-c", script], cwd=tmp_path, env=env, timeout=300)
            output, ran = done.stdout, ran + 1
        elif info == "text":
            assert output is not None, "a text block must follow a sh block"
            for line in body.splitlines():
                assert line in output.splitlines(), f"{line!r} not in:\n{output}"
    assert ran
