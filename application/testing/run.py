"""Run a shipped contract suite against a named adapter (`make contracts`; ADR 0058).

    python -m pi_hermes_memory.testing.run --kind embedder --adapter my_pkg.mod:make_embedder \\
        [--failing my_pkg.mod:make_broken] [--slow my_pkg.mod:make_slow --timeout 0.5]

`--adapter` names a factory (`module:callable`, called with no argument) that returns a
working adapter; `--failing` one whose every call fails; `--slow` one whose provider never
answers within `--timeout` seconds (the adapter's own timeout; for a completer, the timeout
the contract passes). Without `--failing`/`--slow` those tests are skipped, saying so.
The current directory is importable, as with `python -m`.

The runner writes a tiny test module into a temporary directory (a subclass of the contract
whose fixtures call the factories; an adapter with `close()` is closed after each test) and
runs pytest on it in this process, isolated from the project's own pytest configuration.
The exit status is pytest's (0 passed, 1 a test failed), or 2 for a bad argument.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import pytest

__all__ = ["KINDS", "fixture_from", "load_factory", "main", "module_source"]

#: kind -> (contract class, fixture name of the working adapter; `failing_`/`slow_` + it)
KINDS: Final[dict[str, tuple[str, str]]] = {
    "embedder": ("EmbedderContract", "embedder"),
    "reranker": ("RerankerContract", "reranker"),
    "completer": ("CompleterContract", "completer"),
}


def load_factory(spec: str) -> Callable[[], Any]:
    """The callable named by `module:attribute` (dots allowed in the attribute)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{spec!r} is not of the form package.module:factory")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{spec!r} is not callable")
    return target  # type: ignore[no-any-return]


def fixture_from(spec: str) -> Any:
    """A pytest fixture (for a contract subclass) that makes the adapter from `spec`."""

    def made(self: Any) -> Iterator[Any]:
        adapter = load_factory(spec)()
        try:
            yield adapter
        finally:
            close = getattr(adapter, "close", None)
            if callable(close):
                close()

    return pytest.fixture(made)


_MODULE = """\
from pi_hermes_memory.testing import {contract}
from pi_hermes_memory.testing.run import fixture_from


class TestAdapter({contract}):
{body}
"""


def module_source(
    kind: str, adapter: str, *, failing: str | None, slow: str | None, timeout: float | None
) -> str:
    """The source of the generated test module."""
    contract, name = KINDS[kind]
    lines = [f"    {name} = fixture_from({adapter!r})"]
    if failing:
        lines.append(f"    failing_{name} = fixture_from({failing!r})")
    if slow:
        lines.append(f"    slow_{name} = fixture_from({slow!r})")
    if timeout is not None:
        lines.append(f"    timeout_s = {float(timeout)!r}")
    return _MODULE.format(contract=contract, body="\n".join(lines))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pi_hermes_memory.testing.run",
        description="Run a shipped contract suite against your adapter.",
    )
    parser.add_argument("--kind", required=True, choices=sorted(KINDS))
    parser.add_argument("--adapter", required=True, help="module:factory of a working adapter")
    parser.add_argument("--failing", help="module:factory of an adapter whose calls all fail")
    parser.add_argument("--slow", help="module:factory of an adapter whose provider hangs")
    parser.add_argument("--timeout", type=float, help="the slow adapter's timeout, in seconds")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # the adapter's package, as with `python -m`
    for spec in (options.adapter, options.failing, options.slow):
        if spec is None:
            continue
        try:
            load_factory(spec)
        except (ImportError, AttributeError, ValueError) as exc:
            print(f"contracts: cannot load {spec!r}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="contracts-") as folder:
        root = Path(folder)
        test_file = root / f"test_{options.kind}_contract.py"
        test_file.write_text(
            module_source(
                options.kind,
                options.adapter,
                failing=options.failing,
                slow=options.slow,
                timeout=options.timeout,
            ),
            encoding="utf-8",
        )
        ini = root / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")
        args = [
            "-c",
            str(ini),
            "--rootdir",
            str(root),
            "-p",
            "no:cacheprovider",
            "-rs",
            str(test_file),
            *options.pytest_args,
        ]
        return int(pytest.main(args))


if __name__ == "__main__":
    sys.exit(main())
