"""The system clock and id factory."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class UlidFactory:
    """ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, sortable by time.

    Monotonic within one factory: an id made in the same millisecond as the previous one (or
    after the clock stepped back) is the previous one + 1, so the ids of one process always
    increase ("newest first" is descending id order; ties rank the larger id first). Ids of
    different processes within one millisecond are unique but in no particular order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def new_id(self) -> str:
        fresh = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
        with self._lock:
            value = fresh if (fresh >> 80) > (self._last >> 80) else self._last + 1
            self._last = value
        chars = []
        for _ in range(26):
            chars.append(_CROCKFORD[value & 31])
            value >>= 5
        return "".join(reversed(chars))
