"""Stable memory ids (ADR 0074): derived when events are folded, resolved by reference, and kept
by every write a client makes through the stable id."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pi_hermes_memory
import pytest
from hypothesis import HealthCheck, given, settings
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.api import Memory
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.events import (
    MemoryAdded,
    MemoryMergedInto,
    MemoryMovedIn,
    MemoryMovedOut,
    MemoryReplaced,
    MemorySuperseded,
    stamp,
)
from pi_hermes_memory.domain.memory.identity import Reference, parse_reference, resolve
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.journal.codec import decode, encode
from pi_hermes_memory.journal.snapshots import decode_document, encode_document

from tests.support.id_ops import OPS, play

AT = datetime(2026, 8, 1, 9, 0, tzinfo=UTC)
DAY = date(2026, 8, 1)
MEMORY = stream_for(Target.MEMORY)
PROJECT = stream_for(Target.PROJECT)


def _added(entry_id: str, text: str, stream: str = MEMORY) -> MemoryAdded:
    target = Target.PROJECT if stream == PROJECT else Target.MEMORY
    return MemoryAdded(
        stream=stream,
        at=AT,
        entry_id=entry_id,
        target=target,
        text=text,
        project="web" if target is Target.PROJECT else None,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )


def _replaced(old: str, new: str, text: str, stream: str = MEMORY) -> MemoryReplaced:
    return MemoryReplaced(
        stream=stream,
        at=AT,
        old_id=old,
        new_id=new,
        text=text,
        project="web" if stream == PROJECT else None,
        category=None,
        created=DAY,
        last_referenced=DAY,
    )


def _doc(*events: object, stream: str = MEMORY) -> MemoryDocument:
    target = Target.PROJECT if stream == PROJECT else Target.MEMORY
    return fold(MemoryDocument.empty(target), stamp(stream, 0, events))  # type: ignore[arg-type]


def _lineage(doc: MemoryDocument) -> dict[str, tuple[str, int]]:
    return {e.id: (e.stable_id, e.version_no) for e in doc.all_entries()}


# --- the fold ---------------------------------------------------------------------------------


def test_a_replace_keeps_the_stable_id_and_counts_versions() -> None:
    doc = _doc(_added("a", "one"), _replaced("a", "b", "two"), _replaced("b", "c", "three"))
    assert _lineage(doc) == {"a": ("a", 1), "b": ("a", 2), "c": ("a", 3)}
    (head,) = doc.active
    assert head.id == "c" and head.memory_id == "a"


def test_a_join_keeps_each_chains_id() -> None:
    """A replace into an equal active text (MemorySuperseded): the survivor keeps its own id,
    the absorbed chain's rows keep theirs, so the absorbed id is an alias (ADR 0074)."""
    doc = _doc(
        _added("a", "one"),
        _replaced("a", "a2", "one, revised"),
        _added("b", "two"),
        MemorySuperseded(stream=MEMORY, at=AT, old_id="a2", by_id="b", on=DAY),
    )
    assert _lineage(doc) == {"a": ("a", 1), "a2": ("a", 2), "b": ("b", 1)}
    rows = list(doc.all_entries())
    for ref in ("a", "b"):  # the alias and the survivor's own id
        found = resolve(rows, ref)
        assert found is not None and found.row is not None and found.row.id == "b", ref
    assert resolve(rows, "a") is not None and not resolve(rows, "a").pinned  # type: ignore[union-attr]
    pinned = resolve(rows, "a@2")
    assert pinned is not None and pinned.pinned and pinned.row is not None
    assert pinned.row.id == "a2" and pinned.memory_id == "a"


def _moved_in_p2(text: str, **stream_version: int) -> MemoryMovedIn:
    """Version 2 of memory "p" (row "p2") moved from the project document into memory."""
    return MemoryMovedIn(
        stream=MEMORY,
        **stream_version,
        at=AT,
        entry_id="p2",
        from_stream=PROJECT,
        target=Target.MEMORY,
        text=text,
        project=None,
        category=None,
        created=DAY,
        last_referenced=DAY,
        memory_id="p",
        version_no=2,
    )


def test_a_move_carries_the_stable_id_and_an_old_move_starts_its_own() -> None:
    project = _doc(
        _added("p", "run make check", PROJECT),
        _replaced("p", "p2", "run make check first", PROJECT),
        MemoryMovedOut(stream=PROJECT, at=AT, entry_id="p2", to_stream=MEMORY),
        stream=PROJECT,
    )
    moved = _moved_in_p2("run make check first")
    memory = _doc(moved)
    assert _lineage(memory) == {"p2": ("p", 2)}
    rows = [*project.all_entries(), *memory.all_entries()]
    found = resolve(rows, "p")
    assert found is not None and found.row is not None and found.row.id == "p2"
    # an event written before ADR 0074 carries no lineage: the moved row starts its own
    legacy = _doc(MemoryMovedIn(**{**_fields(moved), "memory_id": None, "version_no": None}))
    assert _lineage(legacy) == {"p2": ("p2", 1)}
    old_rows = [*project.all_entries(), *legacy.all_entries()]
    via_old_id = resolve(old_rows, "p")  # the chain's links still lead to it
    assert via_old_id is not None and via_old_id.row is not None and via_old_id.row.id == "p2"


