"""Fuzz target for the write scanner.

`fuzz_scan(data)` is a plain function: Hypothesis drives it in `test_fuzz_scanner.py`, and it can
run under atheris (`python tests/fuzz/fuzz_scanner.py -max_total_time=600`) when that is
installed. It checks the scanner's invariants on whatever text the bytes decode to.
"""

from __future__ import annotations

import re
import sys
import unicodedata

from pi_hermes_memory.domain.scanning.scanner import MAX_SCAN_CHARS, ScanCategory, Severity, scan

_LONG_TOKEN = re.compile(r"[A-Za-z0-9_+/=-]{40,}")

scan("warm-up é")  # builds the lazy Unicode tables once, outside the timed examples


def fuzz_scan(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    result = scan(text)

    # Shape of the verdict.
    assert unicodedata.is_normalized("NFC", result.text)
    assert result.blocked == any(f.severity is Severity.BLOCK for f in result.findings)
    for finding in result.findings:
        assert isinstance(finding.category, ScanCategory)
        assert finding.offset is None or 0 <= finding.offset <= max(len(text), MAX_SCAN_CHARS)
        assert (finding.code_point is not None) == (
            finding.category is ScanCategory.INVISIBLE_UNICODE
        )
    for label in result.stripped:
        assert re.fullmatch(r"U\+[0-9A-F]{4,6}", label)

    # The message is built from fixed vocabulary: it never echoes the input.
    message = result.message()
    assert message.isascii()
    for token in _LONG_TOKEN.findall(text):
        assert token not in message
    assert text[:1000] not in message or len(text.strip()) < 8

    # Cleaning is idempotent for accepted text.
    if not result.blocked:
        again = scan(result.text)
        assert again.text == result.text
        assert again.stripped == ()
        assert not again.blocked


def main() -> None:  # pragma: no cover - needs atheris
    import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]

    atheris.Setup(sys.argv, fuzz_scan)
    atheris.Fuzz()


if __name__ == "__main__":  # pragma: no cover
    main()
