"""Search keys for the FTS5 projection (ADR 0005, ADR 0012).

FTS5's built-in unicode61 tokenizer keeps a run of CJK characters as one token, so Chinese or
Japanese text without spaces would only match whole runs. Each row therefore also stores a
`grams` column: the code-point bigrams of every CJK run, space separated, which unicode61 indexes
as separate tokens, plus the Latin/digit pieces of words glued to CJK text. Only built-in
tokenizers are used, so the file opens in any SQLite. The keys come from
`pi_hermes_memory.domain.search.terms`, which also cuts queries, so both sides always agree.
"""

from __future__ import annotations

from pi_hermes_memory.domain.search.terms import bigrams, cjk_runs, index_grams

__all__ = ["bigrams", "cjk_runs", "grams"]


def grams(text: str) -> str:
    """The `grams` column value for `text`."""
    return " ".join(index_grams(text))
