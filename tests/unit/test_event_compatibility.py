"""How the journal's event format may change (ADR 0059, superseding ADR 0007's upcaster promise).

Stored events are read forever: every tag ever written must still decode; a field added after
its tag's first version has a default of None and is left out of the payload when None, so an
old event decodes with the default and re-encodes to its own bytes.
"""

from __future__ import annotations

import attrs
from pi_hermes_memory.domain.memory.events import EVENT_TYPES, OPTIONAL_EVENT_FIELDS
from pi_hermes_memory.domain.skills.events import SKILL_EVENT_TYPES
from pi_hermes_memory.journal import codec

#: every tag a released journal may hold. A tag leaves this list never: retiring a class needs
#: the upcaster of ADR 0059 (its payload rewritten, on read, into a tag the codec still knows).
WRITTEN_TAGS = frozenset(
    {
        "memory.added.v1",
        "memory.replaced.v1",
        "memory.superseded.v1",
        "memory.removed.v1",
        "memory.referenced.v1",
        "memory.moved_out.v1",
        "memory.moved_in.v1",
        "memory.merged_into.v1",
        "memory.retagged.v1",
        "memory.restored.v1",
        "memory.purged.v1",
        "skill.created.v1",
        "skill.revised.v1",
        "skill.file_written.v1",
        "skill.file_removed.v1",
        "skill.deleted.v1",
    }
)


def test_every_tag_ever_written_still_has_a_decoder() -> None:
    known = {cls.TAG for cls in (*EVENT_TYPES, *SKILL_EVENT_TYPES)}
    assert known >= WRITTEN_TAGS, f"tags no decoder knows: {sorted(WRITTEN_TAGS - known)}"


def test_a_new_tag_is_added_to_the_written_list() -> None:
    known = {cls.TAG for cls in (*EVENT_TYPES, *SKILL_EVENT_TYPES)}
    assert known <= WRITTEN_TAGS, f"add to WRITTEN_TAGS: {sorted(known - WRITTEN_TAGS)}"


def test_there_is_no_upcaster_yet_so_every_tag_decodes_to_its_own_class() -> None:
    # ADR 0059: the first incompatible change adds the upcaster table; until then the codec
    # maps each tag straight to the class that carries it
    assert not hasattr(codec, "UPCASTERS")
    for cls in (*EVENT_TYPES, *SKILL_EVENT_TYPES):
        assert codec._event_class(cls.TAG) is cls


def test_fields_added_later_default_to_none() -> None:
    for cls in (*EVENT_TYPES, *SKILL_EVENT_TYPES):
        for field in attrs.fields(cls):
            if field.name in OPTIONAL_EVENT_FIELDS:
                assert field.default is None, f"{cls.__name__}.{field.name}"
