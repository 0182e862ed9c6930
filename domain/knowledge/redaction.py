"""Knowledge chunks scanned before they are stored (ADR 0063).

Every chunk goes through the memory write scanner (`domain.scanning.scanner.scan`). A secret
is replaced, in the chunk's text and heading, by a marker naming the rule that found it
(`[REDACTED github-pat]`), keeping as many line breaks as the secret held, so the text around
it stays searchable and its line numbers stay right; the chunk counts what was redacted. The
redacted text is scanned again, and while a secret is still found (two rules over one token,
a fold that moved offsets) the spans are redacted again; should one survive `_ROUNDS` rounds,
the whole text becomes one marker. Nothing is dropped silently and no secret is stored.

A PEM private key can be longer than a chunk, and its middle lines match no rule: before a
file is cut, `redact_private_keys` replaces every block from a `-----BEGIN … PRIVATE KEY-----`
line through its END line (or the end of the file) by one marker line and blank lines, and
`redact_chunk` counts such a marker line as a redaction.

Other findings (prompt injection, exfiltration, persistence, role markers, invisible Unicode,
confusables) do not change the text: documents may well discuss such things, and the text is
already framed as untrusted where it is shown. The chunk keeps their categories as `flags`,
and every hit that carries flags says so.

Pure: text in, values out.
"""

from __future__ import annotations

import re
from typing import Final

import attrs
from pi_hermes_memory.domain.knowledge.chunks import Chunk
from pi_hermes_memory.domain.scanning.scanner import MAX_SCAN_CHARS, ScanCategory, scan
from pi_hermes_memory.domain.scanning.spans import secret_spans

__all__ = ["Redaction", "marker", "redact_chunk", "redact_private_keys", "redact_text"]

#: rounds of span redaction before a window with a surviving secret is replaced whole
_ROUNDS: Final = 4
#: the largest piece scanned at once (below the scanner's limit, cut at a line end)
_WINDOW: Final = MAX_SCAN_CHARS - 1024
_UNISOLATED: Final = "unisolated-secret"
_PRIVATE_KEY: Final = "private-key"
_PEM_BLOCK: Final = re.compile(
    r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    re.IGNORECASE | re.DOTALL,
)


def marker(rule_id: str) -> str:
    """What replaces a secret found by `rule_id`."""
    return f"[REDACTED {rule_id}]"


@attrs.frozen(kw_only=True)
class Redaction:
    text: str
    #: secrets replaced by a marker
    secrets: int
    #: the scanner's non-secret categories found, sorted
    flags: tuple[str, ...]


def redact_private_keys(text: str) -> str:
    """`text` with each PEM private-key block replaced by a marker line and as many line
    breaks as it held (see the module docstring)."""
    if "PRIVATE KEY-----" not in text.upper():
        return text

    def replace(m: re.Match[str]) -> str:
        return marker(_PRIVATE_KEY) + "\n" * m.group(0).count("\n")

    return _PEM_BLOCK.sub(replace, text)


def _windows(text: str) -> list[str]:
    pieces: list[str] = []
    while len(text) > _WINDOW:
        cut = text.rfind("\n", 0, _WINDOW) + 1 or _WINDOW
        pieces.append(text[:cut])
        text = text[cut:]
    pieces.append(text)
    return pieces


def _has_secret(categories: set[ScanCategory]) -> bool:
    return ScanCategory.SECRET in categories


def _redact_window(text: str) -> Redaction:
    result = scan(text)
    categories = {f.category for f in result.findings}
    count = sum(line.strip() == marker(_PRIVATE_KEY) for line in text.splitlines())
    rounds = 0
    if "PRIVATE KEY-----" in text.upper():  # a key's tail: no rule of `scan` sees it alone
        categories.add(ScanCategory.SECRET)
    while _has_secret(categories) and rounds < _ROUNDS:
        rounds += 1
        spans = secret_spans(text)
        if not spans:
            break
        for span in reversed(spans):
            held = text[span.start : span.end]
            text = (
                text[: span.start]
                + marker(span.rule_id)
                + "\n" * held.count("\n")
                + text[span.end :]
            )
        count += len(spans)
        result = scan(text)
        categories = {f.category for f in result.findings}
    if _has_secret(categories):
        text = marker(_UNISOLATED) + "\n" * text.count("\n")
        count += 1
        categories = {f.category for f in scan(text).findings}
    flags = sorted(
        c.value for c in categories if c not in (ScanCategory.SECRET, ScanCategory.OVERSIZE)
    )
    return Redaction(text=text, secrets=count, flags=tuple(flags))


def redact_text(text: str) -> Redaction:
    """`text` with every secret the scanner finds replaced (see the module docstring)."""
    parts = [_redact_window(w) for w in _windows(text)]
    if len(parts) == 1:
        return parts[0]
    return Redaction(
        text="".join(p.text for p in parts),
        secrets=sum(p.secrets for p in parts),
        flags=tuple(sorted({f for p in parts for f in p.flags})),
    )


def redact_chunk(chunk: Chunk) -> Chunk:
    """`chunk` with its text and heading redacted, counting the secrets and keeping the
    flags (see the module docstring)."""
    body = redact_text(chunk.text)
    heading = redact_text(chunk.heading) if chunk.heading else None
    secrets = body.secrets + (heading.secrets if heading else 0)
    flags = tuple(sorted({*body.flags, *(heading.flags if heading else ())}))
    if not secrets and not flags:
        return chunk
    return attrs.evolve(
        chunk,
        text=body.text,
        heading=heading.text if heading else chunk.heading,
        redacted=secrets,
        flags=flags,
    )
