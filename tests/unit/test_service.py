"""The memory service on in-memory adapters: commands, batches, hand edits, projections."""

from __future__ import annotations

from datetime import date

from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.commands import AddMemory, RemoveMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.results import WriteResult

from tests.support.builders import service
from tests.support.fakes import StepClock

CLOCK = StepClock()


def add(text: str, target: Target = Target.MEMORY, n: list[int] = [0], **kw: object) -> AddMemory:  # noqa: B006
    n[0] += 1
    return AddMemory(target=target, text=text, entry_id=f"c{n[0]}", at=CLOCK.now(), **kw)  # type: ignore[arg-type]


def test_add_writes_journal_projection_and_markdown() -> None:
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    svc = service(storage, md)
    result = svc.execute(add("The CI runs on GitHub Actions"))
    assert result.success and result.status == "added"
    first, text = md.files[Target.MEMORY].decode().split("\n", 1)
    assert first.startswith("<!-- pi-hermes-memory: memory v1, store ")  # the version line
    assert text.startswith("The CI runs on GitHub Actions <!-- created=")
    assert [r["text"] for r in storage.rows.values()] == ["The CI runs on GitHub Actions"]
    with storage.transaction() as uow:
        events = uow.journal.read(stream_for(Target.MEMORY))
    assert len(events) == 1


def test_blocked_content_writes_nothing() -> None:
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    svc = service(storage, md)
    token = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
    result = svc.execute(add(f"my token is {token}"))
    assert not result.success and result.status == "blocked"
    assert token not in result.message
    assert md.files == {} and storage.rows == {}


def test_hand_edit_is_imported_before_the_next_write() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("first fact about the build"))
    md.files[Target.MEMORY] = (
        md.files[Target.MEMORY] + "\n§\nwritten by hand in the editor\n".encode()
    )
    result = svc.execute(add("second fact from the agent"))
    assert result.success
    texts = [e.text for e in svc.entries(Target.MEMORY)]
    assert texts == [
        "first fact about the build",
        "written by hand in the editor",
        "second fact from the agent",
    ]
    assert "written by hand in the editor <!-- created=" in md.files[Target.MEMORY].decode()


def test_hand_deletion_is_imported_not_overwritten() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("keep this line please"))
    svc.execute(add("delete this one by hand"))
    kept = md.files[Target.MEMORY].decode().split("\n§\n")[0] + "\n"
    md.files[Target.MEMORY] = kept.encode()
    assert [e.text for e in svc.entries(Target.MEMORY)] == ["keep this line please"]


def test_missing_file_is_rerendered_not_read_as_delete_all() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("survives a deleted file"))
    del md.files[Target.MEMORY]
    assert [e.text for e in svc.entries(Target.MEMORY)] == ["survives a deleted file"]
    assert b"survives a deleted file" in md.files[Target.MEMORY]


def test_invalid_utf8_file_blocks_writes_and_is_left_untouched() -> None:
    import pytest
    from pi_hermes_memory.errors import MarkdownUnreadable

    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("a fact before the damage"))
    damaged = md.files[Target.MEMORY] + b"\xff\xfe broken"
    md.files[Target.MEMORY] = damaged
    with pytest.raises(MarkdownUnreadable, match="not valid UTF-8"):
        svc.execute(add("a fact after the damage"))
    assert md.files[Target.MEMORY] == damaged


def test_second_service_sees_first_services_writes() -> None:
    storage, md = InMemoryStorage(), InMemoryMarkdown()
    a, b = service(storage, md), service(storage, md)
    a.execute(add("written by process a"))
    b.execute(add("written by process b"))
    assert [e.text for e in a.entries(Target.MEMORY)] == [
        "written by process a",
        "written by process b",
    ]


def test_batch_partial_commit_with_per_op_results() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("Use pytest for tests"))
    results = svc.execute_batch(
        [
            add("The docs live in docs/"),
            add("use pytest for all tests"),  # near duplicate: fails, others proceed
            ReplaceMemory(
                target=Target.MEMORY,
                old_text="docs/",
                text="The docs live in site/",
                entry_id="r1",
                at=CLOCK.now(),
            ),
            RemoveMemory(target=Target.MEMORY, old_text="nothing matches this", at=CLOCK.now()),
            add("Prefers tabs", Target.USER),
            WriteResult(success=False, status="invalid_arguments", message="bad op"),
        ]
    )
    assert [r.status for r in results] == [
        "added",
        "near_duplicate",
        "replaced",
        "not_found",
        "added",
        "invalid_arguments",
    ]
    assert [e.text for e in svc.entries(Target.MEMORY)] == [
        "Use pytest for tests",
        "The docs live in site/",
    ]
    assert [e.text for e in svc.entries(Target.USER)] == ["Prefers tabs"]


def test_replay_equals_cached_state_and_history_is_listed() -> None:
    storage = InMemoryStorage()
    svc = service(storage)
    svc.execute(add("value is one"))
    svc.execute(
        ReplaceMemory(
            target=Target.MEMORY, old_text="one", text="value is two", entry_id="r9", at=CLOCK.now()
        )
    )
    with storage.transaction() as uow:
        replayed = fold(
            MemoryDocument.empty(Target.MEMORY), uow.journal.read(stream_for(Target.MEMORY))
        )
    assert replayed == svc.document(Target.MEMORY)
    listed = svc.entries(Target.MEMORY, include_history=True)
    assert [(e.text, e.superseded_by) for e in listed] == [
        ("value is two", None),
        ("value is one", "r9"),
    ]
    assert isinstance(listed[0].created, date)


def test_harmless_invisible_characters_are_stripped_with_a_note() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    result = svc.execute(add("zero\u200bwidth space inside"))
    assert result.status == "added"
    assert any("U+200B" in w for w in result.warnings)
    assert [e.text for e in svc.entries(Target.MEMORY)] == ["zerowidth space inside"]
    assert "\u200b" not in md.files[Target.MEMORY].decode()


def test_bidi_override_is_blocked() -> None:
    svc = service()
    result = svc.execute(add("harmless \u202etxt.exe looking text"))
    assert result.status == "blocked" and "U+202E" in result.message
    assert svc.entries(Target.MEMORY) == []


def test_refresh_imports_hand_edits_only_when_a_file_changed() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("agent fact one"))
    calls: list[Target] = []
    original = svc.entries

    def counting(target: Target | None = None, **kw: bool) -> object:
        calls.append(target)  # type: ignore[arg-type]
        return original(target, **kw)

    svc.entries = counting  # type: ignore[method-assign]
    svc.refresh([Target.MEMORY])
    assert calls == []  # unchanged file: no sync
    md.files[Target.MEMORY] += "§\nhand fact two\n".encode()
    svc.refresh([Target.MEMORY])
    assert calls == [Target.MEMORY]
    assert [e.text for e in original(Target.MEMORY)] == ["agent fact one", "hand fact two"]
