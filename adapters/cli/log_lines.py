"""The CLI's log handler, installed before the library's first log event (ADR 0110): a command
that logs nothing (a search on a healthy store) does not import `logging`."""

from __future__ import annotations

import logging
import sys

from pi_hermes_memory.log import LOGGER_NAME

__all__ = ["configure_logging"]

#: the library's log event for a warning it also keeps in `Memory.warnings`
_SHOWN_BY_THE_CLI = "memory.warning"


class _StderrLines(logging.Handler):
    """The CLI's readable log output: `pi-hermes-memory: warning: <event> key=value` on
    whatever `sys.stderr` is at the time (the library itself only logs through `logging`)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.getMessage().startswith(_SHOWN_BY_THE_CLI):
                return  # the command prints `Memory.warnings` itself, once, in plain words
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
