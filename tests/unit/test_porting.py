"""The export/import codec and the import plan (ADR 0046)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold
from pi_hermes_memory.domain.memory.events import stamp
from pi_hermes_memory.domain.memory.model import FailureCategory, MemoryEntry, MemoryKind, Target
from pi_hermes_memory.domain.memory.porting import (
    check_header,
    entry_fields,
    from_record,
    from_seed,
    header,
    plan_import,
    to_record,
)
from pi_hermes_memory.errors import RecordError

AT = datetime(2026, 5, 1, 12, tzinfo=UTC)
dates = st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 1, 1))
ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,20}", fullmatch=True)
texts = st.text(min_size=1, max_size=40).filter(lambda t: t == t.strip())
entries = st.builds(
    MemoryEntry,
    id=ids,
    target=st.sampled_from(Target),
    text=texts,
    project=st.none() | st.text(max_size=10),
    category=st.none() | st.sampled_from(FailureCategory),
    created=dates,
    last_referenced=dates,
    superseded_by=st.none() | ids,
    superseded_at=st.none() | dates,
    namespace=st.none() | st.sampled_from(["agent:a", "custom:x", "user:u"]),
    flagged=st.none() | st.text(max_size=10),
    importance=st.none() | st.floats(min_value=0, max_value=1),
    kind=st.none() | st.sampled_from(MemoryKind),
)


@given(entries)
def test_a_record_round_trips_every_field_through_json(entry: MemoryEntry) -> None:
    record = json.loads(json.dumps(to_record(entry)))
    assert from_record(record) == entry
    assert set(record) == {f.name for f in entry_fields()}


@pytest.mark.parametrize("importance", [1.5, -0.1, float("nan"), 42])
def test_an_importance_outside_0_to_1_is_refused_by_import_and_not_kept_by_migrate(
    importance: float,
) -> None:
    record = {**to_record(_entry("a", "x")), "importance": importance}
    with pytest.raises(RecordError, match="importance must be a number from 0 to 1"):
        from_record(record)
    seed = {"text": "Uses pnpm", "importance": importance, "category": "other"}
    migrated = from_seed(seed, new_id="N", today=AT.date())
    assert migrated.entry.importance is None and migrated.entry.kind is MemoryKind.OTHER
    assert any(n.startswith("importance") and "not kept" in n for n in migrated.notes)


def test_an_unknown_seed_category_is_noted_not_kept() -> None:
    migrated = from_seed(
        {"text": "Uses pnpm", "category": "tool-quirk"}, new_id="N", today=AT.date()
    )
    assert migrated.entry.kind is None and migrated.entry.category is None
    assert any(n.startswith("category 'tool-quirk' not kept") for n in migrated.notes)


def test_an_unknown_key_is_refused_not_dropped() -> None:
    record = to_record(_entry("a", "x"))
    assert record["importance"] is None and record["kind"] is None  # known fields travel
    record["confidence"] = 0.9  # a field a newer version might write
    with pytest.raises(RecordError, match=r"unknown field.*confidence"):
        from_record(record)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("created", "yesterday", "created is not an ISO date"),
        ("target", "nowhere", "target must be one of"),
        ("text", None, "text may not be null"),
        ("text", 5, "text must be a string"),
    ],
)
def test_a_wrong_value_names_its_field(key: str, value: object, message: str) -> None:
    record = to_record(_entry("a", "x"))
    record[key] = value
    with pytest.raises(RecordError, match=message):
        from_record(record)


def test_a_missing_required_field_is_named() -> None:
    record = to_record(_entry("a", "x"))
    del record["text"]
    with pytest.raises(RecordError, match="missing field text"):
        from_record(record)


def test_the_header_is_checked() -> None:
    check_header(json.loads(json.dumps(header(AT))))
    with pytest.raises(RecordError, match="newer"):
        check_header({**header(AT), "version": 99})
    with pytest.raises(RecordError, match="not a"):
        check_header({"memories": []})


def _entry(entry_id: str, text: str, **kw: object) -> MemoryEntry:
    values: dict[str, object] = {
        "id": entry_id,
        "target": Target.MEMORY,
        "text": text,
        "project": None,
        "category": None,
        "created": date(2026, 1, 1),
        "last_referenced": date(2026, 1, 2),
        **kw,
    }
    return MemoryEntry(**values)  # type: ignore[arg-type]


def _apply(doc: MemoryDocument, plan_events: tuple[object, ...]) -> MemoryDocument:
    return fold(doc, stamp(doc.stream, doc.version, plan_events))  # type: ignore[arg-type]


CHAIN = [
    _entry("v3", "third", created=date(2026, 3, 1), last_referenced=date(2026, 3, 5)),
    _entry(
        "v1",
        "first",
        last_referenced=date(2026, 2, 1),
        superseded_by="v2",
        superseded_at=date(2026, 2, 1),
    ),
    _entry(
        "v2",
        "second",
        created=date(2026, 2, 1),
        last_referenced=date(2026, 2, 1),
        superseded_by="v3",
        superseded_at=date(2026, 3, 1),
    ),
]


def test_a_chain_is_recreated_with_its_ids_and_dates_and_a_second_import_changes_nothing() -> None:
    empty = MemoryDocument.empty(Target.MEMORY)
    plan = plan_import(empty, CHAIN, AT)
    assert sorted(plan.added) == ["v1", "v2", "v3"] and not plan.refused
    doc = _apply(empty, plan.events)
    assert {e.id: e for e in doc.all_entries()} == {e.id: e for e in CHAIN}
    again = plan_import(doc, CHAIN, AT)
    assert again.events == () and sorted(again.unchanged) == ["v1", "v2", "v3"]


def test_an_id_stored_with_other_text_is_refused_and_the_stored_version_kept() -> None:
    empty = MemoryDocument.empty(Target.MEMORY)
    doc = _apply(empty, plan_import(empty, [_entry("a", "stored")], AT).events)
    plan = plan_import(doc, [_entry("a", "from the file"), _entry("b", "new")], AT)
    assert plan.added == ("b",)
    assert plan.refused[0].ids == ("a",) and "already in the store" in plan.refused[0].reason


def test_the_same_text_in_the_same_scope_under_another_id_is_refused() -> None:
    empty = MemoryDocument.empty(Target.MEMORY)
    doc = _apply(empty, plan_import(empty, [_entry("a", "same")], AT).events)
    plan = plan_import(doc, [_entry("b", "same")], AT)
    assert plan.events == () and "already stored as a" in plan.refused[0].reason


def test_invalid_rows_are_refused_with_a_reason() -> None:
    empty = MemoryDocument.empty(Target.MEMORY)
    plan = plan_import(
        empty,
        [_entry("bad id", "x"), _entry("p", "y", project="proj"), _entry("s", "a\n§\nb")],
        AT,
    )
    assert plan.events == () and len(plan.refused) == 3


def test_a_history_row_whose_successor_was_removed_keeps_its_pointer() -> None:
    row = _entry("old", "gone", superseded_by="removed-one", superseded_at=date(2026, 1, 2))
    empty = MemoryDocument.empty(Target.MEMORY)
    doc = _apply(empty, plan_import(empty, [row], AT).events)
    assert doc.find("old") == row and "removed-one" in doc.removed


def test_a_seed_record_maps_scope_to_target_and_keeps_a_fitting_id() -> None:
    record = {
        "id": "3f2b1c9e-0000-4000-8000-000000000000",
        "text": " Uses pnpm ",
        "category": "fact",
        "scope": "project:web",
        "importance": 0.8,
        "timestamp": 1767225600000,
    }
    migrated = from_seed(record, new_id="NEW", today=date(2026, 6, 1))
    e = migrated.entry
    assert (e.id, e.target, e.project, e.text) == (record["id"], Target.PROJECT, "web", "Uses pnpm")
    assert e.created == date(2026, 1, 1)
    # the seed's category is this library's kind (ADR 0045), never the failure category
    assert (e.kind, e.category, e.importance) == (MemoryKind.FACT, None, 0.8)
    assert migrated.notes == ()
    user = from_seed(
        {"id": "bad id!", "text": "x", "scope": "user:ann"}, new_id="N", today=AT.date()
    )
    assert (user.entry.id, user.entry.target, user.entry.namespace) == (
        "N",
        Target.USER,
        "user:ann",
    )
    assert "dated today" in user.notes[0]
    with pytest.raises(RecordError, match="scope"):
        from_seed({"text": "x", "scope": "team:a"}, new_id="N", today=AT.date())


def test_a_removed_row_comes_back_removed_and_restorable_and_a_second_import_changes_nothing() -> (
    None
):
    from pi_hermes_memory.domain.memory.events import RemovalReason
    from pi_hermes_memory.domain.memory.porting import Removal
    from pi_hermes_memory.domain.memory.restore import restorable

    row = _entry("r", "deleted text")
    removal = Removal(reason=RemovalReason.TOOL, at=AT)
    empty = MemoryDocument.empty(Target.MEMORY)
    plan = plan_import(empty, [row], AT, removed={"r": removal})
    events = stamp(empty.stream, 0, plan.events)
    doc = fold(empty, events)
    assert doc.find("r") is None and "r" in doc.removed
    (gone,) = restorable(Target.MEMORY, events)
    assert (gone.entry, gone.reason, gone.removed_at) == (row, RemovalReason.TOOL, AT)
    again = plan_import(doc, [row], AT, removed={"r": removal}, stored_removed={"r": gone.entry})
    assert again.events == () and again.unchanged == ("r",)
    active = plan_import(doc, [row], AT, stored_removed={"r": gone.entry})
    assert active.events == () and active.refused  # the file says active, the store removed


@st.composite
def stores(draw: st.DrawFn) -> list[MemoryEntry]:
    """Rows of one memory document: chains of 1-4 versions with distinct ids and texts."""
    rows: list[MemoryEntry] = []
    for c in range(draw(st.integers(0, 5))):
        length = draw(st.integers(1, 4))
        day = draw(dates.filter(lambda d: d < date(2099, 1, 1)))
        scope = draw(st.sampled_from([None, "agent:a", "custom:x"]))
        for v in range(length):
            newest = v == length - 1
            created = day.fromordinal(day.toordinal() + v)
            rows.append(
                _entry(
                    f"c{c}v{v}",
                    f"chain {c} version {v} " + draw(st.text("abc xyz", max_size=8)).strip(),
                    created=created,
                    last_referenced=created.fromordinal(
                        created.toordinal() + draw(st.integers(0, 3))
                    )
                    if newest
                    else created,
                    superseded_by=None if newest else f"c{c}v{v + 1}",
                    superseded_at=None if newest else created.fromordinal(created.toordinal() + 1),
                    namespace=scope,
                )
            )
    return draw(st.permutations(rows))


@given(stores())
def test_any_store_of_chains_is_recreated_exactly_and_a_second_plan_is_empty(
    rows: list[MemoryEntry],
) -> None:
    empty = MemoryDocument.empty(Target.MEMORY)
    plan = plan_import(empty, rows, AT)
    assert not plan.refused
    doc = _apply(empty, plan.events)
    assert {e.id: e for e in doc.all_entries()} == {e.id: e for e in rows}
    assert plan_import(doc, rows, AT).events == ()
