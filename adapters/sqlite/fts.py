"""Search keys for the FTS5 projection (ADR 0005).

FTS5's built-in unicode61 tokenizer keeps a run of CJK characters as one token, so Chinese or
Japanese text without spaces would only match whole runs. Each row therefore also stores a
`grams` column: the code-point bigrams of every CJK run, space separated, which unicode61 indexes
as separate tokens. Only built-in tokenizers are used, so the file opens in any SQLite.
"""

from __future__ import annotations

import re

from pi_hermes_memory.domain.similarity import is_cjk

_WORD = re.compile(r"\w+")


def cjk_runs(text: str) -> list[str]:
    runs: list[str] = []
    current: list[str] = []
    for ch in text:
        if is_cjk(ch):
            current.append(ch)
        elif current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return runs


def bigrams(run: str) -> list[str]:
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def grams(text: str) -> str:
    """The `grams` column value for `text`."""
    return " ".join(g for run in cjk_runs(text) for g in bigrams(run))
