"""The `SessionIndex` contract suite (see `pi_hermes_memory.testing`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from pi_hermes_memory.domain.history.transcripts import (
    FileProgress,
    HeaderLine,
    MessageLine,
    SessionChunk,
    project_of,
)
from pi_hermes_memory.errors import StaleProgress
from pi_hermes_memory.ports.history import AnchorQuery, SessionHit, SessionQuery
from pi_hermes_memory.testing.contracts import HOSTILE_QUERIES

T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


def progress(path: str, offset: int = 100, lines: int = 3, **kw: Any) -> FileProgress:
    fields: dict[str, Any] = {
        "size": offset,
        "mtime_ns": 1_000,
        "device": 1,
        "inode": 7,
        "offset": offset,
        "lines": lines,
        "head_len": min(offset, 4096),
        "head_sha": "h",
        "tail_sha": "t",
    }
    fields.update(kw)
    return FileProgress(path=path, **fields)


def message(
    text: str, role: str = "user", minutes: int = 0, tools: Sequence[str] = ()
) -> MessageLine:
    return MessageLine(role=role, text=text, tools=tuple(tools), at=T0 + timedelta(minutes=minutes))


class Sessions:
    """Writes sessions into a SessionIndex the way the indexer does: one chunk per call."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.lines: dict[str, int] = {}

    def add(
        self,
        path: str,
        texts: Sequence[str | MessageLine],
        *,
        cwd: str | None = "/home/me/web",
        session_id: str | None = None,
        header: bool = True,
        reset: bool = False,
        start: int = 0,
    ) -> None:
        """Append turns to `path` (the first call writes the header line first); each text is
        a user turn `start`+i minutes after T0, unless a MessageLine is given."""
        if reset:
            self.lines.pop(path, None)
        first = path not in self.lines
        line = self.lines.get(path, 0)
        start = line * 100
        head = None
        if first and header:
            line += 1
            head = HeaderLine(session_id=session_id or path.rsplit("/", 1)[-1], cwd=cwd, started=T0)
        turns = []
        for i, text in enumerate(texts):
            line += 1
            turns.append(
                (line, text if isinstance(text, MessageLine) else message(text, minutes=start + i))
            )
        self.lines[path] = line
        self.index.apply(
            SessionChunk(
                progress=progress(path, offset=line * 100, lines=line),
                reset=reset,
                start=start,
                fallback_id=f"fallback-{path.rsplit('/', 1)[-1]}",
                header=head,
                project=project_of(cwd) if head is not None else None,
                messages=tuple(turns),
            )
        )


def _ids(hits: Sequence[SessionHit]) -> list[str]:
    return [h.session.session_id for h in hits]


