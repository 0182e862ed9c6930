"""The TypeScript original's memory_search query shape, reproduced in SQL on the bench's store.

The TypeScript extension (pi-hermes-memory 0.9.x, `src/store/sqlite-memory-store.ts`
`searchMemories` and `src/store/fts-query.ts`) is not installed here. What it runs per search
is reproduced on the same database, so both are timed in one run on the same rows:

- a `trigram` FTS5 index over the memory text (external content, built once by `install`);
- the query cut on white space, its English stop words and connector words dropped, each
  term double-quoted, joined with spaces (FTS5 implicit AND);
- ONE query: `SELECT … FROM memories m WHERE m.rowid IN (SELECT rowid FROM <trigram fts>
  WHERE … MATCH ?) AND <scope> ORDER BY m.last_referenced DESC LIMIT ?` — no relevance
  ranking, newest first;
- only when that finds nothing and the query has more than one term, the same query once
  more with the terms joined by OR.

The scope predicate is this library's (`scope_sql`: the same rows are visible to both). The
reference returns SQLite rows and builds no objects, where `SqliteSearchIndex.search` builds
`SearchHit` values: the comparison favours the reference.
"""

from __future__ import annotations

import re
from typing import Any, Final

#: The trigram index, created in the bench's throwaway store only.
TABLE: Final = "ts_memory_fts"

# fts-query.ts STOP_WORDS and NATURAL_LANGUAGE_CONNECTORS
_STOP_WORDS_TEXT: Final = """
    a an the is are was were be been being have has had do does did will would could should
    may might shall can need dare ought used i me my mine we our ours you your yours he him his
    she her hers it its they them their theirs that this these those what which who whom whose
    when where why how all each every both few more most other some such no nor not only own
    same so than too very s t just don now about above after again against am at before behind
    below between by during from further into like off over per through throughout till to
    under until up upon via with within without as if or but and out of for in on any get got
    here there near"""
_STOP_WORDS: Final = frozenset(_STOP_WORDS_TEXT.split())
_TOKEN: Final = re.compile(r'"([^"]*)"|(\S+)')
_COLUMNS: Final = (
    "m.id, m.target, m.project, m.category, m.text, m.created, m.last_referenced, "
    "m.superseded_by, m.superseded_at, m.namespace"
)


def install(conn: Any) -> None:
    """Create and fill the trigram index over `memories.text` (idempotent)."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5("
        "text, content='memories', content_rowid='rowid', tokenize='trigram')"
    )
    conn.execute(f"INSERT INTO {TABLE} ({TABLE}) VALUES ('rebuild')")


def terms(query: str) -> list[str]:
    """The query's terms as `collectNaturalLanguageTerms` keeps them."""
    kept = []
    for phrase, word in _TOKEN.findall(query.strip()):
        if not phrase and word.lower() in _STOP_WORDS:
            continue
        value = phrase or word
        if value:
            kept.append('"' + value.replace('"', '""') + '"')
    return kept


def search(conn: Any, query: str, where: str, params: list[Any], limit: int) -> list[Any]:
    """One search as the TypeScript original runs it (see the module docstring)."""
    quoted = terms(query)
    if not quoted:
        return []
    sql = (
        f"SELECT {_COLUMNS} FROM memories AS m WHERE m.rowid IN "
        f"(SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?) AND {where} "
        "ORDER BY m.last_referenced DESC LIMIT ?"
    )
    rows = conn.execute(sql, (" ".join(quoted), *params, limit)).fetchall()
    if not rows and len(quoted) > 1:
        rows = conn.execute(sql, (" OR ".join(quoted), *params, limit)).fetchall()
    return rows
