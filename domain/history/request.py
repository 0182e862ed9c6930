"""The Markdown request of `session_search`'s `anchors` variant: parsing and rendering.

With `sessionSearch.variant: "anchors"` the tool takes one small Markdown document and answers
with JSONL source ranges. This module turns that document into an `AnchorRequest` value, or
raises one `AnchorRequestError` whose message names the line, what is wrong and what is
allowed, so an LLM can fix its request in one retry. It is pure: no clock, no I/O.

The request::

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

Lines
    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``; line numbers in errors are 1-based lines of the
    text as given (a fence counts). Blank lines are ignored anywhere; surrounding whitespace on
    every line is ignored (items may be indented). Every other line is a field (``name: value``)
    or a list item (``- term`` or ``* term``: the marker, at least one space, the term); anything
    else is an error.
Fence
    The whole request may be wrapped in a Markdown code fence (LLMs do that): a first non-blank
    line of three or more backticks or tildes, optionally with an info string (```` ```markdown
    ````), and a last non-blank line of at least as many of the same character. An opening fence
    without its closing fence is an error. Text outside the fence is not allowed.
Fields
    ``from``, ``to``, ``cwd``, ``limit`` take a value on their line; ``all``, ``any``,
    ``exclude`` are list fields whose terms follow as items on the next lines (an inline value,
    ``all: foo``, is an error; an empty section is allowed). Names are case-insensitive and may
    have spaces before the colon. Every field may appear at most once; unknown names are errors.
    List items belong to the list field above them; an item before any field, or after a value
    field, is an error. Every field is optional, but a request needs at least one constraint: a
    term under ``all`` or ``any``, or a ``from``, ``to`` or ``cwd`` (``exclude`` alone, or only
    a ``limit``, would list everything).
Dates and times (``from``, ``to``)
    ``YYYY-MM-DD``, or ``YYYY-MM-DD HH:MM``, ``YYYY-MM-DD HH:MM:SS`` or
    ``YYYY-MM-DD HH:MM:SS.ffffff`` (1 to 6 fraction digits), with ``T`` instead of the space (or
    several spaces), and after a time an optional zone: ``Z``, ``UTC``, ``±HH:MM`` or ``±HHMM``
    (spaces before it allowed; ``T``, ``Z`` and ``UTC`` in any case). Two-digit fields only.
    Without a zone a time is UTC; a date alone is a UTC day (no zone after a bare date).
    Values are converted to UTC. A value stands for the whole period its precision names:
    ``from`` is the start of that period and ``to`` its end, inclusive, so ``to: 2026-01-07`` is
    ``2026-01-07T23:59:59.999999Z`` and ``to: 2026-01-07 18:00`` takes the whole minute
    (``18:00:59.999999``); a value with a fraction of a second is that exact instant (so the
    ``startTime``/``endTime`` of earlier results can be pasted back). ``from`` after ``to`` is an
    error.
``cwd``
    The rest of the line, trimmed, with one pair of surrounding quotes or backticks removed and
    trailing slashes (and the spaces between them) dropped (``/home/me/proj/`` →
    ``/home/me/proj``; ``/`` stays ``/``). How it matches session cwds is the search's business.
``limit``
    A whole number of ASCII digits from 1 to `MAX_ANCHOR_LIMIT` (100); default
    `DEFAULT_ANCHOR_LIMIT` (50).
Terms
    The item text, trimmed; one pair of matching surrounding quotes (``"…"``, ``'…'`` or
    backticks) is removed and the inside trimmed again, so ``- "two words"`` and
    ``- two words`` are the same term: quotes are optional, never needed (a term is the whole
    item text, spaces included; a term of several words is meant as a phrase, which the search
    decides how to match). An empty term is an error. A term has at most `MAX_TERM_CHARS`
    characters and a list at most `MAX_TERMS` terms. A repeated term in one list (compared
    case-insensitively, `str.casefold`) is dropped silently, the first spelling kept. A term
    under ``exclude`` that is also under ``all`` or ``any`` is an error (the request would
    contradict itself).

`render_anchor_request` writes a request back as Markdown that parses to an equal value (used
by property tests and in documentation).
"""

