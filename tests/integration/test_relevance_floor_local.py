"""The relevance floor with the real offline embedder (ADR 0027): on a store of ordinary notes an
unrelated query answers `no_results`, a related one still finds its note."""

from __future__ import annotations

import json
from pathlib import Path

import pi_hermes_memory

NOTES = [
    "The staging deploy needs the VPN and a fresh token",
    "Melanie adopted another cat named Bailey; Oliver the dog loves him",
    "Run the test suite with make test before pushing",
    "The team lunch is on Fridays at the Thai place",
    "Backups of the production database run nightly at 02:00",
    "Jon quit his job as a banker to open a dance studio",
    "Use pnpm, not npm, in the web repository",
    "The office wifi password rotates every month",
]


def test_unrelated_queries_find_nothing_with_the_local_embedder(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    config = {"embedding": {"provider": "local"}}
    (root / "hermes-memory-config.json").write_text(json.dumps(config))
    with pi_hermes_memory.open(
        agent_root=root, environ={"HOME": str(tmp_path)}, cwd=tmp_path, project="web"
    ) as m:
        for note in NOTES:
            assert m.add(note, target="memory").success
        m.reembed()  # vectors for any note the writes did not embed
        for query in ("xylophone quantum", "zxqv blorft", "carburetor jet needle"):
            result = m.search(query)
            assert result.status == "no_results", [h.text for h in result.hits]
        related = m.search("when do database backups happen")
        assert related.status == "ok" and related.hits[0].text == NOTES[4]
        # a query that shares a word with the store is answered as before (the floor only
        # gates queries FTS finds nothing for), cosine-only rows included
        assert m.search("backups").hits[0].text == NOTES[4]
