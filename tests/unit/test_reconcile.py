"""Importing hand edits of a Markdown document as events."""

from __future__ import annotations

from datetime import UTC, date, datetime

from pi_hermes_memory.domain.memory.document import MemoryDocument, fold
from pi_hermes_memory.domain.memory.events import MemoryAdded, MemoryRemoved, MemoryReplaced, Origin
from pi_hermes_memory.domain.memory.markdown_doc import ParsedDocument, ParsedEntry
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.reconcile import reconcile

AT = datetime(2026, 8, 1, 10, 0, tzinfo=UTC)
D1, D2 = date(2026, 7, 1), date(2026, 7, 2)


def _doc(
    *texts: tuple[str, date], target: Target = Target.MEMORY, project: str | None = None
) -> MemoryDocument:
    doc = MemoryDocument.empty(target)
    events = [
        MemoryAdded(
            stream=doc.stream,
            version=i,
            at=AT,
            entry_id=f"b{i}",
            target=target,
            text=t,
            project=project,
            category=None,
            created=c,
            last_referenced=c,
        )
        for i, (t, c) in enumerate(texts, start=1)
    ]
    return fold(doc, events)


def _ids() -> object:
    counter = iter(range(1, 1000))
    return lambda: f"n{next(counter)}"


def _parsed(*entries: ParsedEntry) -> ParsedDocument:
    return ParsedDocument(entries=entries)


def test_unchanged_file_yields_no_events() -> None:
    base = _doc(("alpha fact", D1), ("beta fact", D2))
    parsed = _parsed(ParsedEntry(text="beta fact", created=D2), ParsedEntry(text="alpha fact"))
    result = reconcile(base=base, parsed=parsed, head=base, new_id=_ids(), at=AT)
    assert result.events == ()


def test_added_revised_and_removed_entries_become_events() -> None:
    base = _doc(("alpha fact", D1), ("beta fact", D2), ("gamma fact", D2))
    parsed = _parsed(
        ParsedEntry(text="alpha fact", created=D1),
        ParsedEntry(text="beta fact, revised by hand", created=D2),
        ParsedEntry(text="a brand new line without metadata"),
    )
    result = reconcile(base=base, parsed=parsed, head=base, new_id=_ids(), at=AT)
    kinds = [type(e) for e in result.events]
    assert kinds == [MemoryReplaced, MemoryAdded, MemoryRemoved]
    assert (result.added, result.revised, result.removed) == (1, 1, 1)
    assert all(getattr(e, "origin", Origin.MARKDOWN) is Origin.MARKDOWN for e in result.events[:2])
    new = fold(base, result.events)
    assert [e.text for e in new.active] == [
        "alpha fact",
        "beta fact, revised by hand",
        "a brand new line without metadata",
    ]
    assert new.active[2].created == AT.date()
    assert new.history[0].text == "beta fact" and new.history[0].superseded_by == new.active[1].id


def test_edits_apply_on_top_of_a_newer_head() -> None:
    base = _doc(("alpha fact", D1))
    head = fold(
        base,
        [
            MemoryAdded(
                stream=base.stream,
                version=2,
                at=AT,
                entry_id="h2",
                target=Target.MEMORY,
                text="committed but not yet rendered",
                project=None,
                category=None,
                created=D2,
                last_referenced=D2,
            )
        ],
    )
    parsed = _parsed(ParsedEntry(text="alpha fact"), ParsedEntry(text="hand addition"))
    result = reconcile(base=base, parsed=parsed, head=head, new_id=_ids(), at=AT)
    new = fold(head, result.events)
    assert [e.text for e in new.active] == [
        "alpha fact",
        "committed but not yet rendered",
        "hand addition",
    ]


def test_duplicate_hand_lines_are_merged_with_a_warning() -> None:
    base = _doc(("alpha fact", D1))
    parsed = _parsed(ParsedEntry(text="alpha fact"), ParsedEntry(text="alpha   fact"))
    result = reconcile(base=base, parsed=parsed, head=base, new_id=_ids(), at=AT)
    assert result.events == ()
    assert any("repeats" in w for w in result.warnings)