from __future__ import annotations

import calendar
import datetime
import re

import attrs
from pi_hermes_memory.domain.errors import AnchorRequestError

#: The number of ranges returned when the request has no `limit:`.
DEFAULT_ANCHOR_LIMIT = 50
#: The largest `limit:` a request may ask for.
MAX_ANCHOR_LIMIT = 100
#: The most terms one list field (`all`, `any`, `exclude`) may hold.
MAX_TERMS = 32
#: The most characters one term may have.
MAX_TERM_CHARS = 200

_VALUE_FIELDS = ("from", "to", "cwd", "limit")
_LIST_FIELDS = ("all", "any", "exclude")
_FIELDS = _VALUE_FIELDS + _LIST_FIELDS
_FIELD_LIST = ", ".join(_FIELDS)
_DATE_FORMS = (
    "YYYY-MM-DD, YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS[.ffffff] (T may replace the space), "
    "optionally followed by Z, UTC or ±HH:MM; without a zone the time is UTC"
)
_QUOTES = "\"'`"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FIELD_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)\s*:(.*)")
_FENCE = re.compile(r"(`{3,}|~{3,})([^`]*)")
_LIMIT = re.compile(r"[0-9]+", re.ASCII)
_TRAILING_SLASHES = re.compile(r"[/\s]+$")
_DATETIME = re.compile(
    r"""
    (?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})
    (?:
        (?:T|\ +)
        (?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})
        (?::(?P<second>[0-9]{2})(?:\.(?P<fraction>[0-9]{1,6}))?)?
        \ *
        (?P<zone>Z|UTC|(?P<sign>[+-])(?P<zh>[0-9]{2}):?(?P<zm>[0-9]{2}))?
    )?
    """,
    re.VERBOSE | re.IGNORECASE | re.ASCII,
)
_SHOW_CHARS = 60


@attrs.frozen(kw_only=True)
class AnchorRequest:
    """A parsed `anchors` request: the constraints a session range must meet.

    `start` and `end` are timezone-aware UTC bounds, both inclusive; `None` means unbounded.
    Terms are trimmed, non-empty and unique per list (case-insensitively); `exclude_terms`
    shares no term with `all_terms` or `any_terms`.
    """

    start: datetime.datetime | None = None
    end: datetime.datetime | None = None
    cwd: str | None = None
    limit: int = DEFAULT_ANCHOR_LIMIT
    all_terms: tuple[str, ...] = ()
    any_terms: tuple[str, ...] = ()
    exclude_terms: tuple[str, ...] = ()


def parse_anchor_request(text: str) -> AnchorRequest:
    """Parse the Markdown request of the `anchors` variant (grammar in the module docstring).

    Raises `AnchorRequestError` (and nothing else) when the text is not a valid request.
    """
    lines = list(enumerate(_LINE_BREAK.split(text), start=1))
    body = _unfence([(n, line.strip()) for n, line in lines if line.strip()])
    if not body:
        raise AnchorRequestError(
            "the request is empty; write fields such as 'from: 2026-01-05' and list sections "
            "such as 'all:' followed by '- term' lines"
        )
    parser = _Parser()
    for number, line in body:
        parser.feed(number, line)
    return parser.finish()


def render_anchor_request(request: AnchorRequest) -> str:
    """The Markdown request that parses back to `request` (empty fields and a default limit
    are left out). Dates use the shortest form that denotes the same bound."""
    out: list[str] = []
    if request.start is not None:
        out.append(f"from: {_render_start(request.start)}")
    if request.end is not None:
        out.append(f"to: {_render_end(request.end)}")
    if request.cwd is not None:
        out.append(f"cwd: {_quote_if_needed(request.cwd)}")
    if request.limit != DEFAULT_ANCHOR_LIMIT:
        out.append(f"limit: {request.limit}")
    for name, terms in (
        ("all", request.all_terms),
        ("any", request.any_terms),
        ("exclude", request.exclude_terms),
    ):
        if terms:
            out.append(f"{name}:")
            out.extend(f"- {_quote_if_needed(term)}" for term in terms)
    return "\n".join(out) + "\n"


