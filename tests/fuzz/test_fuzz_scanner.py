"""Drives the scanner fuzz target with Hypothesis; budgets come from the active profile."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st


def _load_target() -> Callable[[bytes], None]:
    path = Path(__file__).with_name("fuzz_scanner.py")
    spec = importlib.util.spec_from_file_location("fuzz_scanner", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target: Callable[[bytes], None] = module.fuzz_scan
    return target


fuzz_scan = _load_target()


@given(st.binary())
def test_fuzz_scan_binary(data: bytes) -> None:
    fuzz_scan(data)


@given(st.text().map(lambda s: s.encode("utf-8", errors="surrogatepass")))
def test_fuzz_scan_utf8_text(data: bytes) -> None:
    fuzz_scan(data)
