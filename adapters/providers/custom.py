"""Adapters named in the configuration by import path (ADR 0057, ADR 0060): one loader.

Providers: `"embedding": {"provider": "my_pkg.my_module:MyEmbedder", ...}` (likewise
`retrieval.rerank.provider` and `llm.provider`): the module is imported and the attribute
(a class or a function) is called with one argument, the section as written (a read-only
mapping, `provider` included); what it returns must satisfy the port (`Embedder`,
`Reranker`, `Completer`). If it has a `close()` method, the store calls it when it closes.

Storage-side parts: `"adapters": {"vectorStore": "my_pkg.vectors:factory", ...}`: the
attribute is a factory of the `pi_hermes_memory.composition.Backend` bundle, exactly as one
given to `pi_hermes_memory.open(vector_store=...)`.

Anything that goes wrong on the way is a `ConfigError` naming the field and the path: a
configured adapter is never silently replaced by a default (style rule 36).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from pi_hermes_memory.config.settings import ConfigError, CustomAdapter

__all__ = ["backend_factory", "import_callable", "load_adapter"]


def import_callable(field: str, path: str) -> Callable[..., Any]:
    """The class or function at `path` (`package.module:Attribute`, dotted attributes
    allowed); a `ConfigError` naming `field` and `path` when there is none."""
    module_name, _, attribute = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{field}: cannot import the module {module_name!r} of {path!r} ({exc}); "
            "is its package installed, or its folder on PYTHONPATH?"
        ) from exc
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise ConfigError(
                f"{field}: the module {module_name!r} has no attribute {attribute!r} "
                f"(from {path!r})"
            ) from None
    if not callable(target):
        raise ConfigError(f"{field}: {path!r} is not a class or a function")
    built: Callable[..., Any] = target
    return built


def _build(field: str, path: str, target: Callable[..., Any], argument: object) -> Any:
    try:
        part = target(argument)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"{field}: {path!r} failed to build the adapter: {type(exc).__name__}: {exc}"
        ) from exc
    if part is None:
        raise ConfigError(f"{field}: {path!r} returned None instead of an adapter")
    return part


def load_adapter(field: str, adapter: CustomAdapter) -> Any:
    """The provider built by `adapter.path` called with `adapter.options`."""
    target = import_callable(field, adapter.path)
    return _build(field, adapter.path, target, adapter.options)


def backend_factory(field: str, path: str) -> Callable[[Any], Any]:
    """The factory at `path` as an `open()` factory: imported now (a wrong path fails before
    anything opens), called later with the `Backend`; what goes wrong in the call is a
    `ConfigError` naming `field` and `path` too."""
    target = import_callable(field, path)

    def factory(backend: Any) -> Any:
        return _build(field, path, target, backend)

    return factory
