"""The generated decoders (`pi_hermes_memory.journal.structure`, ADR 0038) decode like the cattrs
converters of snapshots and events: the same value from everything the code writes, an error
for everything the converter refuses; they also refuse some of the converter's coercions (a
string read as a set of characters)."""

from __future__ import annotations

import copy
from typing import Any

import cattrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.journal import codec
from pi_hermes_memory.journal.structure import structure_function

from tests.unit.test_codec import events
from tests.unit.test_snapshots import event_history

_CONVERTER = codec.strict_converter()
_ERRORS = (KeyError, ValueError, TypeError, cattrs.BaseValidationError)
_ODD_VALUES = (None, 1, True, "x", "2026-13-01", "memory", [], ["a"], [1], {}, 1.5, "2026-07-01")


def _both(
    data: Any, cls: type = MemoryDocument, converter: Any = _CONVERTER
) -> tuple[object, object]:
    """What the generated decoder and the converter make of `data`: a value or "error"."""
    fast = structure_function(cls)
    assert fast is not None, f"every {cls.__name__} field has a generated check"
    results: list[object] = []
    for decode in (fast, lambda d: converter.structure(d, cls)):
        try:
            results.append(decode(copy.deepcopy(data)))
        except _ERRORS:
            results.append("error")
    return results[0], results[1]


@st.composite
def damaged(draw: st.DrawFn, raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` with one key dropped, added or given an odd value, at the top or in an entry."""
    data = copy.deepcopy(raw)
    where: dict[str, Any] = data
    rows = data["active"] or data["history"]
    if rows and draw(st.booleans()):
        where = draw(st.sampled_from(rows))
    key = draw(st.sampled_from(sorted(where)))
    action = draw(st.sampled_from(("drop", "add", "odd")))
    if action == "drop":
        del where[key]
    elif action == "add":
        where[draw(st.sampled_from(("extra", "key", "Text")))] = 1
    else:
        where[key] = draw(st.sampled_from(_ODD_VALUES))
    return data


@pytest.mark.parametrize("target", list(Target))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_generated_decoder_agrees_with_the_converter(
    target: Target, data: st.DataObject
) -> None:
    doc = fold(MemoryDocument.empty(target), data.draw(event_history(target)))
    raw = _CONVERTER.unstructure(doc)
    fast, slow = _both(raw)
    assert fast == slow == doc
    fast, slow = _both(data.draw(damaged(raw)))
    assert fast == slow or fast == "error"  # never accepts what the converter refuses


@settings(max_examples=200, deadline=None)
@given(event=events, data=st.data())
def test_the_generated_event_decoder_agrees_with_the_converter(
    event: Any, data: st.DataObject
) -> None:
    converter = codec.strict_converter()
    raw = converter.unstructure(event)
    cls = type(event)
    fast, slow = _both(raw, cls, converter)
    assert fast == slow == event
    where = copy.deepcopy(raw)
    key = data.draw(st.sampled_from(sorted(where)))
    action = data.draw(st.sampled_from(("drop", "add", "odd")))
    if action == "drop":
        del where[key]
    elif action == "add":
        where["extra"] = 1
    else:
        where[key] = data.draw(st.sampled_from(_ODD_VALUES))
    fast, slow = _both(where, cls, converter)
    assert fast == slow or fast == "error"


def test_a_field_of_an_unknown_type_falls_back_to_the_converter() -> None:
    import attrs

    @attrs.frozen(kw_only=True)
    class Odd:
        weights: dict[str, float]

    assert structure_function(Odd) is None
    assert structure_function(MemoryEntry) is not None
    from pi_hermes_memory.domain.memory.events import TAG_KINDS

    assert len(TAG_KINDS) == 11
    for tag in TAG_KINDS:  # every event class decodes without the converter
        assert structure_function(codec._event_class(tag)) is not None, tag
