"""Errors raised by the application layer to its callers."""

from __future__ import annotations


class HermesMemoryError(Exception):
    """Base class of the errors pi-hermes-memory raises to callers."""


class MarkdownUnreadable(HermesMemoryError):
    """A Markdown document cannot be read back without losing bytes; nothing was written."""
