"""The TypeScript extension's `project64=` attribution in the Markdown format (ADR 0027)."""

from __future__ import annotations

import re
from datetime import date

from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.markdown.format import (
    decode_project64,
    encode_project64,
    parse_document,
    render_document,
    speaks_project64,
)
from pi_hermes_memory.domain.memory.model import (
    FailureCategory,
    MemoryEntry,
    Target,
    is_safe_project_name,
)

# The TypeScript extension's reader (store/memory-store.ts, 0.9.x), ported: an entry whose
# comment it cannot match is read as plain text without a project.
TS_ENTRY = re.compile(
    r"^(.*?)\s*<!--\s*created=([^,]+),\s*last=([^,>]+)(?:,\s*project64=([A-Za-z0-9_-]+))?\s*-->\s*$",
    re.S,
)


def ts_read(content: str) -> list[tuple[str, str | None]]:
    """(text, project) per entry, as the TypeScript extension reads a file."""
    out = []
    for raw in (e.strip() for e in content.strip().split("\n§\n")):
        if not raw:
            continue
        match = TS_ENTRY.match(raw)
        if match is None:
            out.append((raw, None))
            continue
        project = decode_project64(match[4]) if match[4] else None
        out.append((match[1].strip(), project))
    return out


def entry(text: str, project: str | None, target: Target = Target.FAILURE) -> MemoryEntry:
    return MemoryEntry.create(
        id=text,
        target=target,
        text=text,
        project=project,
        category=FailureCategory.CORRECTION,
        created=date(2026, 7, 1),
        last_referenced=date(2026, 7, 2),
    )


def test_encoding_is_nodes_base64url_without_padding() -> None:
    assert encode_project64("Ghostwriter") == "R2hvc3R3cml0ZXI"
    assert encode_project64("web") == "d2Vi"
    assert decode_project64("R2hvc3R3cml0ZXI") == "Ghostwriter"
    assert decode_project64(encode_project64("项目-α")) == "项目-α"
    assert decode_project64("d2Vi==") is None  # padding is not base64url
    assert decode_project64("a") is None  # no whole byte
    assert decode_project64("__8") is None  # not UTF-8


@given(st.text(min_size=1, max_size=40).map(str.strip).filter(is_safe_project_name))
def test_any_safe_name_round_trips(name: str) -> None:
    assert decode_project64(encode_project64(name)) == name


def test_a_project64_entry_is_read_with_its_project() -> None:
    text = "pip needs the proxy <!-- created=2026-07-01, last=2026-07-02, project64=d2Vi -->"
    parsed = parse_document(text, target=Target.FAILURE)
    assert parsed.warnings == ()
    [one] = parsed.entries
    assert (one.text, one.project, one.created, one.last) == (
        "pip needs the proxy",
        "web",
        date(2026, 7, 1),
        date(2026, 7, 2),
    )


def test_bad_project64_is_a_warning_and_the_entry_is_kept_whole() -> None:
    for value, why in (
        ("d2Vi==", "not base64url"),
        ("Li4", "not encode a safe project name"),  # ".."
    ):
        raw = f"note <!-- created=2026-07-01, last=2026-07-02, project64={value} -->"
        parsed = parse_document(raw, target=Target.PROJECT)
        [one] = parsed.entries
        assert one.project is None and one.text == raw  # unattributed; nothing lost
        assert len(parsed.warnings) == 1 and why in parsed.warnings[0]
    both = "n <!-- created=2026-07-01, last=2026-07-02, project=api, project64=d2Vi -->"
    assert "different projects" in parse_document(both, target=Target.PROJECT).warnings[0]


def test_rendering_in_the_typescript_spelling() -> None:
    entries = [entry("pip needs the proxy", "web"), entry("docker needs buildkit", None)]
    rendered = render_document(entries, target=Target.FAILURE, project64=True)
    assert rendered.splitlines() == [
        "pip needs the proxy <!-- created=2026-07-01, last=2026-07-02, project64=d2Vi -->",
        "§",
        "docker needs buildkit <!-- created=2026-07-01, last=2026-07-02 -->",
    ]
    assert ts_read(rendered) == [("pip needs the proxy", "web"), ("docker needs buildkit", None)]
    # our own spelling is unchanged, and the TypeScript reader cannot take it
    ours = render_document(entries[:1], target=Target.FAILURE)
    assert "project=web, category=correction" in ours
    assert ts_read(ours)[0][1] is None


def test_a_file_speaks_project64_only_without_our_version_line() -> None:
    ts = b"a <!-- created=2026-07-01, last=2026-07-01, project64=d2Vi -->\n"
    assert speaks_project64(ts) and speaks_project64(b"\xef\xbb\xbf" + ts)
    ours = b"<!-- pi-hermes-memory: failure v3, store ab (edit) -->\n" + ts
    assert not speaks_project64(ours)
    assert not speaks_project64(b"a <!-- created=2026-07-01, last=2026-07-01, project=web -->")