def _fields(event: MemoryMovedIn) -> dict[str, object]:
    import attrs

    return {f.name: getattr(event, f.name) for f in attrs.fields(MemoryMovedIn) if f.init}


def test_a_merge_into_another_document_is_followed() -> None:
    memory = _doc(_added("m", "use pnpm"))
    project = _doc(
        _added("p", "use pnpm", PROJECT),
        MemoryMergedInto(
            stream=PROJECT, at=AT, entry_id="p", into_stream=MEMORY, into_id="m", on=DAY
        ),
        stream=PROJECT,
    )
    rows = [*memory.all_entries(), *project.all_entries()]
    found = resolve(rows, "p")
    assert found is not None and found.row is not None and found.row.id == "m"


def test_a_removed_memory_resolves_to_no_row() -> None:
    from pi_hermes_memory.domain.memory.events import MemoryRemoved, RemovalReason

    doc = _doc(
        _added("a", "one"),
        _replaced("a", "b", "two"),
        MemoryRemoved(stream=MEMORY, at=AT, entry_id="b", reason=RemovalReason.TOOL),
    )
    found = resolve(list(doc.all_entries()), "a")
    assert found is not None and found.row is None and found.last.id == "a"
    assert resolve(list(doc.all_entries()), "zzz") is None


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("abc", Reference(id="abc")),
        ("abc@2", Reference(id="abc", version=2)),
        ("abc@0", Reference(id="abc@0")),
        ("abc@x", Reference(id="abc@x")),
        ("@3", Reference(id="@3")),
        ("a@b@12", Reference(id="a@b", version=12)),
        ("abc@\u0663", Reference(id="abc@\u0663")),  # an Arabic-Indic digit is no version
    ],
)
def test_parse_reference(text: str, ref: Reference) -> None:
    assert parse_reference(text) == ref
    assert str(ref) == text or ref.version is None


def test_events_and_snapshots_carry_the_lineage_and_old_ones_still_decode() -> None:
    moved = _moved_in_p2("x", version=1)
    assert decode(*encode(moved)) == moved
    _, payload = encode(_added("a", "one"))
    assert "memory_id" not in payload and "version_no" not in payload  # as before ADR 0074
    doc = _doc(_added("a", "one"), _replaced("a", "b", "two"))
    assert _lineage(decode_document(encode_document(doc))) == _lineage(doc)


# --- the property: through the public API on in-memory adapters ---------------------------


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    yield from _open(tmp_path)


def _open(tmp_path: Path) -> Iterator[Memory]:
    storage = InMemoryStorage()
    with pi_hermes_memory.open(
        agent_root=tmp_path,
        cwd=tmp_path / "web",
        environ={},
        storage=storage,
        markdown=InMemoryMarkdown(),
        search_index=InMemorySearchIndex(storage),
    ) as m:
        yield m


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=OPS)
def test_every_id_ever_returned_names_one_head_or_nothing(
    tmp_path: Path, ops: list[object]
) -> None:
    """After any sequence of add / update / delete / promote / demote, every id a write ever
    returned resolves to exactly one active head (its own, or the survivor of a join) or to
    nothing (removed); each active memory is named by its own id; no two share one."""
    for m in _open(tmp_path / str(len(list(tmp_path.iterdir())))):
        ids = play(m, ops)  # type: ignore[arg-type]
        active = [*m.entries("memory"), *m.entries("project")]
        assert len({v.id for v in active}) == len(active)
        for view in active:
            assert m.get(view.id) == view and view.superseded_by is None
        heads = {v.version_id for v in active}
        for entry_id in ids:
            got = m.get(entry_id)
            if got is not None and "@" not in entry_id and got.superseded_by is None:
                assert got.version_id in heads, (entry_id, got)
            elif got is None:
                assert m.update(entry_id, "x").status in ("gone", "not_found")


def test_version_views_of_an_entry(memory: Memory) -> None:
    a = memory.add("Builds use Bazel 7").entry_id
    assert a is not None
    memory.update(a, "Builds use Bazel 8")
    views = memory.history(a)
    assert [(v.id, v.version, v.text) for v in views] == [
        (a, 1, "Builds use Bazel 7"),
        (a, 2, "Builds use Bazel 8"),
    ]
    assert isinstance(views[0].version_id, str) and views[0].superseded_by == views[1].version_id
    entries: list[MemoryEntry] = []
    assert resolve(entries, a) is None
