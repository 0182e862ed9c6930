"""Knowledge chunks have their secrets redacted before they are stored (ADR 0063).

The memory write scanner's secret rules (`domain.scanning.spans.secret_spans`: every hit of
every rule of `scanner.SECRET_RULES`) run over each chunk's text and heading. Each secret is
replaced by a marker naming the rule that found it (`[REDACTED github-pat]`) plus as many line
breaks as it held, so the text around it stays searchable and line numbers stay right; the
chunk counts what was replaced. The result is searched again, and while a secret is still
found (a rule that matches across a replaced span, a fold that moved offsets) it is redacted
again; should one survive `_ROUNDS` rounds, the whole text becomes one marker. Nothing is
dropped silently and no secret the rules see is stored.

A PEM private key can be longer than a chunk, and its middle lines match no rule: before a
file is cut, `redact_private_keys` replaces every block from a `-----BEGIN … PRIVATE KEY-----`
line through its END line (or the end of the file) by one marker line and blank lines, and
`redact_chunk` counts such a marker line as a redaction.

Only secret rules run here: the injection rules cost five times as much per character and
would make indexing several times slower; the search flags what it returns instead
(`knowledge.service`).

Pure: text in, values out.
"""

from __future__ import annotations

import re
from typing import Final

import attrs
from pi_hermes_memory.domain.knowledge.chunks import Chunk
from pi_hermes_memory.domain.scanning.scanner import MAX_SCAN_CHARS
from pi_hermes_memory.domain.scanning.spans import secret_spans

__all__ = ["Redaction", "marker", "redact_chunk", "redact_private_keys", "redact_text"]

#: rounds of span redaction before a window with a surviving secret is replaced whole
_ROUNDS: Final = 4
#: the largest piece searched at once (below the scanner's limit, cut at a line end)
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


def _redact_window(text: str) -> Redaction:
    count = sum(line.strip() == marker(_PRIVATE_KEY) for line in text.splitlines())
    for _ in range(_ROUNDS):
        spans = secret_spans(text)
        if not spans:
            return Redaction(text=text, secrets=count)
        for span in reversed(spans):
            held = text[span.start : span.end]
            text = (
                text[: span.start]
                + marker(span.rule_id)
                + "\n" * held.count("\n")
                + text[span.end :]
            )
        count += len(spans)
    if secret_spans(text):
        return Redaction(text=marker(_UNISOLATED) + "\n" * text.count("\n"), secrets=count + 1)
    return Redaction(text=text, secrets=count)


def redact_text(text: str) -> Redaction:
    """`text` with every secret the rules find replaced (see the module docstring)."""
    parts = [_redact_window(w) for w in _windows(text)]
    if len(parts) == 1:
        return parts[0]
    return Redaction(text="".join(p.text for p in parts), secrets=sum(p.secrets for p in parts))


def redact_chunk(chunk: Chunk) -> Chunk:
    """`chunk` with its text and heading redacted, counting the secrets (see the module
    docstring)."""
    body = redact_text(chunk.text)
    heading = redact_text(chunk.heading) if chunk.heading else None
    secrets = body.secrets + (heading.secrets if heading else 0)
    if not secrets:
        return chunk
    return attrs.evolve(
        chunk,
        text=body.text,
        heading=heading.text if heading else chunk.heading,
        redacted=secrets,
    )
