"""The values the session history ports speak (`SessionIndex`): queries, hits, anchor lines
and counts. They live with the ports, not with the session search service (ADR 0056)."""

from __future__ import annotations

from datetime import datetime

import attrs

__all__ = [
    "DEFAULT_SESSIONS",
    "MATCHES_PER_SESSION",
    "WINDOW_TURNS",
    "AnchorLine",
    "AnchorQuery",
    "IndexCounts",
    "SessionHit",
    "SessionInfo",
    "SessionQuery",
    "Turn",
]


#: Sessions a search returns unless asked otherwise.
DEFAULT_SESSIONS = 5
#: Best matching turns shown per session, and neighbouring turns on each side of each.
MATCHES_PER_SESSION = 3
WINDOW_TURNS = 1


@attrs.frozen(kw_only=True)
class SessionInfo:
    """A session: its id (the header's, or derived from the file name), project, working
    directory, start time and JSONL file (None for sessions recorded through the API)."""

    session_id: str
    project: str | None
    cwd: str | None
    started: datetime | None
    path: str | None


@attrs.frozen(kw_only=True)
class Turn:
    """One indexed turn: its 1-based line in the file (its ordinal for recorded sessions),
    its ordinal among the session's indexed turns, and whether it matched (with its score)."""

    line: int
    turn: int
    role: str
    text: str
    tools: tuple[str, ...] = ()
    at: datetime | None = None
    match: bool = False
    score: float = 0.0


@attrs.frozen(kw_only=True)
class SessionQuery:
    """What `SessionIndex.search` answers: the best `limit` sessions with turns matching
    `text`, restricted to `project` (if set) and to turns of `role` (if set); sessions of the
    `prefer` project (if set) before all others."""

    text: str
    project: str | None = None
    prefer: str | None = None
    role: str | None = None
    limit: int = DEFAULT_SESSIONS
    per_session: int = MATCHES_PER_SESSION
    window: int = WINDOW_TURNS


@attrs.frozen(kw_only=True)
class SessionHit:
    """A session and its `turns`: its best matching turns (`match`, at most `per_session`)
    and up to `window` turns either side of each, in turn order. `score` is its best turn's
    (> 0, higher is better; comparable only within one search)."""

    session: SessionInfo
    score: float
    turns: tuple[Turn, ...]

    @property
    def matches(self) -> tuple[Turn, ...]:
        return tuple(sorted((t for t in self.turns if t.match), key=lambda t: -t.score))


@attrs.frozen(kw_only=True)
class AnchorQuery:
    """What `SessionIndex.anchor_lines` answers: turns in [start, end] (inclusive; a bound
    excludes turns without a time), of sessions whose cwd is `cwd` or below it, matching every
    `all_terms` term, at least one `any_terms` term (when any) and no `exclude_terms` term.
    A term matches when the turn holds all of its words (CJK: its character pairs). Best
    `limit` turns by score; without all/any terms, the newest `limit` turns (score 0)."""

    start: datetime | None = None
    end: datetime | None = None
    cwd: str | None = None
    all_terms: tuple[str, ...] = ()
    any_terms: tuple[str, ...] = ()
    exclude_terms: tuple[str, ...] = ()
    limit: int = 400


@attrs.frozen(kw_only=True)
class AnchorLine:
    """One matching turn; `matched_any`: the `any_terms` it matches."""

    session: SessionInfo
    line: int
    turn: int
    at: datetime | None
    score: float
    matched_any: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class IndexCounts:
    files: int
    sessions: int
    messages: int
