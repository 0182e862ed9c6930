"""The shipped SessionIndex contract suite against the in-memory index."""

from __future__ import annotations

import pytest
from pi_hermes_memory.adapters.inmemory.history import InMemorySessionIndex
from pi_hermes_memory.testing import SessionIndexContract


class TestInMemorySessionIndex(SessionIndexContract):
    @pytest.fixture
    def session_index(self) -> InMemorySessionIndex:
        return InMemorySessionIndex()
