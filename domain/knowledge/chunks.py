"""Knowledge-base chunks: which files are documents, and how a document is cut (ADR 0048).

A file's kind comes from its name: Markdown (headings and paragraphs), plain text (paragraphs)
or source code (blocks between blank lines). `chunk_text` cuts a decoded file into chunks that
each keep their 1-based, inclusive line range and, for Markdown, the heading trail above them
("Install > Linux"). Blocks of one section are merged while they fit `max_chars`; a block that
does not fit alone is cut at line ends, and a line longer than `max_chars` is cut into pieces
that share its line number. Every chunk's text is a slice of the file, holds a non-blank
character and is at most `max_chars` long; chunks come in file order and, with the blank text
between them, make up the whole file (a Hypothesis property checks it).

Pure: text in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

import attrs

# re-exported: the defaults live apart so that the configuration loads no chunker (ADR 0105)
from pi_hermes_memory.domain.knowledge.limits import DEFAULT_CHUNK_CHARS as DEFAULT_CHUNK_CHARS
from pi_hermes_memory.domain.knowledge.limits import DEFAULT_FILE_BYTES as DEFAULT_FILE_BYTES
from pi_hermes_memory.domain.knowledge.limits import DEFAULT_INDEX_BYTES as DEFAULT_INDEX_BYTES
from pi_hermes_memory.domain.knowledge.limits import DEFAULT_INDEX_FILES as DEFAULT_INDEX_FILES

MARKDOWN: Final = "markdown"
TEXT: Final = "text"
CODE: Final = "code"

_MARKDOWN_SUFFIXES: Final = frozenset({".md", ".markdown", ".mdx", ".mdown", ".mkd"})
_TEXT_SUFFIXES: Final = frozenset({".txt", ".text", ".rst", ".adoc", ".asciidoc", ".org"})
_CODE_SUFFIXES: Final = frozenset(
    {
        ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java",
        ".kt", ".kts", ".scala", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs",
        ".rb", ".php", ".swift", ".m", ".mm", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql",
        ".lua", ".pl", ".pm", ".r", ".jl", ".dart", ".ex", ".exs", ".erl", ".hrl", ".hs",
        ".ml", ".mli", ".clj", ".cljs", ".el", ".lisp", ".scm", ".zig", ".nim", ".vue",
        ".svelte", ".css", ".scss", ".sass", ".less", ".html", ".htm", ".xml", ".json",
        ".toml", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".tf", ".proto", ".graphql",
        ".gradle", ".cmake", ".mk", ".bat",
    }
)  # fmt: skip
_CODE_NAMES: Final = frozenset(
    {"makefile", "dockerfile", "rakefile", "gemfile", "justfile", "cmakelists.txt"}
)
_HEADING: Final = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*\r?\n?")
_FENCE: Final = re.compile(r" {0,3}(`{3,}|~{3,})")


def file_kind(name: str) -> str | None:
    """MARKDOWN, TEXT or CODE for a file name; None: not a document this index reads."""
    lower = name.lower()
    if lower in _CODE_NAMES:
        return CODE
    dot = lower.rfind(".")
    if dot <= 0:
        return None
    suffix = lower[dot:]
    if suffix in _MARKDOWN_SUFFIXES:
        return MARKDOWN
    if suffix in _TEXT_SUFFIXES:
        return TEXT
    if suffix in _CODE_SUFFIXES:
        return CODE
    return None


@attrs.frozen(kw_only=True)
class Chunk:
    """One searchable piece of a file: lines `start_line`..`end_line` (1-based, inclusive)."""

    start_line: int
    end_line: int
    heading: str | None
    text: str
    #: secrets replaced by a marker in `text` and `heading` (`redaction.redact_chunk`)
    redacted: int = 0


@attrs.frozen
class _Block:
    start: int  # index of the first line (0-based)
    end: int  # index after the last line
    heading: str | None
    section: int  # blocks of one section share this number


def _blocks(lines: list[str], kind: str) -> Iterator[_Block]:
    """Runs of non-blank lines (a Markdown fence stays one run; a heading starts a section)."""
    trail: list[tuple[int, str]] = []
    section = 0
    start: int | None = None
    fence: str | None = None
    heading: str | None = None
    for i, line in enumerate(lines):
        blank = not line.strip()
        if kind == MARKDOWN:
            opened = _FENCE.match(line)
            if fence is not None:
                if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                    fence = None
                continue  # inside a fence: blank lines and '#' lines do not split
            if opened:
                fence = opened.group(1)
            match = None if opened else _HEADING.fullmatch(line)
            if match:
                if start is not None:
                    yield _Block(start, i, heading, section)
                    start = None
                level = len(match.group(1))
                trail = [(lv, t) for lv, t in trail if lv < level]
                title = (match.group(2) or "").strip()
                if title:
                    trail.append((level, title))
                heading = " > ".join(t for _, t in trail) or None
                section += 1
                start = i  # the heading line belongs to its section's first block
                continue
        if blank:
            if start is not None:
                yield _Block(start, i, heading, section)
                start = None
        elif start is None:
            start = i
    if start is not None:
        yield _Block(start, len(lines), heading, section)


def _cut(lines: list[str], block: _Block, max_chars: int) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, text) pieces of a block, each at most `max_chars` long."""
    start = block.start
    size = 0
    for i in range(block.start, block.end):
        length = len(lines[i])
        if length > max_chars:
            if i > start:
                yield start, i - 1, "".join(lines[start:i])
            line = lines[i]
            for at in range(0, length, max_chars):
                piece = line[at : at + max_chars]
                if piece.strip():
                    yield i, i, piece
            start, size = i + 1, 0
            continue
        if size + length > max_chars:
            yield start, i - 1, "".join(lines[start:i])
            start, size = i, 0
        size += length
    if start < block.end:
        yield start, block.end - 1, "".join(lines[start : block.end])


def chunk_text(text: str, kind: str, *, max_chars: int = DEFAULT_CHUNK_CHARS) -> list[Chunk]:
    """The chunks of a decoded file of `kind` (see the module docstring)."""
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    lines = text.splitlines(keepends=True)
    chunks: list[Chunk] = []
    pending: tuple[int, int, str, str | None, int] | None = None  # start, end, text, heading, sec

    def flush() -> None:
        nonlocal pending
        if pending is not None and pending[2].strip():
            start, end, body, heading, _ = pending
            chunks.append(Chunk(start_line=start + 1, end_line=end + 1, heading=heading, text=body))
        pending = None

    for block in _blocks(lines, kind):
        for start, end, body in _cut(lines, block, max_chars):
            if pending is not None and pending[4] == block.section and pending[1] < start:
                gap = "".join(lines[pending[1] + 1 : start])
                merged = pending[2] + gap + body
                if len(merged) <= max_chars:
                    pending = (pending[0], end, merged, pending[3], block.section)
                    continue
            flush()
            pending = (start, end, body, block.heading, block.section)
    flush()
    return chunks


__all__ = [
    "CODE",
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_FILE_BYTES",
    "DEFAULT_INDEX_BYTES",
    "DEFAULT_INDEX_FILES",
    "MARKDOWN",
    "TEXT",
    "Chunk",
    "chunk_text",
    "file_kind",
]
