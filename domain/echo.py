"""How an error message shows a value it refuses (issue 10 §1, ADR 0028).

A message may name a bad argument value so the caller sees what was wrong, but never at full
length (10 MB in must not give 10 MB out) and never when the content scanner would refuse it
(a secret put in `target` must not come back): then only the finding kind is named.
"""

from __future__ import annotations

#: characters of a value an error message shows
ECHO_CHARS = 80
#: characters scanned before showing a prefix: a secret that straddles the cut is still seen
_SCAN_WINDOW = 4096
#: integers longer than this many bits are described, not printed (int -> str is quadratic)
_INT_BITS = 256


def shown(value: object, width: int = ECHO_CHARS) -> str:
    """`value` as an error message may show it: repr, clipped to `width` characters with
    "…(N chars)", or a note naming the scanner's finding kinds instead of the value."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() > _INT_BITS:
            return f"an integer of {value.bit_length():,} bits"
        return repr(value)
    if not isinstance(value, str):
        return f"a {type(value).__name__}"
    note = withheld(value)
    if note is not None:
        return note
    if len(value) <= width:
        return repr(value)
    return repr(value[:width]) + f"…({len(value):,} chars)"


def withheld(value: str) -> str | None:
    """The note a message shows instead of `value` when the content scanner would refuse it
    ("(a value withheld: ...)"), or None when `value` may be shown (clipped by the caller).
    For messages that quote a value their own way (a search query in double quotes)."""
    from pi_hermes_memory.domain.scanning.scanner import scan  # many patterns: loaded when used

    result = scan(value[:_SCAN_WINDOW])
    if not result.blocked:
        return None
    kinds = sorted({f"{f.category.value}: {f.rule_id}" for f in result.findings})
    return f"(a value withheld: the content scanner found {', '.join(kinds)})"


__all__ = ["ECHO_CHARS", "shown", "withheld"]
