"""One data directory for both implementations: a TypeScript extension (0.9.x) data directory
with `project64=` attributions is read, written by us, and still reads under the TypeScript
format rules (ADR 0027)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pi_hermes_memory
from pi_hermes_memory import Memory

from tests.support.fakes import StepClock
from tests.unit.test_project64 import ts_read

WEB = "d2Vi"  # base64url("web")
API = "YXBp"  # base64url("api")


def write_ts_data_dir(root: Path) -> None:
    """The files as the TypeScript extension writes them: entries joined by "\\n§\\n", each
    ending in `<!-- created=…, last=…[, project64=…] -->`, no version line."""
    memory_dir = root / "pi-hermes-memory"
    memory_dir.mkdir(parents=True)
    (memory_dir / "failures.md").write_text(
        "\n§\n".join(
            [
                f"pip install needs the proxy <!-- created=2026-07-01, last=2026-07-03, "
                f"project64={WEB} -->",
                f"cargo build needs openssl headers <!-- created=2026-07-02, last=2026-07-02, "
                f"project64={API} -->",
                "docker builds need buildkit <!-- created=2026-07-02, last=2026-07-02 -->",
            ]
        )
    )
    projects = root / "projects-memory"
    projects.mkdir()
    (projects / "MEMORY.md").write_text(
        f"web deploys with compose <!-- created=2026-07-01, last=2026-07-01, project64={WEB} -->"
        "\n§\n"
        f"api deploys with systemd <!-- created=2026-07-01, last=2026-07-01, project64={API} -->"
    )


def open_memory(root: Path, project: str | None) -> Memory:
    clock = StepClock(datetime(2026, 7, 29, 12, 0, tzinfo=UTC))
    return pi_hermes_memory.open(
        agent_root=root,
        environ={"HOME": str(root.parent)},
        cwd=root.parent,
        project=project,
        clock=clock,
    )


def test_a_typescript_data_dir_keeps_its_attribution_both_ways(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    write_ts_data_dir(root)
    with open_memory(root, "web") as web:
        # read: the web failure is web's (not global), api's stays hidden
        assert sorted((e.text, e.project) for e in web.entries("failure")) == [
            ("docker builds need buildkit", None),
            ("pip install needs the proxy", "web"),
        ]
        found = web.search("needs need", target="failure").hits
        assert {(h.text, h.project) for h in found} == {
            ("pip install needs the proxy", "web"),
            ("docker builds need buildkit", None),
        }
        assert [e.text for e in web.entries("project")] == ["web deploys with compose"]
        # write: a new failure and a replace, in the same files
        assert web.add("npm ci needs a clean cache", target="failure").success
        assert web.replace("compose", "web deploys with kubernetes", target="project").success
    failures = (root / "pi-hermes-memory" / "failures.md").read_text()
    assert failures.splitlines() == [
        f"pip install needs the proxy <!-- created=2026-07-01, last=2026-07-03, "
        f"project64={WEB} -->",
        "§",
        f"cargo build needs openssl headers <!-- created=2026-07-02, last=2026-07-02, "
        f"project64={API} -->",
        "§",
        "docker builds need buildkit <!-- created=2026-07-02, last=2026-07-02 -->",
        "§",
        f"npm ci needs a clean cache <!-- created=2026-07-29, last=2026-07-29, project64={WEB} -->",
    ]
    assert ts_read(failures) == [
        ("pip install needs the proxy", "web"),
        ("cargo build needs openssl headers", "api"),
        ("docker builds need buildkit", None),
        ("npm ci needs a clean cache", "web"),
    ]
    flat = (root / "projects-memory" / "MEMORY.md").read_text()
    assert ts_read(flat) == [
        ("web deploys with kubernetes", "web"),
        ("api deploys with systemd", "api"),
    ]
    # the TypeScript extension edits the file (adds a failure of api); we read it back
    (root / "pi-hermes-memory" / "failures.md").write_text(
        failures.rstrip("\n")
        + f"\n§\ngo vet needs go 1.22 <!-- created=2026-07-30, last=2026-07-30, project64={API} -->"
    )
    with open_memory(root, "api") as api:
        assert sorted(e.text for e in api.entries("failure") if e.project == "api") == [
            "cargo build needs openssl headers",
            "go vet needs go 1.22",
        ]
        assert api.add("rustup needs a proxy too", target="failure").success
    again = (root / "pi-hermes-memory" / "failures.md").read_text()
    assert not again.startswith("<!--")  # no version line: the first entry stays clean for TS
    assert [p for _, p in ts_read(again)] == ["web", "api", None, "web", "api", "api"]
