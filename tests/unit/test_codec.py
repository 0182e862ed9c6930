"""Event encoding round trips and strict decoding (ADR 0007)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.memory.events import (
    EVENT_TYPES,
    Event,
    MemoryAdded,
    MemoryReferenced,
    MemoryRemoved,
    MemoryReplaced,
    MemorySuperseded,
    Origin,
    RemovalReason,
)
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.domain.skills.events import SKILL_EVENT_TYPES
from pi_hermes_memory.errors import CorruptEvent
from pi_hermes_memory.journal.codec import decode, encode, encode_with_converter
from pi_hermes_memory.journal.structure import unstructure_function

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=50)
dates = st.dates()
times = st.datetimes(timezones=st.just(UTC))
common = {
    "stream": st.sampled_from(["memory:memory", "memory:project"]),
    "version": st.integers(1, 10**9),
    "at": times,
}

events = st.one_of(
    st.builds(
        MemoryAdded,
        **common,
        entry_id=text,
        target=st.sampled_from(Target),
        text=text,
        project=st.none() | text,
        category=st.none() | st.sampled_from(FailureCategory),
        created=dates,
        last_referenced=dates,
        origin=st.sampled_from(Origin),
    ),
    st.builds(
        MemoryReplaced,
        **common,
        old_id=text,
        new_id=text,
        text=text,
        project=st.none() | text,
        category=st.none() | st.sampled_from(FailureCategory),
        created=dates,
        last_referenced=dates,
        origin=st.sampled_from(Origin),
    ),
    st.builds(
        MemorySuperseded,
        **common,
        old_id=text,
        by_id=text,
        on=dates,
        origin=st.sampled_from(Origin),
    ),
    st.builds(MemoryRemoved, **common, entry_id=text, reason=st.sampled_from(RemovalReason)),
    st.builds(MemoryReferenced, **common, entry_id=text, on=dates),
)


@given(events)
def test_round_trip(event: object) -> None:
    tag, data = encode(event)  # type: ignore[arg-type]
    assert decode(tag, data) == event


def test_tags_are_unique_and_versioned() -> None:
    tags = [cls.TAG for cls in EVENT_TYPES]
    assert len(set(tags)) == len(tags)
    assert all(t.startswith("memory.") and t.rsplit(".", 1)[1].startswith("v") for t in tags)


def test_corrupt_payloads_raise_one_error() -> None:
    good = MemoryRemoved(
        stream="memory:user",
        version=1,
        at=datetime(2026, 1, 1, tzinfo=UTC),
        entry_id="x",
        reason=RemovalReason.TOOL,
    )
    tag, data = encode(good)
    payload = json.loads(data)
    for bad_tag, bad in [
        ("memory.unknown.v1", data),
        (tag, "{not json"),
        (tag, json.dumps({**payload, "extra": 1})),
        (tag, json.dumps({k: v for k, v in payload.items() if k != "entry_id"})),
        (tag, json.dumps({**payload, "version": "1"})),
        (tag, json.dumps({**payload, "reason": "nope"})),
        (tag, json.dumps({**payload, "at": "yesterday"})),
    ]:
        with pytest.raises(CorruptEvent):
            decode(bad_tag, bad)


# --- encoding without cattrs (issue 29, ADR 0080) ---------------------------------------------

ALL_EVENT_TYPES = (*EVENT_TYPES, *SKILL_EVENT_TYPES)


def test_every_event_class_encodes_without_the_converter() -> None:
    assert all(unstructure_function(cls) is not None for cls in ALL_EVENT_TYPES)


@settings(max_examples=300)
@given(st.one_of([st.from_type(cls) for cls in ALL_EVENT_TYPES]) | events)
def test_the_generated_encoder_gives_the_converters_bytes(event: Event) -> None:
    assert encode(event) == encode_with_converter(event)
