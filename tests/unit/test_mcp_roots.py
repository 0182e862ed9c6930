"""Which project a client's MCP roots name (adapters/server/mcp_tools.py `root_project`)."""

from __future__ import annotations

import pytest
from pi_hermes_memory.adapters.server.mcp_tools import root_project


@pytest.mark.parametrize(
    ("uris", "project"),
    [
        ([], None),
        (["file:///home/ana/src/alpha"], "alpha"),
        (["file:///home/ana/src/alpha/"], "alpha"),  # a trailing slash names the same folder
        (["file:///home/ana/src/my%20app"], "my app"),  # percent-encoding decoded
        (["https://example.com/repo", "file:///w/beta"], "beta"),  # only file:// roots count
        (["file:///"], None),  # the filesystem root names no project
        (["file:///w/a%2Cb", "file:///w/gamma"], "gamma"),  # ',' is no safe project name
        (["file:///w/%3Cx%3E"], None),
        (["file:///w/first", "file:///w/second"], "first"),
    ],
)
def test_root_project(uris: list[str], project: str | None) -> None:
    assert root_project(uris) == project
