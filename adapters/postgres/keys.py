"""The full-text keys of a row on PostgreSQL (ADR 0050).

PostgreSQL's own text search parser and dictionaries are never used: the keys are cut in
Python by the same code as the in-memory index (`row_keys`: case- and diacritic-folded words,
CJK bigrams, see `pi_hermes_memory.domain.search.terms`), stored as the lexemes of a `tsvector`
(`array_to_tsvector`, taken verbatim) and queried with a `tsquery` built from quoted lexemes,
so both sides always agree and nothing a user types becomes query syntax.
"""

from __future__ import annotations

from pi_hermes_memory.adapters.inmemory.search import row_keys as _memory_row_keys
from pi_hermes_memory.domain.search.terms import fold

__all__ = ["fold", "lexeme", "row_keys"]

#: PostgreSQL refuses a lexeme of 2 KiB or more; such a "word" is left out of the index
_MAX_LEXEME_BYTES = 2046


def row_keys(text: str) -> tuple[list[str], int]:
    """(the lexemes of `text`, sorted; how many keys the in-memory index counts for it)."""
    words, grams = _memory_row_keys(text)
    keys = sorted(k for k in words | grams if k and len(k.encode()) <= _MAX_LEXEME_BYTES)
    return keys, len(words) + len(grams)


#: stands for a query key longer than any indexed one: no row's keys hold a space
_NEVER = "' too long'"


def lexeme(key: str, *, prefix: bool = False) -> str:
    """One quoted tsquery operand (backslashes and quotes escaped), `:*` for a prefix; a key
    too long to be a lexeme matches nothing (no row holds it)."""
    if len(key.encode()) > _MAX_LEXEME_BYTES:
        return _NEVER
    quoted = "'" + key.replace("\\", "\\\\").replace("'", "''") + "'"
    return quoted + (":*" if prefix else "")
