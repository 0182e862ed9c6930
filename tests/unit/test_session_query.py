"""The `anchors` request parser: every rule and error message, plus round-trip properties."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pi_hermes_memory.domain.history.request import (
    DEFAULT_ANCHOR_LIMIT,
    MAX_ANCHOR_LIMIT,
    MAX_TERM_CHARS,
    MAX_TERMS,
    AnchorRequest,
    parse_anchor_request,
    render_anchor_request,
)
from pi_hermes_memory.errors import AnchorRequestError

EXAMPLE = """\
from: 2026-01-05
to: 2026-01-07 18:00
cwd: /home/me/proj
limit: 20
all:
- flock
- timeout
any:
- sqlite
- apsw
exclude:
- test
"""


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


def error_of(text: str) -> AnchorRequestError:
    with pytest.raises(AnchorRequestError) as caught:
        parse_anchor_request(text)
    return caught.value


# --- the whole request ---------------------------------------------------------------------


def test_the_issue_example() -> None:
    assert parse_anchor_request(EXAMPLE) == AnchorRequest(
        start=utc(2026, 1, 5),
        end=utc(2026, 1, 7, 18, 0, 59, 999_999),
        cwd="/home/me/proj",
        limit=20,
        all_terms=("flock", "timeout"),
        any_terms=("sqlite", "apsw"),
        exclude_terms=("test",),
    )


def test_defaults_of_a_minimal_request() -> None:
    request = parse_anchor_request("all:\n- flock")
    assert request == AnchorRequest(all_terms=("flock",))
    assert request.limit == DEFAULT_ANCHOR_LIMIT == 50
    assert (request.start, request.end, request.cwd) == (None, None, None)
    assert (request.any_terms, request.exclude_terms) == ((), ())


def test_fields_in_any_order_blank_lines_and_whitespace() -> None:
    text = "\n\n  ANY :  \n\t*   sqlite  \n\n   -\tapsw\n  Limit:   7  \n\nCWD:\t/srv/x  \n\n"
    assert parse_anchor_request(text) == AnchorRequest(
        cwd="/srv/x", limit=7, any_terms=("sqlite", "apsw")
    )


def test_line_endings_crlf_and_cr() -> None:
    assert parse_anchor_request("all:\r\n- a\r\n- b\r") == AnchorRequest(all_terms=("a", "b"))
    assert parse_anchor_request("all:\r- a\r- b") == AnchorRequest(all_terms=("a", "b"))
    assert error_of("all:\r\n- a\r\nnope").line == 3


@pytest.mark.parametrize(
    "fence",
    [
        "```\n{}\n```",
        "```markdown\n{}\n```",
        "  ```md  \n{}\n  ````  ",
        "~~~\n{}\n~~~",
        "\n\n````text\n\n{}\n\n````\n\n",
    ],
)
def test_a_fenced_request(fence: str) -> None:
    assert parse_anchor_request(fence.format(EXAMPLE)) == parse_anchor_request(EXAMPLE)


def test_fence_line_numbers_count_the_fence() -> None:
    assert error_of("```\nall:\nnope\n```").line == 3


def test_an_unclosed_fence() -> None:
    error = error_of("```\nall:\n- a")
    assert error.line == 1
    assert "``` fence opened here is never closed" in str(error)
    assert error_of("````\nall:\n- a\n```").line == 1  # a shorter fence does not close it
    assert error_of("```\nall:\n- a\n~~~").line == 1  # nor one of the other character


def test_text_outside_the_fence_is_rejected() -> None:
    error = error_of("Here is my request:\n```\nall:\n- a\n```")
    assert error.line == 1
    assert "'Here is my request:' is neither a field" in str(error)


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n", "```\n```", "```\n\n```\n"])
def test_an_empty_request(text: str) -> None:
    error = error_of(text)
    assert error.line is None
    assert str(error).startswith("the request is empty")


@pytest.mark.parametrize(
    "text", ["limit: 5", "exclude:\n- test", "limit: 5\nexclude:\n- x", "all:\nany:\nexclude:"]
)
def test_a_request_without_constraint(text: str) -> None:
    error = error_of(text)
    assert error.line is None
    assert str(error) == (
        "the request has no constraint; give at least one term under all: or any:, "
        "or a from:, to: or cwd: field"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from: 2026-01-05", AnchorRequest(start=utc(2026, 1, 5))),
        ("to: 2026-01-05", AnchorRequest(end=utc(2026, 1, 5, 23, 59, 59, 999_999))),
        ("cwd: /x", AnchorRequest(cwd="/x")),
        ("any:\n- a", AnchorRequest(any_terms=("a",))),
    ],
)
def test_each_constraint_alone_is_enough(text: str, expected: AnchorRequest) -> None:
    assert parse_anchor_request(text) == expected


# --- fields --------------------------------------------------------------------------------


def test_field_names_are_case_insensitive() -> None:
    text = (
        "FROM: 2026-01-05\nTo: 2026-01-06\nCwd: /x\nLIMIT: 3\nAll:\n- a\naNy:\n- b\nEXCLUDE:\n- c"
    )
    assert parse_anchor_request(text) == AnchorRequest(
        start=utc(2026, 1, 5),
        end=utc(2026, 1, 6, 23, 59, 59, 999_999),
        cwd="/x",
        limit=3,
        all_terms=("a",),
        any_terms=("b",),
        exclude_terms=("c",),
    )


@pytest.mark.parametrize("name", ["form", "query", "since", "max-results", "project", "all_of"])
def test_unknown_fields(name: str) -> None:
    error = error_of(f"all:\n- a\n{name}: x")
    assert error.line == 3
    assert str(error) == (
        f"line 3: unknown field '{name}:'; the fields are from, to, cwd, limit, all, any, exclude"
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("from: 2026-01-01", "from: 2026-01-02"),
        ("to: 2026-01-01", "To: 2026-01-02"),
        ("cwd: /a", "cwd: /a"),
        ("limit: 1", "LIMIT: 2"),
        ("all:\n- a", "all:\n- b"),
        ("any:", "Any:"),
        ("exclude:", "exclude:"),
    ],
)
def test_duplicate_fields(first: str, second: str) -> None:
    text = f"{first}\n\n{second}"
    name = first.split(":")[0].lower()
    error = error_of(text)
    second_line = first.count("\n") + 3
    assert error.line == second_line
    assert str(error) == (
        f"line {second_line}: duplicate field {name}: (already given on line 1); "
        "each field may appear once"
    )


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("all: foo", "foo"),
        ("any: [sqlite, apsw]", "[sqlite, apsw]"),
        ("exclude: - test", "- test"),
        ("All:  two words ", "two words"),
    ],
)
def test_inline_values_on_list_fields(line: str, value: str) -> None:
    error = error_of(f"cwd: /x\n{line}")
    name = line.split(":")[0].lower()
    assert error.line == 2
    assert str(error) == (
        f"line 2: {name}: is a list field and takes no value on its line (got {value!r}); "
        "put each term on its own line below it as '- term'"
    )


@pytest.mark.parametrize("name", ["from", "to", "cwd", "limit"])
def test_value_fields_need_a_value(name: str) -> None:
    error = error_of(f"all:\n- a\n{name}:   ")
    assert error.line == 3
    assert str(error).startswith(f"line 3: {name}: has no value; give ")


def test_an_empty_section_is_allowed() -> None:
    assert parse_anchor_request("all:\nany:\n- a\nexclude:") == AnchorRequest(any_terms=("a",))


@pytest.mark.parametrize(
    "line", ["flock", "all", "from 2026-01-05", "## all", "**all:**", "1. flock", ": x", "---"]
)
def test_lines_that_are_neither_fields_nor_items(line: str) -> None:
    error = error_of(f"all:\n{line}")
    assert error.line == 2
    message = str(error)
    assert message.startswith(f"line 2: {line!r} is ")
    assert "under all:, any: or exclude:" in message


def test_an_item_without_a_space_after_the_marker() -> None:
    error = error_of("all:\n-flock")
    assert str(error) == (
        "line 2: '-flock' is not a list item: write the marker, a space and the term "
        "('- term'), under all:, any: or exclude:"
    )
    assert "('* term')" in str(error_of("all:\n*flock*"))


def test_a_long_offending_line_is_shortened_in_the_message() -> None:
    message = str(error_of("all:\n" + "x" * 10_000))
    assert len(message) < 300
    assert "x…'" in message


# --- list items ----------------------------------------------------------------------------


def test_items_before_any_field() -> None:
    error = error_of("\n- flock\nall:\n- a")
    assert error.line == 2
    assert str(error) == (
        "line 2: list item '- flock' is outside a list section (before any field); "
        "list items belong under all:, any: or exclude:"
    )


@pytest.mark.parametrize("field", ["from: 2026-01-05", "to: 2026-01-05", "cwd: /x", "limit: 3"])
def test_items_after_a_value_field(field: str) -> None:
    error = error_of(f"all:\n- a\n{field}\n* b")
    name = field.split(":")[0]
    assert error.line == 4
    assert str(error) == (
        f"line 4: list item '* b' is outside a list section (after {name}: (line 3), which "
        "takes no items); list items belong under all:, any: or exclude:"
    )


@pytest.mark.parametrize("item", ["-", "- ", "*", "-   \t", '- ""', "- '  '", "- ``"])
def test_empty_terms(item: str) -> None:
    error = error_of(f"cwd: /x\nexclude:\n{item}")
    assert error.line == 3
    assert str(error) == "line 3: empty term under exclude:; every '- ' item needs a word or phrase"


def test_terms_are_trimmed_and_quotes_are_optional() -> None:
    text = "all:\n-   flock  \n- \"two words\"\n-  two  words\n* `grep -r`\n- ' spaced '"
    assert parse_anchor_request(text).all_terms == (
        "flock",
        "two words",
        "two  words",
        "grep -r",
        "spaced",
    )


def test_only_one_pair_of_matching_quotes_is_removed() -> None:
    text = 'any:\n- ""x""\n- "half\n- it\'s\n- \'mixed"\n- -v\n- * star\n- a: b'
    assert parse_anchor_request(text).any_terms == (
        '"x"',
        '"half',
        "it's",
        "'mixed\"",
        "-v",
        "* star",
        "a: b",
    )


def test_repeated_terms_are_dropped_case_insensitively() -> None:
    text = "all:\n- Flock\n- flock\n- FLOCK\n- Straße\n- STRASSE\nany:\n- flock"
    request = parse_anchor_request(text)
    assert request.all_terms == ("Flock", "Straße")
    assert request.any_terms == ("flock",)


def test_cjk_and_unicode_terms() -> None:
    request = parse_anchor_request("all:\n- 构建命令\n- café\nexclude:\n- テスト")
    assert request.all_terms == ("构建命令", "café")
    assert request.exclude_terms == ("テスト",)


@pytest.mark.parametrize("wanted", ["all", "any"])
def test_a_term_both_wanted_and_excluded(wanted: str) -> None:
    error = error_of(f"{wanted}:\n- Flock\n- sqlite\nexclude:\n- test\n- FLOCK")
    assert error.line == 6
    assert str(error) == (
        f"line 6: 'FLOCK' is under both exclude: and {wanted}:; "
        "a term cannot be both wanted and excluded"
    )


def test_a_term_in_all_and_any_is_allowed() -> None:
    request = parse_anchor_request("all:\n- a\nany:\n- a\n- b")
    assert (request.all_terms, request.any_terms) == (("a",), ("a", "b"))


def test_term_length_limit() -> None:
    longest = "x" * MAX_TERM_CHARS
    assert parse_anchor_request(f"all:\n- {longest}").all_terms == (longest,)
    assert parse_anchor_request(f'all:\n- "{longest}"').all_terms == (longest,)
    error = error_of(f"all:\n- {longest}y")
    assert str(error) == (
        f"line 2: term under all: has {MAX_TERM_CHARS + 1} characters; "
        f"a term has at most {MAX_TERM_CHARS}"
    )


def test_term_count_limit() -> None:
    terms = [f"t{i}" for i in range(MAX_TERMS)]
    items = "\n".join(f"- {t}" for t in terms)
    assert parse_anchor_request(f"any:\n{items}\n- T0").any_terms == tuple(terms)
    error = error_of(f"any:\n{items}\n- one more")
    assert error.line == MAX_TERMS + 2
    assert str(error).endswith(f"too many terms under any:; a list has at most {MAX_TERMS} terms")


# --- limit ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "limit"), [("1", 1), ("20", 20), ("100", 100), ("007", 7)])
def test_valid_limits(value: str, limit: int) -> None:
    assert parse_anchor_request(f"cwd: /x\nlimit: {value}").limit == limit
    assert MAX_ANCHOR_LIMIT == 100


@pytest.mark.parametrize(
    "value",
    ["0", "000", "101", "1000", "9" * 5000, "-1", "+5", "20.0", "1e2", "twenty", "٣", "5 6"],
)
def test_invalid_limits(value: str) -> None:
    error = error_of(f"cwd: /x\nlimit: {value}")
    assert error.line == 2
    shown = repr(value) if len(value) <= 60 else repr(value[:59] + "…")
    assert str(error) == (
        f"line 2: limit: must be a whole number from 1 to 100 (default 50); got {shown}"
    )


# --- cwd -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "cwd"),
    [
        ("/home/me/proj", "/home/me/proj"),
        ("/home/me/proj/", "/home/me/proj"),
        ("/home/me/proj///", "/home/me/proj"),
        ("/", "/"),
        ("///", "/"),
        ('"/home/me/my proj"', "/home/me/my proj"),
        ("`/home/me/proj/`", "/home/me/proj"),
        ("/home/me/my proj", "/home/me/my proj"),
        ("C:\\work\\x", "C:\\work\\x"),
        ("~/proj", "~/proj"),
        ('"/x / "', "/x"),
        ("'/ '", "/"),
    ],
)
def test_cwd_values(value: str, cwd: str) -> None:
    assert parse_anchor_request(f"cwd: {value}").cwd == cwd


def test_a_quoted_empty_cwd() -> None:
    error = error_of('cwd: ""')
    assert str(error).startswith("line 1: cwd: has no value; give the working directory")


# --- dates and times -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "start", "end"),
    [
        ("2026-01-05", utc(2026, 1, 5), utc(2026, 1, 5, 23, 59, 59, 999_999)),
        ("2026-01-05 14:30", utc(2026, 1, 5, 14, 30), utc(2026, 1, 5, 14, 30, 59, 999_999)),
        ("2026-01-05   14:30", utc(2026, 1, 5, 14, 30), utc(2026, 1, 5, 14, 30, 59, 999_999)),
        ("2026-01-05T14:30", utc(2026, 1, 5, 14, 30), utc(2026, 1, 5, 14, 30, 59, 999_999)),
        ("2026-01-05t14:30z", utc(2026, 1, 5, 14, 30), utc(2026, 1, 5, 14, 30, 59, 999_999)),
        (
            "2026-01-05T14:30:15",
            utc(2026, 1, 5, 14, 30, 15),
            utc(2026, 1, 5, 14, 30, 15, 999_999),
        ),
        (
            "2026-01-05 14:30:15Z",
            utc(2026, 1, 5, 14, 30, 15),
            utc(2026, 1, 5, 14, 30, 15, 999_999),
        ),
        (
            "2026-01-05T14:30:15.123Z",
            utc(2026, 1, 5, 14, 30, 15, 123_000),
            utc(2026, 1, 5, 14, 30, 15, 123_000),
        ),
        (
            "2026-01-05T14:30:15.000000Z",
            utc(2026, 1, 5, 14, 30, 15),
            utc(2026, 1, 5, 14, 30, 15),
        ),
        ("2026-01-05 14:30 UTC", utc(2026, 1, 5, 14, 30), utc(2026, 1, 5, 14, 30, 59, 999_999)),
        ("2026-01-05 14:30+02:00", utc(2026, 1, 5, 12, 30), utc(2026, 1, 5, 12, 30, 59, 999_999)),
        ("2026-01-05 14:30 +0200", utc(2026, 1, 5, 12, 30), utc(2026, 1, 5, 12, 30, 59, 999_999)),
        ("2026-01-05T01:00-05:30", utc(2026, 1, 5, 6, 30), utc(2026, 1, 5, 6, 30, 59, 999_999)),
        ("2026-01-05T23:30-01:00", utc(2026, 1, 6, 0, 30), utc(2026, 1, 6, 0, 30, 59, 999_999)),
        ("2024-02-29", utc(2024, 2, 29), utc(2024, 2, 29, 23, 59, 59, 999_999)),
        ("0001-01-01", utc(1, 1, 1), utc(1, 1, 1, 23, 59, 59, 999_999)),
        ("9999-12-31", utc(9999, 12, 31), utc(9999, 12, 31, 23, 59, 59, 999_999)),
    ],
)
def test_date_forms(value: str, start: datetime, end: datetime) -> None:
    request = parse_anchor_request(f"from: {value}\nto: {value}")
    assert (request.start, request.end) == (start, end)
    assert request.start is not None and request.start.tzinfo is UTC
    assert request.end is not None and request.end.tzinfo is UTC


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("yesterday", ""),
        ("2026/01/05", ""),
        ("05.01.2026", ""),
        ("2026-1-5", ""),
        ("2026-01-05T9:30", ""),
        ("2026-01-05T14", ""),
        ("2026-01-05Z", ""),
        ("2026-01-05+02:00", ""),
        ("2026-01-05T14:30:15.1234567", ""),
        ("2026-01-05 14:30 CET", ""),
        ("2026-01-05T14:30:15,5", ""),
        ("２０２６-01-05", ""),
        ("2026-13-01", " (month 13 is not 01 to 12)"),
        ("2026-00-01", " (month 00 is not 01 to 12)"),
        ("2026-02-29", " (day 29 is not 01 to 28 in 2026-02)"),
        ("2026-04-31", " (day 31 is not 01 to 30 in 2026-04)"),
        ("2026-04-00", " (day 00 is not 01 to 30 in 2026-04)"),
        ("2026-01-05 24:00", " (hour 24 is not 00 to 23)"),
        ("2026-01-05 23:60", " (minute 60 is not 00 to 59)"),
        ("2026-01-05 23:59:60", " (second 60 is not 00 to 59)"),
        ("0000-01-01", " (there is no year 0000)"),
        ("2026-01-05 10:00+24:00", " (the zone offset +24:00 is out of range)"),
        ("2026-01-05 10:00-00:60", " (the zone offset -00:60 is out of range)"),
        ("0001-01-01 00:30+01:00", " (it is outside the years 1 to 9999 in UTC)"),
    ],
)
def test_invalid_dates(value: str, why: str) -> None:
    for name in ("from", "to"):
        error = error_of(f"all:\n- a\n{name}: {value}")
        assert error.line == 3
        assert str(error) == (
            f"line 3: {name}: {value!r} is not a date/time{why}; use YYYY-MM-DD, "
            "YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS[.ffffff] (T may replace the space), "
            "optionally followed by Z, UTC or ±HH:MM; without a zone the time is UTC"
        )


def test_an_end_that_overflows_the_calendar() -> None:
    assert "outside the years 1 to 9999" in str(error_of("to: 9999-12-31 23:59-01:00"))


def test_from_after_to() -> None:
    error = error_of("to: 2026-01-04\ncwd: /x\nfrom: 2026-01-05")
    assert error.line == 1
    assert str(error) == (
        "line 1: to: (2026-01-04T23:59:59.999999Z) is before from: on line 3 "
        "(2026-01-05T00:00:00Z); from: must not be after to:"
    )


def test_from_and_to_on_the_same_day_or_instant() -> None:
    same_day = parse_anchor_request("from: 2026-01-05\nto: 2026-01-05")
    assert (same_day.start, same_day.end) == (
        utc(2026, 1, 5),
        utc(2026, 1, 5, 23, 59, 59, 999_999),
    )
    instant = parse_anchor_request("from: 2026-01-05T10:00:00.5Z\nto: 2026-01-05T10:00:00.5Z")
    assert instant.start == instant.end == utc(2026, 1, 5, 10, 0, 0, 500_000)
    # The end of a minute is compared after conversion to UTC.
    assert parse_anchor_request("from: 2026-01-05 10:00Z\nto: 2026-01-05 12:00+02:00").end == utc(
        2026, 1, 5, 10, 0, 59, 999_999
    )


def test_error_attributes() -> None:
    error = error_of("all:\n- a\nbogus: 1")
    assert isinstance(error, ValueError)
    assert error.line == 3
    assert error.problem == str(error).removeprefix("line 3: ")


# --- rendering -----------------------------------------------------------------------------


def test_render_the_issue_example() -> None:
    assert render_anchor_request(parse_anchor_request(EXAMPLE)) == EXAMPLE


def test_render_uses_the_shortest_exact_forms() -> None:
    request = AnchorRequest(
        start=utc(2026, 1, 5, 10, 0, 30),
        end=utc(2026, 1, 6, 12, 0, 0, 1),
        cwd='"quoted"',
        any_terms=("'x'", "plain"),
    )
    assert render_anchor_request(request) == (
        "from: 2026-01-05T10:00:30Z\n"
        "to: 2026-01-06T12:00:00.000001Z\n"
        'cwd: ""quoted""\n'
        "any:\n"
        "- \"'x'\"\n"
        "- plain\n"
    )
    assert parse_anchor_request(render_anchor_request(request)) == request
    early = AnchorRequest(start=utc(5, 3, 1), end=utc(5, 3, 1, 10, 0, 59, 999_999))
    assert render_anchor_request(early) == "from: 0005-03-01\nto: 0005-03-01 10:00\n"


# --- properties ----------------------------------------------------------------------------

_VALUES = st.sampled_from(
    [
        "",
        "2026-01-05",
        "2026-01-05 14:30",
        "2026-01-05T14:30:15.123Z",
        "2026-01-05 14:30 +02:00",
        "9999-12-31 23:59-23:59",
        "0001-01-01T00:00+23:59",
        "2026-02-30",
        "20",
        "100",
        "0",
        "/home/me/proj/",
        '"/x / "',
        "flock",
        '""',
    ]
)
_NOISE = st.sampled_from(
    ["", " ", "\t", '"', "'", "`", "-", "*", "/", ":", "\u00a0", "\u2028", "\x85", "\x00", "\r"]
)
_ITEMS = st.lists(
    st.builds(
        lambda marker, term: f"{marker}{term}",
        st.sampled_from(["- ", "* ", "  - ", "-"]),
        st.one_of(_VALUES, st.text(max_size=8)),
    ),
    max_size=4,
)
_SECTIONS = st.one_of(
    st.builds(
        lambda name, value: [f"{name}: {value}"],
        st.sampled_from(["from", "to", "cwd", "limit", "FROM", "Cwd "]),
        _VALUES,
    ),
    st.builds(
        lambda name, items: [f"{name}:", *items],
        st.sampled_from(["all", "any", "exclude", "ANY "]),
        _ITEMS,
    ),
)
_FENCES = st.sampled_from(
    [
        ("", ""),
        ("", ""),
        ("", ""),
        ("```", "```"),
        ("```md", "````"),
        ("~~~", "~~~"),
        ("````", "```"),
    ]
)


@st.composite
def almost_requests(draw: st.DrawFn) -> str:
    """Mostly well-formed requests with a few random mutations, to reach every branch."""
    lines = [line for section in draw(st.lists(_SECTIONS, max_size=6)) for line in section]
    for _ in range(draw(st.integers(0, 2))):
        index = draw(st.integers(0, len(lines)))
        lines.insert(index, draw(st.one_of(_NOISE, st.text(max_size=10))))
    for _ in range(draw(st.integers(0, 2))):
        if lines:
            index = draw(st.integers(0, len(lines) - 1))
            lines[index] += draw(_NOISE)
    opening, closing = draw(_FENCES)
    return "\n".join([opening, *lines, closing])


_ALMOST_REQUESTS = almost_requests()


@given(st.one_of(st.text(), _ALMOST_REQUESTS))
@example("```")
@example("to: 9999-12-31 23:59-23:59")
@example("from: 0001-01-01 00:00+23:59")
@example("limit: " + "9" * 5000)
def test_parser_raises_only_anchor_request_errors(text: str) -> None:
    try:
        request = parse_anchor_request(text)
    except AnchorRequestError as error:
        assert error.line is None or 1 <= error.line <= len(text.splitlines()) + 2
        assert str(error)
        return
    assert isinstance(request, AnchorRequest)
    assert 1 <= request.limit <= MAX_ANCHOR_LIMIT
    for bound in (request.start, request.end):
        assert bound is None or bound.tzinfo is UTC
    if request.start is not None and request.end is not None:
        assert request.start <= request.end
    assert parse_anchor_request(render_anchor_request(request)) == request


def _valid_text(text: str) -> bool:
    return bool(text) and text == text.strip() and not any(c in text for c in "\r\n")


_TERM = st.text(st.characters(codec="utf-8"), min_size=1, max_size=30).filter(_valid_text)


def _unique_terms(max_size: int) -> st.SearchStrategy[list[str]]:
    return st.lists(_TERM, max_size=max_size, unique_by=str.casefold)


@st.composite
def anchor_requests(draw: st.DrawFn) -> AnchorRequest:
    bounds = sorted(draw(st.lists(st.datetimes(timezones=st.just(UTC)), min_size=2, max_size=2)))
    start = draw(st.sampled_from([None, bounds[0]]))
    end = draw(st.sampled_from([None, bounds[1]]))
    if draw(st.booleans()):  # whole days and minutes, the common forms
        if start is not None:
            start = start.replace(hour=0, minute=0, second=0, microsecond=0)
        if end is not None:
            end = end.replace(second=59, microsecond=999_999)
    cwd = draw(st.none() | st.just("/") | _TERM.map(lambda t: t.rstrip("/")).filter(_valid_text))
    all_terms = draw(_unique_terms(5))
    any_terms = draw(_unique_terms(5))
    wanted = {t.casefold() for t in all_terms + any_terms}
    exclude = [t for t in draw(_unique_terms(4)) if t.casefold() not in wanted]
    if not all_terms and not any_terms and (start, end, cwd) == (None, None, None):
        all_terms = ["fallback"]
    return AnchorRequest(
        start=start,
        end=end,
        cwd=cwd,
        limit=draw(st.integers(1, MAX_ANCHOR_LIMIT)),
        all_terms=tuple(all_terms),
        any_terms=tuple(any_terms),
        exclude_terms=tuple(exclude),
    )


@given(anchor_requests(), st.booleans())
@example(AnchorRequest(cwd='"/x"', all_terms=('" a "', "'", '""')), False)
@example(AnchorRequest(end=datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)), True)
def test_rendered_requests_parse_back_equal(request: AnchorRequest, fenced: bool) -> None:
    text = render_anchor_request(request)
    if fenced:
        text = f"```markdown\n{text}```\n"
    assert parse_anchor_request(text) == request
