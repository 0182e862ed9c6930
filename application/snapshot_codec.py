"""The wire format of document snapshots (ADR 0024): JSON of a folded `MemoryDocument`.

A snapshot is a cache of the fold, never the truth: the events stay in the journal. Decoding is
strict (unknown or missing keys, wrong types, another format version) and total: every failure
is one `CorruptSnapshot`, and the caller then folds the stream from its events.

Decoding a document of many entries goes through structure functions generated once from the
attrs fields, with the type checks inline (ADR 0038): cattrs' per-field hooks cost about five
times as much. They decode every snapshot as the converter does and refuse all it refuses
(and a few of its coercions, such as a string read as a set of characters); a field of a type
they do not know makes that class fall back to the converter.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Callable
from datetime import date
from typing import Any

import attrs
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


_Structure = Callable[[Any], Any]


def _check(kind: Any, var: str, helpers: dict[str, Any], indent: str) -> list[str] | None:
    """Lines that check (and convert in place) `var` as `kind`, as the converter would."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(args) != 2:
            return None
        inner = _check(rest[0], var, helpers, indent + "    ")
        return None if inner is None else [f"{indent}if {var} is not None:", *inner]
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        name = f"_E{kind.__name__}"  # value -> member: a KeyError for an unknown value
        helpers[name] = {member.value: member for member in kind}
        return [
            f"{indent}if not isinstance({var}, str): raise TypeError('{var}: not a string')",
            f"{indent}{var} = {name}[{var}]",
        ]
    if kind in (str, int, bool):
        return [f"{indent}if type({var}) is not {kind.__name__}: raise TypeError('{var}')"]
    if kind is date:
        return [
            f"{indent}if type({var}) is not str: raise TypeError('{var}')",
            f"{indent}{var} = _date({var})",
        ]
    if origin is frozenset and args == (str,):
        return [
            f"{indent}if type({var}) is not list or not all(type(i) is str for i in {var}):",
            f"{indent}    raise TypeError('{var}')",
            f"{indent}{var} = frozenset({var})",
        ]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and attrs.has(args[0]):
        item = _structure_of(args[0])
        if item is None:
            return None
        name = f"_S{len(helpers)}"
        helpers[name] = item
        return [
            f"{indent}if type({var}) is not list: raise TypeError('{var}')",
            f"{indent}{var} = tuple(map({name}, {var}))",
        ]
    return None


_STRUCTURES: dict[type, _Structure | None] = {}


def _structure_of(cls: type) -> _Structure | None:
    """A function from the unstructured dict to `cls`, or None (use the converter)."""
    if cls in _STRUCTURES:
        return _STRUCTURES[cls]
    hints = typing.get_type_hints(cls)
    helpers: dict[str, Any] = {"_cls": cls, "_date": date.fromisoformat, "_NO": object()}
    lines = ["def structure(d):", "    if type(d) is not dict: raise TypeError('not an object')"]
    names = []
    fields = [f for f in attrs.fields(cls) if f.init]  # the converter skips the others
    for i, field in enumerate(fields):
        var = f"v_{field.name}"
        names.append(f"{field.alias}={var}")
        if field.default is attrs.NOTHING:
            lines.append(f"    {var} = d[{field.name!r}]")
            body = _check(hints[field.name], var, helpers, "    ")
        elif isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            return _give_up(cls)
        else:  # a missing key takes the default, as with the converter
            helpers[f"_D{i}"] = field.default
            lines.append(f"    {var} = d.get({field.name!r}, _NO)")
            inner = _check(hints[field.name], var, helpers, "        ")
            lines += [f"    if {var} is _NO:", f"        {var} = _D{i}", "    else:"]
            body = None if inner is None else inner
        if body is None:
            return _give_up(cls)
        lines += body
    helpers["_KNOWN"] = frozenset(f.name for f in fields)
    lines.append("    if not _KNOWN.issuperset(d): raise TypeError('unknown keys')")
    lines.append(f"    return _cls({', '.join(names)})")
    namespace = dict(helpers)
    exec("\n".join(lines), namespace)  # source generated above from the attrs fields
    _STRUCTURES[cls] = structure = namespace["structure"]
    return structure  # type: ignore[no-any-return]


def _give_up(cls: type) -> _Structure | None:
    _STRUCTURES[cls] = None
    return None


def decode_document(data: str) -> MemoryDocument:
    try:
        payload = json.loads(data)
        if not isinstance(payload, dict) or set(payload) != {"format", "document"}:
            raise TypeError("not a snapshot object")
        if payload["format"] != FORMAT:
            raise ValueError(f"snapshot format {payload['format']!r}, expected {FORMAT}")
        fast = _structure_of(MemoryDocument)
        doc: MemoryDocument
        if fast is not None:
            doc = fast(payload["document"])
        else:
            doc = _converter.structure(payload["document"], MemoryDocument)
    except (KeyError, ValueError, TypeError, RecursionError, cattrs.BaseValidationError) as exc:
        raise CorruptSnapshot(f"cannot decode a document snapshot: {exc}") from exc
    if any(e.target is not doc.target for e in doc.all_entries()):
        raise CorruptSnapshot("a snapshot entry belongs to another target")
    return doc