def test_reimport_is_idempotent() -> None:
    base = _doc(("alpha fact", D1))
    parsed = _parsed(ParsedEntry(text="hand addition"))
    first = reconcile(base=base, parsed=parsed, head=base, new_id=_ids(), at=AT)
    head = fold(base, first.events)
    second = reconcile(base=base, parsed=parsed, head=head, new_id=_ids(), at=AT)
    assert second.events == ()


def test_unattributed_project_rows_are_kept_as_is() -> None:
    empty = MemoryDocument.empty(Target.PROJECT)
    parsed = _parsed(ParsedEntry(text="legacy line"), ParsedEntry(text="owned", project="web"))
    result = reconcile(base=empty, parsed=parsed, head=empty, new_id=_ids(), at=AT)
    new = fold(empty, result.events)
    assert [(e.text, e.project) for e in new.active] == [("legacy line", None), ("owned", "web")]


def test_a_file_that_shows_its_base_unchanged_is_no_save_and_names_nothing() -> None:
    """A file entry for entry its base (a render lagging the journal: a large file, a killed
    writer, a store copied with new timestamps) changes nothing and warns of nothing, however
    many entries the journal holds beyond it."""
    head = _doc(("alpha fact", D1), ("beta fact", D1), ("gamma fact", D2))
    base = _doc(("alpha fact", D1))
    parsed = _parsed(ParsedEntry(text="alpha fact", created=D1))
    result = reconcile(base=base, parsed=parsed, head=head, new_id=_ids(), at=AT)
    assert result.events == ()
    assert not [w for w in result.warnings if "lacks" in w]
    # a metadata edit is a save: the entries it never showed are named
    tagged = _parsed(ParsedEntry(text="alpha fact", created=D1, importance=0.9))
    retagged = reconcile(base=base, parsed=tagged, head=head, new_id=_ids(), at=AT)
    assert [w for w in retagged.warnings if "lacks 2 entries" in w]


def test_entries_written_after_the_base_that_the_file_lacks_are_kept_and_named() -> None:
    """The file lacks the entry the agent wrote after the base: kept (the buffer never showed
    it), and a warning names its id and the command that deletes it, since a person who deleted
    it from an up-to-date buffer saves the same file. Entries the file shows, or that the base
    held, are not named."""
    head = _doc(("alpha fact", D1), ("beta fact", D1), ("gamma fact", D2))
    base = _doc(("alpha fact", D1), ("beta fact", D1))
    parsed = _parsed(
        ParsedEntry(text="alpha fact", created=D1),
        ParsedEntry(text="beta fact", created=D1),
        ParsedEntry(text="delta typed by hand"),
    )
    result = reconcile(base=base, parsed=parsed, head=head, new_id=_ids(), at=AT)
    assert [e.text for e in fold(head, result.events).active] == [
        "alpha fact",
        "beta fact",
        "gamma fact",
        "delta typed by hand",
    ]
    (warning,) = [w for w in result.warnings if "lacks" in w]
    assert warning.startswith("memory: the saved file lacks 1 entry written after the version")
    assert "(b3)" in warning and "`pi-hermes-memory delete b3`" in warning
    # the same file saved from the newest version: a deletion, and nothing to say
    fresh = reconcile(base=head, parsed=parsed, head=head, new_id=_ids(), at=AT)
    assert [e.text for e in fold(head, fresh.events).active] == [
        "alpha fact",
        "beta fact",
        "delta typed by hand",
    ]
    assert not [w for w in fresh.warnings if "lacks" in w]
    # the file lagged the journal (no render after the base was written to it): the entries it
    # lacks were never in it, so they are kept without a word
    lagged = reconcile(
        base=base, parsed=parsed, head=head, new_id=_ids(), at=AT, later_render=False
    )
    assert lagged.events == result.events
    assert not [w for w in lagged.warnings if "lacks" in w]
    # the file shows the later entry: nothing the merge kept unseen
    shown = _parsed(*parsed.entries, ParsedEntry(text="gamma fact", created=D2))
    seen = reconcile(base=base, parsed=shown, head=head, new_id=_ids(), at=AT)
    assert not [w for w in seen.warnings if "lacks" in w]
