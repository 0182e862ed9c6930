"""The `DocumentFormat` contract suite: render and parse the Markdown byte format.

Provide a ``document_format`` fixture (a fresh format). The memory documents
(`pi_hermes_memory.memory.documents`) render the active entries with a version line and parse a
file back when a person edited it; the suite checks that what is rendered parses back to the
same entries and stamp, and that rendering depends only on its arguments (a format may cache
the last render, ADR 0039, but never show it).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryEntry, Target

__all__ = ["DocumentFormatContract"]

DAY = date(2026, 7, 29)
#: a store id as `RenderLedger.store_id` makes them (hex)
STORE = "5f3a9c0144d2"


def _entry(n: int, target: Target, text: str, project: str | None = None) -> MemoryEntry:
    return MemoryEntry.create(
        id=f"01J{n:023d}",
        target=target,
        text=text,
        project=project,
        category=FailureCategory.FAILURE if target is Target.FAILURE else None,
        created=DAY,
        last_referenced=date(2026, 7, 30),
    )


def _same(parsed: Any, entries: list[MemoryEntry]) -> None:
    got = [(p.text, p.created, p.last, p.project) for p in parsed.entries]
    want = [(e.text, e.created, e.last_referenced, e.project) for e in entries]
    assert got == want


class DocumentFormatContract:
    """Every `DocumentFormat` passes these tests (the Markdown format, or your own)."""

    def test_what_is_rendered_parses_back(self, document_format: Any) -> None:
        entries = [
            _entry(1, Target.MEMORY, "Deploys need the VPN"),
            _entry(2, Target.MEMORY, "项目 uses pnpm, never npm"),
            _entry(3, Target.MEMORY, "A fact with § and <!-- a comment --> inside"),
        ]
        text = document_format.render(entries, Target.MEMORY)
        assert isinstance(text, str)
        parsed = document_format.parse(text, Target.MEMORY)
        _same(parsed, entries)
        assert parsed.version_line is None

    def test_project_entries_keep_their_project(self, document_format: Any) -> None:
        entries = [
            _entry(1, Target.PROJECT, "Web deploys with Compose", "web"),
            _entry(2, Target.PROJECT, "API runs on port 8080", "api"),
        ]
        _same(
            document_format.parse(document_format.render(entries, Target.PROJECT), Target.PROJECT),
            entries,
        )

    def test_failures_keep_their_category(self, document_format: Any) -> None:
        entries = [_entry(1, Target.FAILURE, "pip install -e . failed without --config-settings")]
        parsed = document_format.parse(
            document_format.render(entries, Target.FAILURE), Target.FAILURE
        )
        _same(parsed, entries)
        assert parsed.entries[0].category == FailureCategory.FAILURE.value

    def test_the_stamp_is_read_back(self, document_format: Any) -> None:
        stamp = VersionLine(target="memory", version=7, store=STORE)
        entries = [_entry(1, Target.MEMORY, "Deploys need the VPN")]
        text = document_format.render(entries, Target.MEMORY, stamp=stamp)
        parsed = document_format.parse(text, Target.MEMORY)
        assert parsed.version_line == stamp
        _same(parsed, entries)

    def test_no_entries_parse_as_none(self, document_format: Any) -> None:
        parsed = document_format.parse(document_format.render([], Target.USER), Target.USER)
        assert parsed.entries == ()

    def test_a_render_depends_only_on_its_arguments(self, document_format: Any) -> None:
        rows = [_entry(n, Target.MEMORY, f"fact number {n}") for n in range(1, 5)]
        document_format.render(rows[:2], Target.MEMORY)
        document_format.render(rows[:3], Target.MEMORY)  # one appended row: an incremental render
        grown = document_format.render(rows, Target.MEMORY)
        changed = [rows[0], _entry(9, Target.MEMORY, "a different second fact"), *rows[2:]]
        after = document_format.render(changed, Target.MEMORY)
        _same(document_format.parse(grown, Target.MEMORY), rows)
        _same(document_format.parse(after, Target.MEMORY), changed)
        assert document_format.render(rows, Target.MEMORY) == grown

    def test_learning_its_own_render_changes_nothing(self, document_format: Any) -> None:
        entries = [_entry(1, Target.PROJECT, "Web deploys with Compose", "web")]
        stamp = VersionLine(target="project", version=2, store=STORE)
        text = document_format.render(entries, Target.PROJECT, stamp=stamp)
        document_format.learn(text.encode("utf-8"), Target.PROJECT)
        assert document_format.render(entries, Target.PROJECT, stamp=stamp) == text
