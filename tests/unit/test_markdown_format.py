"""Examples of the Markdown memory format: what we write, and how leniently we read."""

from __future__ import annotations

from datetime import date

import pytest
from pi_hermes_memory.adapters.markdown.format import (
    parse_document,
    render_document,
)
from pi_hermes_memory.domain.memory.markdown_doc import ParsedEntry
from pi_hermes_memory.domain.memory.model import (
    FailureCategory,
    MemoryEntry,
    Target,
    is_safe_project_name,
)

D1 = date(2026, 7, 29)
D2 = date(2026, 8, 2)


def entry(
    text: str,
    target: Target = Target.PROJECT,
    *,
    project: str | None = None,
    category: FailureCategory | None = None,
    created: date = D1,
    last: date | None = None,
) -> MemoryEntry:
    return MemoryEntry.create(
        id="x",
        target=target,
        text=text,
        project=project,
        category=category,
        created=created,
        last_referenced=last,
    )


# --- rendering ---------------------------------------------------------------------------------


def test_renders_the_seed_metadata_line() -> None:
    doc = render_document([entry("正文", project="my-project")], target=Target.PROJECT)
    assert doc == "正文 <!-- created=2026-07-29, last=2026-07-29, project=my-project -->\n"


def test_entries_are_separated_by_section_lines_and_the_file_ends_with_newline() -> None:
    es = [entry("one", project="p"), entry("two\nlines", project="q", last=D2)]
    assert render_document(es, target=Target.PROJECT) == (
        "one <!-- created=2026-07-29, last=2026-07-29, project=p -->\n"
        "§\n"
        "two\nlines <!-- created=2026-07-29, last=2026-08-02, project=q -->\n"
    )


def test_empty_document_is_the_empty_string() -> None:
    assert render_document([], target=Target.MEMORY) == ""


def test_global_files_never_carry_a_project() -> None:
    forced = MemoryEntry(
        id="x",
        target=Target.USER,
        text="likes tea",
        project="leaked",
        category=None,
        created=D1,
        last_referenced=D1,
    )
    assert render_document([forced], target=Target.USER) == (
        "likes tea <!-- created=2026-07-29, last=2026-07-29 -->\n"
    )


def test_failures_carry_category_and_optional_project() -> None:
    es = [
        entry("pip needs --no-deps", Target.FAILURE, category=FailureCategory.TOOL_QUIRK),
        entry("tests need -x", Target.FAILURE, project="api"),
    ]
    assert render_document(es, target=Target.FAILURE) == (
        "pip needs --no-deps <!-- created=2026-07-29, last=2026-07-29, category=tool-quirk -->\n"
        "§\n"
        "tests need -x <!-- created=2026-07-29, last=2026-07-29, project=api, "
        "category=failure -->\n"
    )


