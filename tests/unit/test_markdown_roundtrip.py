"""Properties of the Markdown format: lossless round trip, and a reader that never loses text."""

from __future__ import annotations

import unicodedata
from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.adapters.markdown.format import (
    parse_document,
    render_document,
)
from pi_hermes_memory.domain.memory.model import (
    FailureCategory,
    MemoryEntry,
    Target,
    clean_entry_text,
    entry_text_problem,
    is_safe_project_name,
)

# Surrogates cannot be encoded to UTF-8, so no file can hold them.
any_char = st.characters(exclude_categories=["Cs"])
any_text = st.text(any_char)
# Bias towards the characters the format cares about so that near-misses get tried often.
tricky_text = st.lists(
    st.one_of(
        any_char,
        st.sampled_from(["§", "\n", "\r", " ", "<!--", "-->", ",", "=", "\ufeff", "\u0301"]),
    )
).map("".join)


def storable(text: str) -> bool:
    return text == clean_entry_text(text) and entry_text_problem(text) is None


entry_texts = st.one_of(any_text, tricky_text).filter(storable)
projects = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=20).filter(
    is_safe_project_name
)


@st.composite
def entries_for(draw: st.DrawFn, target: Target) -> MemoryEntry:
    has_project = target in (Target.PROJECT, Target.FAILURE)
    return MemoryEntry.create(
        id="x",
        target=target,
        text=draw(entry_texts),
        project=draw(st.none() | projects) if has_project else None,
        category=draw(st.none() | st.sampled_from(FailureCategory)),
        created=draw(st.dates()),
        last_referenced=draw(st.dates()),
    )


@st.composite
def documents(draw: st.DrawFn) -> tuple[Target, list[MemoryEntry]]:
    target = draw(st.sampled_from(Target))
    return target, draw(st.lists(entries_for(target), max_size=6))


def as_tuple(e: MemoryEntry) -> tuple[str, date, date, str | None, str | None]:
    category = None if e.category is None else e.category.value
    return (e.text, e.created, e.last_referenced, e.project, category)


@settings(max_examples=500)
@given(documents())
def test_render_then_parse_is_the_identity(doc: tuple[Target, list[MemoryEntry]]) -> None:
    target, entries = doc
    parsed = parse_document(render_document(entries, target=target), target=target)
    assert parsed.warnings == ()
    got = [(e.text, e.created, e.last, e.project, e.category) for e in parsed.entries]
    assert got == [as_tuple(e) for e in entries]


@settings(max_examples=200)
@given(documents())
def test_rendering_survives_utf8(doc: tuple[Target, list[MemoryEntry]]) -> None:
    target, entries = doc
    data = render_document(entries, target=target).encode("utf-8")
    assert render_document(entries, target=target).encode("utf-8") == data  # deterministic
    reparsed = parse_document(data.decode("utf-8"), target=target)
    assert len(reparsed.entries) == len(entries)


# --- the lenient reader ------------------------------------------------------------------------


def squash(text: str) -> str:
    """The non-whitespace characters of `text`, in order, after NFC."""
    return "".join(unicodedata.normalize("NFC", text).split())


def without_separator_lines(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if line.strip() != "§")


def parsed_characters(text: str, target: Target) -> str:
    doc = parse_document(text, target=target)
    return "".join(squash(e.text) for e in doc.entries)


@settings(max_examples=1000)
@given(st.one_of(any_text, tricky_text), st.sampled_from(Target))
def test_parse_never_raises_and_keeps_every_character(text: str, target: Target) -> None:
    # Random text cannot contain valid metadata (it would need a well-formed comment at the end of
    # a chunk), so everything except separator lines and the BOM must come back.
    body = text.removeprefix("\ufeff")
    assert parsed_characters(text, target) == squash(without_separator_lines(body))


valid_comments = st.builds(
    lambda created, last, project, category: (
        "<!-- "
        + ", ".join(
            f"{k}={v}"
            for k, v in [
                ("created", created),
                ("last", last),
                ("project", project),
                ("category", category),
            ]
            if v is not None
        )
        + " -->"
    ),
    st.none() | st.dates().map(date.isoformat),
    st.none() | st.dates().map(date.isoformat),
    st.none() | projects,
    st.sampled_from([c.value for c in FailureCategory]),
)


def junk_characters(junk: str, followed_by_comment: bool) -> str:
    """What the reader must keep of `junk`: a comment after it turns its last line into text."""
    if not followed_by_comment:
        return squash(without_separator_lines(junk))
    *lines, last = junk.split("\n")
    return squash(without_separator_lines("\n".join(lines))) + squash(last)


@settings(max_examples=500)
@given(
    st.lists(st.tuples(st.one_of(any_text, tricky_text), st.none() | valid_comments), max_size=5),
    st.sampled_from(["\n", "\r\n"]),
    st.sampled_from(Target),
)
def test_only_recognised_metadata_is_removed(
    pieces: list[tuple[str, str | None]], newline: str, target: Target
) -> None:
    # Junk text, each piece maybe ending in a valid comment, joined by separator lines: all of
    # the junk's characters come back; the comments and separators are the only things consumed.
    if pieces:
        # the reader drops one leading BOM by design; keep generated text from starting with one
        pieces[0] = (pieces[0][0].lstrip("\ufeff"), pieces[0][1])
    chunks = [junk + ("" if comment is None else " " + comment) for junk, comment in pieces]
    text = f"{newline}§{newline}".join(chunks)
    expected = "".join(junk_characters(junk, comment is not None) for junk, comment in pieces)
    assert parsed_characters(text, target) == expected
