"""The generated snapshot decoder decodes like the cattrs converter (ADR 0038): the same
document from every snapshot the code writes, an error for everything the converter refuses;
it also refuses some of the converter's coercions (a string read as a set of characters)."""

from __future__ import annotations

import copy
from typing import Any

import cattrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory import snapshot_codec
from pi_hermes_memory.domain.document import MemoryDocument, fold
from pi_hermes_memory.domain.model import MemoryEntry, Target

from tests.unit.test_snapshots import event_history

_CONVERTER = snapshot_codec._converter
_ERRORS = (KeyError, ValueError, TypeError, cattrs.BaseValidationError)
_ODD_VALUES = (None, 1, True, "x", "2026-13-01", "memory", [], ["a"], [1], {}, 1.5, "2026-07-01")


def _both(data: Any) -> tuple[object, object]:
    """What the generated decoder and the converter make of `data`: a document or "error"."""
    fast = snapshot_codec._structure_of(MemoryDocument)
    assert fast is not None, "every MemoryDocument field has a generated check"
    results: list[object] = []
    for decode in (fast, lambda d: _CONVERTER.structure(d, MemoryDocument)):
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


def test_a_field_of_an_unknown_type_falls_back_to_the_converter() -> None:
    import attrs

    @attrs.frozen(kw_only=True)
    class Odd:
        weights: dict[str, float]

    assert snapshot_codec._structure_of(Odd) is None
    assert snapshot_codec._structure_of(MemoryEntry) is not None
