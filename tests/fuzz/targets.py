"""Fuzz targets: plain functions of bytes that assert invariants (ADR 0009, oss-fuzz layout).

Each `fuzz_*(data: bytes)` decodes the bytes into an input and hands it to a `check_*` function,
which the structured Hypothesis strategies in `test_fuzz_targets.py` also drive directly:

- `fuzz_markdown_parse`: `parse_document` never raises, and every chunk between separator lines
  comes back as an entry with all its non-whitespace text, except a trailing metadata comment.
- `fuzz_event_decode`: `codec.decode(tag, data)` either returns an event of the tag's class that
  survives `encode` -> `decode` unchanged, or raises `CorruptEvent`; nothing else.
- `fuzz_tool_arguments`: `Memory.call_tool("memory", args)` on an in-memory facade never raises,
  always returns `{success: bool, status: str, message: str}`, never hits the "store failed"
  catch-all (with in-memory adapters that can only be a bug) and leaves the store readable.
- `fuzz_memory_search`: `Memory.call_tool("memory_search", args)` on an in-memory facade with
  `InMemorySearchIndex` never raises, always returns `{success, status, message}` with status
  ok, no_results or invalid_arguments, at most `limit` (≤ 20) results, none outside the
  session's scope (other projects, ungranted agent scopes, history unless asked, another
  target or category than asked), and writes nothing.
- `fuzz_config`: `parse_config(raw)` never raises, returns a `Config` whose limits are positive
  and whose project name the Markdown format can write, and its warnings never echo a value.
- `fuzz_anchor_request`: `parse_anchor_request(text)` raises nothing but `AnchorRequestError`
  (with a message and a line number inside the text, or None); an accepted request has a
  limit in 1..100, `start <= end`, non-empty terms, and renders back to an equal request.
- `fuzz_session_line`: `parse_line(raw)` never raises; a turn has an indexed role and strings
  that encode as UTF-8 (storable in SQLite); a header has a non-empty session id.

`KNOWN_BUGS` lists library bugs these targets found that are reported but not fixed yet: while a
name is listed, the target lets exactly that failure pass (so `make test` stays green), and a
strict xfail test in `test_fuzz_targets.py` keeps it visible. Remove the name and the xfail
marker when the bug is fixed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.adapters.markdown.codec import MarkdownFormat
from pi_hermes_memory.adapters.markdown.format import is_safe_project_name, parse_document
from pi_hermes_memory.api import Memory
from pi_hermes_memory.config.settings import Config, ConfigWarning, parse_config
from pi_hermes_memory.domain.history.request import (
    MAX_ANCHOR_LIMIT,
    parse_anchor_request,
    render_anchor_request,
)
from pi_hermes_memory.domain.history.transcripts import (
    INDEXED_ROLES,
    HeaderLine,
    MessageLine,
    SkippedLine,
    parse_line,
)
from pi_hermes_memory.domain.memory.document import stream_for
from pi_hermes_memory.domain.memory.events import EVENT_TYPES, Event, MemoryAdded, MemoryReplaced
from pi_hermes_memory.domain.memory.markdown_doc import ParsedDocument
from pi_hermes_memory.domain.memory.model import (
    GLOBAL_NAMESPACE,
    SEPARATOR_LINE,
    FailureCategory,
    Target,
    clean_entry_text,
)
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.errors import AnchorRequestError, CorruptEvent
from pi_hermes_memory.journal.codec import decode, encode
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.search import DEFAULT_LIMIT
from pi_hermes_memory.search.memory_search import MAX_LIMIT

from tests.support.builders import settings
from tests.support.fakes import SequentialIds, StepClock

__all__ = [
    "CANARY",
    "EVENT_TAGS",
    "KNOWN_BUGS",
    "SEED_TEXTS",
    "check_anchor_request",
    "check_config",
    "check_event_payload",
    "check_markdown_text",
    "check_search_arguments",
    "check_session_line",
    "check_tool_arguments",
    "fuzz_anchor_request",
    "fuzz_config",
    "fuzz_event_decode",
    "fuzz_markdown_parse",
    "fuzz_memory_search",
    "fuzz_session_line",
    "fuzz_tool_arguments",
    "seeded_facade",
    "seeded_search_facade",
]

#: Reported library bugs the targets tolerate until they are fixed (see the module docstring).
#: - codec-non-object-payload: `codec.decode` lets AttributeError escape when the JSON payload
#:   is not an object (`decode("memory.removed.v1", "[]")`).
#: - codec-deep-nesting: `codec.decode` lets RecursionError escape for deeply nested JSON.
#: - config-project-name-unwritable: `parse_config` accepts project names (`"my app"`) that the
#:   Markdown format refuses to write, so the first project/failure write bricks the store.
KNOWN_BUGS: frozenset[str] = frozenset()  # all three found so far are fixed

#: Tags the decoder knows, plus an unknown version and junk.
EVENT_TAGS: tuple[str, ...] = (
    *(cls.TAG for cls in EVENT_TYPES),
    "memory.added.v2",
    "",
)
_TAG_CLASS: dict[str, type[Event]] = {cls.TAG: cls for cls in EVENT_TYPES}

#: Config values carrying this marker must never appear in a warning message.
CANARY = "CANARY-sk-9f4e2c71"

PROJECT = "app"
#: Entries every fuzzed facade starts with, so replace/remove have something to find.
SEED_TEXTS: dict[Target, tuple[str, ...]] = {
    Target.MEMORY: ("The CI runs on GitHub Actions", "Deploys go through the staging cluster"),
    Target.USER: ("Prefers terse commit messages",),
    Target.PROJECT: ("The test command is make test",),
    Target.FAILURE: ("pip install -e failed: old setuptools",),
}


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# --- Markdown parse ---------------------------------------------------------------------------


def fuzz_markdown_parse(data: bytes) -> None:
    check_markdown_text(_text(data))


def _squash(text: str) -> str:
    """The non-whitespace characters of `text` in its stored form (NFC, LF line breaks)."""
    return "".join(clean_entry_text(text).split())


def _spec_chunks(text: str) -> Iterator[str]:
    """The raw chunks between separator lines, as the format defines them (LF only)."""
    lines: list[str] = []
    for line in text.split("\n"):
        if line.strip() == SEPARATOR_LINE:
            yield "\n".join(lines)
            lines = []
        else:
            lines.append(line)
    yield "\n".join(lines)


def _trailing_comment(chunk: str) -> tuple[str, str] | None:
    """(text before, comment body) when the stripped chunk ends in a whole `<!-- ... -->`."""
    stripped = chunk.strip()
    if not stripped.endswith("-->"):
        return None
    start = stripped.rfind("<!--")
    if start < 0 or start + 4 > len(stripped) - 3:
        return None
    return stripped[:start], stripped[start + 4 : -3]


def check_markdown_text(text: str) -> None:
    """`parse_document` keeps every chunk's text except a trailing key=value comment."""
    body_text = text[1:] if text.startswith("\ufeff") else text
    first, _, rest = body_text.partition("\n")
    if first.strip().startswith("<!-- pi-hermes-memory:") and first.strip().endswith("-->"):
        body_text = rest  # our version line (ADR 0022): not an entry
    for target in Target:
        doc = parse_document(text, target=target)
        assert isinstance(doc, ParsedDocument)
        assert all(isinstance(w, str) for w in doc.warnings)
        for entry in doc.entries:
            assert entry.text and entry.text == clean_entry_text(entry.text), entry
        entries = list(doc.entries)
        position = 0
        for chunk in _spec_chunks(body_text):
            full = _squash(chunk)
            if not full:
                continue  # blank chunks are structure
            split = _trailing_comment(chunk)
            current = _squash(entries[position].text) if position < len(entries) else None
            if current == full:
                position += 1
                continue
            assert split is not None, f"chunk text lost: {chunk!r} -> {entries[position:]!r}"
            before, comment = split
            # Only a comment made of key=value parts may be read as metadata and dropped.
            assert all("=" in part for part in comment.split(",")), (chunk, entries[position:])
            if _squash(before):
                assert current == _squash(before), f"chunk text lost: {chunk!r}"
                position += 1
            # else: a metadata-only chunk, skipped with a warning
        assert position == len(entries), f"entries not backed by the text: {entries[position:]!r}"


