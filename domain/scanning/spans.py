"""Every secret in a text, with where it is: for redacting text the library stores but did not
write itself (the knowledge base's document chunks, ADR 0063).

`scan` answers "may this be stored?" and stops at a rule's first hit; redaction needs every
hit. `secret_spans` runs the scanner's own secret rules (`scanner.SECRET_RULES`, same order,
same entropy and context checks, same scan copies: the NFKC-folded one and, when folding
changed it, the stripped one) over the whole text and returns each hit's span in the text as
given. A PEM private key's span runs from its BEGIN line through its END line (or to the end
of the text), and a text holding only an END line is covered from its start: a key cut in
two by a chunk boundary is redacted on both sides.

Only the first `MAX_SCAN_CHARS` characters are scanned (as by `scan`); the caller scans a
longer text in windows. Pure: standard library and attrs.
"""

from __future__ import annotations

import re
from typing import Final

import attrs
from pi_hermes_memory.domain.scanning import unicode_policy
from pi_hermes_memory.domain.scanning.lazy_re import lazy_compile
from pi_hermes_memory.domain.scanning.scanner import (
    MAX_SCAN_CHARS,
    SECRET_RULES,
    ascii_lower,
    secret_matches,
)

__all__ = ["SecretSpan", "secret_spans"]

_PRIVATE_KEY_END: Final = lazy_compile(
    r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----", re.IGNORECASE
)


@attrs.frozen(kw_only=True)
class SecretSpan:
    """`text[start:end]` is (or holds) a secret found by rule `rule_id`."""

    start: int
    end: int
    rule_id: str


def secret_spans(text: str) -> tuple[SecretSpan, ...]:
    """The secrets in the first `MAX_SCAN_CHARS` characters of `text`, by start, not
    overlapping (see the module docstring)."""
    window = text[:MAX_SCAN_CHARS]
    copy = unicode_policy.ScanCopy(window)
    sources = [(copy.folded, copy.folded_to_raw)]
    if copy.stripped != copy.folded:
        sources.append((copy.stripped, copy.stripped_to_raw))
    found: list[SecretSpan] = []

    def overlaps(start: int, end: int) -> bool:
        return any(start < s.end and s.start < end for s in found)

    for source, to_raw in sources:
        lowered = ascii_lower(source)
        for rule in SECRET_RULES:
            if not any(k in lowered for k in rule.keywords):
                continue
            for start, end, m in secret_matches(rule, source, to_raw):
                if "PRIVATE KEY" in m.group(0).upper():
                    closing = _PRIVATE_KEY_END.search(window, end)
                    end = closing.end() if closing else len(window)
                if not overlaps(start, end):
                    found.append(SecretSpan(start=start, end=end, rule_id=rule.rule_id))
    for closing in _PRIVATE_KEY_END.finditer(window):
        if any(s.start <= closing.start() and closing.end() <= s.end for s in found):
            continue
        # an END line no BEGIN line here reaches: the tail of a key begun before this text
        found = [s for s in found if s.start >= closing.end()]
        found.append(SecretSpan(start=0, end=closing.end(), rule_id="private_key_tail"))
        break
    return tuple(sorted(found, key=lambda s: s.start))
