"""The checks at the door of the public `Memory` API (issue 26 §6).

A call after `close()` raises `StoreClosed`, and an argument of the wrong type raises
`InvalidArgument` naming the parameter, before anything deeper runs: no driver exception
(`apsw.ConnectionClosedError`) and no accidental `TypeError` ("'int' object is not
subscriptable") reaches the caller. Value checks (ranges, choices) stay where they were.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.errors import InvalidArgument, StoreClosed

__all__ = [
    "closed_error",
    "guard_closed",
    "need_flag",
    "need_int",
    "need_mapping",
    "need_sequence",
    "need_text",
]

_C = TypeVar("_C", bound=type)


def _kind(value: object) -> str:
    return "None" if value is None else type(value).__name__


def need_text(name: str, value: object, *, optional: bool = False) -> None:
    """`value` is a str (or None when `optional`)."""
    if isinstance(value, str) or (optional and value is None):
        return
    raise InvalidArgument(
        f"{name} must be a string{' or None' if optional else ''}; got a {_kind(value)}"
    )


def need_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be True or False; got {shown(value)}")


def need_int(name: str, value: object, *, optional: bool = False) -> None:
    if (isinstance(value, int) and not isinstance(value, bool)) or (optional and value is None):
        return
    raise InvalidArgument(
        f"{name} must be an integer{' or None' if optional else ''}; got {shown(value)}"
    )


def need_mapping(name: str, value: object, *, optional: bool = False) -> None:
    if isinstance(value, Mapping) or (optional and value is None):
        return
    raise InvalidArgument(f"{name} must be a mapping (a dict); got a {_kind(value)}")


def need_sequence(name: str, value: object) -> None:
    """A list or tuple (not a str, bytes or a mapping)."""
    if not isinstance(value, list | tuple):
        raise InvalidArgument(f"{name} must be a list; got a {_kind(value)}")


def closed_error(what: str) -> StoreClosed:
    return StoreClosed(
        f"{what}: this store was closed; open a new one with pi_hermes_memory.open()"
    )


def _guarded(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise closed_error(f"Memory.{name}")
        return method(self, *args, **kwargs)

    return guarded


def guard_closed(cls: _C) -> _C:
    """Make every public method and property of `cls` (except `close`) raise StoreClosed once
    `self._closed` is set. A class decorator, so a method added later is guarded too."""
    for name, value in list(vars(cls).items()):
        if name.startswith("_") or name == "close":
            continue
        if isinstance(value, property) and value.fget is not None:
            setattr(cls, name, property(_guarded(name, value.fget), value.fset, value.fdel))
        elif callable(value):
            setattr(cls, name, _guarded(name, value))
    return cls
