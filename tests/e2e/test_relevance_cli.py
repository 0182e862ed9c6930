"""Relevance as a user meets it (issue 27): the CLI and the session API answer "nothing found"
for questions the store is not about, and still find what it is about, through stop words,
inflections and paraphrases; shown scores are plain numbers from 0 to 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pi_hermes_memory
import pytest

TEAM_FACTS = (
    "The deploy script needs the corporate VPN",
    "The test command is make test",
    "Tabs are preferred over spaces in this repository",
    "The project uses pnpm as its JavaScript package manager",
    "Replies should be short and formatted as bullet lists",
    "Staging runs on Kubernetes in the eu-west-1 region",
    "Database migrations are written with Alembic",
    "The on-call rotation changes every Monday",
    "项目构建命令是 make build",
)

UNRELATED = (
    "does the user like pizza",
    "recipe for banana bread with walnuts",
    "how to tune a violin string",
    "best hiking trails in Patagonia",
    "who won the 1998 football world cup",
    "Can you summarize the plot of the novel for me please?",
    "what is the capital of Australia",
    "the",
    "for the with to in",
    "的",
    "我们的 是 了",
)


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=60,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("relevance") / "agent"
    for fact in TEAM_FACTS:
        added = cli(root, "add", fact)
        assert added.returncode == 0, added.stderr
    return root


@pytest.mark.parametrize("question", UNRELATED)
def test_unrelated_questions_find_nothing(root: Path, question: str) -> None:
    found = cli(root, "search", question, "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"] == [], found.stdout


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("deployment", "The deploy script needs the corporate VPN"),
        ("what does the deploy script need", "The deploy script needs the corporate VPN"),
        ("which test command", "The test command is make test"),
        ("migration tool", "Database migrations are written with Alembic"),
        ("deployed scripts", "The deploy script needs the corporate VPN"),
        ("构建命令", "项目构建命令是 make build"),
        ("项目的构建命令是什么", "项目构建命令是 make build"),
    ],
)
def test_related_queries_find_their_entry_first(root: Path, query: str, expected: str) -> None:
    found = cli(root, "search", query, "--json")
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results and results[0]["text"] == expected, results
    for hit in results:
        assert 0.0 < hit["score"] <= 1.0
        assert "e" not in repr(hit["score"]), hit["score"]  # no 1.93e-06


def test_auto_recall_injects_nothing_for_an_unrelated_turn(tmp_path: Path) -> None:
    memory = pi_hermes_memory.open(
        agent_root=tmp_path, cwd=tmp_path, project="alpha", environ={"HOME": str(tmp_path)}
    )
    try:
        for fact in TEAM_FACTS:
            memory.add(fact, target="project", kind="fact")
        session = memory.session("s-relevance")
        assert session.before_turn("Can you summarize the plot of the novel for me please?") is None
        assert session.before_turn("recipe for banana bread with walnuts") is None
        block = session.before_turn("what does the deploy script need before it runs?")
        assert block is not None and "corporate VPN" in block
    finally:
        memory.close()
