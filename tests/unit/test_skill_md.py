"""SKILL.md: render, the tolerant parser, slugs, the structured body and the patch rules."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pi_hermes_memory.domain.errors import DomainError
from pi_hermes_memory.domain.skills.body import (
    NO_PITFALLS,
    build_body,
    has_header_line,
    patch_text,
    replace_section,
    section_names,
    section_span,
)
from pi_hermes_memory.domain.skills.skill import SkillState, skill_stream
from pi_hermes_memory.domain.skills.skill_md import (
    ParsedSkill,
    SkillFormatError,
    format_time,
    is_slug,
    parse_skill,
    render_skill,
    slugify,
)
from pi_hermes_memory.domain.skills.yaml_subset import quote

T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
T1 = datetime(2026, 7, 3, 17, 30, 5, tzinfo=UTC)


def state(**changes: object) -> SkillState:
    base = SkillState.empty(skill_stream("global:deploy-docs"))
    values: dict[str, object] = {
        "description": "Publish the docs site after a release",
        "body": "## When to Use\n\nAfter a release.",
        "revision": 3,
        "created": T0,
        "updated": T1,
        "exists": True,
        "version": 4,
    }
    values.update(changes)
    return attrs.evolve(base, **values)  # type: ignore[arg-type]


def with_parsed(s: SkillState, p: ParsedSkill) -> SkillState:
    return attrs.evolve(
        s,
        slug=p.name or s.slug,
        display_name=p.display_name,
        description=p.description or "",
        revision=p.revision,
        created=p.created,
        updated=p.updated,
        body=p.body,
        extra_frontmatter=p.extra_frontmatter,
    )


# -- render ----------------------------------------------------------------------------------


def test_render_has_fixed_key_order_lf_and_one_trailing_newline() -> None:
    text = render_skill(state(display_name="Deploy Docs", extra_frontmatter="license: MIT"))
    assert text == (
        "---\n"
        "name: deploy-docs\n"
        "display_name: Deploy Docs\n"
        "description: Publish the docs site after a release\n"
        "version: 3\n"
        "created: 2026-07-01T09:00:00Z\n"
        "updated: 2026-07-03T17:30:05Z\n"
        "license: MIT\n"
        "---\n"
        "\n"
        "## When to Use\n"
        "\n"
        "After a release.\n"
    )
    assert "\r" not in text and text.endswith(".\n") and not text.endswith("\n\n")


def test_display_name_only_when_it_differs_from_the_slug() -> None:
    assert "display_name" not in render_skill(state(display_name="deploy-docs"))
    assert "display_name" not in render_skill(state(display_name=None))
    assert "display_name: 部署文档" in render_skill(state(display_name="部署文档"))


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("plain words", "plain words"),
        ("key: value", '"key: value"'),
        ("a # comment", '"a # comment"'),
        ("#hash first", '"#hash first"'),
        ("- dash", '"- dash"'),
        ("line\nbreak", '"line\\nbreak"'),
        ('say "hi"', 'say "hi"'),
        ('"quoted"', '"\\"quoted\\""'),
        ("back\\slash", "back\\slash"),
        ("'single'", "\"'single'\""),
        ("true", '"true"'),
        ("null", '"null"'),
        ("123", '"123"'),
        ("ends with colon:", '"ends with colon:"'),
        (" padded", '" padded"'),
        ("tab\there", '"tab\\there"'),
        ("bell\x07", '"bell\\x07"'),
        ("", '""'),
        ("C# tips", "C# tips"),
        ("url http://x.y/z", "url http://x.y/z"),
    ],
)
def test_quote_writes_plain_only_when_plain_reads_back(value: str, written: str) -> None:
    assert quote(value) == written
    text = render_skill(state(description=value or "x"))
    assert parse_skill(text).description == (value.strip() or "x")


def test_times_are_utc_seconds_with_z() -> None:
    from datetime import timedelta, timezone

    plus2 = timezone(timedelta(hours=2))
    assert format_time(datetime(2026, 7, 1, 11, 0, 0, 999, tzinfo=plus2)) == "2026-07-01T09:00:00Z"
    assert format_time(datetime(2026, 7, 1, 9, 0)) == "2026-07-01T09:00:00Z"
    assert format_time(datetime(5, 1, 2, tzinfo=UTC)) == "0005-01-02T00:00:00Z"


# -- parse -----------------------------------------------------------------------------------


def test_parse_reads_what_render_writes() -> None:
    s = state(display_name="Deploy Docs", extra_frontmatter="license: MIT")
    p = parse_skill(render_skill(s))
    assert p == ParsedSkill(
        name="deploy-docs",
        display_name="Deploy Docs",
        description="Publish the docs site after a release",
        revision=3,
        created=T0,
        updated=T1,
        body="## When to Use\n\nAfter a release.",
        extra_frontmatter="license: MIT",
    )


def test_parse_tolerates_bom_crlf_and_missing_version() -> None:
    text = "\ufeff---\r\nname: x\r\ndescription: d\r\n---\r\n\r\nBody line\r\n"
    p = parse_skill(text)
    assert (p.name, p.description, p.revision, p.body) == ("x", "d", 1, "Body line")
    assert p.created is None and p.notes == ()


def test_hand_written_file_from_another_tool() -> None:
    text = """---
