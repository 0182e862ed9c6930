"""Errors raised by the application layer to its callers."""

from __future__ import annotations


class HermesMemoryError(Exception):
    """Base class of the errors pi-hermes-memory raises to callers."""


class MarkdownUnreadable(HermesMemoryError):
    """A Markdown document cannot be read back without losing bytes; nothing was written."""


class EmbeddingFailed(HermesMemoryError):
    """An embedding request failed (HTTP status, timeout, transport, or a malformed answer).

    `reason` is a short machine-readable kind (`http_status`, `timeout`, `transport`,
    `malformed`, `count`, `dimension`, `non_finite`); `host` is the redacted endpoint
    (scheme and host only). The message names both and never carries the API key, the full
    base URL or the server's response body (which may echo the key).
    """

    def __init__(self, reason: str, host: str, detail: str = "") -> None:
        self.reason = reason
        self.host = host
        self.detail = detail
        message = f"embedding request to {host} failed ({reason})"
        super().__init__(f"{message}: {detail}" if detail else message)
