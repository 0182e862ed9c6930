"""The `Clock` and `IdFactory` contract suites.

Provide a ``clock`` fixture (`ClockContract`) or an ``id_factory`` fixture
(`IdFactoryContract`). Entry ids are row keys and order things: "newest first" is descending id
order (`VectorStore`), equal search scores put the larger id first. So ids are unique strings,
and each id of one factory sorts after the one it made before (also within one millisecond).
Times are UTC-aware.
"""

from __future__ import annotations

import itertools
import time
from datetime import datetime, timedelta
from typing import Any

__all__ = ["ClockContract", "IdFactoryContract"]


class ClockContract:
    """Every `Clock` passes these tests (the system clock, a test clock, or your own)."""

    def test_now_is_aware_utc(self, clock: Any) -> None:
        now = clock.now()
        assert isinstance(now, datetime)
        assert now.utcoffset() == timedelta(0), "now() is timezone-aware, in UTC"

    def test_now_never_goes_back(self, clock: Any) -> None:
        times = [clock.now() for _ in range(100)]
        assert times == sorted(times)


class IdFactoryContract:
    """Every `IdFactory` passes these tests (ULIDs, sequential test ids, or your own)."""

    def test_ids_are_unique_strings(self, id_factory: Any) -> None:
        ids = [id_factory.new_id() for _ in range(5_000)]
        assert all(isinstance(i, str) and i for i in ids)
        assert len(set(ids)) == len(ids)

    def test_each_id_sorts_after_the_one_before(self, id_factory: Any) -> None:
        """The store lists "newest first" by descending id and ranks the larger id first on
        ties: the ids of one factory increase, also within one millisecond."""
        ids = [id_factory.new_id() for _ in range(5_000)]
        assert ids == sorted(ids)
        assert all(a < b for a, b in itertools.pairwise(ids))

    def test_a_later_id_sorts_after(self, id_factory: Any) -> None:
        for _ in range(5):
            earlier = [id_factory.new_id() for _ in range(20)]
            time.sleep(0.003)
            later = id_factory.new_id()
            assert later > max(earlier), f"{later!r} was made after {max(earlier)!r}"
