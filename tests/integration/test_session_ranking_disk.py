"""session_search's ranking on the real index (ADR 0041).

- Under the threshold (every rare word and CJK term of the bench) and with any filter, the
  block ranking gives exactly the results of the exhaustive ranking it replaced
  (`ExhaustiveSessionIndex`, the code before ADR 0041), for both variants.
- Above it, the ranked turns are exactly the documented rule applied to the exhaustive bm25
  scores of every match: blocks of `block` matches in index order, newest first, bm25 within.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite.sessions import SqliteSessionIndex, anchor_match
from pi_hermes_memory.domain.history.transcripts import MessageLine
from pi_hermes_memory.errors import InvalidArgument
from pi_hermes_memory.ports.history import AnchorQuery, SessionQuery

from tests.support.session_reference import ExhaustiveSessionIndex

T0 = datetime(2026, 7, 1, 9, tzinfo=UTC)
WORDS = ("error", "test", "flock", "sqlite", "deploy", "数据库", "锁超时", "cache")
FILLER = ("the", "run", "now", "ok", "日志", "we", "see")
PROJECTS = ("api", "web", "infra")
SESSIONS = [(f"s{i}", PROJECTS[i % 3]) for i in range(6)]

turn_texts = st.lists(
    st.tuples(
        st.integers(0, len(SESSIONS) - 1),
        st.sampled_from(("user", "assistant")),
        st.lists(st.sampled_from(WORDS + FILLER), min_size=1, max_size=12),
    ),
    min_size=10,
    max_size=80,
)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def build(root: Path, turns: Sequence[tuple[int, str, list[str]]]) -> Path:
    """A fresh index of `turns` (session number, role, words), recorded in order."""
    n = sum(1 for _ in root.iterdir())
    path = root / f"s{n}.db"
    index = SqliteSessionIndex(path)
    for minute, (session, role, words) in enumerate(turns):
        sid, project = SESSIONS[session]
        text = " ".join(words)
        at = T0 + timedelta(minutes=minute)
        index.record(
            session_id=sid,
            cwd=f"/w/{project}",
            project=project,
            message=MessageLine.create(role=role, text=text, at=at),
        )
    index.close()
    return path


def exhaustive_scores(path: Path, expression: str) -> list[tuple[int, float]]:
    """(rowid, score) of every turn matching `expression`, score = -bm25 over the table."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            (int(rowid), -float(score))
            for rowid, score in conn.execute(
                "SELECT rowid, bm25(session_messages_fts) FROM session_messages_fts "
                "WHERE session_messages_fts MATCH ?",
                (expression,),
            )
        ]
    finally:
        conn.close()


def rule(matches: Sequence[tuple[int, float]], exhaustive: int, block: int) -> list[int]:
    """ADR 0041's order of the matching turns, from their exhaustive scores."""
    if len(matches) <= exhaustive:
        return [r for r, _ in sorted(matches, key=lambda m: (-m[1], m[0]))]
    newest = sorted(matches, key=lambda m: -m[0])
    order: list[int] = []
    for start in range(0, len(newest), block):
        part = newest[start : start + block]
        order += [r for r, _ in sorted(part, key=lambda m: (-m[1], m[0]))]
    return order


def turn_keys(path: Path) -> dict[int, tuple[str, int]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            int(rowid): (sid, int(turn))
            for rowid, sid, turn in conn.execute(
                "SELECT m.rowid, s.session_id, m.turn FROM session_messages AS m "
                "JOIN sessions AS s ON s.id = m.session"
            )
        }
    finally:
        conn.close()


@settings(max_examples=25, deadline=None)
@given(
    turns=turn_texts,
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
    project=st.sampled_from((None, *PROJECTS)),
    prefer=st.sampled_from((None, *PROJECTS)),
    role=st.sampled_from((None, "user")),
    limit=st.integers(1, 6),
)
def test_legacy_results_equal_the_exhaustive_ranking_under_the_threshold(
    workdir: Path,
    turns: list[tuple[int, str, list[str]]],
    words: list[str],
    project: str | None,
    prefer: str | None,
    role: str | None,
    limit: int,
) -> None:
    path = build(workdir, turns)
    new, old = SqliteSessionIndex(path), ExhaustiveSessionIndex(path)
    try:
        query = SessionQuery(
            text=" ".join(words), project=project, prefer=prefer, role=role, limit=limit
        )
        assert new.search(query) == old.search(query)
    finally:
        new.close()
        old.close()


@settings(max_examples=25, deadline=None)
@given(
    turns=turn_texts,
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
    filters=st.sampled_from(
        [{"project": p} for p in PROJECTS] + [{"role": "user"}, {"project": "api", "role": "user"}]
    ),
    prefer=st.sampled_from((None, *PROJECTS)),
    limit=st.integers(1, 6),
    block=st.integers(1, 4),
)
def test_a_filter_keeps_the_exhaustive_ranking_above_the_threshold(
    workdir: Path,
    turns: list[tuple[int, str, list[str]]],
    words: list[str],
    filters: dict[str, str],
    prefer: str | None,
    limit: int,
    block: int,
) -> None:
    path = build(workdir, turns)
    new = SqliteSessionIndex(path, exhaustive=1, block=block)
    old = ExhaustiveSessionIndex(path)
    try:
        query = SessionQuery(text=" ".join(words), prefer=prefer, limit=limit, **filters)
        assert new.search(query) == old.search(query)
        anchors = AnchorQuery(all_terms=tuple(words), cwd="/w/api", limit=limit * 3)
        assert new.anchor_lines(anchors) == old.anchor_lines(anchors)
    finally:
        new.close()
        old.close()