# --- parsing -------------------------------------------------------------------------------


def _unfence(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Drop a Markdown fence around the whole request (non-blank, stripped lines)."""
    if not body:
        return body
    first_number, first = body[0]
    opening = _FENCE.fullmatch(first)
    if opening is None:
        return body
    marker = opening.group(1)
    if len(body) > 1:
        last = body[-1][1]
        if len(last) >= len(marker) and last == last[0] * len(last) and last[0] == marker[0]:
            return body[1:-1]
    raise AnchorRequestError(
        f"the {marker} fence opened here is never closed; end the request with a {marker} line, "
        "or send it without a fence",
        line=first_number,
    )


@attrs.define
class _Parser:
    """Line-by-line state: the fields seen so far and the list the next item belongs to."""

    seen: dict[str, int] = attrs.field(factory=dict)
    start: datetime.datetime | None = None
    end: datetime.datetime | None = None
    cwd: str | None = None
    limit: int = DEFAULT_ANCHOR_LIMIT
    terms: dict[str, list[tuple[int, str]]] = attrs.field(factory=dict)
    current: str | None = None

    def feed(self, number: int, line: str) -> None:
        if line[0] in "-*":
            self._item(number, line)
            return
        match = _FIELD_LINE.fullmatch(line)
        if match is None:
            raise AnchorRequestError(
                f"{_show(line)} is neither a field ('name: value') nor a list item ('- term'); "
                f"the fields are {_FIELD_LIST}, and terms go under all:, any: or exclude: as "
                "'- term' lines",
                line=number,
            )
        name, value = match.group(1).lower(), match.group(2).strip()
        if name not in _FIELDS:
            raise AnchorRequestError(
                f"unknown field {_show(match.group(1) + ':')}; the fields are {_FIELD_LIST}",
                line=number,
            )
        if name in self.seen:
            raise AnchorRequestError(
                f"duplicate field {name}: (already given on line {self.seen[name]}); "
                "each field may appear once",
                line=number,
            )
        self.seen[name] = number
        if name in _LIST_FIELDS:
            if value:
                raise AnchorRequestError(
                    f"{name}: is a list field and takes no value on its line (got "
                    f"{_show(value)}); put each term on its own line below it as '- term'",
                    line=number,
                )
            self.terms[name] = []
            self.current = name
            return
        self.current = None
        if not value:
            raise AnchorRequestError(f"{name}: has no value; {_VALUE_HELP[name]}", line=number)
        if name == "from":
            self.start = _parse_bound(number, name, value, end=False)
        elif name == "to":
            self.end = _parse_bound(number, name, value, end=True)
        elif name == "cwd":
            self.cwd = _parse_cwd(number, value)
        else:
            self.limit = _parse_limit(number, value)

    def _item(self, number: int, line: str) -> None:
        rest = line[1:]
        if rest and not rest[0].isspace():
            raise AnchorRequestError(
                f"{_show(line)} is not a list item: write the marker, a space and the term "
                f"('{line[0]} term'), under all:, any: or exclude:",
                line=number,
            )
        if self.current is None:
            if not self.seen:
                where = "before any field"
            else:
                last = max(self.seen, key=self.seen.__getitem__)
                where = f"after {last}: (line {self.seen[last]}), which takes no items"
            raise AnchorRequestError(
                f"list item {_show(line)} is outside a list section ({where}); "
                "list items belong under all:, any: or exclude:",
                line=number,
            )
        term = _unquote(rest.strip())
        if not term:
            raise AnchorRequestError(
                f"empty term under {self.current}:; every '- ' item needs a word or phrase",
                line=number,
            )
        if len(term) > MAX_TERM_CHARS:
            raise AnchorRequestError(
                f"term under {self.current}: has {len(term)} characters; a term has at most "
                f"{MAX_TERM_CHARS}",
                line=number,
            )
        terms = self.terms[self.current]
        key = term.casefold()
        if any(key == seen.casefold() for _, seen in terms):
            return
        if len(terms) >= MAX_TERMS:
            raise AnchorRequestError(
                f"too many terms under {self.current}:; a list has at most {MAX_TERMS} terms",
                line=number,
            )
        terms.append((number, term))

    def finish(self) -> AnchorRequest:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise AnchorRequestError(
                f"to: ({_iso(self.end)}) is before from: on line {self.seen['from']} "
                f"({_iso(self.start)}); from: must not be after to:",
                line=self.seen["to"],
            )
        wanted = {
            term.casefold(): name for name in ("all", "any") for _, term in self.terms.get(name, ())
        }
        for number, term in self.terms.get("exclude", ()):
            if term.casefold() in wanted:
                raise AnchorRequestError(
                    f"{_show(term)} is under both exclude: and {wanted[term.casefold()]}:; "
                    "a term cannot be both wanted and excluded",
                    line=number,
                )
        all_terms, any_terms, exclude_terms = (
            tuple(term for _, term in self.terms.get(name, ())) for name in _LIST_FIELDS
        )
        constrained = (self.start, self.end, self.cwd) != (None, None, None)
        if not (all_terms or any_terms or constrained):
            raise AnchorRequestError(
                "the request has no constraint; give at least one term under all: or any:, "
                "or a from:, to: or cwd: field"
            )
        return AnchorRequest(
            start=self.start,
            end=self.end,
            cwd=self.cwd,
            limit=self.limit,
            all_terms=all_terms,
            any_terms=any_terms,
            exclude_terms=exclude_terms,
        )


def _parse_limit(number: int, value: str) -> int:
    digits = value.lstrip("0") if _LIMIT.fullmatch(value) else None
    if digits is not None and len(digits) <= 3 and 1 <= int(digits or "0") <= MAX_ANCHOR_LIMIT:
        return int(digits)
    raise AnchorRequestError(
        f"limit: must be a whole number from 1 to {MAX_ANCHOR_LIMIT} (default "
        f"{DEFAULT_ANCHOR_LIMIT}); got {_show(value)}",
        line=number,
    )


def _parse_cwd(number: int, value: str) -> str:
    quoted = _unquote(value)
    cwd = _TRAILING_SLASHES.sub("", quoted)
    if cwd:
        return cwd
    if "/" in quoted:
        return "/"
    raise AnchorRequestError(f"cwd: has no value; {_VALUE_HELP['cwd']}", line=number)


def _parse_bound(number: int, name: str, value: str, *, end: bool) -> datetime.datetime:
    """A date/time as an aware UTC datetime: the start (`end=False`) or the inclusive end of
    the period its precision names, or the exact instant when it has a fraction."""

    def fail(why: str = "") -> AnchorRequestError:
        return AnchorRequestError(
            f"{name}: {_show(value)} is not a date/time{why}; use {_DATE_FORMS}", line=number
        )

    match = _DATETIME.fullmatch(value)
    if match is None:
        raise fail()
    g = match.groupdict()
    zone = datetime.UTC
    if g["sign"]:
        hours, minutes = int(g["zh"]), int(g["zm"])
        if hours > 23 or minutes > 59:
            raise fail(f" (the zone offset {g['zone']} is out of range)")
        offset = datetime.timedelta(hours=hours, minutes=minutes)
        zone = datetime.timezone(-offset if g["sign"] == "-" else offset)
    year, month, day = int(g["year"]), int(g["month"]), int(g["day"])
    hour, minute, second = int(g["hour"] or 0), int(g["minute"] or 0), int(g["second"] or 0)
    problem = _calendar_problem(year, month, day, hour, minute, second)
    if problem:
        raise fail(f" ({problem})")
    fraction = int((g["fraction"] or "0").ljust(6, "0"))
    moment = datetime.datetime(year, month, day, hour, minute, second, fraction, tzinfo=zone)
    step = datetime.timedelta(0)
    if end and g["fraction"] is None:
        if g["hour"] is None:
            step = datetime.timedelta(days=1)
        elif g["second"] is None:
            step = datetime.timedelta(minutes=1)
        else:
            step = datetime.timedelta(seconds=1)
        step -= datetime.timedelta(microseconds=1)
    try:
        return (moment + step).astimezone(datetime.UTC)
    except OverflowError:
        raise fail(" (it is outside the years 1 to 9999 in UTC)") from None


def _calendar_problem(
    year: int, month: int, day: int, hour: int, minute: int, second: int
) -> str | None:
    """Why these fields name no moment (own words, stable across Python versions), or None."""
    if year < 1:
        return "there is no year 0000"
    if not 1 <= month <= 12:
        return f"month {month:02d} is not 01 to 12"
    days = calendar.monthrange(year, month)[1]
    if not 1 <= day <= days:
        return f"day {day:02d} is not 01 to {days} in {year:04d}-{month:02d}"
    for unit, value, top in (("hour", hour, 23), ("minute", minute, 59), ("second", second, 59)):
        if value > top:
            return f"{unit} {value:02d} is not 00 to {top}"
    return None


_VALUE_HELP = {
    "from": f"give a date/time: {_DATE_FORMS}",
    "to": f"give a date/time: {_DATE_FORMS}",
    "cwd": "give the working directory of the sessions, e.g. 'cwd: /home/me/proj'",
    "limit": f"give a whole number from 1 to {MAX_ANCHOR_LIMIT}, or leave the field out "
    f"for {DEFAULT_ANCHOR_LIMIT}",
}


def _unquote(text: str) -> str:
    """Remove one pair of matching surrounding quotes or backticks, then trim again."""
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] == text[0]:
        return text[1:-1].strip()
    return text


def _show(text: str) -> str:
    """A value quoted for an error message, shortened so a huge line cannot flood it."""
    if len(text) > _SHOW_CHARS:
        text = text[: _SHOW_CHARS - 1] + "…"
    return repr(text)


def _iso(moment: datetime.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# --- rendering ------------------------------------------------------------------------------


def _quote_if_needed(text: str) -> str:
    """Wrap a term or cwd in quotes when parsing would otherwise strip its own quotes."""
    if _unquote(text) != text:
        return f'"{text}"'
    return text


def _render_start(moment: datetime.datetime) -> str:
    utc = moment.astimezone(datetime.UTC)
    if utc.microsecond:
        return _format(utc, "seconds.fraction")
    if utc.second:
        return _format(utc, "seconds")
    if utc.hour or utc.minute:
        return _format(utc, "minutes")
    return _format(utc, "date")


def _render_end(moment: datetime.datetime) -> str:
    utc = moment.astimezone(datetime.UTC)
    if utc.microsecond != 999_999:
        return _format(utc, "seconds.fraction")
    if utc.second != 59:
        return _format(utc, "seconds")
    if utc.hour != 23 or utc.minute != 59:
        return _format(utc, "minutes")
    return _format(utc, "date")


def _format(utc: datetime.datetime, precision: str) -> str:
    """A UTC datetime in one of the accepted forms (strftime does not pad years below 1000)."""
    date = f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
    if precision == "date":
        return date
    if precision == "minutes":
        return f"{date} {utc.hour:02d}:{utc.minute:02d}"
    seconds = f"{date}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    if precision == "seconds":
        return seconds + "Z"
    return f"{seconds}.{utc.microsecond:06d}Z"
