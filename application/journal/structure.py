"""Structure functions generated from attrs fields, for decoding many stored values fast.

The wire formats (events, ADR 0007; snapshots, ADR 0024) are defined by one strict cattrs
converter each. Decoding a journal or a snapshot of 100,000 entries through cattrs' per-field
hooks dominated opening a store (issue 17); `structure_function(cls)` generates, once per
class, a function with the same checks inline (ADR 0038):

- `float`: a JSON number (an int becomes its float; ADR 0045);
- `str`, `int`, `bool`: exactly that JSON type (`type(v) is str`: no coercion, a bool is not an
  int); an enum: a string that is one of its values; `date` / `datetime`: a string through
  `fromisoformat`; `X | None`; `frozenset[str]` and `tuple[str, ...]` from a list of strings;
  `tuple[C, ...]` of an attrs class `C` from a list of its objects;
- every key without a default is required, a missing key with a default takes it, an unknown
  key is refused; fields with `init=False` are not read (the converter skips them too).

Any other field type (or a factory default) makes the function None: the caller then uses its
converter. A failure raises `KeyError`, `ValueError` or `TypeError`, which both codecs already
turn into their one corruption error. The generated functions accept nothing the converter
refuses (property tests: tests/unit/test_snapshot_fast_decode.py, tests/unit/test_codec.py).

`unstructure_function(cls)` is the other direction, for encoding an event without loading cattrs
(~40 ms of a process whose one write is an add; issue 29, ADR 0080): the dict the converter
gives, built from the same field types (an enum's value, ISO dates and times, lists for
`frozenset[str]` / `tuple[str, ...]` and nested attrs tuples, `X | None`), or None for any other
field type (the caller then uses the converter). tests/unit/test_codec.py compares the two on
every event class.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

import attrs

__all__ = ["structure_function", "unstructure_function"]

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
    if kind is float:  # a JSON number: an int is accepted as its float, a bool is not
        return [
            f"{indent}if type({var}) is int: {var} = float({var})",
            f"{indent}elif type({var}) is not float: raise TypeError('{var}')",
        ]
    if kind in (str, int, bool):
        return [f"{indent}if type({var}) is not {kind.__name__}: raise TypeError('{var}')"]
    if kind is date or kind is datetime:
        return [
            f"{indent}if type({var}) is not str: raise TypeError('{var}')",
            f"{indent}{var} = {'_date' if kind is date else '_datetime'}({var})",
        ]
    if (origin is frozenset and args == (str,)) or (origin is tuple and args == (str, ...)):
        return [
            f"{indent}if type({var}) is not list or not all(type(i) is str for i in {var}):",
            f"{indent}    raise TypeError('{var}')",
            f"{indent}{var} = {origin.__name__}({var})",
        ]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and attrs.has(args[0]):
        item = structure_function(args[0])
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


def structure_function(cls: type) -> _Structure | None:
    """A function from the unstructured dict to `cls`, or None (use the converter)."""
    if cls in _STRUCTURES:
        return _STRUCTURES[cls]
    hints = typing.get_type_hints(cls)
    helpers: dict[str, Any] = {
        "_cls": cls,
        "_date": date.fromisoformat,
        "_datetime": datetime.fromisoformat,
        "_NO": object(),
    }
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


def _plain(kind: Any, var: str, helpers: dict[str, Any]) -> str | None:
    """An expression giving `var` as the strict converter unstructures a value of `kind`."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(args) != 2:
            return None
        inner = _plain(rest[0], var, helpers)
        return None if inner is None else f"(None if {var} is None else {inner})"
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return f"{var}.value"
    if kind in (str, int, bool, float):
        return var
    if kind is date or kind is datetime:
        return f"{var}.isoformat()"
    if (origin is frozenset and args == (str,)) or (origin is tuple and args == (str, ...)):
        return f"list({var})"
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and attrs.has(args[0]):
        item = unstructure_function(args[0])
        if item is None:
            return None
        name = f"_U{len(helpers)}"
        helpers[name] = item
        return f"[{name}(i) for i in {var}]"
    return None


_UNSTRUCTURES: dict[type, _Structure | None] = {}


def unstructure_function(cls: type) -> _Structure | None:
    """A function from a `cls` object to the dict the strict converter makes of it, or None
    (use the converter)."""
    if cls in _UNSTRUCTURES:
        return _UNSTRUCTURES[cls]
    hints = typing.get_type_hints(cls)
    helpers: dict[str, Any] = {}
    items = []
    for field in attrs.fields(cls):
        expression = _plain(hints[field.name], f"o.{field.name}", helpers) if field.init else None
        if expression is None:  # a field type (or an init=False field) left to the converter
            _UNSTRUCTURES[cls] = None
            return None
        items.append(f"{field.name!r}: {expression}")
    namespace = dict(helpers)
    exec(f"def unstructure(o):\n    return {{{', '.join(items)}}}", namespace)  # from fields
    _UNSTRUCTURES[cls] = unstructure = namespace["unstructure"]
    return unstructure  # type: ignore[no-any-return]