@settings(max_examples=25, deadline=None)
@given(
    turns=turn_texts,
    every=st.lists(st.sampled_from(WORDS), max_size=2),
    anyone=st.lists(st.sampled_from(WORDS), max_size=2),
    exclude=st.lists(st.sampled_from(WORDS), max_size=1),
    cwd=st.sampled_from((None, "/w/api", "/w")),
    limit=st.integers(1, 30),
)
def test_anchor_lines_equal_the_exhaustive_ranking_under_the_threshold(
    workdir: Path,
    turns: list[tuple[int, str, list[str]]],
    every: list[str],
    anyone: list[str],
    exclude: list[str],
    cwd: str | None,
    limit: int,
) -> None:
    path = build(workdir, turns)
    new, old = SqliteSessionIndex(path), ExhaustiveSessionIndex(path)
    try:
        query = AnchorQuery(
            all_terms=tuple(every),
            any_terms=tuple(anyone),
            exclude_terms=tuple(exclude),
            cwd=cwd,
            limit=limit,
        )
        assert new.anchor_lines(query) == old.anchor_lines(query)
    finally:
        new.close()
        old.close()


@settings(max_examples=30, deadline=None)
@given(
    turns=turn_texts,
    word=st.sampled_from(WORDS),
    exhaustive=st.integers(1, 12),
    block=st.integers(1, 8),
    limit=st.integers(1, 100),
)
def test_above_the_threshold_the_ranked_turns_follow_the_documented_rule(
    workdir: Path,
    turns: list[tuple[int, str, list[str]]],
    word: str,
    exhaustive: int,
    block: int,
    limit: int,
) -> None:
    path = build(workdir, turns)
    query = AnchorQuery(all_terms=(word,), limit=limit)
    scores = exhaustive_scores(path, anchor_match(query)[0])
    keys = turn_keys(path)
    index = SqliteSessionIndex(path, exhaustive=exhaustive, block=block)
    try:
        lines = index.anchor_lines(query)
    finally:
        index.close()
    by_rowid = dict(scores)
    expected = [(*keys[r], by_rowid[r]) for r in rule(scores, exhaustive, block)][:limit]
    assert [(a.session.session_id, a.turn, a.score) for a in lines] == expected


@settings(max_examples=30, deadline=None)
@given(
    turns=turn_texts,
    word=st.sampled_from(WORDS),
    block=st.integers(1, 8),
    limit=st.integers(1, 6),
    prefer=st.sampled_from((None, *PROJECTS)),
)
def test_legacy_sessions_in_the_block_regime_come_in_rule_order(
    workdir: Path,
    turns: list[tuple[int, str, list[str]]],
    word: str,
    block: int,
    limit: int,
    prefer: str | None,
) -> None:
    path = build(workdir, turns)
    index = SqliteSessionIndex(path, exhaustive=1, block=block)
    try:
        hits = index.search(SessionQuery(text=word, prefer=prefer, limit=limit))
    finally:
        index.close()
    expression = anchor_match(AnchorQuery(all_terms=(word,)))[0]
    scores = exhaustive_scores(path, expression)
    keys = turn_keys(path)
    first_seen: dict[str, float] = {}
    for r in rule(scores, 1, block):
        first_seen.setdefault(keys[r][0], dict(scores)[r])
    ordered = list(first_seen)
    got = [h.session.session_id for h in hits]
    assert len(got) == min(limit, len(ordered))
    for hit in hits:  # a session's score is its first turn in rule order
        assert hit.score == first_seen[hit.session.session_id]
        assert any(t.match for t in hit.turns)
    if prefer is None:
        assert got == ordered[:limit]
    else:  # the preferred project's sessions first, each group in rule order
        projects = {sid: p for sid, p in SESSIONS}
        flags = [projects[s] == prefer for s in got]
        assert flags == sorted(flags, reverse=True)
        for group in (True, False):
            part = [s for s in got if (projects[s] == prefer) is group]
            assert part == [s for s in ordered if s in part]


def test_thresholds_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument):
        SqliteSessionIndex(tmp_path / "s.db", exhaustive=0)
    with pytest.raises(InvalidArgument):
        SqliteSessionIndex(tmp_path / "s.db", block=0)


def test_a_search_reading_past_the_first_slice_stops_at_the_same_turns(tmp_path: Path) -> None:
    # Hundreds of matches, the preferred project's turns long (low bm25) and spread through
    # the ranking, so the lookups go on past the first slice and stop part way: a session's
    # shown turns are those read, so the slices must end where they ended before.
    rng = random.Random(7)
    turns: list[tuple[int, str, list[str]]] = []
    for _ in range(700):
        session = rng.choice((0, 3)) if rng.random() < 0.06 else rng.choice((1, 2, 4, 5))
        preferred = SESSIONS[session][1] == "api"
        filler = rng.randrange(0, 30) if preferred else rng.randrange(0, 12)
        words = [rng.choice(WORDS[:3]) for _ in range(rng.randint(1, 2))]
        words += [rng.choice(FILLER) for _ in range(filler)]
        turns.append((session, rng.choice(("user", "assistant")), words))
    path = build(tmp_path, turns)
    new, old = SqliteSessionIndex(path), ExhaustiveSessionIndex(path)
    try:
        for word in WORDS[:3]:
            for limit in range(1, 7):
                for prefer in (None, *PROJECTS):
                    query = SessionQuery(text=word, prefer=prefer, limit=limit)
                    assert new.search(query) == old.search(query), (word, limit, prefer)
    finally:
        new.close()
        old.close()
