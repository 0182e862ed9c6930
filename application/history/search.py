"""session_search: full-text search over indexed session history (ADR 0020, ADR 0021).

Two variants, chosen by `sessionSearch.variant`:

- `legacy`: keywords (`query`), optionally one `project` and one `role`; results are grouped
  by session (id, project, cwd, start), each with its best matching turns and the turns next
  to them. Without `project`, the current project's sessions come first, then the others.
- `anchors`: one Markdown request (`pi_hermes_memory.domain.history.request`) with a time window,
  a cwd, and `all` / `any` / `exclude` terms; the answer is JSONL source ranges (path, first
  and last line, session, cwd, times, score, and which terms matched), so the agent can read
  exactly those lines of the session file. Served from the index, never by rescanning files.

The `SessionIndex` port (SQLite FTS5, or in memory) answers both; this module turns its rows
into results. Searching writes nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs
from pi_hermes_memory.domain.echo import shown, withheld
from pi_hermes_memory.domain.search.terms import plan_terms
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.log import library_logger
from pi_hermes_memory.ports.history import (
    DEFAULT_SESSIONS,
    MATCHES_PER_SESSION,
    WINDOW_TURNS,
    AnchorLine,
    AnchorQuery,
    IndexCounts,
    SessionHit,
    SessionInfo,
    SessionQuery,
    Turn,
)

if TYPE_CHECKING:
    from pi_hermes_memory.domain.history.request import AnchorRequest
    from pi_hermes_memory.ports.store import SessionIndex

MAX_SESSIONS = 20
#: `project` value meaning "every project, none first".
ALL_PROJECTS = "*"
ROLES = ("user", "assistant", "system")
#: Characters of a matching turn / a neighbouring turn shown in the message.
MATCH_CHARS = 400
CONTEXT_CHARS = 200
#: Anchors: matching lines fetched per requested range (adjacent lines merge into one range).
LINES_PER_RANGE = 4
MAX_ANCHOR_LINES = 2_000


# --- values -----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AnchorRange:
    """Adjacent matching turns of one session: lines start_line..end_line of `path`."""

    path: str | None
    start_line: int
    end_line: int
    session_id: str
    cwd: str | None
    start_time: datetime | None
    end_time: datetime | None
    score: float
    reason: str


@attrs.frozen(kw_only=True)
class SessionSearchResult:
    """`status`: ok, no_results or invalid_arguments."""

    success: bool
    status: Status
    message: str
    hits: tuple[SessionHit, ...] = ()


@attrs.frozen(kw_only=True)
class AnchorResult:
    success: bool
    status: Status
    message: str
    ranges: tuple[AnchorRange, ...] = ()


# --- the service ------------------------------------------------------------------------------


def check_session_options(project: str | None, role: str | None, limit: int) -> None:
    """Raise ValueError for options the typed API does not accept."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SESSIONS:
        raise InvalidArgument(
            f"limit must be an integer from 1 to {MAX_SESSIONS}; got {shown(limit)}"
        )
    if role is not None and role not in ROLES:
        raise InvalidArgument(f"role must be one of {', '.join(ROLES)}; got {shown(role)}")
    if project is not None and (not isinstance(project, str) or not project.strip()):
        raise InvalidArgument("project must be a non-empty project name (or '*' for every project)")


