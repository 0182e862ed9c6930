"""The library logs through the standard `logging` module, plainly (issue 10 §6, rule 15)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog
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
