"""The system clock and id factory."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class UlidFactory:
    """ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, sortable by time."""

    def new_id(self) -> str:
        value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
        chars = []
        for _ in range(26):
            chars.append(_CROCKFORD[value & 31])
            value >>= 5
        return "".join(reversed(chars))