class SessionSearchService:
    """Both variants over one `SessionIndex`; `current_project` comes first in legacy."""

    def __init__(
        self, *, index: SessionIndex, current_project: str | None, logger: Any = None
    ) -> None:
        self._index = index
        self._current = current_project
        self._log = logger or library_logger()

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        role: str | None = None,
        limit: int = DEFAULT_SESSIONS,
    ) -> SessionSearchResult:
        if not isinstance(query, str):
            raise InvalidArgument(f"query must be a string; got {type(query).__name__}")
        check_session_options(project, role, limit)
        if not plan_terms(query):
            return SessionSearchResult(
                success=False,
                status=Status.INVALID_ARGUMENTS,
                message="query has nothing to search for: it must contain at least one word "
                "(letters or digits); punctuation, symbols and emoji are ignored.",
            )
        base = SessionQuery(text=query, role=role, limit=limit)
        wanted = None if project is None else project.strip()
        if wanted is not None and wanted != ALL_PROJECTS:
            hits = self._index.search(attrs.evolve(base, project=wanted))
        elif wanted is None and self._current is not None:
            hits = self._index.search(attrs.evolve(base, prefer=self._current))
        else:
            hits = self._index.search(base)
        return self._legacy_result(query, wanted, tuple(hits[:limit]))

    def anchors(self, request: AnchorRequest) -> AnchorResult:
        """The `anchors` variant for a parsed request (see `run_anchor_request` for text)."""
        for label, terms in (
            ("all", request.all_terms),
            ("any", request.any_terms),
            ("exclude", request.exclude_terms),
        ):
            for term in terms:
                if not plan_terms(term):
                    return AnchorResult(
                        success=False,
                        status=Status.INVALID_ARGUMENTS,
                        message=f"{label}: term {shown(term)} has nothing to search for: a term "
                        "needs at least one word (letters or digits).",
                    )
        query = AnchorQuery(
            start=request.start,
            end=request.end,
            cwd=request.cwd,
            all_terms=tuple(request.all_terms),
            any_terms=tuple(request.any_terms),
            exclude_terms=tuple(request.exclude_terms),
            limit=min(MAX_ANCHOR_LINES, request.limit * LINES_PER_RANGE),
        )
        lines = self._index.anchor_lines(query)
        ranges = group_ranges(lines, query, request.limit)
        if not ranges:
            return AnchorResult(
                success=True,
                status=Status.NO_RESULTS,
                message=self._empty("No session lines match"),
            )
        header = f"{len(ranges)} source range{'s' if len(ranges) != 1 else ''} (best first):"
        body = [anchor_jsonl(r) for r in ranges]
        return AnchorResult(
            success=True, status=Status.OK, message="\n".join([header, *body]), ranges=tuple(ranges)
        )

    def _empty(self, first: str) -> str:
        counts = self._index.counts()
        if counts.messages == 0:
            return f"{first}: the session index is empty. Run `index-sessions` first."
        return f"{first} ({counts.messages} turns of {counts.sessions} sessions indexed)."

    def _legacy_result(
        self, query: str, project: str | None, hits: tuple[SessionHit, ...]
    ) -> SessionSearchResult:
        quoted = withheld(query) or f'"{_clip(query, 80)}"'  # a secret is not echoed
        if not hits:
            return SessionSearchResult(
                success=True,
                status=Status.NO_RESULTS,
                message=self._empty(f"No sessions match {quoted}"),
            )
        if project not in (None, ALL_PROJECTS):
            order = f"project {withheld(project) or project}"
        elif project is None and self._current is not None:
            order = f"project {self._current} first"
        else:
            order = "all projects"
        noun = "session matches" if len(hits) == 1 else "sessions match"
        lines = [f"{len(hits)} {noun} {quoted} ({order}, best first):"]
        for rank, hit in enumerate(hits, start=1):
            lines.extend(_hit_lines(rank, hit))
        return SessionSearchResult(
            success=True, status=Status.OK, message="\n".join(lines), hits=tuple(hits)
        )


# --- anchors: ranges ----------------------------------------------------------------------------


def group_ranges(
    lines: Sequence[AnchorLine], query: AnchorQuery, limit: int | None = None
) -> list[AnchorRange]:
    """Merge matching turns that follow each other in one session (consecutive turn ordinals;
    tool results and other unindexed lines may lie between them) into ranges, best first:
    score = the sum of the turns' scores; ties: the newest first. `limit`: only the best."""
    ordered = sorted(lines, key=lambda x: (x.session.path or "", x.session.session_id, x.turn))
    groups: list[list[AnchorLine]] = []
    for line in ordered:
        last = groups[-1][-1] if groups else None
        if last is not None and last.session == line.session and line.turn == last.turn + 1:
            groups[-1].append(line)
        else:
            groups.append([line])

    def rank(group: list[AnchorLine]) -> tuple[float, float, str, int]:
        times = [x.at.timestamp() for x in group if x.at is not None]
        newest = max(times) if times else -math.inf
        return (
            -_rounded(sum(x.score for x in group)),
            -newest,
            group[0].session.path or "",
            group[0].line,
        )

    groups.sort(key=rank)
    return [_range(group, query) for group in groups[:limit]]


