"""The library logs through the standard `logging` module, plainly (issue 10 §6, rule 15)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.log import LOGGER_NAME, library_logger


@pytest.fixture
def unconfigured_structlog() -> Iterator[None]:
    """structlog as a host that never configured it sees it (other tests configure it)."""
    was, saved = structlog.is_configured(), structlog.get_config()
    structlog.reset_defaults()
    try:
        yield
    finally:
        if was:
            structlog.configure(**saved)
        else:
            structlog.reset_defaults()


def test_events_reach_the_stdlib_logger_as_one_plain_line(
    unconfigured_structlog: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        library_logger().warning("embedding.failed", reason="timeout", detail="took 2 s")
    [record] = caplog.records
    assert record.name == LOGGER_NAME and record.levelno == logging.WARNING
    assert record.getMessage() == 'embedding.failed reason=timeout detail="took 2 s"'
    assert "\x1b" not in record.getMessage()


def test_levels_below_the_hosts_threshold_are_dropped(
    unconfigured_structlog: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        library_logger().info("sessions.indexed", files=3)
    assert caplog.records == []
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
        library_logger().info("sessions.indexed", files=3)
    assert [r.getMessage() for r in caplog.records] == ["sessions.indexed files=3"]


def test_an_exception_keeps_its_traceback_for_the_host(
    unconfigured_structlog: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger=LOGGER_NAME):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            library_logger().error("tool.failed", tool="memory", exc_info=True)
    [record] = caplog.records
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert record.getMessage() == "tool.failed tool=memory"


def test_a_host_that_configured_structlog_gets_the_events_through_its_processors() -> None:
    with structlog.testing.capture_logs() as logs:
        library_logger().warning("memory.warning", detail="x")
    assert logs == [{"event": "memory.warning", "detail": "x", "log_level": "warning"}]


_WITHOUT_STRUCTLOG = """
import logging, sys
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append((record.levelno, record.getMessage(), bool(record.exc_info)))
logging.getLogger("pi_hermes_memory").addHandler(Keep())
logging.getLogger("pi_hermes_memory").setLevel(logging.INFO)
from pi_hermes_memory.log import library_logger
log = library_logger()
log.debug("dropped", n=1)
log.info("sessions.indexed", files=3)
log.warning("embedding.failed", reason="timeout", detail="took 2 s")
try:
    raise RuntimeError("boom")
except RuntimeError:
    log.error("tool.failed", tool="memory", exc_info=True)
assert "structlog" not in sys.modules, "structlog was imported"
print(records)
"""


def test_without_structlog_loaded_the_same_plain_lines_reach_the_stdlib_logger() -> None:
    """A process that never imports structlog (every CLI call) gets the same lines without
    paying for the import (ADR 0038: start-up time)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_STRUCTLOG], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(
        [
            (logging.INFO, "sessions.indexed files=3", False),
            (logging.WARNING, 'embedding.failed reason=timeout detail="took 2 s"', False),
            (logging.ERROR, "tool.failed tool=memory", True),
        ]
    )


_FIRST_EVENT = """
import sys
import pi_hermes_memory.log as log
calls = []
def configure():
    import logging
    calls.append("configured")
    logging.getLogger(log.LOGGER_NAME).addHandler(Seen())
    logging.getLogger(log.LOGGER_NAME).propagate = False
log.before_first_event(configure)
log.before_first_event(configure)  # given twice: runs once
loaded_before = "logging" in sys.modules
import logging
class Seen(logging.Handler):
    def emit(self, record):
        calls.append(record.getMessage())
log.library_logger().warning("disk.low", free="1 MiB")
log.library_logger().warning("disk.low", free="0 MiB")
print(repr((loaded_before, calls)))
"""


def test_a_handler_given_before_the_first_event_is_installed_before_it() -> None:
    """`import pi_hermes_memory.log` does not load `logging`; a program (the CLI) that gives
    `before_first_event` its handler sees the library's first event through it (ADR 0110)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _FIRST_EVENT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(
        (False, ["configured", 'disk.low free="1 MiB"', 'disk.low free="0 MiB"'])
    )


def test_with_logging_already_loaded_the_handler_is_installed_at_once() -> None:
    from pi_hermes_memory.log import before_first_event

    calls: list[str] = []
    before_first_event(lambda: calls.append("configured"))
    assert calls == ["configured"]  # someone may log through `logging` directly


_BELOW_WARNING = """
import sys
import pi_hermes_memory.log as log
calls = []
def configure():
    import logging
    class Seen(logging.Handler):
        def emit(self, record):
            calls.append(record.getMessage())
    logger = logging.getLogger(log.LOGGER_NAME)
    logger.addHandler(Seen())
    logger.propagate = False
    if LOWERS:
        logger.setLevel(logging.DEBUG)
log.before_first_event(configure, shows_debug_or_info=LOWERS)
log.library_logger().debug("journal.published", count=1)
log.library_logger().info("sessions.indexed", files=2)
after_quiet = "logging" in sys.modules
log.library_logger().warning("disk.low", free="1 MiB")
print(repr((after_quiet, calls)))
"""


@pytest.mark.parametrize("lowers", [False, True])
def test_a_debug_event_before_logging_loads_is_dropped_unless_a_handler_may_show_it(
    lowers: bool,
) -> None:
    """A debug or info event in a process that never imported `logging` would be dropped at
    the default level: it is dropped without the import (ADR 0111), when the pending handler
    promises no lower level (the CLI's); a handler that may lower it sees every event."""
    import subprocess
    import sys

    code = _BELOW_WARNING.replace("LOWERS", repr(lowers))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    expected = ["journal.published count=1", "sessions.indexed files=2"] if lowers else []
    assert done.stdout.strip() == repr((lowers, [*expected, 'disk.low free="1 MiB"']))


@given(st.text())
def test_the_cli_reads_an_event_log_warning_back_in_plain_words(detail: str) -> None:
    """The CLI prints the storage's `eventlog.warning` as the warning itself: reading the
    field back from the plain line inverts its quoting, whatever the text."""
    from pi_hermes_memory.adapters.cli.log_lines import _unquoted
    from pi_hermes_memory.log import plain_line

    line = plain_line({"event": "eventlog.warning", "detail": detail})
    assert _unquoted(line.removeprefix("eventlog.warning detail=")) == detail