# --- event decoding ---------------------------------------------------------------------------


def fuzz_event_decode(data: bytes) -> None:
    if not data:
        return
    check_event_payload(EVENT_TAGS[data[0] % len(EVENT_TAGS)], _text(data[1:]))


def _json_object(payload: str) -> bool:
    try:
        return isinstance(json.loads(payload), dict)
    except (ValueError, RecursionError):
        return False


def check_event_payload(tag: str, payload: str, *, known_bugs: frozenset[str] = KNOWN_BUGS) -> None:
    """`decode` returns a round-tripping event of the tag's class, or raises CorruptEvent."""
    try:
        event = decode(tag, payload)
    except CorruptEvent:
        return
    except AttributeError:
        if "codec-non-object-payload" in known_bugs and not _json_object(payload):
            return
        raise
    except RecursionError:
        if "codec-deep-nesting" in known_bugs:
            return
        raise
    assert type(event) is _TAG_CLASS[tag], (tag, event)
    again_tag, again = encode(event)
    assert again_tag == tag
    assert decode(again_tag, again) == event


# --- tool arguments ---------------------------------------------------------------------------


class RecordingLogger:
    """A structlog-shaped logger that keeps `error` calls (with the active exception)."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, dict[str, Any], BaseException | None]] = []

    def error(self, event: str, **kw: Any) -> None:
        self.errors.append((event, kw, sys.exc_info()[1]))

    def _ignore(self, event: str, **kw: Any) -> None:
        pass

    warning = info = debug = exception = _ignore


@attrs.frozen
class Facade:
    memory: Memory
    storage: InMemoryStorage
    markdown: InMemoryMarkdown
    log: RecordingLogger

    def versions(self) -> dict[Target, int]:
        with self.storage.transaction() as uow:
            return {t: uow.journal.version(stream_for(t)) for t in Target}


_SEED_AT = datetime(2026, 7, 29, 12, 0, tzinfo=UTC)


def _seed_added(
    target: Target,
    version: int,
    entry_id: str,
    text: str,
    *,
    project: str | None = None,
    category: FailureCategory | None = None,
    namespace: str | None = None,
) -> MemoryAdded:
    return MemoryAdded(
        stream=stream_for(target),
        version=version,
        at=_SEED_AT,
        entry_id=entry_id,
        target=target,
        text=text,
        project=project,
        category=category,
        created=_SEED_AT.date(),
        last_referenced=_SEED_AT.date(),
        namespace=namespace,
    )


def _seed_events() -> dict[Target, list[Event]]:
    return {
        target: [
            _seed_added(
                target,
                i,
                f"seed-{target.value}-{i}",
                text,
                project=PROJECT if target in (Target.PROJECT, Target.FAILURE) else None,
                category=FailureCategory.TOOL_QUIRK if target is Target.FAILURE else None,
            )
            for i, text in enumerate(texts, 1)
        ]
        for target, texts in SEED_TEXTS.items()
    }


def _facade(
    journal: dict[Target, list[Event]],
    scope: SessionScope | None = None,
    *,
    search: bool = False,
) -> Facade:
    storage, markdown, log = InMemoryStorage(), InMemoryMarkdown(), RecordingLogger()
    with storage.transaction() as uow:
        for target, events in journal.items():
            uow.journal.append(stream_for(target), 0, events)
            uow.projection.apply(events)
    base = settings(PROJECT)
    service = MemoryService(
        storage=storage,
        markdown=markdown,
        fmt=MarkdownFormat(),
        clock=StepClock(),
        ids=SequentialIds("import-"),
        settings=base if scope is None else attrs.evolve(base, scope=scope),
        logger=log,
    )
    memory = Memory(
        service=service,
        storage=storage,
        clock=StepClock(),
        ids=SequentialIds("m"),
        logger=log,
        search_index=InMemorySearchIndex(storage) if search else None,
    )
    return Facade(memory, storage, markdown, log)


def seeded_facade() -> Facade:
    """An in-memory `Memory` (project "app") holding `SEED_TEXTS`, logging into a recorder."""
    return _facade(_seed_events())


#: The agent scope the search facade's session may use (besides global), and one it may not.
SEARCH_AGENT, FOREIGN_AGENT = "agent:app-bot", "agent:other-bot"
OTHER_PROJECT = "other"
#: Rows the search facade holds besides `SEED_TEXTS`: history, CJK, namespaced rows (granted
#: and not), another project's rows and a global failure, so every scope rule is exercised.
SEARCH_TEXTS: tuple[str, ...] = (
    "The CI runs on Buildkite now",
    "项目构建命令是 make build，发布前要先跑类型检查",
    "Agent notes: the CI token lives in the vault",
    "Other agent notes: the CI secrets live in 1password",
    "The test command of other is make check",
    "pip failed behind the corporate proxy",
    "pip failed without network: use the wheel cache",
)


def seeded_search_facade() -> Facade:
    """`seeded_facade` plus `SEARCH_TEXTS` and an `InMemorySearchIndex`; the session (project
    "app", no sharing) may use the global layer and `SEARCH_AGENT`."""
    journal = _seed_events()
    memory, project, failure = (journal[t] for t in (Target.MEMORY, Target.PROJECT, Target.FAILURE))
    ci, cjk, mine, foreign, other_test, other_pip, global_pip = SEARCH_TEXTS
    memory.append(
        MemoryReplaced(
            stream=stream_for(Target.MEMORY),
            version=len(memory) + 1,
            at=_SEED_AT,
            old_id="seed-memory-1",
            new_id="search-memory-ci",
            text=ci,
            project=None,
            category=None,
            created=_SEED_AT.date(),
            last_referenced=_SEED_AT.date(),
        )
    )
    for entry_id, text, namespace in (
        ("search-memory-cjk", cjk, None),
        ("search-memory-mine", mine, SEARCH_AGENT),
        ("search-memory-foreign", foreign, FOREIGN_AGENT),
    ):
        memory.append(
            _seed_added(Target.MEMORY, len(memory) + 1, entry_id, text, namespace=namespace)
        )
    project.append(
        _seed_added(
            Target.PROJECT,
            len(project) + 1,
            "search-project-other",
            other_test,
            project=OTHER_PROJECT,
        )
    )
    for entry_id, text, owner, category in (
        ("search-failure-other", other_pip, OTHER_PROJECT, FailureCategory.FAILURE),
        ("search-failure-global", global_pip, None, FailureCategory.CORRECTION),
    ):
        failure.append(
            _seed_added(
                Target.FAILURE, len(failure) + 1, entry_id, text, project=owner, category=category
            )
        )
    scope = SessionScope(project=PROJECT, access=frozenset({GLOBAL_NAMESPACE, SEARCH_AGENT}))
    return _facade(journal, scope, search=True)


def fuzz_tool_arguments(data: bytes) -> None:
    try:
        arguments = json.loads(_text(data))
    except (ValueError, RecursionError):
        return  # not JSON: the host's JSON layer rejects it before the tool runs
    check_tool_arguments(arguments)


def _check_result_shape(result: object, where: str = "result") -> None:
    assert isinstance(result, dict), f"{where} is {type(result).__name__}"
    assert isinstance(result.get("success"), bool), (where, result)
    assert isinstance(result.get("status"), str) and result["status"], (where, result)
    assert isinstance(result.get("message"), str) and result["message"], (where, result)
    json.dumps(result)  # the result must be JSON-serialisable for the agent framework


def check_tool_arguments(arguments: object) -> None:
    """`call_tool` answers every argument value with a well-formed result and no crash."""
    facade = seeded_facade()
    result = facade.memory.call_tool("memory", arguments)
    _check_result_shape(result)
    for item in result.get("results", ()):
        _check_result_shape(item, f"results[{item.get('index')}]")
    if facade.log.errors:
        event, kw, exc = facade.log.errors[0]
        raise AssertionError(f"call_tool hit its catch-all ({event}, {kw})") from exc
    assert result["status"] != "error", result
    # The store stays readable, and the Markdown it wrote reads back as the same state: no
    # spurious "hand edit" is imported when the files are read again.
    versions = facade.versions()
    for target in Target:
        texts = [e.text for e in facade.memory.entries(target)]
        data = facade.markdown.files.get(target)
        if data is not None:
            parsed = parse_document(data.decode("utf-8"), target=target)
            assert [e.text for e in parsed.entries] == texts, (target, data)
    assert facade.versions() == versions, "re-reading the Markdown imported a change"


# --- memory_search ----------------------------------------------------------------------------

SEARCH_STATUSES = frozenset({"ok", "no_results", "invalid_arguments"})
_HIT_KEYS = {"id", "target", "project", "category", "text", "created", "last_referenced", "score"}


def fuzz_memory_search(data: bytes) -> None:
    try:
        arguments = json.loads(_text(data))
    except (ValueError, RecursionError):
        return  # not JSON: the host's JSON layer rejects it before the tool runs
    check_search_arguments(arguments)


def _asked_limit(arguments: object) -> int:
    """The limit a valid call ran with (validation refuses anything else)."""
    if isinstance(arguments, dict):
        limit = arguments.get("limit", DEFAULT_LIMIT)
        if isinstance(limit, int | float) and not isinstance(limit, bool):
            return min(int(limit), MAX_LIMIT)
    return DEFAULT_LIMIT


def _check_hit(hit: object, arguments: dict[str, Any]) -> None:
    """One result row: its shape, and that it lies inside what the session and call allow."""
    assert isinstance(hit, dict) and set(hit) >= _HIT_KEYS, hit
    target = Target(hit["target"])
    assert isinstance(hit["text"], str) and hit["text"], hit
    assert isinstance(hit["score"], int | float) and not isinstance(hit["score"], bool), hit
    if target is Target.PROJECT:
        assert hit["project"] == PROJECT, f"another project's row leaked: {hit}"
    elif target is Target.FAILURE:
        assert hit["project"] in (PROJECT, None), f"another project's failure leaked: {hit}"
        assert hit["category"] in {c.value for c in FailureCategory}, hit
    else:
        assert hit["project"] is None and hit["category"] is None, hit
    assert hit.get("scope", SEARCH_AGENT) == SEARCH_AGENT, f"an ungranted scope leaked: {hit}"
    if "scope" in hit:
        assert target is Target.MEMORY, hit
    if arguments.get("include_superseded") is not True:
        assert "superseded_by" not in hit, f"history returned without include_superseded: {hit}"
    elif "superseded_by" in hit:
        assert isinstance(hit["superseded_by"], str) and isinstance(hit["superseded_at"], str)
    if arguments.get("target") == Target.MEMORY.value:
        # target memory: the global layer and the current project's rows (ADR 0027)
        assert target in (Target.MEMORY, Target.PROJECT), (arguments, hit)
    elif arguments.get("target") is not None:
        assert hit["target"] == arguments["target"], (arguments, hit)
    if arguments.get("category") is not None:
        assert target is Target.FAILURE and hit["category"] == arguments["category"], hit


def check_search_arguments(arguments: object) -> None:
    """`call_tool("memory_search", …)` answers every argument value well, in scope, read-only."""
    facade = seeded_search_facade()
    versions = facade.versions()
    result = facade.memory.call_tool("memory_search", arguments)
    _check_result_shape(result)
    if facade.log.errors:
        event, kw, exc = facade.log.errors[0]
        raise AssertionError(f"memory_search hit its catch-all ({event}, {kw})") from exc
    status = result["status"]
    assert status in SEARCH_STATUSES, result
    assert result["success"] is (status != "invalid_arguments"), result
    if status == "invalid_arguments":
        assert "results" not in result, result
    else:
        assert isinstance(arguments, dict), "a search ran without an arguments object"
        results = result["results"]
        assert isinstance(results, list), result
        assert (status == "ok") is bool(results), result
        assert len(results) <= min(_asked_limit(arguments), MAX_LIMIT), result
        # a row is a version: versions of one memory share its `id` (ADR 0074)
        rows = {hit["version_id"] for hit in results}
        assert len(rows) == len(results), "a row came back twice"
        for hit in results:
            _check_hit(hit, arguments)
    assert facade.versions() == versions, "memory_search appended events"


# --- configuration ----------------------------------------------------------------------------


def fuzz_config(data: bytes) -> None:
    try:
        raw = json.loads(_text(data))
    except (ValueError, RecursionError):
        return  # load_config turns unreadable JSON into defaults plus one warning
    check_config(raw)


def _identity(path: Path) -> Path:
    return path


def _unresolvable(path: Path) -> Path:
    raise OSError("permission denied")


def check_config(raw: object, *, known_bugs: frozenset[str] = KNOWN_BUGS) -> None:
    """`parse_config` never raises and always returns a usable `Config`."""
    for physical in (_identity, _unresolvable):
        config, warnings = parse_config(
            raw,
            agent_root=Path("/home/u/.pi/agent"),
            cwd=Path("/home/u/src/shop"),
            environ={"HOME": "/home/u"},
            physical=physical,
        )
        assert isinstance(config, Config)
        assert isinstance(warnings, tuple)
        for warning in warnings:
            assert isinstance(warning, ConfigWarning)
            assert isinstance(warning.field, str) and warning.field
            assert isinstance(warning.message, str) and warning.message
            assert CANARY not in warning.message, warning
        assert min(config.memory_char_limit, config.user_char_limit) >= 1
        assert config.project_char_limit >= 1 and config.nudge_interval >= 1
        assert config.memory_dir.is_absolute() and config.projects_memory_dir.is_absolute()
        assert config.memory_dir != config.projects_memory_dir
        project = config.project
        if project is not None and not is_safe_project_name(project):
            if "config-project-name-unwritable" in known_bugs:
                continue
            raise AssertionError(f"project {project!r} cannot be written to the Markdown files")


# --- session history parsers (issue 5) --------------------------------------------------------


def fuzz_anchor_request(data: bytes) -> None:
    check_anchor_request(_text(data))


def check_anchor_request(text: str) -> None:
    """Only `AnchorRequestError` escapes; an accepted request is sane and round-trips."""
    try:
        request = parse_anchor_request(text)
    except AnchorRequestError as exc:
        assert str(exc), "an error without a message"
        lines = len(text.splitlines()) or 1
        assert exc.line is None or 1 <= exc.line <= lines + 1, (exc.line, lines)
        return
    assert 1 <= request.limit <= MAX_ANCHOR_LIMIT
    if request.start is not None and request.end is not None:
        assert request.start <= request.end
    for term in (*request.all_terms, *request.any_terms, *request.exclude_terms):
        assert term and term == term.strip(), repr(term)
    assert parse_anchor_request(render_anchor_request(request)) == request


def fuzz_session_line(data: bytes) -> None:
    check_session_line(data)


def check_session_line(raw: bytes) -> None:
    """`parse_line` classifies any bytes without raising; what it keeps is storable."""
    parsed = parse_line(raw)
    if isinstance(parsed, MessageLine):
        assert parsed.role in INDEXED_ROLES, parsed.role
        for value in (parsed.text, *parsed.tools, parsed.message_id or ""):
            value.encode("utf-8")  # no lone surrogates: SQLite would refuse them
    elif isinstance(parsed, HeaderLine):
        assert parsed.session_id, "a header without a session id"
        parsed.session_id.encode("utf-8")
        (parsed.cwd or "").encode("utf-8")
    else:
        assert isinstance(parsed, SkippedLine), type(parsed)
