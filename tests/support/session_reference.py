"""The session index as it ranked before ADR 0041: bm25 over every matching turn.

`ExhaustiveSessionIndex` is `SqliteSessionIndex` with the ranking method it had before
(verbatim, ADR 0021): the reference the tests compare the block ranking against (identical
results when a tier matches at most `exhaustive` turns) and the bench's "before" figures.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import apsw
from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex

_SLICE = 256


class ExhaustiveSessionIndex(SqliteSessionIndex):
    """`SqliteSessionIndex` ranking every match by bm25 (the code before ADR 0041)."""

    def _ranked(
        self,
        c: apsw.Connection,
        expression: str,
        where: Sequence[str],
        params: Sequence[Any],
        enough: Callable[[list[tuple[Any, ...]]], bool],
        first: int,
        *,
        enough_recent: Callable[[list[tuple[Any, ...]]], bool] | None = None,  # (ADR 0041)
    ) -> list[tuple[Any, ...]]:
        """The turns matching `expression`, best bm25 first (ties: lower rowid first), that
        pass `where` (over `m`, the turn, and `s`, its session), as (rowid, score, session,
        turn, line, at, project): at least until `enough(rows)` holds, else all of them.

        Without filters, FTS5 ranks its matches on its own (`ORDER BY rank LIMIT k`, about a
        microsecond per match) and only the best `first` are looked up. With filters, or when
        those were not `enough(rows)`, FTS5 ranks every match without touching the turn rows,
        and the turns are looked up (and filtered) in that order, in growing slices, until
        `enough(rows)`: joining every match to its turn before ranking costs 3-5 µs per match
        (the turn rows do not stay in cache), looking up a slice only for the matches read."""
        if not where:
            top = c.execute(
                "SELECT rowid, -rank FROM session_messages_fts "
                "WHERE session_messages_fts MATCH ? ORDER BY rank LIMIT ?",
                (expression, first),
            ).fetchall()
            rows = self._eligible(c, top, where, params)
            if len(top) < first or enough(rows):
                return rows
        ranked = c.execute(
            "SELECT rowid, rank FROM session_messages_fts "
            "WHERE session_messages_fts MATCH ? ORDER BY rank, rowid",
            (expression,),
        )
        rows = []
        size = max(first, _SLICE)
        try:
            while True:
                part = [(rowid, -rank) for rowid, rank in itertools.islice(ranked, size)]
                rows += self._eligible(c, part, where, params)
                if len(part) < size or enough(rows):
                    return rows
                size *= 2
        finally:
            ranked.close()
