"""The second seed's entry fields (ADR 0045): importance and kind through decide, the events,
the wire format, the fold, the snapshot, the Markdown metadata and the noise filter."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.learning.noise import noise_problem
from pi_hermes_memory.domain.memory.commands import AddMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.decide import WritePolicy, decide
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.events import MemoryAdded, MemoryReplaced, stamp
from pi_hermes_memory.domain.memory.model import MemoryKind, Target, importance_problem
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import CorruptEvent
from pi_hermes_memory.journal.codec import decode, encode
from pi_hermes_memory.journal.snapshots import decode_document, encode_document

AT = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
POLICY = WritePolicy(scope=SessionScope(project=None, sharing=False), char_limit=10_000)


def _add(doc: MemoryDocument, text: str, entry_id: str, **kw: object) -> MemoryDocument:
    cmd = AddMemory(target=Target.MEMORY, text=text, entry_id=entry_id, at=AT, **kw)  # type: ignore[arg-type]
    decision = decide(doc, cmd, POLICY)
    assert decision.status is Status.ADDED, decision.message
    return fold(doc, decision.events)


def _replace(doc: MemoryDocument, old_id: str, text: str, new_id: str, **kw: object):  # type: ignore[no-untyped-def]
    cmd = ReplaceMemory(
        target=Target.MEMORY,
        old_text="",
        old_id=old_id,
        text=text,
        entry_id=new_id,
        at=AT,
        **kw,  # type: ignore[arg-type]
    )
    return decide(doc, cmd, POLICY)


def test_add_records_importance_and_kind() -> None:
    doc = _add(MemoryDocument.empty(Target.MEMORY), "Prefers tabs", "a", importance=0.9,
               kind=MemoryKind.PREFERENCE)  # fmt: skip
    (entry,) = doc.active
    assert (entry.importance, entry.kind) == (0.9, MemoryKind.PREFERENCE)


def test_add_without_them_leaves_them_unset() -> None:
    doc = _add(MemoryDocument.empty(Target.MEMORY), "Prefers tabs", "a")
    assert (doc.active[0].importance, doc.active[0].kind) == (None, None)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf")])
def test_add_refuses_an_importance_outside_0_to_1(bad: float) -> None:
    cmd = AddMemory(target=Target.MEMORY, text="x y z", entry_id="a", at=AT, importance=bad)
    decision = decide(MemoryDocument.empty(Target.MEMORY), cmd, POLICY)
    assert decision.status is Status.INVALID and not decision.events
    assert "importance" in decision.message


def test_importance_problem() -> None:
    assert importance_problem(0) is None and importance_problem(1.0) is None
    for bad in (True, "0.5", None, 1.01, -1):
        assert importance_problem(bad) is not None


def test_replace_keeps_the_old_values_unless_given() -> None:
    doc = _add(MemoryDocument.empty(Target.MEMORY), "Uses make", "a", importance=0.2,
               kind=MemoryKind.FACT)  # fmt: skip
    kept = _replace(doc, "a", "Uses make and ninja", "b")
    doc = fold(doc, kept.events)
    assert (doc.active[0].id, doc.active[0].importance, doc.active[0].kind) == (
        "b",
        0.2,
        MemoryKind.FACT,
    )
    changed = _replace(doc, "b", "Uses make and ninja", "c", importance=1.0)
    assert changed.status is Status.REPLACED  # a change of the fields alone is a new version
    doc = fold(doc, changed.events)
    assert (doc.active[0].id, doc.active[0].importance) == ("c", 1.0)
    assert [h.id for h in doc.history] == ["a", "b"]
    same = _replace(doc, "c", "Uses make and ninja", "d", importance=1.0, kind=MemoryKind.FACT)
    assert same.status is Status.NOOP and not same.events


def _event(**kw: object) -> MemoryAdded:
    base = MemoryAdded(
        stream=stream_for(Target.MEMORY),
        at=AT,
        entry_id="a",
        target=Target.MEMORY,
        text="Prefers tabs",
        project=None,
        category=None,
        created=date(2026, 7, 1),
        last_referenced=date(2026, 7, 1),
    )
    (stamped,) = stamp(base.stream, 0, [attrs.evolve(base, **kw)])
    return stamped


def test_an_event_without_the_fields_encodes_as_before_they_existed() -> None:
    tag, payload = encode(_event())
    assert tag == "memory.added.v1"
    assert "importance" not in json.loads(payload) and "kind" not in json.loads(payload)


def test_an_old_payload_decodes_with_the_fields_unset() -> None:
    old = (
        '{"stream":"memory","version":1,"at":"2026-07-01T09:00:00+00:00","entry_id":"a",'
        '"target":"memory","text":"Prefers tabs","project":null,"category":null,'
        '"created":"2026-07-01","last_referenced":"2026-07-01","origin":"tool",'
        '"namespace":null,"flagged":null}'
    )
    event = decode("memory.added.v1", old)
    assert isinstance(event, MemoryAdded)
    assert (event.importance, event.kind) == (None, None)
    assert encode(event)[1] == old  # re-encoding an old event gives its bytes back


@given(
    st.none() | st.floats(min_value=0, max_value=1),
    st.none() | st.sampled_from(list(MemoryKind)),
)
def test_the_fields_round_trip_through_the_wire_format(
    importance: float | None, kind: MemoryKind | None
) -> None:
    event = _event(importance=importance, kind=kind)
    assert decode(*encode(event)) == event


def test_an_integer_importance_is_read_as_a_float_and_wrong_types_are_corrupt() -> None:
    tag, payload = encode(_event(importance=0.5))
    as_int = json.loads(payload) | {"importance": 1}
    event = decode(tag, json.dumps(as_int))
    assert isinstance(event, MemoryAdded) and event.importance == 1.0
    for bad in (True, "0.5", [1]):
        with pytest.raises(CorruptEvent):
            decode(tag, json.dumps(json.loads(payload) | {"importance": bad}))
    with pytest.raises(CorruptEvent):
        decode(tag, json.dumps(json.loads(payload) | {"kind": "opinion"}))


def test_replaced_event_round_trips_with_the_fields() -> None:
    doc = _add(MemoryDocument.empty(Target.MEMORY), "Uses make", "a")
    decision = _replace(doc, "a", "Uses ninja", "b", importance=0.4, kind=MemoryKind.DECISION)
    (event,) = decision.events
    assert isinstance(event, MemoryReplaced)
    assert decode(*encode(event)) == event


def test_the_snapshot_keeps_the_fields_and_reads_an_older_one() -> None:
    doc = _add(MemoryDocument.empty(Target.MEMORY), "Prefers tabs", "a", importance=0.25,
               kind=MemoryKind.ENTITY)  # fmt: skip
    doc = _add(doc, "Runs on Linux", "b")
    assert decode_document(encode_document(doc)) == doc
    older = json.loads(encode_document(doc))
    for entry in older["document"]["active"]:
        del entry["importance"], entry["kind"]
    back = decode_document(json.dumps(older))
    assert [(e.importance, e.kind) for e in back.active] == [(None, None), (None, None)]


@pytest.mark.parametrize(
    "text",
    [
        "hi",
        "Hello!",
        "HEARTBEAT",
        "thank you.",
        "你好",
        "I don't have any information about that.",
        "I do not have any memories of your project",
        "Do you remember what I said about the build?",
        "你还记得我上次说的吗",
        "ok",
        "   ",
    ],
)
def test_noise_is_refused(text: str) -> None:
    assert noise_problem(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "The user prefers dark mode",
        "Deploys go through staging first",
        "用户喜欢深色模式",
        "Remember to run make lint before pushing",
        "Hello World is the sample app's name",
    ],
)
def test_facts_are_not_noise(text: str) -> None:
    assert noise_problem(text) is None


@given(
    st.none() | st.floats(min_value=0, max_value=1),
    st.none() | st.sampled_from(list(MemoryKind)),
)
def test_markdown_renders_the_fields_only_when_set_and_reads_them_back(
    importance: float | None, kind: MemoryKind | None
) -> None:
    from pi_hermes_memory.adapters.markdown.format import parse_document, render_document
    from pi_hermes_memory.domain.memory.model import MemoryEntry

    plain = MemoryEntry.create(
        id="a", target=Target.MEMORY, text="Prefers tabs", project=None, category=None,
        created=date(2026, 7, 1),
    )  # fmt: skip
    entry = attrs.evolve(plain, importance=importance, kind=kind)
    text = render_document([entry], target=Target.MEMORY)
    if importance is None and kind is None:
        assert text == render_document([plain], target=Target.MEMORY)
        assert "importance" not in text and "kind=" not in text
    (parsed,) = parse_document(text, target=Target.MEMORY).entries
    assert (parsed.importance, parsed.kind) == (importance, kind and kind.value)
    assert parse_document(text, target=Target.MEMORY).warnings == ()


@pytest.mark.parametrize("bad", ["importance=1.5", "importance=-0", "importance=nan",
                                 "importance=", "kind=Fact", "kind=opinion"])  # fmt: skip
def test_markdown_ignores_an_invalid_value_with_a_warning(bad: str) -> None:
    from pi_hermes_memory.adapters.markdown.format import parse_document

    text = f"Prefers tabs <!-- created=2026-07-01, last=2026-07-01, {bad} -->\n"
    parsed = parse_document(text, target=Target.MEMORY)
    (entry,) = parsed.entries
    assert (entry.text, entry.importance, entry.kind) == ("Prefers tabs", None, None)
    assert len(parsed.warnings) == 1 and "keeps its stored value" in parsed.warnings[0]


def test_a_note_with_only_an_invalid_kind_stays_text() -> None:
    from pi_hermes_memory.adapters.markdown.format import parse_document

    parsed = parse_document("Call Bob <!-- kind=reminder -->\n", target=Target.MEMORY)
    (entry,) = parsed.entries
    assert entry.text == "Call Bob <!-- kind=reminder -->" and entry.kind is None
    assert "kept it as text" in parsed.warnings[0]
    valid = parse_document("Call Bob <!-- kind=fact -->\n", target=Target.MEMORY)
    assert (valid.entries[0].text, valid.entries[0].kind) == ("Call Bob", "fact")


def test_the_scope_index_finds_an_active_row_by_id() -> None:
    doc = _add(MemoryDocument.empty(Target.MEMORY), "Prefers tabs", "a", importance=0.3)
    doc = _add(doc, "Runs on Linux", "b")
    replaced = fold(doc, _replace(doc, "a", "Prefers tabs, width 4", "c").events)
    index = replaced.index
    assert index.entry("c") is not None and index.entry("c").importance == 0.3  # type: ignore[union-attr]
    assert index.entry("a") is None and index.entry("nope") is None
    assert index.entry("b") == replaced.find("b")
