"""ADR 0088: the render history of an appending render is `split`'s, computed without counting,
decoding or encoding every key of the document."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.markdown.shared import (
    KEPT_VERSIONS,
    _appended_keys,
    _extend_listing,
    _History,
)

keys = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@given(before=st.lists(keys, max_size=10), added=st.lists(keys, min_size=1, max_size=6))
def test_the_added_keys_are_splits(before: list[str], added: list[str]) -> None:
    new, was = Counter([*before, *added]), Counter(before)
    assert _appended_keys(before, added) == list((new - was).elements())
    assert not list((was - new).elements())


hex_keys = st.sampled_from([f"{i:016x}" for i in (1, 2, 3, 0xABC, 0xFFFF_FFFF_FFFF_FFFF)])
steps = st.tuples(
    st.integers(0, 50), st.lists(hex_keys, max_size=3), st.lists(hex_keys, max_size=3)
).map(lambda s: (s[0], list(s[1]), list(s[2])))
edits = st.tuples(st.integers(0, 50), st.lists(hex_keys, max_size=3)).map(
    lambda e: (e[0], list(e[1]))
)


def _split_way(before: _History, new: int, added: list[str]) -> str:
    step = (before.version, _appended_keys(before.keys, added), [])
    after = _History(
        version=new,
        keys=[*before.keys, *added],
        back=[step, *before.back][:KEPT_VERSIONS],
        edits=before.edits,
    )
    return after.to_json()


@given(
    version=st.integers(0, 10**6),
    keys=st.lists(hex_keys, max_size=8),
    back=st.lists(steps, max_size=5),
    edits=st.lists(edits, max_size=3),
    added=st.lists(hex_keys, min_size=1, max_size=4),
    more=st.integers(1, 3),
)
def test_the_spliced_listing_is_to_jsons(
    version: int,
    keys: list[str],
    back: list[tuple[int, list[str], list[str]]],
    edits: list[tuple[int, list[str]]],
    added: list[str],
    more: int,
) -> None:
    before = _History(version=version, keys=keys, back=back, edits=edits)
    spliced = _extend_listing(before.to_json(), version, version + more, added)
    if set(added).isdisjoint(keys):
        assert spliced == _split_way(before, version + more, added)
    else:  # an added key already listed: `split`'s way decides its place
        assert spliced is None
    assert _extend_listing(before.to_json(), version + 1, version + 2, added) is None


@pytest.mark.parametrize("kept", [KEPT_VERSIONS - 1, KEPT_VERSIONS, KEPT_VERSIONS + 1])
def test_the_oldest_steps_fall_off_as_splits(kept: int) -> None:
    back = [(v, [f"{v:016x}"], [f"{v + 1:016x}"] if v % 2 else []) for v in range(kept, 0, -1)]
    before = _History(version=kept + 1, keys=[f"{7:016x}"], back=back)
    added = [f"{kept + 9:016x}"]
    spliced = _extend_listing(before.to_json(), kept + 1, kept + 2, added)
    assert spliced == _split_way(before, kept + 2, added)


def test_a_listing_in_another_spelling_takes_splits_way() -> None:
    assert (
        _extend_listing('{"v": 3, "keys": [], "back": [], "edits": []}', 3, 4, ["0" * 16]) is None
    )
    assert _extend_listing("{}", 3, 4, ["0" * 16]) is None
