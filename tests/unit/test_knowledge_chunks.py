"""The knowledge chunker and the file kinds (ADR 0048)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.knowledge.chunks import (
    CODE,
    MARKDOWN,
    TEXT,
    Chunk,
    chunk_text,
    file_kind,
)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("README.md", MARKDOWN),
        ("notes.MARKDOWN", MARKDOWN),
        ("a.txt", TEXT),
        ("x.rst", TEXT),
        ("main.py", CODE),
        ("lib.rs", CODE),
        ("Makefile", CODE),
        ("photo.png", None),
        ("archive.tar.gz", None),
        ("LICENSE", None),
        (".md", None),
    ],
)
def test_file_kind(name: str, kind: str | None) -> None:
    assert file_kind(name) == kind


DOC = """# Guide

Intro paragraph one.

## Install

Run `make dev`.

```sh
# not a heading

echo done
```

### Linux

apt install thing
## Use
Use it.
"""


def test_markdown_chunks_follow_headings_with_line_ranges() -> None:
    chunks = chunk_text(DOC, MARKDOWN, max_chars=2_000)
    assert [(c.start_line, c.end_line, c.heading) for c in chunks] == [
        (1, 3, "Guide"),
        (5, 13, "Guide > Install"),
        (15, 17, "Guide > Install > Linux"),
        (18, 19, "Guide > Use"),
    ]
    lines = DOC.splitlines(keepends=True)
    for c in chunks:
        assert c.text == "".join(lines[c.start_line - 1 : c.end_line])
    assert "# not a heading" in chunks[1].text  # a fence is not split and has no heading


def test_small_cap_splits_sections_into_paragraphs() -> None:
    chunks = chunk_text(DOC, MARKDOWN, max_chars=25)
    assert all(len(c.text) <= 25 for c in chunks)
    assert (chunks[0].start_line, chunks[0].end_line, chunks[0].heading) == (1, 1, "Guide")


def test_code_is_cut_along_blank_lines_and_text_along_paragraphs() -> None:
    code = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    chunks = chunk_text(code, CODE, max_chars=30)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (5, 6)]
    assert all(c.heading is None for c in chunks)
    # merged while they fit
    assert [(c.start_line, c.end_line) for c in chunk_text(code, CODE)] == [(1, 6)]
    text = "# not a heading in text\n\nsecond\n"
    assert [c.heading for c in chunk_text(text, TEXT, max_chars=25)] == [None, None]


def test_a_line_longer_than_the_cap_is_cut_into_pieces_of_that_line() -> None:
    chunks = chunk_text("short\n" + "x" * 250 + "\nend\n", TEXT, max_chars=100)
    assert [(c.start_line, c.end_line, len(c.text)) for c in chunks] == [
        (1, 1, 6),
        (2, 2, 100),
        (2, 2, 100),
        (2, 3, 55),  # the line's last 51 characters and "end\n" fit together
    ]


def test_blank_files_have_no_chunks_and_a_bad_cap_is_refused() -> None:
    assert chunk_text("", MARKDOWN) == []
    assert chunk_text("\n \n\t\n", CODE) == []
    with pytest.raises(ValueError, match="max_chars"):
        chunk_text("x", TEXT, max_chars=0)


_LINE = st.one_of(
    st.just(""),
    st.just("# Heading"),
    st.just("## Sub"),
    st.just("```"),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60),
)


@given(
    lines=st.lists(_LINE, max_size=40),
    kind=st.sampled_from([MARKDOWN, TEXT, CODE]),
    cap=st.integers(min_value=1, max_value=120),
    crlf=st.booleans(),
)
def test_chunks_cover_the_file_in_order_and_respect_the_cap(
    lines: list[str], kind: str, cap: int, crlf: bool
) -> None:
    text = ("\r\n" if crlf else "\n").join(lines)
    chunks = chunk_text(text, kind, max_chars=cap)
    file_lines = text.splitlines(keepends=True)
    previous: Chunk | None = None
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(file_lines)
        assert 0 < len(c.text) <= cap and c.text.strip()
        assert c.text in "".join(file_lines[c.start_line - 1 : c.end_line])
        if previous is not None:  # in order; only pieces of one long line share a line
            assert c.start_line > previous.end_line or (
                c.start_line == previous.end_line and len(file_lines[c.start_line - 1]) > cap
            )
        previous = c
    # every non-blank character is in exactly one chunk, in file order
    squeeze = re.compile(r"\s+")
    assert squeeze.sub("", "".join(c.text for c in chunks)) == squeeze.sub("", text)
