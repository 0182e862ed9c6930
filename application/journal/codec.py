"""The wire format of events: JSON with a stable versioned tag (ADR 0007).

One private cattrs converter, built on first use. Decoding is strict: unknown tags, missing or
extra keys and wrong types all become one `CorruptEvent`. Python import paths are never
persisted. Decoding goes through a structure function generated from each event class's attrs
fields (`pi_hermes_memory.journal.structure`, ADR 0038): replaying a journal of 100,000 events
through
cattrs' per-field hooks dominated opening a store without a snapshot.
"""

from __future__ import annotations

import enum
import functools
import json
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from pi_hermes_memory.domain.memory import events
from pi_hermes_memory.domain.memory.events import OPTIONAL_EVENT_FIELDS, Event
from pi_hermes_memory.errors import CorruptEvent
from pi_hermes_memory.journal.structure import structure_function, unstructure_function

if TYPE_CHECKING:
    from cattrs.preconf.json import JsonConverter

#: the event classes by tag, each memory event kind's with its first tag (its class is built
#: then, ADR 0111), the skill events' with the first tag of neither (a memory store's process
#: never loads them; issue 29, ADR 0099)
_BY_TAG: dict[str, type[Event]] = {}


def _event_class(tag: str) -> type[Event]:
    """The class of `tag`; KeyError for a tag of no event class."""
    cls = _BY_TAG.get(tag)
    if cls is None and tag in events.TAG_KINDS:
        cls = _BY_TAG[tag] = getattr(events, events.TAG_KINDS[tag])
    if cls is None:
        from pi_hermes_memory.domain.skills.events import SKILL_EVENT_TYPES

        _BY_TAG.update((c.TAG, c) for c in SKILL_EVENT_TYPES if c.TAG not in _BY_TAG)
        cls = _BY_TAG[tag]
    return cls


@functools.cache
def strict_converter() -> JsonConverter:
    """The converter of the stored JSON formats (events here, document snapshots in
    `snapshot_codec`): ISO dates and times, no key the class lacks, no coercion between JSON
    types. cattrs loads with the first write (a read never needs it)."""
    from cattrs.preconf.json import make_converter

    converter = make_converter(forbid_extra_keys=True)
    converter.register_unstructure_hook(datetime, lambda d: d.isoformat())
    converter.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(v))
    converter.register_unstructure_hook(date, lambda d: d.isoformat())
    converter.register_structure_hook(date, lambda v, _: date.fromisoformat(v))
    for kind in (str, int, bool):
        converter.register_structure_hook(kind, _strict_scalar)
    converter.register_structure_hook(float, _strict_float)
    return converter


def _strict_float(value: object, _: type) -> float:
    """A JSON number (an integer too: `1` is importance 1.0), never a bool or a string."""
    if type(value) not in (int, float):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return float(value)  # type: ignore[arg-type]


def _strict_scalar(value: object, kind: type) -> object:
    """cattrs would coerce 1 -> "1"; a journal row of the wrong JSON type is corrupt instead."""
    if issubclass(kind, enum.Enum):  # StrEnums dispatch here as str subclasses
        if not isinstance(value, str):
            raise TypeError(f"expected a {kind.__name__} string")
        return kind(value)  # ValueError for an unknown member
    base = next(b for b in (bool, int, str) if issubclass(kind, b))
    if type(value) is not base:
        raise TypeError(f"expected {base.__name__}, got {type(value).__name__}")
    return value


def encode(event: Event) -> tuple[str, str]:
    """(tag, JSON payload) for `event`: through a function generated from the event's fields
    (ADR 0080), the converter's own output; cattrs loads only for a field type it lacks."""
    fast = unstructure_function(type(event))
    return _encoded(event, fast(event) if fast is not None else None)


def encode_with_converter(event: Event) -> tuple[str, str]:
    """`encode` through the cattrs converter (the path before ADR 0080; kept for the property
    test that compares the two)."""
    return _encoded(event, None)


def _encoded(event: Event, payload: dict[str, Any] | None) -> tuple[str, str]:
    if payload is None:
        payload = strict_converter().unstructure(event)
    for name in OPTIONAL_EVENT_FIELDS:  # ADR 0045: an event without them encodes as before
        if name in payload and payload[name] is None:
            del payload[name]
    return type(event).TAG, json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def decode(tag: str, data: str) -> Event:
    try:
        cls = _event_class(tag)
        payload = json.loads(data)
        if not isinstance(payload, dict):
            raise TypeError(f"payload is a JSON {type(payload).__name__}, not an object")
        event = _structure(payload, cls)
    except (KeyError, ValueError, TypeError, RecursionError) as exc:
        raise CorruptEvent(f"cannot decode event with tag {tag!r}: {exc}") from exc
    if event.version < 1:  # `version` has a default (UNSTAMPED) for building; a stored one has none
        raise CorruptEvent(f"event with tag {tag!r} has no version (or one below 1)")
    if event.at.tzinfo is None:  # the Clock port promises aware times; a naive one is corrupt
        raise CorruptEvent(f"event with tag {tag!r} has a time without a timezone")
    return event


def _structure(payload: dict[str, Any], cls: type[Event]) -> Event:
    fast = structure_function(cls)
    if fast is not None:
        event: Event = fast(payload)
        return event
    import cattrs

    try:
        return strict_converter().structure(payload, cls)
    except cattrs.BaseValidationError as exc:
        raise TypeError(str(exc)) from exc
