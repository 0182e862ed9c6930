"""The LLM port: `Completer`, one completion in, its text out. The facts about the configured
LLM (its plan, status, the off completer) stay in `pi_hermes_memory.learning.llm`."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Completer"]


class Completer(Protocol):
    """One completion: `system` and `user` prompts in, the reply's text out.

    Raises `CompletionFailed` (never anything else for a failure of the LLM) when there is
    no usable reply within `timeout` seconds; the reason code says why. Implementations
    never hang past the timeout (plus a short grace to stop a child process)."""

    def complete(self, system: str, user: str, *, timeout: float) -> str: ...
