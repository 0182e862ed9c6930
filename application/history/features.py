"""The session history features of one `Memory`: indexing (whole tree, live, recorded turns)
and `session_search` in the configured variant (ADR 0020, ADR 0021)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.history.indexer import SessionIndexer
from pi_hermes_memory.history.search import AnchorResult, SessionSearchService
from pi_hermes_memory.history.tool import (
    run_anchor_request,
    run_anchors_tool,
    run_legacy_tool,
    session_tool,
)
from pi_hermes_memory.tools.registry import ToolDefinition, ToolResult

VARIANTS = ("legacy", "anchors")


class SessionHistory:
    """The session index's writer (`indexer`), its searches (`search_service`) and the
    session_search tool of the configured variant."""

    def __init__(
        self,
        *,
        indexer: SessionIndexer,
        search: SessionSearchService,
        variant: str = "legacy",
        on_close: Callable[[], None] | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise InvalidArgument(
                f"variant must be one of {', '.join(VARIANTS)}; got {shown(variant)}"
            )
        self.indexer = indexer
        self.search_service = search
        self.variant = variant
        self._on_close = on_close

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()

    def anchors(self, request: str) -> AnchorResult:
        if not isinstance(request, str):
            raise InvalidArgument(f"request must be a string; got {type(request).__name__}")
        return run_anchor_request(self.search_service, request)

    @property
    def tool(self) -> ToolDefinition:
        return session_tool(self.variant)

    def run_tool(self, arguments: Any) -> ToolResult:
        if self.variant == "anchors":
            return run_anchors_tool(self.search_service, arguments)
        return run_legacy_tool(self.search_service, arguments)
