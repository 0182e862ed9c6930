"""A replace under projectMemorySharing keeps the entry its owner's, on SQLite + Markdown
(ADR 0027)."""

from __future__ import annotations

import json
from pathlib import Path

import pi_hermes_memory
from pi_hermes_memory import Memory


def open_memory(root: Path, project: str, **config: object) -> Memory:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hermes-memory-config.json").write_text(json.dumps(config))
    return pi_hermes_memory.open(
        agent_root=root, environ={"HOME": str(root.parent)}, cwd=root.parent, project=project
    )


def test_replacing_another_projects_entry_keeps_it_in_that_project(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    with open_memory(root, "web") as web:
        web.add("Web deploys with Docker Compose", target="project")
        web.add("Web tests run with vitest", target="project")
    with open_memory(root, "api", projectMemorySharing=True) as api:
        api.add("API deploys with systemd", target="project")
        result = api.replace(
            "Docker Compose", "Web deploys with Kubernetes manifests", target="project"
        )
        assert result.status == "replaced"
        hits = api.search("web deploys kubernetes", target="project").hits
        assert [(h.text, h.project) for h in hits][:1] == [
            ("Web deploys with Kubernetes manifests", "web")
        ]
    flat = (root / "projects-memory" / "MEMORY.md").read_text()
    lines = [line for line in flat.splitlines() if "deploys" in line or "vitest" in line]
    # the new version takes the old one's place in the file, with the owner's attribution
    assert [line.split(" <!-- ")[0] for line in lines] == [
        "Web deploys with Kubernetes manifests",
        "Web tests run with vitest",
        "API deploys with systemd",
    ]
    # the TypeScript extension's spelling (ADR 0077): project64 = base64url of the name
    assert "project64=d2Vi -->" in lines[0] and "project64=YXBp -->" in lines[2]
    with open_memory(root, "web") as web:  # the owner, without sharing, still sees it
        assert [e.text for e in web.entries("project")] == [
            "Web deploys with Kubernetes manifests",
            "Web tests run with vitest",
        ]
        assert web.search("kubernetes").hits[0].project == "web"
    with open_memory(root, "api") as api:
        assert [e.text for e in api.entries("project")] == ["API deploys with systemd"]


def test_a_shared_replace_is_checked_against_the_owners_budget(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    with open_memory(root, "web", projectCharLimit=60) as web:
        web.add("w" * 30, target="project")
        web.add("web note", target="project")
    config = {"projectMemorySharing": True, "projectCharLimit": 60}
    with open_memory(root, "api", memoryOverflowStrategy="fifo-evict", **config) as api:
        api.add("a" * 55, target="project")  # api's budget is almost full
        assert api.replace("web note", "x" * 25, target="project").status == "replaced"
        over = api.replace("x" * 25, "y" * 35, target="project")  # web: 30 + 35 > 60
        assert over.status == "capacity_exceeded"
        assert sorted(len(e.text) for e in api.entries("project")) == [25, 30, 55]  # no eviction
    with open_memory(root, "web") as web:
        assert [e.text for e in web.entries("project")] == ["w" * 30, "x" * 25]
