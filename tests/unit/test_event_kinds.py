"""The memory event classes live one kind per module and build on first use (ADR 0111): the
tables that find them (`KIND_MODULES`, `TAG_KINDS`) are the union's members and tags, a new
process builds only the kinds it reads, and an old journal's events still decode to them."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from datetime import UTC, datetime

import pytest
from pi_hermes_memory.domain.errors import InvariantViolation
from pi_hermes_memory.domain.memory import events
from pi_hermes_memory.domain.skills.events import SKILL_EVENT_TYPES


def test_the_tables_name_every_member_of_the_union_and_its_tag() -> None:
    members = typing.get_args(events.MemoryEvent)
    assert tuple(members) == events.MEMORY_EVENT_TYPES == events.EVENT_TYPES
    assert [cls.__name__ for cls in members] == list(events.KIND_MODULES)
    assert {cls.TAG: cls.__name__ for cls in members} == events.TAG_KINDS
    for cls in members:
        module = f"pi_hermes_memory.domain.memory_events.{events.KIND_MODULES[cls.__name__]}"
        assert cls.__module__ == module
        assert getattr(events, cls.__name__) is cls
        assert issubclass(cls, events.Event)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="MemoryTeleported"):
        _ = events.MemoryTeleported  # type: ignore[attr-defined]


def test_only_the_union_s_members_are_memory_events() -> None:
    """`as_memory_event` tells by tag and class name, building no class: the base class and
    a skill event's class are not memory events."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(InvariantViolation, match="is not a memory event"):
        events.as_memory_event(events.Event(stream="s", at=at))
    assert all(cls.TAG not in events.TAG_KINDS for cls in SKILL_EVENT_TYPES)
    referenced = events.MemoryReferenced(stream="s", at=at, entry_id="e", on=at.date())
    assert events.as_memory_event(referenced) is referenced


_DECODE = r"""
import json, sys
from pi_hermes_memory.journal import codec
from pi_hermes_memory.domain.memory import events
built = lambda: sorted(n for n in events.KIND_MODULES if n in vars(events))
before = built()
event = codec.decode(sys.argv[1], sys.argv[2])
print(json.dumps([before, built(), type(event).__name__, sorted(
    m for m in sys.modules if m.startswith("pi_hermes_memory.domain.memory_events."))]))
"""


def test_decoding_a_stored_event_builds_its_kind_only() -> None:
    """A stored `memory.referenced.v1` line (the byte form journals hold) decodes to its class
    in a new process that has built no kind before, and builds no other kind."""
    payload = json.dumps(
        {
            "stream": "memory",
            "version": 3,
            "at": "2026-01-02T03:04:05+00:00",
            "entry_id": "01ABC",
            "on": "2026-01-02",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", _DECODE, "memory.referenced.v1", payload],
        capture_output=True,
        text=True,
        check=True,
    )
    before, after, name, modules = json.loads(done.stdout)
    assert before == []
    assert after == ["MemoryReferenced"] and name == "MemoryReferenced"
    assert modules == ["pi_hermes_memory.domain.memory_events.referenced"]
