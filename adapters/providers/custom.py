"""Adapters named in the configuration by import path (ADR 0057).

`"embedding": {"provider": "my_pkg.my_module:MyEmbedder", ...}` (likewise
`retrieval.rerank.provider` and `llm.provider`): the module is imported and the attribute
(a class or a function) is called with one argument, the section as written (a read-only
mapping, `provider` included); what it returns must satisfy the port (`Embedder`,
`Reranker`, `Completer`). If it has a `close()` method, the store calls it when it closes.
Anything that goes wrong on the way is a `ConfigError` naming the field and the path: a
configured adapter is never silently replaced by a default (style rule 36).
"""

from __future__ import annotations

import importlib
from typing import Any

from pi_hermes_memory.config.settings import ConfigError, CustomAdapter

__all__ = ["load_adapter"]


def load_adapter(field: str, adapter: CustomAdapter) -> Any:
    """The adapter built by `adapter.path` called with `adapter.options`."""
    module_name, _, attribute = adapter.path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{field}: cannot import the module {module_name!r} of {adapter.path!r} ({exc}); "
            "is its package installed, or its folder on PYTHONPATH?"
        ) from exc
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise ConfigError(
                f"{field}: the module {module_name!r} has no attribute {attribute!r} "
                f"(from {adapter.path!r})"
            ) from None
    if not callable(target):
        raise ConfigError(f"{field}: {adapter.path!r} is not a class or a function")
    try:
        return target(adapter.options)
    except Exception as exc:
        raise ConfigError(
            f"{field}: {adapter.path!r} failed to build the adapter: {type(exc).__name__}: {exc}"
        ) from exc
