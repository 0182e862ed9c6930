"""Search keys for the FTS5 projection (ADR 0005, ADR 0012), and its upkeep (ADR 0102).

FTS5's built-in unicode61 tokenizer keeps a run of CJK characters as one token, so Chinese or
Japanese text without spaces would only match whole runs. Each row therefore also stores a
`grams` column: the code-point bigrams of every CJK run, space separated, which unicode61 indexes
as separate tokens, plus the Latin/digit pieces of words glued to CJK text. Only built-in
tokenizers are used, so the file opens in any SQLite. The keys come from
`pi_hermes_memory.domain.search.terms`, which also cuts queries, so both sides always agree.

Keeping `memories_fts` in few segments (ADR 0102): a bounded merge after each write.

FTS5 writes one segment per write transaction and its automerge (4 segments of one level)
lets 14–18 of them pile up after 1,000–5,000 single writes; a keyword lookup visits every
segment. After a transaction that wrote `memories` rows has committed, `merge_step` runs one
FTS5 `'merge'` of at most `MERGE_PAGES` pages with `usermerge` 2: it merges any level that
holds two segments, so the index keeps about one segment per level (2–3 at 1k, 5–6 at 5k
and on a 100k store), and does nothing else.

It runs in its own transaction, after the acknowledging COMMIT: a crash during it rolls it
back and loses nothing (the index is derived, and the merge changes how it is stored, not
what it holds). Its COMMIT is not synced (synchronous=NORMAL, like `bookkeeping`): a power
loss may lose the merge, never a row. It never waits for the write lock: when another
connection holds it, the step is skipped and the next write merges.
"""

from __future__ import annotations

import apsw
from pi_hermes_memory.adapters.sqlite.connection import BUSY_TIMEOUT_MS, busy_timeout
from pi_hermes_memory.domain.search.terms import bigrams, cjk_runs, index_grams

__all__ = ["MERGE_PAGES", "USERMERGE", "bigrams", "cjk_runs", "grams", "merge_step"]


def grams(text: str) -> str:
    """The `grams` column value for `text`."""
    return " ".join(index_grams(text))


#: pages one step may write at most (FTS5 pages are 4 KB by default)
MERGE_PAGES = 16
#: segments of one level that a `'merge'` merges (FTS5's default is 4, as for automerge)
USERMERGE = 2

_USERMERGE_SQL = "SELECT v FROM memories_fts_config WHERE k = 'usermerge'"


def merge_step(conn: apsw.Connection) -> bool:
    """One bounded merge of `memories_fts` in its own transaction; False when it was skipped
    (the write lock was taken, or SQLite refused). Outside any transaction only."""
    if conn.in_transaction:
        return False
    conn.execute("PRAGMA synchronous=NORMAL")
    busy_timeout(conn, 0)
    try:
        with conn:
            if conn.execute(_USERMERGE_SQL).fetchone() != (USERMERGE,):
                conn.execute(
                    "INSERT INTO memories_fts (memories_fts, rank) VALUES ('usermerge', ?)",
                    (USERMERGE,),
                )
            conn.execute(
                "INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', ?)",
                (MERGE_PAGES,),
            )
    except apsw.Error:
        return False
    finally:
        busy_timeout(conn, BUSY_TIMEOUT_MS)
        conn.execute("PRAGMA synchronous=FULL")
    return True
