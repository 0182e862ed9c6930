"""The CLI's log handler, installed before the library's first log event (ADR 0110): a command
that logs nothing (a search on a healthy store) does not import `logging`."""

from __future__ import annotations

import logging
import sys

from pi_hermes_memory.log import LOGGER_NAME

__all__ = ["configure_logging", "printed"]

#: the library's log event for a warning it also keeps in `Memory.warnings`
_SHOWN_BY_THE_CLI = "memory.warning"
#: the storage's warning about its event log (moved aside, an append that failed): also kept
#: in `Memory.warnings` when it comes while the store opens, so it is printed as a warning, in
#: plain words, and the command's own list skips it (`printed`)
_EVENT_LOG_WARNING = "eventlog.warning detail="
#: warnings the handler printed in plain words
_printed: set[str] = set()


def printed(warning: str) -> bool:
    """Whether the log handler already printed `warning` in plain words."""
    return warning in _printed


def _unquoted(value: str) -> str:
    """A field value as `pi_hermes_memory.log.plain_line` wrote it, read back."""
    if len(value) < 2 or not (value.startswith('"') and value.endswith('"')):
        return value
    out: list[str] = []
    chars = iter(value[1:-1])
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            out.append("\n" if nxt == "n" else nxt)
        else:
            out.append(c)
    return "".join(out)


class _StderrLines(logging.Handler):
    """The CLI's readable log output: `pi-hermes-memory: warning: <event> key=value` on
    whatever `sys.stderr` is at the time (the library itself only logs through `logging`)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if message.startswith(_SHOWN_BY_THE_CLI):
                return  # the command prints `Memory.warnings` itself, once, in plain words
            if message.startswith(_EVENT_LOG_WARNING) and record.levelno == logging.WARNING:
                detail = _unquoted(message.removeprefix(_EVENT_LOG_WARNING))
                if detail not in _printed:
                    _printed.add(detail)
                    sys.stderr.write(f"pi-hermes-memory: warning: {detail}\n")
                return
            sys.stderr.write(
                f"pi-hermes-memory: {record.levelname.lower()}: {self.format(record)}\n"
            )
        except Exception:
            self.handleError(record)


def configure_logging() -> None:
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h, _StderrLines) for h in logger.handlers):
        logger.addHandler(_StderrLines(logging.WARNING))
        logger.propagate = False  # no second copy through a root handler
