"""In-memory session history: a `SessionIndex` and a `SessionSource`, for tests and embedding.

`InMemorySessionIndex` has the SQLite index's contract (`SessionIndexContract`): the same query
terms (`pi_hermes_memory.domain.search.terms`), the same tiers (sessions with a turn matching every
required term first) and filters, with a simpler score than bm25 (distinct matched terms plus
a small bonus for shorter turns). `InMemorySessionFiles` holds files as bytes with an identity
(device, inode, size, mtime) that appends, rewrites and deletions change like a file system.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime

import attrs
from pi_hermes_memory.adapters.inmemory.search import row_keys
from pi_hermes_memory.domain.history.transcripts import (
    FileProgress,
    MessageLine,
    SessionChunk,
    SessionFile,
    cwd_within,
)
from pi_hermes_memory.domain.search.terms import QueryTerms, fold, plan_terms
from pi_hermes_memory.errors import StaleProgress
from pi_hermes_memory.ports.history import (
    AnchorLine,
    AnchorQuery,
    IndexCounts,
    SessionHit,
    SessionInfo,
    SessionQuery,
    Turn,
)


@attrs.define
class _Row:
    turn: int
    line: int
    message: MessageLine


@attrs.define
class _Session:
    key: int
    session_id: str
    file: str | None
    headed: bool = False
    cwd: str | None = None
    project: str | None = None
    started: datetime | None = None
    rows: list[_Row] = attrs.field(factory=list)

    def info(self) -> SessionInfo:
        return SessionInfo(
            session_id=self.session_id,
            project=self.project,
            cwd=self.cwd,
            started=self.started,
            path=self.file,
        )


def _word_in(word: str, terms: QueryTerms, words: frozenset[str]) -> bool:
    key = terms.prefix(word)
    if key is None:
        return fold(word) in words
    return any(w.startswith(key) for w in words)  # a question's prefix word (ADR 0016)


def _gram_in(gram: str, grams: frozenset[str]) -> bool:
    if len(gram) == 1:
        return any(g.startswith(gram) for g in grams)
    return gram in grams


def _matched(text: str, terms: QueryTerms) -> set[str]:
    words, grams = row_keys(text)
    found = {w for w in (*terms.words, *terms.alt_words) if _word_in(w, terms, words)}
    found |= {g for g in (*terms.grams, *terms.alt_grams) if _gram_in(g, grams)}
    return found


def _score(matched: set[str], text: str) -> float:
    return len(matched) + 1.0 / (1.0 + len(text) / 100.0)


def term_matches(term: str, text: str) -> bool:
    """An anchors term matches when the text holds every word and CJK pair of it."""
    terms = plan_terms(term)
    if not (terms.words or terms.grams):
        return False
    words, grams = row_keys(text)
    return all(fold(w) in words for w in terms.words) and all(
        _gram_in(g, grams) for g in terms.grams
    )


class InMemorySessionIndex:
    """The `SessionIndex` port in plain Python structures."""

    def __init__(self) -> None:
        self._files: dict[str, FileProgress] = {}
        self._sessions: dict[int, _Session] = {}
        self._by_file: dict[str, int] = {}
        self._next = 0

    def _new_session(self, session_id: str, file: str | None) -> _Session:
        self._next += 1
        session = _Session(key=self._next, session_id=session_id, file=file)
        self._sessions[session.key] = session
        if file is not None:
            self._by_file[file] = session.key
        return session

    # -- progress -----------------------------------------------------------------------------

    def files(self) -> dict[str, FileProgress]:
        return {p: self._with_headed(f) for p, f in self._files.items()}

    def progress_of(self, path: str) -> FileProgress | None:
        found = self._files.get(path)
        return None if found is None else self._with_headed(found)

    def _with_headed(self, progress: FileProgress) -> FileProgress:
        key = self._by_file.get(progress.path)
        headed = key is not None and self._sessions[key].headed
        return attrs.evolve(progress, headed=headed)

    def apply(self, chunk: SessionChunk) -> None:
        path = chunk.progress.path
        if chunk.reset:
            self.forget([path])
        else:
            stored = self._files.get(path)
            if (stored.offset if stored is not None else 0) != chunk.start:
                raise StaleProgress(path)
        self._files[path] = chunk.progress
        key = self._by_file.get(path)
        session = self._sessions[key] if key is not None else None
        header = chunk.header
        if header is not None:
            if session is None:
                session = self._new_session(header.session_id, path)
            session.session_id, session.cwd = header.session_id, header.cwd
            session.project, session.headed = chunk.project, True
            session.started = header.started or session.started
        if not chunk.messages:
            return
        if session is None:
            session = self._new_session(chunk.fallback_id, path)
        if session.started is None:
            session.started = next((m.at for _, m in chunk.messages if m.at), None)
        turn = len(session.rows)
        for i, (line, message) in enumerate(chunk.messages, start=1):
            session.rows.append(_Row(turn=turn + i, line=line, message=message))

    def forget(self, paths: Sequence[str]) -> int:
        removed = 0
        for path in paths:
            if self._files.pop(path, None) is not None:
                removed += 1
            key = self._by_file.pop(path, None)
            if key is not None:
                del self._sessions[key]
        return removed

    def record(
        self, *, session_id: str, cwd: str | None, project: str | None, message: MessageLine
    ) -> int:
        session = next(
            (s for s in self._sessions.values() if s.file is None and s.session_id == session_id),
            None,
        )
        if session is None:
            session = self._new_session(session_id, None)
            session.cwd, session.project, session.started = cwd, project, message.at
        turn = len(session.rows) + 1
        session.rows.append(_Row(turn=turn, line=turn, message=message))
        return turn

    def unrecord(self, *, session_id: str, keep: int) -> int:
        session = next(
            (s for s in self._sessions.values() if s.file is None and s.session_id == session_id),
            None,
        )
        if session is None:
            return 0
        dropped = max(0, len(session.rows) - keep)
        del session.rows[keep:]
        if keep == 0:
            del self._sessions[session.key]
        return dropped

    def reproject(self, project_of: Callable[[str | None], str | None]) -> int:
        changed = 0
        for session in self._sessions.values():
            if session.file is not None and project_of(session.cwd) != session.project:
                session.project = project_of(session.cwd)
                changed += 1
        return changed

    def dump(self) -> list[tuple[object, ...]]:
        """Every session's turns, for tests: (path, session id, cwd, project, line, turn,
        message), in file/recording order."""
        return [
            (s.file, s.session_id, s.cwd, s.project, row.line, row.turn, row.message)
            for s in sorted(self._sessions.values(), key=lambda s: (s.file or "", s.key))
            for row in s.rows
        ]

    def counts(self) -> IndexCounts:
        return IndexCounts(
            files=len(self._files),
            sessions=len(self._sessions),
            messages=sum(len(s.rows) for s in self._sessions.values()),
        )

    # -- legacy search ------------------------------------------------------------------------

    def search(self, query: SessionQuery) -> list[SessionHit]:
        terms = plan_terms(query.text)
        if not terms or query.limit < 1:
            return []
        required = set(terms.required)
        ranked: list[tuple[bool, int, float, int, dict[int, float]]] = []
        for session in self._sessions.values():
            if query.project is not None and session.project != query.project:
                continue
            other = query.prefer is not None and session.project != query.prefer
            tier1: dict[int, float] = {}
            tier2: dict[int, float] = {}
            for row in session.rows:
                if query.role is not None and row.message.role != query.role:
                    continue
                matched = _matched(row.message.text, terms)
                if required and required <= matched:
                    tier1[row.turn] = _score(matched, row.message.text)
                elif matched - terms.weak:
                    tier2[row.turn] = _score(matched, row.message.text)
            tier, scores = (1, tier1) if tier1 else (2, tier2)
            if scores:
                ranked.append((other, tier, max(scores.values()), session.key, scores))
        ranked.sort(key=lambda r: (r[0], r[1], -r[2], -r[3]))
        hits = []
        for _, _, top, key, scores in ranked[: query.limit]:
            best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: query.per_session]
            hits.append(self._hit(self._sessions[key], top, dict(best), query.window))
        return hits

    def _hit(
        self, session: _Session, top: float, scores: dict[int, float], window: int
    ) -> SessionHit:
        wanted = {t + d for t in scores for d in range(-window, window + 1)}
        turns = tuple(
            Turn(
                line=row.line,
                turn=row.turn,
                role=row.message.role,
                text=row.message.text,
                tools=row.message.tools,
                at=row.message.at,
                match=row.turn in scores,
                score=scores.get(row.turn, 0.0),
            )
            for row in session.rows
            if row.turn in wanted
        )
        return SessionHit(session=session.info(), score=top, turns=turns)

    # -- anchors ------------------------------------------------------------------------------

    def anchor_lines(self, query: AnchorQuery) -> list[AnchorLine]:
        every = [t for t in query.all_terms if plan_terms(t)]
        anyone = [t for t in query.any_terms if plan_terms(t)]
        excluded = [t for t in query.exclude_terms if plan_terms(t)]
        if (query.all_terms or query.any_terms) and not (every or anyone):
            return []
        positive = bool(every or anyone)
        found: list[tuple[float, float, int, AnchorLine]] = []
        for session in self._sessions.values():
            if query.cwd is not None and not cwd_within(session.cwd, query.cwd):
                continue
            for row in session.rows:
                m = row.message
                if (query.start is not None or query.end is not None) and m.at is None:
                    continue
                if query.start is not None and m.at is not None and m.at < query.start:
                    continue
                if query.end is not None and m.at is not None and m.at > query.end:
                    continue
                if not all(term_matches(t, m.text) for t in every):
                    continue
                hit_any = tuple(t for t in anyone if term_matches(t, m.text))
                if anyone and not hit_any:
                    continue
                if any(term_matches(t, m.text) for t in excluded):
                    continue
                score = (
                    _score(_matched(m.text, plan_terms(" ".join([*every, *hit_any]))), m.text)
                    if positive
                    else 0.0
                )
                line = AnchorLine(
                    session=session.info(),
                    line=row.line,
                    turn=row.turn,
                    at=m.at,
                    score=score,
                    matched_any=hit_any,
                )
                when = m.at.timestamp() if m.at is not None else float("-inf")
                found.append((score, when, session.key * 1_000_000 + row.turn, line))
        found.sort(key=lambda f: (-f[0], -f[1], -f[2]))
        return [line for *_, line in found[: query.limit]]


# --- the source -------------------------------------------------------------------------------


@attrs.define
class _File:
    data: bytearray
    inode: int
    mtime_ns: int


class InMemorySessionFiles:
    """A `SessionSource` over files held in memory; paths are plain strings."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self._inode = 0
        self._tick = 1_000_000_000
        self.reads = 0  # read calls, so tests can see that unchanged files are not read

    def _now(self) -> int:
        self._tick += 1_000
        return self._tick

    def write(self, path: str, data: bytes) -> None:
        """Create or replace `path` as a new file (a new inode, like an atomic rewrite)."""
        self._inode += 1
        self._files[path] = _File(bytearray(data), self._inode, self._now())

    def append(self, path: str, data: bytes) -> None:
        if path not in self._files:
            self.write(path, b"")
        file = self._files[path]
        file.data += data
        file.mtime_ns = self._now()

    def overwrite(self, path: str, data: bytes) -> None:
        """Rewrite `path` in place (same inode)."""
        file = self._files[path]
        file.data[:] = data
        file.mtime_ns = self._now()

    def touch(self, path: str) -> None:
        self._files[path].mtime_ns = self._now()

    def delete(self, path: str) -> None:
        del self._files[path]

    def _entry(self, path: str) -> SessionFile:
        file = self._files[path]
        return SessionFile(
            path=path, size=len(file.data), mtime_ns=file.mtime_ns, device=1, inode=file.inode
        )

    def files(self) -> Iterator[SessionFile]:
        for path in sorted(self._files):
            yield self._entry(path)

    def stat(self, path: str) -> SessionFile | None:
        return self._entry(path) if path in self._files else None

    def read(self, path: str, offset: int, length: int) -> bytes:
        self.reads += 1
        if path not in self._files:
            raise FileNotFoundError(2, os.strerror(2), path)
        return bytes(self._files[path].data[offset : offset + max(0, length)])
