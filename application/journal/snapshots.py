"""The wire format of document snapshots (ADR 0024): JSON of a folded `MemoryDocument`.

A snapshot is a cache of the fold, never the truth: the events stay in the journal. Decoding is
strict (unknown or missing keys, wrong types, another format version) and total: every failure
is one `CorruptSnapshot`, and the caller then folds the stream from its events.

Decoding goes through a structure function generated from the attrs fields
(`pi_hermes_memory.journal.structure`, ADR 0038), the converter only for what it does not know.
"""

from __future__ import annotations

import json

from pi_hermes_memory.domain.memory.document import MemoryDocument
from pi_hermes_memory.errors import CorruptSnapshot
from pi_hermes_memory.journal.codec import strict_converter
from pi_hermes_memory.journal.structure import structure_function

__all__ = ["FORMAT", "CorruptSnapshot", "decode_document", "encode_document"]

#: Bumped whenever MemoryDocument or MemoryEntry change shape incompatibly; an older snapshot
#: is then ignored (folded from events) and replaced by the next write.
FORMAT = 2  # 2: entries carry memory_id and version_no (ADR 0074)


def encode_document(doc: MemoryDocument) -> str:
    payload = {"format": FORMAT, "document": strict_converter().unstructure(doc)}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def decode_document(data: str) -> MemoryDocument:
    try:
        payload = json.loads(data)
        if not isinstance(payload, dict) or set(payload) != {"format", "document"}:
            raise TypeError("not a snapshot object")
        if payload["format"] != FORMAT:
            raise ValueError(f"snapshot format {payload['format']!r}, expected {FORMAT}")
        fast = structure_function(MemoryDocument) or _by_converter
        doc: MemoryDocument = fast(payload["document"])
    except (KeyError, ValueError, TypeError, RecursionError) as exc:
        raise CorruptSnapshot(f"cannot decode a document snapshot: {exc}") from exc
    if any(e.target is not doc.target for e in doc.all_entries()):
        raise CorruptSnapshot("a snapshot entry belongs to another target")
    return doc


def _by_converter(data: object) -> MemoryDocument:
    import cattrs

    try:
        return strict_converter().structure(data, MemoryDocument)
    except cattrs.BaseValidationError as exc:
        raise TypeError(str(exc)) from exc
