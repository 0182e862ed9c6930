"""Progress of a long CLI command on stderr (ADR 0078): a bar redrawn in place with `\\r` on a
terminal, plain lines (at most one a second, plus the last) when stderr is a pipe or a file.

No dependency: `knowledge index`, `index-sessions`, `reembed`, `import` and `migrate` report
`(done, total)` and this draws it. Each line names the totals and, once something is done, the
estimated time left; a rate is printed only when it rounds to something other than zero.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

_BAR = 24


class Progress:
    """One command's progress. `update(done, total)` as work advances, `close()` at the end
    (also on errors: it ends a terminal's in-place line so the next message starts clean)."""

    def __init__(
        self,
        label: str,
        unit: str,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._label, self._unit = label, unit
        self._stream = sys.stderr if stream is None else stream
        self._clock = clock
        self._tty = _isatty(self._stream)
        self._start = clock()
        self._last_drawn: float | None = None
        self._last_line = ""
        self._open = False  # a terminal line drawn without its newline

    def update(self, done: int, total: int | None, detail: str = "") -> None:
        now = self._clock()
        final = total is not None and done >= total
        interval = 0.1 if self._tty else 1.0
        if not final and self._last_drawn is not None and now - self._last_drawn < interval:
            return
        line = self._line(done, total, detail, now)
        if line == self._last_line:
            return
        self._last_drawn, self._last_line = now, line
        if self._tty:
            self._stream.write(f"\r\x1b[K{line}")
            self._open = True
        else:
            self._stream.write(f"{line}\n")
        self._stream.flush()

    def close(self) -> None:
        if self._open:
            self._stream.write("\n")
            self._stream.flush()
            self._open = False

    def _line(self, done: int, total: int | None, detail: str, now: float) -> str:
        elapsed = max(0.0, now - self._start)
        parts = [f"{self._label}:"]
        if total:
            share = min(1.0, done / total)
            if self._tty:
                filled = round(share * _BAR)
                parts.append(f"[{'#' * filled}{'-' * (_BAR - filled)}]")
            parts.append(f"{done}/{total} {self._unit} {share:4.0%}")
            if 0 < done < total and elapsed > 0:
                parts.append(f"ETA {_clock_text(elapsed / done * (total - done))}")
        else:
            parts.append(f"{done} {self._unit}")
        if detail:
            parts.append(detail)
        return " ".join(parts)


def rate(amount: float, seconds: float, unit: str) -> str:
    """`12.3 MB/s`, or `KB/s` when MB/s would round to 0.0; "" when nothing can be said."""
    if seconds <= 0 or amount <= 0:
        return ""
    per_second = amount / seconds
    if unit == "B":
        for name, size in (("MB", 1e6), ("KB", 1e3)):
            if per_second / size >= 0.05:
                return f"{per_second / size:.1f} {name}/s"
        return f"{per_second:.0f} B/s"
    return f"{per_second:.1f} {unit}/s" if per_second >= 0.05 else ""


def reembed_detail(p: Any) -> str:
    """The detail of an embedding progress (`ReembedProgress`): its rate and failures."""
    parts = [rate(p.done, p.seconds, "entries"), f"{p.failed} failed" if p.failed else ""]
    return ", ".join(part for part in parts if part)


def _clock_text(seconds: float) -> str:
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


__all__ = ["Progress", "rate", "reembed_detail"]
