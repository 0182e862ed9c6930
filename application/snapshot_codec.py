"""The wire format of document snapshots (ADR 0024): JSON of a folded `MemoryDocument`.

A snapshot is a cache of the fold, never the truth: the events stay in the journal. Decoding is
strict (unknown or missing keys, wrong types, another format version) and total: every failure
is one `CorruptSnapshot`, and the caller then folds the stream from its events.
"""

from __future__ import annotations

import enum
import json
from datetime import date

import cattrs
from cattrs.preconf.json import make_converter
from pi_hermes_memory.domain.document import MemoryDocument
from pi_hermes_memory.errors import CorruptData

__all__ = ["FORMAT", "CorruptSnapshot", "decode_document", "encode_document"]

#: Bumped whenever MemoryDocument or MemoryEntry change shape incompatibly; an older snapshot
#: is then ignored (folded from events) and replaced by the next write.
FORMAT = 1

_converter = make_converter(forbid_extra_keys=True)
_converter.register_unstructure_hook(date, lambda d: d.isoformat())
_converter.register_structure_hook(date, lambda v, _: date.fromisoformat(v))


def _strict_scalar(value: object, kind: type) -> object:
    """cattrs would coerce 1 -> "1"; a snapshot of the wrong JSON type is corrupt instead."""
    if issubclass(kind, enum.Enum):
        if not isinstance(value, str):
            raise TypeError(f"expected a {kind.__name__} string")
        return kind(value)
    base = next(b for b in (bool, int, str) if issubclass(kind, b))
    if type(value) is not base:
        raise TypeError(f"expected {base.__name__}, got {type(value).__name__}")
    return value


for _kind in (str, int, bool):
    _converter.register_structure_hook(_kind, _strict_scalar)


class CorruptSnapshot(CorruptData):
    """A stored snapshot cannot be decoded; fold the stream from its events instead."""


def encode_document(doc: MemoryDocument) -> str:
    payload = {"format": FORMAT, "document": _converter.unstructure(doc)}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def decode_document(data: str) -> MemoryDocument:
    try:
        payload = json.loads(data)
        if not isinstance(payload, dict) or set(payload) != {"format", "document"}:
            raise TypeError("not a snapshot object")
        if payload["format"] != FORMAT:
            raise ValueError(f"snapshot format {payload['format']!r}, expected {FORMAT}")
        doc = _converter.structure(payload["document"], MemoryDocument)
    except (KeyError, ValueError, TypeError, RecursionError, cattrs.BaseValidationError) as exc:
        raise CorruptSnapshot(f"cannot decode a document snapshot: {exc}") from exc
    if any(e.target is not doc.target for e in doc.all_entries()):
        raise CorruptSnapshot("a snapshot entry belongs to another target")
    return doc