def _range(group: Sequence[AnchorLine], query: AnchorQuery) -> AnchorRange:
    first, last = group[0], group[-1]
    times = [x.at for x in group if x.at is not None]
    matched_any = [t for t in query.any_terms if any(t in x.matched_any for x in group)]
    return AnchorRange(
        path=first.session.path,
        start_line=first.line,
        end_line=last.line,
        session_id=first.session.session_id,
        cwd=first.session.cwd,
        start_time=min(times) if times else None,
        end_time=max(times) if times else None,
        score=_rounded(sum(x.score for x in group)),
        reason=_reason(query, matched_any, len(group)),
    )


def _reason(query: AnchorQuery, matched_any: Sequence[str], turns: int) -> str:
    parts = []
    if query.all_terms:
        parts.append("all of " + ", ".join(query.all_terms))
    if matched_any:
        parts.append("any: " + ", ".join(matched_any))
    if query.exclude_terms:
        parts.append("none of " + ", ".join(query.exclude_terms))
    if not (query.all_terms or query.any_terms):
        window = []
        if query.start or query.end:
            window.append("time window")
        if query.cwd:
            window.append("cwd")
        parts.insert(0, "in the requested " + " and ".join(window or ["index"]))
    noun = "turn" if turns == 1 else "turns"
    return f"{turns} matching {noun}: " + "; ".join(parts)


# --- presentation -----------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _rounded(score: float) -> float:
    return float(f"{score:.4g}") if math.isfinite(score) else 0.0


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def _hit_lines(rank: int, hit: SessionHit) -> list[str]:
    s = hit.session
    day = s.started.date().isoformat() if s.started else "unknown date"
    where = s.project or "(no project)"
    cwd = f" {s.cwd}" if s.cwd else ""
    lines = [f"[{rank}] {day} {where}{cwd} session {s.session_id}"]
    for turn in hit.turns:
        mark = ">" if turn.match else " "
        text = _clip(turn.text, MATCH_CHARS if turn.match else CONTEXT_CHARS)
        tools = f" [tools: {', '.join(turn.tools)}]" if turn.tools else ""
        lines.append(f"  {mark} {turn.role} (line {turn.line}){tools}: {text}".rstrip())
    return lines


def turn_json(turn: Turn) -> dict[str, Any]:
    out: dict[str, Any] = {
        "line": turn.line,
        "role": turn.role,
        "time": _iso(turn.at),
        "text": turn.text,
        "match": turn.match,
    }
    if turn.tools:
        out["tools"] = list(turn.tools)
    if turn.match:
        out["score"] = _rounded(turn.score)
    return out


def hit_json(hit: SessionHit) -> dict[str, Any]:
    s = hit.session
    return {
        "session_id": s.session_id,
        "project": s.project,
        "cwd": s.cwd,
        "started": _iso(s.started),
        "path": s.path,
        "score": _rounded(hit.score),
        "turns": [turn_json(t) for t in hit.turns],
    }


def anchor_json(r: AnchorRange) -> dict[str, Any]:
    return {
        "path": r.path,
        "startLine": r.start_line,
        "endLine": r.end_line,
        "sessionId": r.session_id,
        "cwd": r.cwd,
        "startTime": _iso(r.start_time),
        "endTime": _iso(r.end_time),
        "score": r.score,
        "reason": r.reason,
    }


def anchor_jsonl(r: AnchorRange) -> str:
    return json.dumps(anchor_json(r), ensure_ascii=False, separators=(",", ":"))


__all__ = [
    "ALL_PROJECTS",
    "DEFAULT_SESSIONS",
    "MATCHES_PER_SESSION",
    "MAX_SESSIONS",
    "ROLES",
    "WINDOW_TURNS",
    "AnchorLine",
    "AnchorQuery",
    "AnchorRange",
    "AnchorResult",
    "IndexCounts",
    "SessionHit",
    "SessionInfo",
    "SessionQuery",
    "SessionSearchResult",
    "SessionSearchService",
    "Turn",
    "anchor_json",
    "group_ranges",
    "hit_json",
]
