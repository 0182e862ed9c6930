"""A document's index is carried from one add to the next (ADR 0039): the indexed candidates
never miss a near-duplicate the full scan finds, folding an add through the carried lookups
gives the same document as the general fold, and the render of a grown file is the same bytes.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, date, datetime, timedelta

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.markdown.format import render_document
from pi_hermes_memory.domain.errors import InvariantViolation, VersionConflict
from pi_hermes_memory.domain.memory.commands import (
    AddMemory,
    MemoryCommand,
    RemoveMemory,
    ReplaceMemory,
)
from pi_hermes_memory.domain.memory.decide import WritePolicy, decide, near_candidates, same_scope
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold
from pi_hermes_memory.domain.memory.events import MemoryAdded, stamp
from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.domain.memory.model import MemoryEntry, Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.memory.scope_index import ScopeIndex
from pi_hermes_memory.domain.search.similarity import (
    _TOKEN_RE,
    _split_runs,
    near_duplicates,
    token_set,
)

_T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
# common and rare words, CJK (Han, kana, Hangul), case and NFKC variants of the same token
_WORDS = (
    "the", "the", "the", "deploy", "Deploy", "DEPLOY", "staging", "vpn", "api", "ＡＰＩ", "port",
    "8080", "needs", "cache", "queue", "tests", "alpha", "beta", "gamma", "delta", "rare1",
    "rare2", "构建", "命令", "部署", "服务器", "日本語", "テスト", "한국어", "ｶﾀｶﾅ", "𠀀𠀁",
)  # fmt: skip
_SEPARATORS = (" ", " ", ", ", "")
_SCOPES = (
    SessionScope(project="app", access=frozenset({"global", "agent:a"})),
    SessionScope(project="app", sharing=True),
    SessionScope(project=None),
)
_NAMESPACES = (None, "agent:a")
_EVERY = 10**6  # a limit that returns every near-duplicate


@st.composite
def texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=14))
    return draw(st.sampled_from(_SEPARATORS)).join(words)


@st.composite
def commands(draw: st.DrawFn, target: Target) -> list[MemoryCommand]:
    """Mostly forced adds (so near-duplicates pile up), with replaces and removes between."""
    out: list[MemoryCommand] = []
    namespaces = _NAMESPACES if target is Target.MEMORY else (None,)
    for i in range(draw(st.integers(1, 40))):
        at = _T0 + timedelta(seconds=i)
        namespace = draw(st.sampled_from(namespaces))
        kind = draw(st.sampled_from(("add",) * 6 + ("replace", "remove")))
        text = draw(texts())
        if kind == "add":
            force = draw(st.booleans()) or draw(st.booleans())
            out.append(
                AddMemory(
                    target=target,
                    text=text,
                    entry_id=f"e{i:03d}",
                    at=at,
                    force=force,
                    namespace=namespace,
                )
            )
        elif kind == "replace":
            old = draw(st.sampled_from(_WORDS))
            out.append(
                ReplaceMemory(
                    target=target,
                    old_text=old,
                    text=text,
                    entry_id=f"e{i:03d}",
                    at=at,
                    namespace=namespace,
                )
            )
        else:
            old = draw(st.sampled_from(_WORDS))
            out.append(RemoveMemory(target=target, old_text=old, at=at, namespace=namespace))
    return out


def _policy(scope: SessionScope) -> WritePolicy:
    return WritePolicy(scope=scope, char_limit=10**7)


def _carried_path(target: Target, cmds: list[MemoryCommand], scope: SessionScope) -> MemoryDocument:
    """Decide and fold one command at a time, as the write path does: the index of each
    document is carried into the next one by every add."""
    doc = MemoryDocument.empty(target)
    doc.index  # noqa: B018 - built once, then carried
    for cmd in cmds:
        doc = fold(doc, decide(doc, cmd, _policy(scope)).events)
    return doc


def _same_index(a: ScopeIndex, b: ScopeIndex, doc: MemoryDocument, probes: list[str]) -> None:
    groups = {g for e in doc.active for g in (e.namespace, e.project)} | {None}
    for group in groups:
        assert [e.id for e in a.rows(group)] == [e.id for e in b.rows(group)]
        assert a.used(group) == b.used(group)
        for entry in doc.active:
            assert a.exact(group, entry.key) == b.exact(group, entry.key)
            assert entry.id in a and entry.id in b
        for text in probes:
            tokens = token_set(text)
            found_a = sorted(e.id for e in a.near_candidates(group, tokens))
            assert found_a == sorted(e.id for e in b.near_candidates(group, tokens))


# -- the indexed candidates never miss a pair the full scan finds -----------------------------


@pytest.mark.parametrize("target", [Target.MEMORY, Target.PROJECT])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
@example(data=None)  # type: ignore[arg-type]  # the explicit case below
def test_indexed_candidates_find_what_the_full_scan_finds(
    target: Target, data: st.DataObject | None
) -> None:
    if data is None:  # a row at exactly the threshold (4 of 5 tokens shared)
        cmds: list[MemoryCommand] = [
            AddMemory(target=target, text="a b c d", entry_id="e000", at=_T0),
        ]
        query, cosines, scope = "a b c d e", None, _SCOPES[0]
    else:
        scope = data.draw(st.sampled_from(_SCOPES))
        cmds = data.draw(commands(target))
        query = data.draw(texts())
        cosines = None
    doc = _carried_path(target, cmds, scope)
    if data is not None and data.draw(st.booleans()):
        ids = [e.id for e in doc.active]
        picked = data.draw(st.lists(st.sampled_from(ids), unique=True) if ids else st.just([]))
        values = st.sampled_from((0.2, 0.8999, 0.9, 0.93, 1.0))
        cosines = {i: data.draw(values) for i in picked}
    namespaces = _NAMESPACES if target is Target.MEMORY else (None,)
    project = scope.attribution(target)
    for namespace in namespaces:
        whole = [(e.id, e.text) for e in same_scope(doc, scope, project, namespace)]
        rows = near_candidates(doc, scope, project, namespace, query, cosines)
        indexed = [(e.id, e.text) for e in rows]
        assert {i for i, _ in indexed} <= {i for i, _ in whole}
        for limit in (_EVERY, 3):
            expected = near_duplicates(query, whole, cosines, limit=limit)
            assert near_duplicates(query, indexed, cosines, limit=limit) == expected
        if data is None and namespace is None:
            assert near_duplicates(query, indexed, cosines)  # Jaccard 4/5 = the threshold


@settings(max_examples=200, deadline=None)
@given(
    pool=st.lists(texts(), max_size=60),
    query=texts(),
    gone=st.sets(st.integers(0, 59)),
)
def test_the_hit_count_filter_keeps_every_row_at_the_threshold(
    pool: list[str], query: str, gone: set[int]
) -> None:
    """Probing more tokens than the prefix and counting hits (ADR 0039) drops no row whose
    Jaccard with the query reaches the threshold, on a pool with skewed token frequencies."""
    entries = [
        MemoryEntry.create(
            id=f"p{i:03d}",
            target=Target.MEMORY,
            text=text,
            project=None,
            category=None,
            created=date(2026, 1, 1),
        )
        for i, text in enumerate(pool)
    ]
    index = ScopeIndex(Target.MEMORY, enumerate(entries), probe=True)
    mine = token_set(query)
    index.near_candidates(None, mine)
    for i in sorted(gone):
        if i < len(entries):
            index.discard(i, entries[i])
    kept = [(e.id, e.text) for i, e in enumerate(entries) if i not in gone]
    found = [(e.id, e.text) for e in index.near_candidates(None, mine)]
    assert near_duplicates(query, found, limit=_EVERY) == near_duplicates(query, kept, limit=_EVERY)


# -- folding an add through the carried lookups -----------------------------------------------


@pytest.mark.parametrize("target", [Target.MEMORY, Target.PROJECT, Target.FAILURE])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_carried_folds_equal_the_general_fold(target: Target, data: st.DataObject) -> None:
    scope = data.draw(st.sampled_from(_SCOPES))
    cmds = data.draw(commands(target))
    probes = [data.draw(texts()) for _ in range(3)]
    carried = MemoryDocument.empty(target)
    general = MemoryDocument.empty(target)
    carried.index  # noqa: B018
    for cmd in cmds:
        decision = decide(carried, cmd, _policy(scope))
        assert decide(general, cmd, _policy(scope)) == decision
        carried = fold(carried, decision.events)
        # a copy holds no lookups: the general fold, and an index built from its rows
        general = fold(attrs.evolve(general), decision.events)
        assert carried == general
    _same_index(carried.index, attrs.evolve(general).index, general, probes)


def _added(doc: MemoryDocument, entry_id: str, text: str) -> tuple[MemoryAdded, ...]:
    event = MemoryAdded(
        stream=doc.stream,
        at=_T0,
        entry_id=entry_id,
        target=doc.target,
        text=text,
        project=None,
        category=None,
        created=_T0.date(),
        last_referenced=_T0.date(),
    )
    return tuple(stamp(doc.stream, doc.version, (event,)))  # type: ignore[arg-type]


def test_a_refused_add_leaves_the_lookups_with_the_document() -> None:
    doc = MemoryDocument.empty(Target.MEMORY)
    doc.index  # noqa: B018
    doc = fold(doc, _added(doc, "a1", "first note"))
    with pytest.raises(InvariantViolation):
        fold(doc, _added(doc, "a1", "same id again"))
    with pytest.raises(VersionConflict):
        fold(doc, tuple(attrs.evolve(e, version=9) for e in _added(doc, "a2", "gap")))
    with pytest.raises(InvariantViolation):
        fold(
            doc,
            _added(doc, "a2", "x")
            + tuple(attrs.evolve(e, version=doc.version + 2) for e in _added(doc, "a2", "y")),
        )
    assert "carried" in doc._cell  # still this document's, and current
    later = fold(doc, _added(doc, "a2", "second note"))
    assert "carried" in later._cell and "carried" not in doc._cell
    assert [e.id for e in later.index.rows(None)] == ["a1", "a2"]


def test_a_document_whose_lookups_moved_on_builds_its_own_again() -> None:
    doc = MemoryDocument.empty(Target.MEMORY)
    doc.index  # noqa: B018
    first = fold(doc, _added(doc, "a1", "deploy needs the vpn"))
    second = fold(first, _added(first, "a2", "deploy needs the vpn today"))
    assert "carried" not in first._cell
    assert [e.id for e in first.index.rows(None)] == ["a1"]  # its own rows, not second's
    assert [e.id for e in second.index.rows(None)] == ["a1", "a2"]
    assert "a2" not in first.index


# -- tokens and the render ---------------------------------------------------------------------


def _reference_tokens(text: str) -> frozenset[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    tokens: set[str] = set()
    for match in _TOKEN_RE.finditer(folded):
        for cjk, piece in _split_runs(match.group()):
            if not cjk or len(piece) == 1:
                tokens.add(piece)
            else:
                tokens.update(piece[i : i + 2] for i in range(len(piece) - 1))
    return frozenset(tokens)


@given(text=st.one_of(texts(), st.text(max_size=60)))
@example(text="ＡＰＩ ｶﾀｶﾅ Straße ß")
def test_token_set_without_cjk_is_the_words(text: str) -> None:
    assert token_set(text) == _reference_tokens(text)


_ROWS = st.lists(st.tuples(texts(), st.sampled_from((None, "agent:a"))), max_size=12).map(
    lambda rows: [
        attrs.evolve(
            MemoryEntry.create(
                id=f"r{i:03d}",
                target=Target.MEMORY,
                text=text,
                project=None,
                category=None,
                created=date(2026, 1, 1),
            ),
            namespace=namespace,
        )
        for i, (text, namespace) in enumerate(rows)
    ]
)


@settings(max_examples=80, deadline=None)
@given(rows=_ROWS, steps=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=6))
def test_the_render_of_a_grown_document_is_the_full_render(
    rows: list[MemoryEntry], steps: list[tuple[int, int]]
) -> None:
    """`MarkdownFormat.render` joins only the new rows onto the last render; every render is
    still exactly `render_document`'s bytes, whatever rows came or went between renders."""
    fmt = MarkdownFormat()
    for version, (start, stop) in enumerate([(0, len(rows)), *steps, (0, len(rows))], 1):
        shown = tuple(rows[min(start, stop) : max(start, stop)])
        line = VersionLine(target="memory", version=version, store="s")
        expected = render_document(shown, target=Target.MEMORY, stamp=line)
        assert fmt.render(shown, Target.MEMORY, stamp=line) == expected
        grown = tuple(rows[: max(start, stop)])
        assert fmt.render(grown, Target.MEMORY) == render_document(grown, target=Target.MEMORY)


# -- the read-back of a replica this pipeline wrote -------------------------------------------


def test_a_same_size_hand_edit_after_a_write_is_still_imported() -> None:
    """The pipeline compares a replica with the bytes it last wrote instead of hashing it
    again (ADR 0039); a hand edit of the same length, made right after the write, differs
    from those bytes and is imported as before."""
    from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown

    from tests.support.builders import service

    markdown = InMemoryMarkdown()
    svc = service(markdown=markdown)
    at = _T0
    for i, text in enumerate(("deploy needs the vpn", "staging runs on port 8080")):
        cmd = AddMemory(target=Target.MEMORY, text=text, entry_id=f"h{i}", at=at)
        assert svc.execute(cmd).success
    before = markdown.files[Target.MEMORY]
    edited = before.replace(b"port 8080", b"port 9090")
    assert len(edited) == len(before) and edited != before
    markdown.files[Target.MEMORY] = edited
    third = AddMemory(target=Target.MEMORY, text="queue tests are slow", entry_id="h2", at=at)
    assert svc.execute(third).success
    texts = [e.text for e in svc.entries(Target.MEMORY)]
    assert "staging runs on port 9090" in texts and "staging runs on port 8080" not in texts
