"""Properties of the shared spelling (ADR 0077): every rendered document splits into a file the
TypeScript extension's reader (ported in tests/support/typescript/port.py) reads entry for
entry, and a sidecar that joins back to exactly our render; an edit of the file keeps the other
entries' metadata and is based on the version it was loaded at."""

from __future__ import annotations

from datetime import date

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.markdown.format import parse_document, render_document
from pi_hermes_memory.adapters.markdown.shared import join, read_render, split
from pi_hermes_memory.domain.memory.markdown_doc import VersionLine
from pi_hermes_memory.domain.memory.model import (
    FailureCategory,
    MemoryEntry,
    MemoryKind,
    Target,
)

from tests.support.typescript.port import TS_DELIMITER, js_trim, ts_parse
from tests.unit.test_markdown_roundtrip import entry_texts, projects

STORE = "0123456789abcdef"


@st.composite
def documents(draw: st.DrawFn) -> tuple[Target, list[MemoryEntry]]:
    target = draw(st.sampled_from(Target))
    has_project = target in (Target.PROJECT, Target.FAILURE)
    scopes = {
        Target.MEMORY: st.none() | st.sampled_from(["agent:coder", "custom:team"]),
        Target.USER: st.none() | st.just("user:ann"),
    }.get(target, st.none())
    entries = draw(
        st.lists(
            st.builds(
                lambda text, project, category, namespace, importance, kind, created, last: (
                    attrs.evolve(
                        MemoryEntry.create(
                            id="x",
                            target=target,
                            text=text,
                            project=project,
                            category=category if target is Target.FAILURE else None,
                            created=created,
                            last_referenced=last,
                        ),
                        namespace=namespace,
                        importance=importance,
                        kind=kind,
                    )
                ),
                entry_texts,
                (st.none() | projects) if has_project else st.none(),
                st.none() | st.sampled_from(FailureCategory),
                scopes,
                st.none() | st.sampled_from([0.0, 0.25, 0.9, 1.0]),
                st.none() | st.sampled_from(MemoryKind),
                st.dates(),
                st.dates(),
            ),
            max_size=6,
        )
    )
    return target, entries


def render(target: Target, entries: list[MemoryEntry], version: int = 3) -> bytes:
    stamp = VersionLine(target=target.value, version=version, store=STORE)
    return render_document(entries, target=target, stamp=stamp).encode("utf-8")


def ts_view(e: MemoryEntry) -> tuple[str, str, str, str | None]:
    return (e.text, e.created.isoformat(), e.last_referenced.isoformat(), e.project)


@settings(max_examples=300)
@given(documents())
def test_the_extension_reads_every_entry_and_the_sidecar_joins_back(
    doc: tuple[Target, list[MemoryEntry]],
) -> None:
    target, entries = doc
    full = render(target, entries)
    shared, sidecar = split(full, target)
    read = ts_parse(shared.decode("utf-8"))
    assert all(e["metadata"] for e in read)
    got = [(e["text"], e["created"], e["lastReferenced"], e["project"]) for e in read]
    # equal, but for a text that starts or ends with U+FEFF: String.prototype.trim drops it
    assert got == [(js_trim(t), *rest) for t, *rest in map(ts_view, entries)]
    assert join(shared, sidecar, target) == full
    # split's linear reader of our renders agrees with the parser
    fast = read_render(full, target)
    assert fast is not None
    parsed = parse_document(full.decode("utf-8"), target=target)
    assert fast[0] == parsed.version_line
    assert [(e.text, e.created, e.last, e.project) for e in fast[1]] == [
        (e.text, e.created, e.last, e.project) for e in parsed.entries
    ]


@settings(max_examples=100)
@given(documents())
def test_a_render_in_the_extensions_own_spelling_splits_unchanged(
    doc: tuple[Target, list[MemoryEntry]],
) -> None:
    """A file learned from the extension (ADR 0027: no version line, `project64=`) is already
    in the shared spelling: the file written is the render itself."""
    target, entries = doc
    full = render_document(entries, target=target, project64=True).encode("utf-8")
    shared, sidecar = split(full, target)
    assert shared == full
    assert join(shared, sidecar, target) == full


@settings(max_examples=200)
@given(documents(), st.data())
def test_an_edited_text_keeps_the_other_entries_metadata(
    doc: tuple[Target, list[MemoryEntry]], data: st.DataObject
) -> None:
    target, entries = doc
    if not entries:
        return
    full = render(target, entries)
    shared, sidecar = split(full, target)
    blocks = shared.decode("utf-8").rstrip("\n").split(TS_DELIMITER)
    if len(blocks) != len(entries):  # a text holding the delimiter's own shape; not this test
        return
    edited = data.draw(st.integers(0, len(entries) - 1))
    block = blocks[edited]
    blocks[edited] = "a new text typed by hand" + block[block.rfind(" <!-- created=") :]
    joined = join((TS_DELIMITER.join(blocks) + "\n").encode("utf-8"), sidecar, target)
    assert joined is not None
    parsed = parse_document(joined.decode("utf-8"), target=target)
    assert parsed.version_line == VersionLine(target=target.value, version=3, store=STORE)
    for i, (p, e) in enumerate(zip(parsed.entries, entries, strict=True)):
        if i == edited:
            assert p.text == "a new text typed by hand"
            continue
        assert (p.text, p.namespace, p.importance, p.project) == (
            e.text,
            e.namespace,
            e.importance,
            e.project,
        )
        assert p.kind == (None if e.kind is None else e.kind.value)


def test_a_stale_buffer_is_based_on_the_version_it_showed() -> None:
    def entry(text: str) -> MemoryEntry:
        day = date(2026, 1, 1)
        return MemoryEntry.create(
            id="x", target=Target.MEMORY, text=text, project=None, category=None, created=day
        )

    v1 = [entry("alpha"), entry("beta")]
    v2 = [*v1, entry("gamma from the agent")]
    buffer, sidecar = split(render(Target.MEMORY, v1, 1), Target.MEMORY)
    _, sidecar = split(render(Target.MEMORY, v2, 2), Target.MEMORY, sidecar)

    def base(data: bytes) -> int:
        joined = join(data, sidecar, Target.MEMORY)
        assert joined is not None
        line = parse_document(joined.decode(), target=Target.MEMORY).version_line
        assert line is not None
        return line.version

    # v1 plus the person's entry: an edit of v1, so gamma is not deleted by it
    assert base(buffer + "§\nhand added delta\n".encode()) == 1
    # exactly v1 again: no edit of v1, so the newest render (a deletion of gamma)
    assert base(buffer) == 2
    # v2 plus an entry: an edit of v2
    v2_file = split(render(Target.MEMORY, v2, 2), Target.MEMORY)[0]
    assert base(v2_file + "§\nhand added delta\n".encode()) == 2