class SessionIndexContract:
    """Semantics of a `SessionIndex` adapter (see the port). Provide a ``session_index``
    fixture: a fresh, empty index."""

    # -- progress and bookkeeping -------------------------------------------------------------

    def test_an_empty_index(self, session_index: Any) -> None:
        assert session_index.files() == {}
        assert session_index.progress_of("/s/a.jsonl") is None
        counts = session_index.counts()
        assert (counts.files, counts.sessions, counts.messages) == (0, 0, 0)
        assert session_index.search(SessionQuery(text="deploy")) == []
        assert session_index.anchor_lines(AnchorQuery(all_terms=("deploy",))) == []

    def test_apply_stores_progress_and_turns(self, session_index: Any) -> None:
        Sessions(session_index).add("/s/a.jsonl", ["deploy the api", "it works"])
        stored = session_index.progress_of("/s/a.jsonl")
        assert stored == progress("/s/a.jsonl", offset=300, lines=3, headed=True)
        assert session_index.files() == {"/s/a.jsonl": stored}
        counts = session_index.counts()
        assert (counts.files, counts.sessions, counts.messages) == (1, 1, 2)
        (hit,) = session_index.search(SessionQuery(text="deploy"))
        assert hit.session.session_id == "a.jsonl" and hit.session.path == "/s/a.jsonl"
        assert hit.session.project == "web" and hit.session.cwd == "/home/me/web"
        assert hit.session.started == T0
        assert [(t.line, t.turn, t.match) for t in hit.turns] == [(2, 1, True), (3, 2, False)]

    def test_progress_without_turns_is_kept(self, session_index: Any) -> None:
        session_index.apply(SessionChunk(progress=progress("/s/e.jsonl", 0, 0), fallback_id="e"))
        assert session_index.progress_of("/s/e.jsonl") == progress("/s/e.jsonl", 0, 0)
        assert session_index.counts().sessions == 0

    def test_turns_continue_across_chunks(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/a.jsonl", ["first turn", "second turn"])
        s.add("/s/a.jsonl", ["third turn about kafka", "fourth turn"], start=2)
        (hit,) = session_index.search(SessionQuery(text="kafka"))
        assert [(t.line, t.turn) for t in hit.turns] == [(3, 2), (4, 3), (5, 4)]
        assert hit.matches[0].text == "third turn about kafka"
        assert session_index.progress_of("/s/a.jsonl").lines == 5

    def test_a_late_header_names_the_session(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/x_abc.jsonl", ["before the header: redis"], header=False)
        (hit,) = session_index.search(SessionQuery(text="redis"))
        assert hit.session.session_id == "fallback-x_abc.jsonl" and hit.session.cwd is None
        assert not session_index.progress_of("/s/x_abc.jsonl").headed
        session_index.apply(
            SessionChunk(
                progress=progress("/s/x_abc.jsonl", 300, 3),
                start=100,
                fallback_id="fallback",
                header=HeaderLine(session_id="real-id", cwd="/w/api", started=None),
                project="api",
            )
        )
        (hit,) = session_index.search(SessionQuery(text="redis"))
        assert (hit.session.session_id, hit.session.project) == ("real-id", "api")
        assert session_index.progress_of("/s/x_abc.jsonl").headed
        assert session_index.counts().sessions == 1

    def test_a_chunk_must_continue_from_the_stored_offset(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/a.jsonl", ["first turn"])
        before = session_index.progress_of("/s/a.jsonl")
        late = SessionChunk(
            progress=progress("/s/a.jsonl", 300, 3),
            start=100,  # read from an offset another indexer has moved past
            fallback_id="a",
            messages=((3, message("duplicate?")),),
        )
        with pytest.raises(StaleProgress):
            session_index.apply(late)
        fresh = attrs.evolve(late, progress=progress("/s/other.jsonl", 300, 3))
        with pytest.raises(StaleProgress):
            session_index.apply(fresh)  # not indexed yet: it must start at 0
        assert session_index.progress_of("/s/a.jsonl") == before
        assert session_index.counts().messages == 1
        session_index.apply(attrs.evolve(late, start=200))
        assert session_index.counts().messages == 2

    def test_reset_drops_what_the_file_held(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/a.jsonl", ["old text about graphql"])
        s.add("/s/b.jsonl", ["other file mentions graphql"])
        s.add("/s/a.jsonl", ["new text about grpc"], reset=True)
        assert _ids(session_index.search(SessionQuery(text="graphql"))) == ["b.jsonl"]
        (hit,) = session_index.search(SessionQuery(text="grpc"))
        assert [(t.line, t.turn) for t in hit.turns] == [(2, 1)]
        assert session_index.counts().messages == 2

    def test_forget_drops_files_with_their_turns(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/a.jsonl", ["kubernetes here"])
        s.add("/s/b.jsonl", ["kubernetes there"])
        assert session_index.forget(["/s/a.jsonl", "/s/missing.jsonl"]) == 1
        assert set(session_index.files()) == {"/s/b.jsonl"}
        assert _ids(session_index.search(SessionQuery(text="kubernetes"))) == ["b.jsonl"]
        assert session_index.forget([]) == 0

    def test_recorded_sessions(self, session_index: Any) -> None:
        first = message("recorded turn about terraform", minutes=1)
        assert (
            session_index.record(session_id="r1", cwd="/w/infra", project="infra", message=first)
            == 1
        )
        second = message("the plan applied", role="assistant", minutes=2)
        assert session_index.record(session_id="r1", cwd=None, project=None, message=second) == 2
        Sessions(session_index).add(
            "/s/r1.jsonl", ["file session about terraform"], session_id="r1"
        )
        hits = session_index.search(SessionQuery(text="terraform"))
        assert len(hits) == 2
        recorded = next(h for h in hits if h.session.path is None)
        assert (recorded.session.session_id, recorded.session.project) == ("r1", "infra")
        assert recorded.session.cwd == "/w/infra" and recorded.session.started == first.at
        assert [(t.line, t.turn, t.role) for t in recorded.turns] == [
            (1, 1, "user"),
            (2, 2, "assistant"),
        ]
        assert session_index.counts().sessions == 2

    def test_unrecord_drops_a_recorded_sessions_last_turns(self, session_index: Any) -> None:
        for i, word in enumerate(("alpha", "beta", "gamma"), start=1):
            session_index.record(
                session_id="r", cwd=None, project=None, message=message(f"{word} note", minutes=i)
            )
        Sessions(session_index).add("/s/r.jsonl", ["gamma in a file"], session_id="r")
        assert session_index.unrecord(session_id="r", keep=1) == 2
        assert [h.session.path for h in session_index.search(SessionQuery(text="gamma"))] == [
            "/s/r.jsonl"  # the file session of the same id is not a recorded one
        ]
        assert session_index.search(SessionQuery(text="beta")) == []
        assert len(session_index.search(SessionQuery(text="alpha"))) == 1
        assert (
            session_index.record(
                session_id="r", cwd=None, project=None, message=message("delta note", minutes=4)
            )
            == 2
        )  # the next turn follows the kept ones
        assert session_index.unrecord(session_id="r", keep=0) == 2
        assert session_index.search(SessionQuery(text="alpha delta")) == []
        assert session_index.counts().sessions == 1
        assert session_index.unrecord(session_id="unknown", keep=0) == 0

    def test_reproject_changes_file_sessions_only(self, session_index: Any) -> None:
        Sessions(session_index).add("/s/a.jsonl", ["helm chart"], cwd="/home/me/web")
        session_index.record(
            session_id="r", cwd="/home/me/web", project="mine", message=message("helm values")
        )
        assert session_index.reproject(lambda cwd: "renamed" if cwd else None) == 1
        assert session_index.reproject(lambda cwd: "renamed" if cwd else None) == 0
        projects = {
            h.session.path: h.session.project
            for h in session_index.search(SessionQuery(text="helm"))
        }
        assert projects == {"/s/a.jsonl": "renamed", None: "mine"}

    # -- legacy search ------------------------------------------------------------------------

    def test_sessions_with_every_term_in_one_turn_come_first(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/split.jsonl", ["redis is slow", "the eviction policy"])
        s.add("/s/one.jsonl", ["only redis here"])
        s.add("/s/both.jsonl", ["unrelated", "redis eviction policy is allkeys-lru"])
        hits = session_index.search(SessionQuery(text="redis eviction"))
        assert _ids(hits)[0] == "both.jsonl"
        assert set(_ids(hits)) == {"both.jsonl", "split.jsonl", "one.jsonl"}
        assert all(h.score > 0 for h in hits)
        best = hits[0]
        assert [t.text for t in best.matches] == ["redis eviction policy is allkeys-lru"]

    def test_best_turns_per_session_and_their_neighbours(self, session_index: Any) -> None:
        texts = [f"filler {i}" for i in range(10)]
        texts[2], texts[6] = "the flock timeout", "flock again"
        Sessions(session_index).add("/s/a.jsonl", texts)
        (hit,) = session_index.search(SessionQuery(text="flock", per_session=2, window=1))
        assert [t.turn for t in hit.turns] == [2, 3, 4, 6, 7, 8]
        assert [t.turn for t in hit.turns if t.match] == [3, 7]
        (one,) = session_index.search(SessionQuery(text="flock", per_session=1, window=0))
        assert len(one.turns) == 1 and one.turns[0].match

    def test_limit_counts_sessions(self, session_index: Any) -> None:
        s = Sessions(session_index)
        for i in range(8):
            s.add(f"/s/{i}.jsonl", ["shared keyword", "shared keyword again"])
        assert len(session_index.search(SessionQuery(text="keyword", limit=5))) == 5
        assert len(session_index.search(SessionQuery(text="keyword", limit=20))) == 8

    def test_project_role_filters_apply_before_the_limit(self, session_index: Any) -> None:
        s = Sessions(session_index)
        for i in range(6):
            s.add(f"/s/api{i}.jsonl", ["queue queue queue"], cwd="/w/api")
        s.add("/s/web.jsonl", ["the queue consumer retries"], cwd="/w/web")
        s.add("/s/none.jsonl", ["queue without a project"], header=False)
        only_web = session_index.search(SessionQuery(text="queue", project="web", limit=1))
        assert _ids(only_web) == ["web.jsonl"]
        web_first = session_index.search(SessionQuery(text="queue", prefer="web", limit=3))
        assert _ids(web_first)[0] == "web.jsonl" and len(web_first) == 3
        none_first = session_index.search(SessionQuery(text="queue", prefer="nothing", limit=8))
        assert len(none_first) == 8
        s.add(
            "/s/roles.jsonl",
            [message("asked about queue"), message("answered about queue", role="assistant")],
            cwd="/w/roles",
        )
        (hit,) = session_index.search(SessionQuery(text="queue", project="roles", role="assistant"))
        assert [t.role for t in hit.turns if t.match] == ["assistant"]
        assert session_index.search(SessionQuery(text="queue", role="system")) == []

    def test_turn_fields(self, session_index: Any) -> None:
        turn = message("ran the build", role="assistant", minutes=5, tools=("bash", "edit"))
        Sessions(session_index).add("/s/a.jsonl", [turn])
        (hit,) = session_index.search(SessionQuery(text="build"))
        (got,) = hit.turns
        assert (got.role, got.text, got.tools, got.at) == (
            "assistant",
            "ran the build",
            ("bash", "edit"),
            T0 + timedelta(minutes=5),
        )
        assert got.match and got.score > 0

    def test_chinese_japanese_and_mixed_text(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/zh.jsonl", ["项目构建命令是 make build，发布前要先跑类型检查"])
        s.add("/s/ja.jsonl", ["東京タワーに行くなら夜がいい"])
        s.add("/s/mix.jsonl", ["用pytest运行测试"])
        assert _ids(session_index.search(SessionQuery(text="构建命令")))[0] == "zh.jsonl"
        assert _ids(session_index.search(SessionQuery(text="タワー")))[0] == "ja.jsonl"
        assert _ids(session_index.search(SessionQuery(text="pytest")))[0] == "mix.jsonl"
        assert "ja.jsonl" in _ids(session_index.search(SessionQuery(text="京")))

    def test_hostile_queries_never_raise(self, session_index: Any) -> None:
        Sessions(session_index).add("/s/a.jsonl", ["deploy with make; 项目构建 NEAR AND words"])
        for text in HOSTILE_QUERIES:
            hits = session_index.search(SessionQuery(text=text))
            assert isinstance(hits, list) and len(hits) <= 5, text[:40]
            lines = session_index.anchor_lines(AnchorQuery(all_terms=(text,), any_terms=(text,)))
            assert isinstance(lines, list), text[:40]
        assert session_index.search(SessionQuery(text="")) == []

    def test_the_preferred_project_comes_first_in_every_tier(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/o_all.jsonl", ["redis eviction policy"], cwd="/w/other")
        s.add("/s/o_one.jsonl", ["redis only"], cwd="/w/other")
        s.add("/s/m_one.jsonl", ["eviction only"], cwd="/w/mine")
        s.add("/s/m_all.jsonl", ["the redis eviction"], cwd="/w/mine")
        hits = session_index.search(SessionQuery(text="redis eviction", prefer="mine"))
        assert _ids(hits) == ["m_all.jsonl", "m_one.jsonl", "o_all.jsonl", "o_one.jsonl"]
        two = session_index.search(SessionQuery(text="redis eviction", prefer="mine", limit=2))
        assert _ids(two) == ["m_all.jsonl", "m_one.jsonl"]
        plain = session_index.search(SessionQuery(text="redis eviction"))
        assert set(_ids(plain)[:2]) == {"m_all.jsonl", "o_all.jsonl"}

    # -- anchors ------------------------------------------------------------------------------

    def test_anchor_terms_all_any_exclude(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add(
            "/s/a.jsonl",
            [
                "flock timeout with sqlite",  # line 2
                "flock timeout with apsw",  # 3
                "flock timeout in the test suite with sqlite",  # 4
                "flock only",  # 5
                "timeout only with sqlite",  # 6
            ],
        )
        every = AnchorQuery(all_terms=("flock", "timeout"))
        assert sorted(x.line for x in session_index.anchor_lines(every)) == [2, 3, 4]
        anyone = AnchorQuery(all_terms=("flock",), any_terms=("sqlite", "apsw"))
        lines = {x.line: x.matched_any for x in session_index.anchor_lines(anyone)}
        assert lines == {2: ("sqlite",), 3: ("apsw",), 4: ("sqlite",)}
        excluding = AnchorQuery(all_terms=("flock", "timeout"), exclude_terms=("test",))
        assert sorted(x.line for x in session_index.anchor_lines(excluding)) == [2, 3]
        only_any = AnchorQuery(any_terms=("apsw", "sqlite"))
        assert sorted(x.line for x in session_index.anchor_lines(only_any)) == [2, 3, 4, 6]
        assert all(x.score > 0 for x in session_index.anchor_lines(only_any))

    def test_anchor_term_of_several_words_needs_all_of_them(self, session_index: Any) -> None:
        Sessions(session_index).add(
            "/s/a.jsonl", ["the lock timed out", "lock ordering", "数据库锁超时了", "数据库很快"]
        )
        phrase = AnchorQuery(all_terms=("lock timed",))
        assert [x.line for x in session_index.anchor_lines(phrase)] == [2]
        cjk = AnchorQuery(all_terms=("锁超时",))
        assert [x.line for x in session_index.anchor_lines(cjk)] == [4]

    def test_anchor_time_window_is_inclusive(self, session_index: Any) -> None:
        Sessions(session_index).add("/s/a.jsonl", [f"deploy step {i}" for i in range(5)])
        window = AnchorQuery(
            all_terms=("deploy",),
            start=T0 + timedelta(minutes=1),
            end=T0 + timedelta(minutes=3),
        )
        assert sorted(x.line for x in session_index.anchor_lines(window)) == [3, 4, 5]
        no_terms = AnchorQuery(start=T0 + timedelta(minutes=3))
        got = session_index.anchor_lines(no_terms)
        assert [x.line for x in got] == [6, 5]  # newest first
        assert all(x.score == 0 for x in got)

    def test_anchor_cwd_is_that_directory_or_below(self, session_index: Any) -> None:
        s = Sessions(session_index)
        s.add("/s/a.jsonl", ["deploy a"], cwd="/w/app")
        s.add("/s/b.jsonl", ["deploy b"], cwd="/w/app/sub")
        s.add("/s/c.jsonl", ["deploy c"], cwd="/w/apple")
        s.add("/s/d.jsonl", ["deploy d"], cwd="/w/a%p_p")
        got = session_index.anchor_lines(AnchorQuery(all_terms=("deploy",), cwd="/w/app/"))
        assert sorted(x.session.path or "" for x in got) == ["/s/a.jsonl", "/s/b.jsonl"]
        literal = session_index.anchor_lines(AnchorQuery(cwd="/w/a%p_p"))
        assert [x.session.path for x in literal] == ["/s/d.jsonl"]
        assert session_index.anchor_lines(AnchorQuery(cwd="/W/APP")) == []  # case matters
        everything = session_index.anchor_lines(AnchorQuery(cwd="/"))
        assert len(everything) == 4

    def test_anchor_lines_fields_and_limit(self, session_index: Any) -> None:
        Sessions(session_index).add(
            "/s/a.jsonl", [f"migration number {i}" for i in range(10)], session_id="S"
        )
        got = session_index.anchor_lines(AnchorQuery(all_terms=("migration",), limit=4))
        assert len(got) == 4
        first = got[0]
        assert first.session.session_id == "S" and first.session.path == "/s/a.jsonl"
        assert first.session.cwd == "/home/me/web"
        assert first.at == T0 + timedelta(minutes=first.turn - 1)
        assert first.line == first.turn + 1

    def test_anchor_exclusion_alone_lists_the_rest(self, session_index: Any) -> None:
        Sessions(session_index).add("/s/a.jsonl", ["keep this", "drop this", "keep that"])
        got = session_index.anchor_lines(AnchorQuery(cwd="/home/me/web", exclude_terms=("drop",)))
        assert sorted(x.line for x in got) == [2, 4]
