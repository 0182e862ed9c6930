"""The keyword search of ADR 0102 answers exactly as the search it replaced, and never serves
a stale answer, on real SQLite files.

- `SqliteSearchIndex.search` (memoised statements and weights per key set, ASCII queries
  planned without Unicode normalisation, hits built directly) against
  `tests.support.keyword_previous.search_previous` (the search as ADR 0081 left it): equal
  hits, every field, in the same order, over generated stores and queries (English, Chinese,
  mixed, stop words, scopes, history rows, floors and limits), each index asked several times so the
  memoised weights are reused across queries with the same keys;
- a second process (a real child interpreter) writes between two searches of one index:
  the second search sees its row (the memoised counts and weights are dropped on the
  database's change counter), also when the write turns a rare key into a common one.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
import unicodedata
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.domain.memory.scope import SessionScope
from pi_hermes_memory.domain.search.relevance import COMMON_CAP
from pi_hermes_memory.domain.search.terms import _terms_of, plan_terms
from pi_hermes_memory.ports.search import SearchQuery
from pi_hermes_memory.search.memory_search import search_clauses
from pi_hermes_memory.testing.contracts import EventWriter

from tests.integration.test_keyword_plan_equivalence import _QUERIES, _query, _rows, _write
from tests.support.keyword_previous import search_previous


@given(rows=_rows(), data=st.data())
def test_the_search_equals_the_previous_one_on_generated_stores(
    rows: list[tuple[Target, str | None, str, int | None]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory(prefix="keyword-0102-") as tmp:
        storage = SqliteStorage(Path(tmp) / "sessions.db")
        try:
            _write(storage, rows)
            new, old = SqliteSearchIndex(storage), SqliteSearchIndex(storage)
            texts = data.draw(
                st.lists(_QUERIES | st.sampled_from([r[2] for r in rows]), min_size=1, max_size=3)
            )
            for _ in range(6):  # the same texts again in other scopes: memoised weights
                query = data.draw(_query(data.draw(st.sampled_from(texts))))
                assert new.search(query) == search_previous(old, query), query
        finally:
            storage.close()


@given(st.text(st.characters(max_codepoint=127), max_size=60))
def test_an_ascii_query_has_no_other_folded_spelling(text: str) -> None:
    """The premise of `plan_terms`'s ASCII path: NFC and NFKC are the identity on ASCII and
    casefold is lower, so the folded spelling's terms are the primary ones."""
    assert unicodedata.normalize("NFC", text) == text
    folded = _terms_of(unicodedata.normalize("NFKC", text).casefold(), lower=False)
    assert folded == _terms_of(text, lower=True)
    terms = plan_terms(text)
    assert not terms.alt_words and not terms.alt_grams


_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
    from pi_hermes_memory.domain.memory.model import Target
    from pi_hermes_memory.testing.contracts import EventWriter

    storage = SqliteStorage(Path(sys.argv[1]))
    writer = EventWriter(storage)
    writer.n = int(sys.argv[2])
    for text in sys.argv[3:]:
        writer.add(text, Target.MEMORY)
    storage.close()
    """
)


def _write_in_child(path: Path, first: int, *texts: str) -> None:
    subprocess.run([sys.executable, "-c", _CHILD, str(path), str(first), *texts], check=True)


def _ids(index: SqliteSearchIndex, text: str, limit: int = 10) -> list[str]:
    clauses = search_clauses(SessionScope(project=None), Target.MEMORY)
    return [h.id for h in index.search(SearchQuery(text=text, clauses=clauses, limit=limit))]


def test_a_row_another_process_writes_is_found_by_the_next_search(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    storage = SqliteStorage(path)
    try:
        writer = EventWriter(storage)
        writer.add("the deploy script needs the corporate VPN")
        writer.add("payments are retried three times")
        index = SqliteSearchIndex(storage)
        assert _ids(index, "deploy invoice") == ["s0001"]
        assert _ids(index, "invoice") == []  # "invoice" counted: no row holds it
        _write_in_child(path, 100, "every invoice is signed before the deploy")
        assert _ids(index, "deploy invoice") == ["s0101", "s0001"]
        assert _ids(index, "invoice") == ["s0101"]
        # again, with the weights of this key set now memoised
        _write_in_child(path, 200, "the invoice archive moved to the vault")
        assert set(_ids(index, "deploy invoice")) == {"s0101", "s0001", "s0201"}
    finally:
        storage.close()


def test_a_key_another_process_makes_common_is_counted_again(tmp_path: Path) -> None:
    """A key under COMMON_CAP rows (rare: every row holding it is a candidate) that another
    process's write puts in COMMON_CAP rows (common) is planned as common by the next search,
    exactly as a fresh index plans it."""
    path = tmp_path / "sessions.db"
    storage = SqliteStorage(path)
    try:
        writer = EventWriter(storage)
        for n in range(COMMON_CAP - 1):
            writer.add(f"note {n} about the ledger")
        writer.add("the ledger reconciliation runs nightly")
        index = SqliteSearchIndex(storage)
        before = _ids(index, "ledger reconciliation", limit=3)
        assert before[0] == "s0256"
        _write_in_child(path, 1000, "ledger reconciliation failed on the first of the month")
        clauses = search_clauses(SessionScope(project=None), Target.MEMORY)
        query = SearchQuery(text="ledger reconciliation", clauses=clauses, limit=3)
        after = index.search(query)
        assert after == SqliteSearchIndex(storage).search(query)
        assert {h.id for h in after[:2]} == {"s0256", "s1001"}
    finally:
        storage.close()
