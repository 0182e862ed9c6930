"""Memory files the TypeScript extension reads exactly, with our metadata in a sidecar (ADR 0077).

The TypeScript extension (chandra447/pi-hermes-memory, `src/store/memory-store.ts`) splits a file
on `"\\n§\\n"` and reads each entry with one regex that knows `created`, `last` and `project64`
only; anything else (our version line, `category=`, `scope=`, `importance=`, `kind=`) becomes
part of an entry's text. No place inside the file is ignored by that reader, so:

- the Markdown file holds every entry in exactly that spelling:
  `text <!-- created=YYYY-MM-DD, last=YYYY-MM-DD[, project64=<base64url>] -->`;
- a sidecar next to it (`.MEMORY.md.meta`) holds the full render in our format (version line,
  every metadata key) and the SHA-256 of the Markdown file it goes with.

Reading joins them back (`join`): when the file is byte-for-byte the one the sidecar describes,
the full render is returned as it was written (the ledger sees our own render); when a person or
the TypeScript extension changed the file, the file is returned under a version line with each
unchanged entry's extra metadata put back, and the hand edit is merged against that version
(ADR 0022). Which version: the sidecar also lists the entries (hashes of text and project) of
the last `KEPT_VERSIONS` renders, and the edit is based on the one it differs least from
(ties: the newer). An editor buffer loaded before the agent's last write therefore merges
against what it showed, and never deletes what it never showed. Pure functions; the file I/O
is `MarkdownFiles`'.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from datetime import date

import attrs
from pi_hermes_memory.adapters.markdown.format import (
    BOM,
    COMMENT_CLOSE,
    COMMENT_OPEN,
    ENTRY_JOINER,
    VERSION_LINE_PREFIX,
    _pairs,
    _split_trailing_comment,
    _Unreadable,
    decode_project64,
    encode_project64,
    parse_document,
    render_version_line,
)
from pi_hermes_memory.domain.memory.markdown_doc import ParsedEntry, VersionLine
from pi_hermes_memory.domain.memory.model import Target

__all__ = [
    "SIDECAR_HEADER",
    "Extension",
    "extend",
    "join",
    "join_edit",
    "read_render",
    "sidecar_header",
    "split",
]

SIDECAR_HEADER = "pi-hermes-memory sidecar v1"
_HEADER = re.compile(
    rf"{re.escape(SIDECAR_HEADER)} sha256=(?P<sha>[0-9a-f]{{64}})\n(?P<versions>[^\n]*)\n"
)
#: renders the sidecar can reconstruct (as steps back from the newest), to find the version a
#: stale buffer was loaded at; a step of one add costs ~20 bytes
KEPT_VERSIONS = 512
#: imported hand edits the sidecar remembers (see `_History.edits`)
KEPT_EDITS = 16
# our separator rule (format._chunks): a line that is only `§` once stripped
_SEPARATOR = re.compile(r"(\n[ \t\r\f\v]*§[ \t\r\f\v]*(?=\n|\Z))")
_SHARED_KEYS = frozenset({"created", "last", "project", "project64"})


def split(
    full: bytes,
    target: Target,
    previous: bytes | None = None,
    edit: tuple[int, list[str]] | None = None,
) -> tuple[bytes, bytes]:
    """(the Markdown file, the sidecar) for one of our renders. The file is what the
    TypeScript reader parses entry for entry; the sidecar carries everything else, the
    render history of `previous` (the sidecar it replaces) for the same store and document,
    and `edit` (`join_edit`'s: the hand edit this render imported)."""
    read = read_render(full, target)
    if read is None:
        # not one of our renders: written as it is (the sidecar then returns it unchanged)
        return full, _sidecar(full, full, None)
    line, entries = read
    blocks = [_shared_block(entry) for entry in entries]
    body = ENTRY_JOINER.join(blocks)
    head = BOM if body.startswith(BOM) else ""
    shared = (head + body + "\n").encode("utf-8") if blocks else b""
    history: _History | None = None
    if line is not None:
        keys = [_key(e) for e in entries]
        history = _History(version=line.version, keys=keys, back=[])
        old = _read_sidecar(previous)
        before = None if old is None else old[1]
        if old is not None and before is not None and _same_document(old[2], line, target):
            if before.version == line.version:
                history = before  # the same version rendered again
            elif before.version < line.version:
                new, was = Counter(keys), Counter(before.keys)
                step = (before.version, list((new - was).elements()), list((was - new).elements()))
                history.back = [step, *before.back][:KEPT_VERSIONS]
                history.edits = before.edits
        if edit is not None:
            history.edits = [*history.edits, edit][-KEPT_EDITS:]
    return shared, _sidecar(shared, full, history)


@attrs.define
class _History:
    """The entry keys of the newest render and, newest first, the steps back to older ones:
    (the version before, keys the next version added, keys it removed)."""

    version: int
    keys: list[str]
    back: list[tuple[int, list[str], list[str]]]
    #: hand-edited files imported lately: (the version each was based on, its entry keys). A
    #: person's editor holds its own last save, which was never a render: a later save from
    #: that buffer is based on the version the first one was
    edits: list[tuple[int, list[str]]] = attrs.Factory(list)

    def to_json(self) -> str:
        data = {
            "v": self.version,
            "keys": self.keys,
            "back": [list(s) for s in self.back],
            "edits": [list(e) for e in self.edits],
        }
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> _History | None:
        try:
            data = json.loads(text)
            back = [(int(v), [str(k) for k in a], [str(k) for k in r]) for v, a, r in data["back"]]
            edits = [(int(v), [str(k) for k in keys]) for v, keys in data.get("edits", [])]
            keys = [str(k) for k in data["keys"]]
            return cls(version=int(data["v"]), keys=keys, back=back, edits=edits)
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def _sidecar(shared: bytes, full: bytes, history: _History | None) -> bytes:
    listing = "{}" if history is None else history.to_json()
    return sidecar_header(hashlib.sha256(shared).hexdigest(), listing) + full


def sidecar_header(digest: str, listing: str) -> bytes:
    """The sidecar's first two lines: the Markdown file's sha256, the render history."""
    return f"{SIDECAR_HEADER} sha256={digest}\n{listing}\n".encode()


@attrs.frozen
class Extension:
    """What `split` would write for a render that only appends entries to the one the sidecar
    holds (ADR 0088), in pieces around the old bytes, which the caller copies (and hashes)
    without holding them: the Markdown file is `old file + shared_tail`; the sidecar is
    `sidecar_header(sha256 of the new file, listing) + line + old render after its version
    line + full_tail`."""

    #: the sha256 of the Markdown file the old sidecar goes with
    old_sha: str
    #: the new render history (the header's second line)
    listing: str
    #: the new version line, with its newline
    line: bytes
    #: appended to the old render's body: the separator and the new entries, in our format
    full_tail: bytes
    #: appended to the Markdown file: the separator and the new entries, in the shared spelling
    shared_tail: bytes


def extend(
    header: bytes,
    old_line: bytes,
    tail: bytes,
    target: Target,
    edit: tuple[int, list[str]] | None = None,
) -> Extension | None:
    """`split`'s output for a render equal to the old one (`old_line`, the version line of the
    render in the sidecar whose first two lines are `header`) with `tail`'s entries appended,
    `tail` being our render of those entries alone under the new version line. None when that
    does not hold or is not checkable from these lines (no history, another document, not a
    later version, no entry to add): render in full. The caller checks the old bytes (the
    file's sha256 is `old_sha`; the old render's is the ledger's) while copying them, and that
    the old render holds an entry (`split` joins the tail to it with the separator)."""
    match = _HEADER.fullmatch(header.decode("utf-8", errors="replace"))
    if match is None or not old_line.endswith(b"\n"):
        return None
    old = parse_document(old_line.decode("utf-8", errors="replace")[:-1], target=target)
    read = read_render(tail, target)
    if old.version_line is None or read is None:
        return None
    line, entries = read
    was_line = old.version_line
    if (
        line is None
        or not entries
        or (was_line.store, was_line.target) != (line.store, line.target)
    ):
        return None
    if not was_line.version < line.version:
        return None
    added = [_key(e) for e in entries]
    listing = None
    if edit is None:
        listing = _extend_listing(match["versions"], was_line.version, line.version, added)
    if listing is None:
        before = _History.from_json(match["versions"])
        if before is None or before.version != was_line.version:
            return None
        step: tuple[int, list[str], list[str]] = (
            before.version,
            _appended_keys(before.keys, added),
            [],
        )
        keys = [*before.keys, *added]
        history = _History(
            version=line.version, keys=keys, back=[step, *before.back][:KEPT_VERSIONS]
        )
        history.edits = before.edits
        if edit is not None:
            history.edits = [*history.edits, edit][-KEPT_EDITS:]
        listing = history.to_json()
    first = tail.index(b"\n") + 1
    separator = ENTRY_JOINER[1:].encode("utf-8")
    shared_body = ENTRY_JOINER.join(_shared_block(entry) for entry in entries)
    return Extension(
        old_sha=match["sha"],
        listing=listing,
        line=tail[:first],
        full_tail=separator + tail[first:],
        shared_tail=separator + (shared_body + "\n").encode("utf-8"),
    )


def _read_sidecar(sidecar: bytes | None) -> tuple[str, _History | None, bytes] | None:
    """(the file's hash, the render history, the full render), or None."""
    if sidecar is None:
        return None
    header = _HEADER.match(sidecar.decode("utf-8", errors="replace"))
    if header is None:
        return None
    # the header is ASCII: its length in characters is its length in bytes
    return header["sha"], _History.from_json(header["versions"]), sidecar[len(header.group(0)) :]


# `_History.to_json`'s spelling, which `_extend_listing` extends as text: keys are 16 hex
# digits, and a step of `back` is the only place `[<version>,[` occurs
_LISTING = re.compile(
    r'\{"v":(?P<v>0|[1-9][0-9]*),"keys":\[(?P<keys>[^\]]*)\],'
    r'"back":\[(?P<back>.*)\],"edits":(?P<edits>\[.*\])\}',
    re.DOTALL,
)
_STEP = re.compile(r"\[(?:0|[1-9][0-9]*),\[")
_HEX_KEY = re.compile(r"[0-9a-f]{16}")


def _extend_listing(listing: str, old: int, new: int, added: list[str]) -> str | None:
    """`_History.to_json()` of the history `split` makes when version `new` appends the
    entries of keys `added` to version `old`, spliced into `listing` (that history's JSON at
    `old`) as text: the keys of every entry and a bulk step are megabytes at 100,000 entries,
    and decoding and encoding them cost more than the rest of an appending render. None when
    `listing` is not in `to_json`'s spelling at `old`, or an added key is already listed (its
    place in the step then depends on the old keys): `split`'s way."""
    found = _LISTING.fullmatch(listing)
    if found is None or int(found["v"]) != old:
        return None
    keys, back = found["keys"], found["back"]
    if keys and not (keys.startswith('"') and keys.endswith('"')):
        return None
    counts = Counter(added)
    if len(counts) > 64 or any(not _HEX_KEY.fullmatch(key) or f'"{key}"' in keys for key in counts):
        return None
    if back and not back.startswith("["):
        return None
    steps = [m.start() for m in _STEP.finditer(back)]
    if back and (not steps or steps[0] != 0):
        return None
    if len(steps) >= KEPT_VERSIONS:  # the oldest steps fall off, as `[:KEPT_VERSIONS]` does
        back = back[: steps[KEPT_VERSIONS - 1] - 1]
    step = json.dumps([old, list(counts.elements()), []], separators=(",", ":"))
    more = ",".join(f'"{key}"' for key in added)
    return (
        f'{{"v":{new},"keys":[{keys + "," if keys else ""}{more}],'
        f'"back":[{step}{"," + back if back else ""}],"edits":{found["edits"]}}}'
    )


def _appended_keys(before: list[str], added: list[str]) -> list[str]:
    """`split`'s "keys the next version added" for keys `before + added`: the elements of
    `Counter(before + added) - Counter(before)` in the order `Counter` yields them (each key
    as often as `added` holds it, keys by their first place in `before + added`), without
    counting `before` (100,000 keys at 100k entries); nothing was removed."""
    counts = Counter(added)
    if not set(counts).isdisjoint(before):
        first: dict[str, int] = {}
        for place, key in enumerate(before):
            if key in counts:
                first.setdefault(key, place)
        ahead = len(before)
        order = sorted(counts, key=lambda k: first.get(k, ahead))  # stable: then `added`'s
        counts = Counter({key: counts[key] for key in order})
    return list(counts.elements())


def read_render(full: bytes, target: Target) -> tuple[VersionLine | None, list[ParsedEntry]] | None:
    """(the version line, each entry's text, dates and project) of one of *our* renders, read
    by its known shape in linear time (a write of a file of thousands of entries must not
    parse it all again); None for anything else, which `split` then writes as it is.
    Equal to what `parse_document` reads of our renders (tests/unit/test_shared_spelling.py).
    """
    try:
        text = full.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removeprefix(BOM)  # the reader drops one, as `frame_document` expects
    line = None
    if text.startswith(f"{COMMENT_OPEN} {VERSION_LINE_PREFIX}"):
        first, _, text = text.partition("\n")
        line = parse_document(first, target=target).version_line
        if line is None:
            return None
    if not text:
        return line, []
    if not text.endswith("\n"):
        return None
    opener, closer = f" {COMMENT_OPEN} ", f" {COMMENT_CLOSE}"
    entries = []
    for block in text[:-1].split(ENTRY_JOINER):
        start = block.rfind(opener)
        if start <= 0 or not block.endswith(closer):
            return None
        pairs = {}
        for part in block[start + len(opener) : -len(closer)].split(", "):
            key, equals, value = part.partition("=")
            if not equals:
                return None
            pairs[key] = value
        try:
            created = date.fromisoformat(pairs["created"])
            last = date.fromisoformat(pairs["last"])
        except (KeyError, ValueError):
            return None
        project = pairs.get("project")
        if "project64" in pairs:
            project = decode_project64(pairs["project64"])
            if project is None:
                return None
        entries.append(ParsedEntry(text=block[:start], created=created, last=last, project=project))
    return line, entries


def _same_document(full: bytes, line: VersionLine, target: Target) -> bool:
    first = full.split(b"\n", 1)[0].decode("utf-8", errors="replace")
    old = parse_document(first, target=target).version_line
    return old is not None and (old.store, old.target) == (line.store, line.target)


def _key(entry: ParsedEntry) -> str:
    """An entry's identity in the version lists: its text and project, hashed."""
    raw = f"{entry.text}\x00{entry.project or ''}".encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def _base_version(
    entries: tuple[ParsedEntry, ...],
    history: _History | None,
    revisions: tuple[tuple[str, str], ...] = (),
) -> int | None:
    """The version an edited file was loaded at: the render its entries differ least from
    (ties: the newer; never the empty render), or the base of an imported hand edit it is
    closer to. A file that *is* an older render, entry for entry, is not an edit of it
    (nothing would have changed): it is read against the newest render, so deleting the
    entries the agent added last works; a stale buffer shows as an older render plus the
    person's changes. When the best is the oldest render the history still reaches and older
    ones were dropped, the buffer may be older still: 0, which merges its entries as additions
    only (nothing is deleted).

    `revisions` are (edited key, original key) pairs: an edited entry the join recognised as
    a revision of one of ours (its created date and project name exactly one). Against a
    render that holds the original and not the edit, the pair counts as one change, not a
    deletion plus an addition (ADR 0093): a person who corrects the entry the agent added
    last edits the newest render, which without this looked like an older render plus an
    addition, and kept both texts."""
    if history is None:
        return None
    have = Counter(_key(e) for e in entries)
    current = Counter(history.keys)
    distance = sum(((current - have) + (have - current)).values())

    def revised(render: Counter[str]) -> int:
        return sum(
            1 for new, old in revisions if render[old] > have[old] and have[new] > render[new]
        )

    best, best_distance = history.version, distance - revised(current)
    newest = best_distance

    def move(key: str, by: int) -> int:
        before = abs(current[key] - have[key])
        current[key] += by
        return abs(current[key] - have[key]) - before

    for version, added, removed in history.back:
        distance += sum(move(k, -1) for k in added) + sum(move(k, +1) for k in removed)
        # ties: the newer render. An empty render (a new document) is no buffer anyone
        # edited: a one-entry file whose text was changed is closer to it than to the render
        # it was loaded at
        if (counted := distance - revised(current)) < best_distance and (
            current.total() or not have
        ):
            best, best_distance = version, counted
    # a file that *is* an older render is read against the newest render (the person deleted
    # the entries the agent added last), unless it is closer to a save of the person's own than
    # to that render: then their editor held that save, and the entries it lacks were never in
    # their buffer (ADR 0116)
    closest = newest if best_distance == 0 else best_distance
    for based_on, keys in reversed(history.edits):
        saved = Counter(keys)
        if sum(((saved - have) + (have - saved)).values()) - revised(saved) < closest:
            return based_on  # a later save of a buffer that held the person's own last save
    if best_distance == 0:
        return history.version
    oldest = history.back[-1][0] if history.back else history.version
    if best == oldest and len(history.back) >= KEPT_VERSIONS:
        return 0
    return best


def join(shared: bytes | None, sidecar: bytes | None, target: Target) -> bytes | None:
    """The document as our parser reads it, from the Markdown file and its sidecar."""
    return join_edit(shared, sidecar, target)[0]


def join_edit(
    shared: bytes | None, sidecar: bytes | None, target: Target
) -> tuple[bytes | None, tuple[int, list[str]] | None]:
    """`join`'s document, and for a hand-edited file (version it is based on, its entry keys),
    for the render that imports it to remember (`split`'s `edit`).

    Without a usable sidecar, or for a file that carries its own version line (the format
    before ADR 0077, or a person pasted one), the file as it is. An emptied file stays empty:
    the importer renders it again rather than reading "every entry deleted"."""
    if shared is None:
        return shared, None
    read = _read_sidecar(sidecar)
    if read is None:
        return shared, None
    digest, history, full = read
    if hashlib.sha256(shared).hexdigest() == digest:
        return full, None
    try:
        text = shared.decode("utf-8")
        full_text = full.decode("utf-8")
    except UnicodeDecodeError:
        return shared, None  # the importer reports the bad bytes; nothing to join
    if not text.strip() or _has_version_line(text):
        return shared, None
    ours = parse_document(full_text, target=target)
    if ours.version_line is None:
        return shared, None
    body = text.removeprefix(BOM)
    parts = _SEPARATOR.split(body)  # chunk, separator, chunk, ...
    chunks = {i: _shared_entry(part, target) for i, part in enumerate(parts) if i % 2 == 0}
    # the entries whose comment a person spelled in our format (`category=`, `scope=`, ...):
    # they keep their own metadata, and are matched after the shared ones only to tell a
    # metadata-only edit or a revision (one change) when choosing the base
    own = {
        i: _own_entry(part, target)
        for i, part in enumerate(parts)
        if i % 2 == 0 and chunks[i] is None
    }
    pending = list(ours.entries)
    # first the entries whose text is unchanged (the same text may stand in two scopes: then
    # its dates, then its order tell them apart); then an unchanged text under another
    # project= that names exactly one remaining entry (a metadata-only edit, which reconcile
    # retags: ADR 0113); then an edited text whose created date and project name exactly one
    # remaining entry (reconcile's rule for a revision)
    passes = (
        (_same_dates, False),
        (_same_text, False),
        (_text_only, True),
        (_same_created, True),
    )
    used: set[int] = set()
    revisions: list[tuple[str, str]] = []
    matched: dict[int, ParsedEntry] = {}
    for group in (chunks, own):
        for key, unique in passes:
            # an index per pass: a file of thousands of entries is joined in linear time
            index: dict[tuple[object, ...], list[int]] = {}
            for j, ours_entry in enumerate(pending):
                if j not in used:
                    index.setdefault(key(ours_entry), []).append(j)
            for i, entry in group.items():
                if entry is None or i in matched:
                    continue
                candidates = [j for j in index.get(key(entry), ()) if j not in used]
                if candidates and (len(candidates) == 1 or not unique):
                    # equal keys (one text in two scopes): the one at the chunk's own place
                    at = i // 2
                    j = min(candidates, key=lambda c: (abs(c - at), c))
                    matched[i] = pending[j]
                    used.add(j)
                    if unique:  # an edited text or project: one change of pending[j]
                        revisions.append((_key(entry), _key(pending[j])))
    # only a chunk in the shared spelling gets our entry's other metadata back
    found = {i: entry for i, entry in matched.items() if chunks.get(i) is not None}
    body = "".join(
        _with_extras(part, _extra_pairs(found.get(i))) if _extra_pairs(found.get(i)) else part
        for i, part in enumerate(parts)
    )
    line = ours.version_line
    edited = parse_document(text, target=target).entries
    base = _base_version(edited, history, tuple(revisions))
    if base is not None and base < line.version:
        line = VersionLine(target=line.target, version=base, store=line.store)
    # after our line, a first entry's own leading U+FEFF is text again (the reader drops
    # one BOM at the very start of a file only)
    joined = (render_version_line(line) + "\n" + body).encode("utf-8")
    return joined, (line.version, [_key(e) for e in edited])


def is_our_render(
    shared: bytes | None, sidecar: bytes | None, edit: tuple[int, list[str]] | None
) -> bool:
    """Whether `shared` (the Markdown file as read; `edit`, what `join_edit` found for it) is
    the render its sidecar describes, not a person's edit (ADR 0115)."""
    if edit is not None or shared is None or not shared.strip():
        return False
    read = _read_sidecar(sidecar)
    return read is not None and hashlib.sha256(shared).hexdigest() == read[0]


def _same_dates(entry: ParsedEntry) -> tuple[object, ...]:
    return (entry.text, entry.project, entry.created, entry.last)


def _same_text(entry: ParsedEntry) -> tuple[object, ...]:
    return (entry.text, entry.project)


def _text_only(entry: ParsedEntry) -> tuple[object, ...]:
    return (entry.text,)


def _same_created(entry: ParsedEntry) -> tuple[object, ...]:
    return (entry.created, entry.project)


def _has_version_line(text: str) -> bool:
    return text.removeprefix(BOM).lstrip().startswith(f"{COMMENT_OPEN} {VERSION_LINE_PREFIX}")


def _shared_block(entry: ParsedEntry) -> str:
    pairs = [f"created={entry.created}", f"last={entry.last}"]
    if entry.project is not None:
        pairs.append(f"project64={encode_project64(entry.project)}")
    return f"{entry.text} {COMMENT_OPEN} {', '.join(pairs)} {COMMENT_CLOSE}"


def _extra_pairs(entry: ParsedEntry | None) -> str:
    """The metadata the TypeScript spelling leaves out, in our render's order."""
    if entry is None:
        return ""
    pairs = []
    if entry.category is not None:
        pairs.append(f"category={entry.category}")
    if entry.namespace is not None:
        pairs.append(f"scope={entry.namespace}")
    if entry.importance is not None:
        pairs.append(f"importance={entry.importance!r}")
    if entry.kind is not None:
        pairs.append(f"kind={entry.kind}")
    pairs.extend(f"{key}={value}" for key, value in entry.extra)
    return ", ".join(pairs)


def _shared_entry(chunk: str, target: Target) -> ParsedEntry | None:
    """The entry `chunk` holds when its comment is in the shared spelling (created, last,
    project64 only); None otherwise (a person's own metadata is left as it is)."""
    try:
        _, comment = _split_trailing_comment(chunk.strip())
        if comment is None or not {key for key, _ in _pairs(comment)} <= _SHARED_KEYS:
            return None
    except _Unreadable:
        return None
    # the reader drops one leading U+FEFF of a file: give it one, so the entry's own survives
    entries = parse_document(BOM + chunk, target=target).entries
    return entries[0] if len(entries) == 1 and entries[0].created is not None else None


def _own_entry(chunk: str, target: Target) -> ParsedEntry | None:
    """The entry `chunk` holds as our parser reads it (a comment in our full spelling), or
    None when it is not exactly one entry with a created date."""
    entries = parse_document(BOM + chunk, target=target).entries
    return entries[0] if len(entries) == 1 and entries[0].created is not None else None


def _with_extras(chunk: str, extra: str) -> str:
    """`chunk` with `extra` pairs added to its trailing comment."""
    stripped = chunk.rstrip()
    inside = stripped[: stripped.rfind(COMMENT_CLOSE)].rstrip()
    return f"{inside}, {extra} {COMMENT_CLOSE}" + chunk[len(stripped) :]