def test_rendering_is_deterministic() -> None:
    es = [entry("a", project="p"), entry("b")]
    assert render_document(es, target=Target.PROJECT) == render_document(
        list(es), target=Target.PROJECT
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (entry("ok", Target.MEMORY), "belongs to the memory target"),
        (entry("a\n§\nb"), "split the entry"),
        (entry("ok", project="a, b"), "safe name"),
        (entry("ok", project="../etc"), "safe name"),
    ],
)
def test_refuses_entries_that_would_not_read_back(bad: MemoryEntry, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        render_document([entry("fine"), bad], target=Target.PROJECT)


def test_a_first_entry_starting_with_a_bom_survives() -> None:
    es = [entry("\ufeffodd")]
    doc = render_document(es, target=Target.PROJECT)
    assert doc.startswith("\ufeff\ufeffodd")
    assert parse_document(doc, target=Target.PROJECT).entries[0].text == "\ufeffodd"


# --- parsing -----------------------------------------------------------------------------------


def test_parses_the_seed_metadata_line() -> None:
    doc = parse_document(
        "正文 <!-- created=2026-07-29, last=2026-07-29, project=my-project -->\n",
        target=Target.PROJECT,
    )
    assert doc.entries == (ParsedEntry(text="正文", created=D1, last=D1, project="my-project"),)
    assert doc.warnings == ()


def test_cjk_and_multi_line_entries() -> None:
    text = (
        "第一行\n  缩进的第二行\n\n空行之后 <!-- created=2026-07-29, last=2026-08-02 -->\n"
        "§\n"
        "- a list\n- of items <!-- created=2026-08-02, last=2026-08-02 -->\n"
    )
    doc = parse_document(text, target=Target.MEMORY)
    assert [e.text for e in doc.entries] == [
        "第一行\n  缩进的第二行\n\n空行之后",
        "- a list\n- of items",
    ]
    assert doc.entries[0].last == D2
    assert doc.warnings == ()


def test_crlf_files() -> None:
    text = (
        "one\r\nline two <!-- created=2026-07-29, last=2026-07-29 -->\r\n"
        "§\r\n"
        "three <!-- created=2026-08-02, last=2026-08-02 -->\r\n"
    )
    doc = parse_document(text, target=Target.USER)
    assert [(e.text, e.created) for e in doc.entries] == [("one\nline two", D1), ("three", D2)]
    assert doc.warnings == ()


def test_hand_written_entries_without_metadata() -> None:
    doc = parse_document("I prefer tabs.\n§\nAlso: short answers\n", target=Target.USER)
    assert doc.entries == (
        ParsedEntry(text="I prefer tabs."),
        ParsedEntry(text="Also: short answers"),
    )
    assert doc.warnings == ()


def test_separator_lines_may_carry_surrounding_whitespace() -> None:
    doc = parse_document("a\n  §\t\nb\n", target=Target.USER)
    assert [e.text for e in doc.entries] == ["a", "b"]


def test_a_section_sign_inside_a_line_is_text() -> None:
    doc = parse_document("see § 3\n§§\n", target=Target.USER)
    assert [e.text for e in doc.entries] == ["see § 3\n§§"]


def test_only_lf_breaks_lines() -> None:
    # A CR-only line break is not a separator, but the text cannot be written back as is.
    doc = parse_document("a\r§\rb\n", target=Target.USER)
    assert [e.text for e in doc.entries] == ["a\n§\nb"]
    assert len(doc.warnings) == 1
    assert "cannot be written back unchanged" in doc.warnings[0]


@pytest.mark.parametrize(
    ("comment", "why"),
    [
        ("created=2026-13-01", "'created' is not a valid YYYY-MM-DD date"),
        ("created=20260729", "'created' is not a valid YYYY-MM-DD date"),
        ("last=yesterday", "'last' is not a valid YYYY-MM-DD date"),
        ("created=2026-07-29, category=oops", "'category' is not one of"),
        ("project=a/b", "'project' is not a safe project name"),
        ("project=", "'project' is not a safe project name"),
        ("TODO fix this", "part 1 is not key=value"),
        ("created=2026-07-29,, last=2026-07-29", "part 2 is not key=value"),
        ("created=2026-07-29, created=2026-07-30", "'created' appears twice"),
        ("  ", "no key=value pairs"),
    ],
)
def test_malformed_trailing_comments_stay_text_with_a_warning(comment: str, why: str) -> None:
    text = (
        f"first <!-- created=2026-07-29, last=2026-07-29 -->\n§\nsecret sauce <!-- {comment} -->\n"
    )
    doc = parse_document(text, target=Target.PROJECT)
    assert doc.entries[1] == ParsedEntry(text=f"secret sauce <!-- {comment} -->".strip())
    [warning] = doc.warnings
    assert "entry 2 (line 3)" in warning
    assert why in warning
    assert "secret sauce" not in warning  # says what is wrong, never dumps the entry


@pytest.mark.parametrize("tail", ["done -->", "<!-->", "a <!-- x=1 --> b -->"])
def test_unmatched_comment_ends_stay_text(tail: str) -> None:
    doc = parse_document(f"text {tail}\n", target=Target.USER)
    assert doc.entries == (ParsedEntry(text=f"text {tail}"),)
    assert len(doc.warnings) == 1


def test_unknown_keys_are_kept_in_extra() -> None:
    doc = parse_document(
        "x <!-- created=2026-07-29, source=chat, last=2026-07-29, weight = 3 -->\n",
        target=Target.MEMORY,
    )
    assert doc.entries == (
        ParsedEntry(text="x", created=D1, last=D1, extra=(("source", "chat"), ("weight", "3"))),
    )
    assert doc.warnings == ()


def test_partial_metadata_is_fine() -> None:
    doc = parse_document("x <!-- last=2026-08-02 -->\n", target=Target.MEMORY)
    assert doc.entries == (ParsedEntry(text="x", last=D2),)


def test_metadata_that_a_file_does_not_use_is_reported() -> None:
    doc = parse_document(
        "x <!-- created=2026-07-29, project=p, category=insight -->\n", target=Target.USER
    )
    assert doc.entries == (ParsedEntry(text="x", created=D1, project="p", category="insight"),)
    [warning] = doc.warnings
    assert "project and category metadata has no meaning in USER.md" in warning


def test_failure_categories_are_read() -> None:
    doc = parse_document(
        "x <!-- created=2026-07-29, last=2026-07-29, project=api, category=tool-quirk -->",
        target=Target.FAILURE,
    )
    assert doc.entries[0].category == "tool-quirk"
    assert doc.entries[0].project == "api"


def test_a_comment_in_the_middle_is_text_and_flagged() -> None:
    doc = parse_document("a <!-- created=2026-07-29 --> b\n", target=Target.MEMORY)
    assert doc.entries == (ParsedEntry(text="a <!-- created=2026-07-29 --> b"),)
    assert "cannot be written back unchanged" in doc.warnings[0]


def test_metadata_without_text_is_skipped_with_a_warning() -> None:
    doc = parse_document("a\n§\n<!-- created=2026-07-29 -->\n§\nb\n", target=Target.MEMORY)
    assert [e.text for e in doc.entries] == ["a", "b"]
    [warning] = doc.warnings
    assert "entry 2 (line 3)" in warning
    assert "no text" in warning


@pytest.mark.parametrize("text", ["", "\n", "   \n\n", "§", "§\n§\n\n§\n", "\ufeff", "\ufeff§\n"])
def test_empty_files_and_files_with_only_separators(text: str) -> None:
    doc = parse_document(text, target=Target.MEMORY)
    assert doc.entries == ()
    assert doc.warnings == ()


def test_leading_separator_and_blank_chunks_are_structure() -> None:
    doc = parse_document("§\n\nfirst\n§\n§\n\n\nsecond\n§\n", target=Target.MEMORY)
    assert [e.text for e in doc.entries] == ["first", "second"]


def test_leading_bom_is_dropped() -> None:
    doc = parse_document("\ufeffhello <!-- created=2026-07-29 -->\r\n", target=Target.USER)
    assert doc.entries == (ParsedEntry(text="hello", created=D1),)


def test_text_is_nfc_normalised() -> None:
    doc = parse_document("cafe\u0301\n", target=Target.USER)
    assert doc.entries[0].text == "caf\u00e9"


def test_warning_line_numbers_point_at_the_entry() -> None:
    text = "a\n§\n\n\nbad <!-- created=x -->\n"
    [warning] = parse_document(text, target=Target.MEMORY).warnings
    assert warning.startswith("MEMORY.md: entry 2 (line 5): ")


@pytest.mark.parametrize(
    "name", ["my-project", "api_v2", "项目", "Café.app", "x", "my app", "a=b", ".hidden"]
)
def test_safe_project_names(name: str) -> None:
    # one rule with the configuration: every name the config accepts must be writable
    assert is_safe_project_name(name)
    rendered = render_document([entry("fact", project=name)], target=Target.PROJECT)
    assert parse_document(rendered, target=Target.PROJECT).entries[0].project == name


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "a,b", "a>", "<a", "a\nb", " a"])
def test_unsafe_project_names(name: str) -> None:
    assert not is_safe_project_name(name)


@pytest.mark.parametrize(
    "text",
    ["kept from a hand edit <!-- created=garbage -->", "a <!-- b -->", "<!-- only a comment -->"],
)
def test_imported_text_with_comments_still_round_trips(text: str) -> None:
    # A malformed comment a person wrote stays part of the text and must stay writable.
    rendered = render_document([entry("fine"), entry(text)], target=Target.PROJECT)
    parsed = parse_document(rendered, target=Target.PROJECT)
    assert [p.text for p in parsed.entries] == ["fine", text]
