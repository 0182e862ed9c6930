"""The one line a framework front end raises when its optional extra is not installed."""

from __future__ import annotations


def missing_extra(module: str, framework: str, extra: str) -> ImportError:
    """`ImportError("<module> needs <framework>: pip install 'pi-hermes-memory[<extra>]'")`,
    to raise `from` the framework's own ImportError."""
    return ImportError(f"{module} needs {framework}: pip install 'pi-hermes-memory[{extra}]'")
