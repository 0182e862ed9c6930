"""The library's logger: structlog in front of the standard `logging` module, never colours.

A library does not configure logging (style rule 15). Without a logger from the host, every
service logs to the stdlib logger ``pi_hermes_memory`` one plain line, ``event key=value ...``
(no ANSI codes, no timestamp: the host's handlers and formatters decide where it goes and how it
looks; with no handler configured Python prints warnings and errors to stderr). A host that
configured structlog itself (``structlog.configure``, including ``structlog.testing.capture_logs``)
gets the events through its own processors instead. A host may also pass any structlog logger
to ``open(logger=...)``.

The standard `logging` module is imported by the first event, not by this module: a process
that logs nothing (a CLI search on a healthy store) does not load it (ADR 0110). A program that
wants its handler in place for the library's events without importing `logging` itself (the
CLI) gives `before_first_event` a function that installs it.

A debug or info event while `logging` is not imported is dropped without importing it (ADR
0111): nothing can have set a level or a handler yet, so the library logger's effective level
is the root's default, WARNING, and the event would be dropped after the import anyway (the
write pipeline's debug event made every CLI `add` load `logging`, about 4 ms). A function given
to `before_first_event` that may let such events through (a lower level) says so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["LOGGER_NAME", "before_first_event", "library_logger", "plain_line"]

LOGGER_NAME = "pi_hermes_memory"

#: what runs once, with `logging` imported, before the library's next log event
_pending: list[Callable[[], None]] = []
#: whether one of `_pending` may let a debug or info event through (sets a level below WARNING)
_pending_shows_below_warning = False
#: the events a fresh `logging` drops at its default level (WARNING)
_BELOW_WARNING = frozenset({"debug", "info"})


def before_first_event(configure: Callable[[], None], *, shows_debug_or_info: bool = True) -> None:
    """Run `configure` (which may import `logging` and add handlers) before the library logs
    its next event in this process; at once when `logging` is already imported (someone may
    log through it directly). `shows_debug_or_info=False` promises that `configure` sets no
    level below WARNING: until `logging` is imported, debug and info events are then dropped
    without importing it."""
    global _pending_shows_below_warning
    if "logging" in sys.modules:
        configure()
    elif configure not in _pending:
        _pending.append(configure)
        _pending_shows_below_warning = _pending_shows_below_warning or shows_debug_or_info


def _run_pending() -> None:
    while _pending:
        _pending.pop(0)()


def plain_line(event_dict: MutableMapping[str, Any]) -> str:
    """``event key=value ...``: strings with spaces or quotes are quoted, nothing coloured."""
    event = str(event_dict.pop("event", ""))
    fields = [f"{key}={_value(value)}" for key, value in event_dict.items()]
    return " ".join([event, *fields]) if fields else event


def _value(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    if text and not any(c.isspace() or c in "\"'=" for c in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _render(logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> Any:
    import logging

    import structlog

    if structlog.is_configured():  # the host chose its processors: use them
        result: Any = event_dict
        for processor in structlog.get_config()["processors"]:
            result = processor(logger, method_name, result)
        return result
    if isinstance(logger, logging.Logger):
        level = logging.getLevelName(method_name.upper())
        if isinstance(level, int) and not logger.isEnabledFor(level):
            raise structlog.DropEvent
    exc_info = event_dict.pop("exc_info", None)
    if exc_info and isinstance(logger, logging.Logger) and not logger.hasHandlers():
        event_dict["error"] = _one_line(exc_info)
        exc_info = None
    kwargs: dict[str, Any] = {"exc_info": exc_info} if exc_info else {}
    return (plain_line(event_dict),), kwargs


def _one_line(exc_info: Any) -> str:
    """`Type: message` of the exception `exc_info` names (True: the one being handled).

    A host that never configured logging has no handler: Python's last-resort handler would
    print the whole traceback on stderr for an expected failure (a malformed LLM reply). Then
    the event says the error in one field; a host with a handler gets the traceback."""
    exc = sys.exc_info()[1] if exc_info is True else exc_info
    if isinstance(exc, tuple):
        exc = exc[1]
    if not isinstance(exc, BaseException):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _LibraryLogger:
    """What `library_logger` returns: structlog's stdlib logger with `_render` when structlog
    is loaded (a host that configured it has imported it), else the same plain line straight
    to the stdlib logger, so that a process that never uses structlog (every CLI call) does not
    pay for importing it (and asyncio with it)."""

    __slots__ = ("_name", "_structured")

    def __init__(self, name: str) -> None:
        self._name = name
        self._structured: Any = None

    def _emit(self, method: str, event: str, fields: dict[str, Any]) -> None:
        if (
            method in _BELOW_WARNING
            and "logging" not in sys.modules
            and not _pending_shows_below_warning
        ):
            return  # a fresh `logging` would drop it: see the module docstring
        import logging

        if _pending:
            _run_pending()
        if "structlog" in sys.modules:
            if self._structured is None:
                import structlog

                self._structured = structlog.wrap_logger(
                    logging.getLogger(self._name),
                    processors=[_render],
                    wrapper_class=structlog.stdlib.BoundLogger,
                )
            getattr(self._structured, method)(event, **fields)
            return
        logger = logging.getLogger(self._name)
        level = logging.ERROR if method == "exception" else logging.getLevelName(method.upper())
        if not isinstance(level, int) or not logger.isEnabledFor(level):
            return
        exc_info = fields.pop("exc_info", None) or (method == "exception")
        if exc_info and not logger.hasHandlers():  # see `_one_line`
            fields["error"] = _one_line(exc_info)
            exc_info = None
        logger.log(level, plain_line({"event": event, **fields}), exc_info=exc_info or None)

    def debug(self, event: str, **fields: Any) -> None:
        self._emit("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit("error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._emit("exception", event, fields)

    def critical(self, event: str, **fields: Any) -> None:
        self._emit("critical", event, fields)


def library_logger(name: str = LOGGER_NAME) -> Any:
    """The default logger of every service: see the module docstring."""
    return _LibraryLogger(name)