# written by hand
name: pdf-tools
description: >-
  Extract text and tables
  from PDF files.

  Fill forms too.
license: Apache-2.0
metadata:
  author: someone
  tags:
    - pdf
    - docs
allowed-tools:
- Read
- Bash
version: '2'
created: 2026-07-01
---
# PDF tools

Use pdfplumber.
"""
    p = parse_skill(text)
    assert p.name == "pdf-tools"
    assert p.description == "Extract text and tables from PDF files.\nFill forms too."
    assert p.revision == 2
    assert p.created == datetime(2026, 7, 1, tzinfo=UTC)
    assert p.extra_frontmatter == (
        "# written by hand\n"
        "license: Apache-2.0\n"
        "metadata:\n"
        "  author: someone\n"
        "  tags:\n"
        "    - pdf\n"
        "    - docs\n"
        "allowed-tools:\n"
        "- Read\n"
        "- Bash"
    )
    assert p.body == "# PDF tools\n\nUse pdfplumber."
    # the keys we do not own survive a render verbatim
    rendered = render_skill(with_parsed(state(), p))
    assert "metadata:\n  author: someone\n  tags:\n    - pdf\n" in rendered
    assert parse_skill(rendered).extra_frontmatter == p.extra_frontmatter


@pytest.mark.parametrize(
    ("value_lines", "expected"),
    [
        (['"double \\"q\\" \\u00e9 \\n x"'], 'double "q" é \n x'),
        (["'it''s single'"], "it's single"),
        (["plain # trailing comment"], "plain"),
        (["|", "  line one", "  line two", ""], "line one\nline two"),
        ([">", "  folded", "  text", "", "  para"], "folded text\npara"),
        (["|+", "  keep", "", ""], "keep"),
        (["", "  continued", "  plain"], "continued plain"),
        (['"multi', '  line"'], "multi line"),
        (["'multi", "", "  para'"], "multi\npara"),
        (['"joined\\', '  here"'], "joinedhere"),
        (["[a, b]"], "[a, b]"),
        (["123"], "123"),
    ],
)
def test_description_scalar_forms(value_lines: list[str], expected: str) -> None:
    first, *more = value_lines
    text = "---\nname: x\ndescription: " + "\n".join([first, *more]) + "\n---\nbody\n"
    assert parse_skill(text).description == expected


@pytest.mark.parametrize(
    ("version", "revision", "noted"),
    [("7", 7, False), ("'3'", 3, False), ("0", 1, True), ("1.2.0", 1, True), ("x", 1, True)],
)
def test_version_that_is_not_a_positive_integer_counts_as_one(
    version: str, revision: int, noted: bool
) -> None:
    p = parse_skill(f"---\nname: x\ndescription: d\nversion: {version}\n---\n")
    assert p.revision == revision
    assert bool(p.notes) is noted


def test_bad_dates_are_left_out_with_a_note() -> None:
    p = parse_skill(
        "---\nname: x\ndescription: d\ncreated: yesterday\n"
        "updated: 2026-07-01T10:00:00+02:00\n---\n"
    )
    assert p.created is None and p.updated == datetime(2026, 7, 1, 8, tzinfo=UTC)
    assert any("created" in n for n in p.notes)


def test_missing_keys_and_nulls_are_none() -> None:
    p = parse_skill("---\nlicense: MIT\ndisplay_name: ~\ndescription: null\n---\n")
    assert (p.name, p.display_name, p.description) == (None, None, None)
    assert parse_skill('---\ndescription: ""\n---\n').description == ""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("no frontmatter here\n", "no YAML frontmatter"),
        ("", "no YAML frontmatter"),
        ("---\nname: x\n", "not closed"),
        ('---\ndescription: "open\n---\n', "unclosed double quote"),
        ("---\ndescription: 'open\n---\n", "unclosed single quote"),
        ('---\ndescription: "bad \\q"\n---\n', "unknown escape"),
        ('---\ndescription: "x" y\n---\n', "after its closing quote"),
    ],
)
def test_unreadable_files_raise_one_domain_error_naming_the_problem(text: str, words: str) -> None:
    with pytest.raises(SkillFormatError, match=words) as info:
        parse_skill(text)
    assert isinstance(info.value, DomainError) and isinstance(info.value, ValueError)


def test_lines_before_the_first_key_are_dropped_with_a_note() -> None:
    p = parse_skill("---\n  stray: 1\nname: x\ndescription: d\n---\n")
    assert p.extra_frontmatter == "" and p.notes


def test_body_may_hold_dashes_and_frontmatter_like_lines() -> None:
    s = state(body="Intro\n\n---\n\nname: not a key\n---")
    assert parse_skill(render_skill(s)).body == s.body


# -- Hypothesis ------------------------------------------------------------------------------

any_char = st.characters(exclude_categories=["Cs"])
tricky = st.lists(
    st.one_of(
        any_char,
        st.sampled_from(
            ["\n", "\r", ":", ": ", " #", "#", '"', "'", "\\", "-", "---", "|", ">", "\t", " "]
        ),
    ),
    max_size=40,
).map("".join)
slugs = st.from_regex(r"[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,3}", fullmatch=True)
times = st.none() | st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)
extra_blocks = st.lists(
    st.sampled_from(
        [
            "license: MIT",
            "# a comment",
            "metadata:\n  author: me\n  tags:\n    - a\n    - b",
            "allowed-tools:\n- Read\n- Bash",
            "compatibility: 'python >= 3.11'",
            "notes: |\n  line one\n\n  line two",
            "",
        ]
    ),
    max_size=4,
).map("\n".join)


@st.composite
def states(draw: st.DrawFn) -> SkillState:
    return state(
        slug=draw(slugs),
        display_name=draw(st.none() | tricky),
        description=draw(tricky),
        body=draw(tricky),
        revision=draw(st.integers(1, 10**9 - 1)),
        created=draw(times),
        updated=draw(times),
        extra_frontmatter=draw(extra_blocks),
    )


@given(states())
@example(state(description="\x85x"))
@example(state(display_name="a\u2028b"))
def test_render_parse_render_is_stable(s: SkillState) -> None:
    once = render_skill(s)
    again = render_skill(with_parsed(s, parse_skill(once)))
    assert again == once


frontmatterish = st.lists(
    st.one_of(
        tricky,
        st.sampled_from(
            [
                "---",
                "name: x",
                "description: |",
                "description: >-",
                "  indented",
                "- item",
                'description: "a\\',
                "version: 2",
                "created: 2026-07-01",
                "# c",
                "",
            ]
        ),
    ),
    max_size=12,
).map("\n".join)


@given(st.one_of(st.text(any_char), frontmatterish, frontmatterish.map(lambda t: "---\n" + t)))
@example('---\ndescription: "\\U0011ffff"\n---\n')
@example("---\ncreated: 0001-01-01T00:00:00+01:00\n---\n")
def test_parse_raises_only_its_domain_error_and_what_it_reads_renders_stably(text: str) -> None:
    try:
        p = parse_skill(text)
    except SkillFormatError:
        return
    s = with_parsed(state(), attrs.evolve(p, name=None))
    once = render_skill(s)
    assert render_skill(with_parsed(s, parse_skill(once))) == once


# -- slugs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Deploy Docs", "deploy-docs"),
        ("  --Deploy__Docs!!  ", "deploy-docs"),
        ("Café Crème", "cafe-creme"),
        ("ＡＢＣ full width", "abc-full-width"),
        ("zero\u200bwidth", "zerowidth"),
        ("部署文档", ""),
        ("部署 docs", "docs"),
        ("a" * 70, "a" * 64),
        ("a" * 63 + " b", "a" * 63),
        ("x" * 64 + "-", "x" * 64),
    ],
)
def test_slugify(name: str, slug: str) -> None:
    assert slugify(name) == slug
    assert slug == "" or is_slug(slug)


@given(st.text(any_char))
def test_slugify_gives_a_slug_or_nothing(name: str) -> None:
    slug = slugify(name)
    assert slug == "" or is_slug(slug)


# -- body ------------------------------------------------------------------------------------


def test_build_body_sections_and_placeholders() -> None:
    body = build_body("When deploying.", ["Build", "Ship\nit"], [], ["Open the site"])
    assert body == (
        "## When to Use\n\nWhen deploying.\n\n"
        "## Procedure\n\n1. Build\n2. Ship\n   it\n\n"
        f"## Pitfalls\n\n- {NO_PITFALLS}\n\n"
        "## Verification\n\n1. Open the site"
    )
    assert section_names(body) == ("When to Use", "Procedure", "Pitfalls", "Verification")


@pytest.mark.parametrize(
    ("section", "content", "expected"),
    [
        ("procedure", '["a", "b"]', "1. a\n2. b"),
        ("Verification", ["check"], "1. check"),
        ("Pitfalls", '["x", "y"]', "- x\n- y"),
        ("Notes", '["x"]', "- x"),
        ("Pitfalls", "free text\nmore", "free text\nmore"),
        ("Pitfalls", "[link](http://x) text", "[link](http://x) text"),
        ("Pitfalls", "```sh\n# a shell comment\n```", "```sh\n# a shell comment\n```"),
    ],
)
def test_patch_text_accepts(section: str, content: str | list[str], expected: str) -> None:
    assert patch_text(section, content) == (expected, "")


@pytest.mark.parametrize(
    "content",
    [
        '{"a": 1}',
        "   ",
        "",
        "## Sneaky\ntext",
        "text\n# H1",
        "###### h6",
        "[1, 2]",
        "[]",
        ["ok", " "],
        [],
    ],
)
def test_patch_text_refuses(content: str | list[str]) -> None:
    text, problem = patch_text("Pitfalls", content)
    assert text is None and problem


def test_header_detection_ignores_code_and_hashes_without_space() -> None:
    assert has_header_line("# Title")
    assert has_header_line("   ### x")
    assert not has_header_line("#hashtag")
    assert not has_header_line("    # indented code")
    assert not has_header_line("~~~\n# comment\n~~~")
    assert not has_header_line("####### seven")


def test_replace_section_matches_case_insensitively_and_appends_missing() -> None:
    body = build_body("Use it.", ["One"], [], [])
    patched = replace_section(body, "PITFALLS", "- Careful")
    assert "## Pitfalls\n\n- Careful\n\n## Verification" in patched
    assert patched.count("## Pitfalls") == 1
    added = replace_section(body, "Rollback", "Revert.")
    assert added.endswith(
        "## Verification\n\n- No verification steps recorded yet.\n\n## Rollback\n\nRevert."
    )
    last = replace_section(added, "rollback", "Revert twice.")
    assert last.endswith("## Rollback\n\nRevert twice.")


def test_sections_end_at_the_next_level_two_header_outside_code() -> None:
    body = "## A\n\n```\n## not a header\n```\n\n### sub\n\n## B\n\nb"
    assert section_span(body, "a") == (0, 8)
    assert replace_section(body, "A", "new") == "## A\n\nnew\n\n## B\n\nb"


@pytest.mark.parametrize(
    "text",
    [
        "---\na" + " \t" * 100_000 + "x\n---\n",
        "---\ndescription: a" + " " * 100_000 + "b #\n---\n",
        '---\ndescription: "a' + "\n   " * 100_000 + '"\n---\n',
        "---\n" + "k: v\n" * 100_000 + "---\n" + "## x" + " " * 100_000 + "#" * 100_000,
    ],
)
def test_reading_is_linear_on_long_lines(text: str) -> None:
    """These took minutes when a lazy pattern backtracked over the long run (now ms)."""
    parsed = parse_skill(text)
    assert has_header_line(parsed.body) == parsed.body.startswith("##")
