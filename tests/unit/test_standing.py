"""The STANDING.md format (ADR 0037): list items, continuation lines, headings, comments, and
lenient reading of what is not a list."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.prompt.standing import parse_standing


def test_items_headings_continuations_and_comments() -> None:
    parsed = parse_standing(
        "\ufeff# Standing instructions\n"
        "<!-- one instruction per item -->\n"
        "- Never push to main\n"
        "* Ask before deleting\n"
        "  anything under /data\n"
        "\n"
        "1. Answer in English <!-- even when asked in German -->\n"
        "2) Run the tests first\n"
        "<!-- a comment\nover lines -->\n"
        "+ Keep commits small\n"
    )
    assert parsed.entries == (
        "Never push to main",
        "Ask before deleting anything under /data",
        "Answer in English",
        "Run the tests first",
        "Keep commits small",
    )
    assert parsed.warnings == ()


def test_a_line_outside_a_list_is_its_own_entry_with_a_warning() -> None:
    parsed = parse_standing("- one\n\nplain text here\n- two\n")
    assert parsed.entries == ("one", "plain text here", "two")
    assert len(parsed.warnings) == 1 and "line 3 is not a list item" in parsed.warnings[0]


def test_an_unclosed_comment_hides_nothing() -> None:
    parsed = parse_standing("- one\n<!-- forgot to close\n- two\n")
    assert parsed.entries == ("one", "<!-- forgot to close", "two")
    assert any("line 2 is never closed" in w for w in parsed.warnings)


def test_empty_and_heading_only_files_have_no_entries() -> None:
    assert parse_standing("").entries == ()
    assert parse_standing("# Title\n\n## Sub\n").entries == ()


word = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1
).filter(lambda w: "#" not in w and "<!--" not in w and "-->" not in w)
line = st.tuples(
    st.sampled_from(["", "- ", "* ", "1. ", "  ", "    - "]), st.lists(word, min_size=1, max_size=5)
).map(lambda parts: parts[0] + " ".join(parts[1]))


@given(st.lists(st.one_of(line, st.just("")), max_size=15))
def test_nothing_written_is_lost(lines: list[str]) -> None:
    """Every word after the list marker of every line appears in the entries (lines without
    headings or comments)."""
    parsed = parse_standing("\n".join(lines))
    words = " ".join(parsed.entries).split()
    for text in lines:
        tokens = text.split()
        if not tokens:
            continue
        body = tokens[1:] if tokens[0] in ("-", "*", "1.") else tokens
        for token in body:
            assert token in words
