"""The second seed's ranking settings (issue 27 §5, ADR 0070): `retrieval.*` read in one
vocabulary from our config and from openclaw.json, mapped onto `Fusion` / `Pipeline` /
`HybridSettings`; keys we cannot honour warn and say why; a bad value warns and the rest of
the file still applies. Also the LLM reranker's answer parser."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.adapters.providers.llm_reranker import LlmReranker, parse_scores
from pi_hermes_memory.adapters.server.config import resolve_store_options
from pi_hermes_memory.bootstrap import hybrid_settings
from pi_hermes_memory.config.settings import (
    RerankProvider,
    RetrievalMode,
    parse_config,
)
from pi_hermes_memory.errors import CompletionFailed, CompletionFailure, ServerConfigError
from pi_hermes_memory.search.hybrid import HybridSettings
from pi_hermes_memory.search.retrieval import Pipeline, Stage

SEED = {
    "mode": "hybrid",
    "vectorWeight": 0.7,
    "bm25Weight": 0.3,
    "minScore": 0.3,
    "rerank": "lightweight",
    "candidatePoolSize": 20,
    "recencyHalfLifeDays": 7,
    "recencyWeight": 0.2,
    "timeDecayHalfLifeDays": 90,
    "lengthNormAnchor": 300,
    "hardMinScore": 0.4,
    "importanceWeight": 0.5,
}


def _parse(raw: dict[str, object]) -> Any:
    return parse_config(
        raw, agent_root=Path("/a"), cwd=Path("/w"), environ={}, physical=lambda path: path
    )


def test_the_seed_keys_are_read() -> None:
    config, warnings = _parse({"retrieval": SEED})
    assert warnings == ()
    r = config.retrieval
    assert r.mode is RetrievalMode.HYBRID and r.dense_weight == 0.7 and r.fts_weight == 0.3
    assert r.min_score == 0.3 and r.rerank.provider is RerankProvider.LIGHTWEIGHT
    assert r.candidate_pool_size == 20 and r.hard_min_score == 0.4
    assert (r.recency_half_life_days, r.recency_weight) == (7.0, 0.2)
    assert (r.time_decay_half_life_days, r.length_norm_anchor, r.importance_weight) == (
        90.0,
        300,
        0.5,
    )


def test_they_reach_the_fusion_and_the_pipeline() -> None:
    settings = hybrid_settings(_parse({"retrieval": SEED})[0])
    fusion = settings.fusion_for("openai-compatible/some-model")
    assert (fusion.fts_weight, fusion.dense_weight) == (0.3, 0.7)
    # a benchmarked embedder's measured weight gives way to the configured one
    assert settings.fusion_for("local/multilingual-e5-small-q4").dense_weight == 0.7
    p = settings.pipeline
    assert settings.depth == 20
    assert (p.recency_half_life_days, p.recency_weight) == (7.0, 0.2)
    assert (p.time_decay_half_life_days, p.length_anchor, p.min_score) == (90.0, 300, 0.4)
    assert math.isclose(p.importance_floor, 0.5)
    assert p.stages == tuple(Stage)


def test_defaults_leave_the_built_in_settings() -> None:
    settings = hybrid_settings(_parse({})[0])
    default = HybridSettings()
    assert settings.fusion == default.fusion and settings.depth == default.depth
    assert settings.pipeline == Pipeline()


def test_zero_turns_a_stage_off_and_vector_mode_drops_the_fts_ranking() -> None:
    raw = {
        "mode": "vector",
        "bm25Weight": 0.9,
        "recencyHalfLifeDays": 0,
        "timeDecayHalfLifeDays": 0,
        "lengthNormAnchor": 0,
        "importanceWeight": 0,
    }
    config, warnings = _parse({"retrieval": raw})
    assert warnings == ()
    settings = hybrid_settings(config)
    assert settings.fusion_for("openai-compatible/m").fts_weight == 0.0
    assert settings.pipeline.stages == (Stage.RERANK, Stage.HARD_MIN, Stage.MMR)


def test_rerank_words() -> None:
    for word, provider in [
        ("none", RerankProvider.OFF),
        ("lightweight", RerankProvider.LIGHTWEIGHT),
        ("llm", RerankProvider.LLM),
    ]:
        config, warnings = _parse({"retrieval": {"rerank": word}})
        assert warnings == () and config.retrieval.rerank.provider is provider
    config, warnings = _parse({"retrieval": {"rerank": {"provider": "llm", "timeoutMs": 900}}})
    assert warnings == () and config.retrieval.rerank.provider is RerankProvider.LLM
    assert config.retrieval.rerank.timeout_ms == 900
    config, warnings = _parse({"retrieval": {"rerank": "cross-encoder", "minScore": 0.2}})
    assert [w.field for w in warnings] == ["retrieval.rerank"]
    assert "endpoint" in warnings[0].message and not config.retrieval.rerank.enabled
    assert config.retrieval.min_score == 0.2


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("mode", "bm25"),
        ("vectorWeight", 2),
        ("bm25Weight", -1),
        ("minScore", "high"),
        ("candidatePoolSize", 0),
        ("candidatePoolSize", 1001),
        ("recencyHalfLifeDays", -1),
        ("recencyWeight", 1.5),
        ("timeDecayHalfLifeDays", float("inf")),
        ("lengthNormAnchor", 2.5),
        ("importanceWeight", True),
    ],
)
def test_a_bad_value_warns_and_the_rest_applies(key: str, value: object) -> None:
    config, warnings = _parse({"retrieval": {key: value, "hardMinScore": 0.2}})
    assert [w.field for w in warnings] == [f"retrieval.{key}"]
    assert config.retrieval.hard_min_score == 0.2
    hybrid_settings(config)  # never raises: the rejected value fell back


@pytest.mark.parametrize(
    "key",
    [
        "queryExpansion",
        "reinforcementFactor",
        "maxHalfLifeMultiplier",
        "tagPrefixes",
        "rerankModel",
    ],
)
def test_a_key_we_cannot_honour_is_a_warning_saying_why(key: str) -> None:
    config, warnings = _parse({"retrieval": {key: 1, "minScore": 0.5}})
    assert [w.field for w in warnings] == [f"retrieval.{key}"]
    assert warnings[0].message.startswith("not honoured: ")
    assert config.retrieval.min_score == 0.5


def test_filter_noise_true_is_what_we_do_anyway() -> None:
    assert _parse({"retrieval": {"filterNoise": True}})[1] == ()
    assert [w.field for w in _parse({"retrieval": {"filterNoise": False}})[1]] == [
        "retrieval.filterNoise"
    ]


def test_vector_weight_and_dense_weight_are_one_key() -> None:
    config, warnings = _parse({"retrieval": {"vectorWeight": 0.4, "denseWeight": 0.4}})
    assert warnings == () and config.retrieval.dense_weight == 0.4
    config, warnings = _parse({"retrieval": {"vectorWeight": 0.4, "denseWeight": 0.6}})
    assert [w.field for w in warnings] == ["retrieval.vectorWeight"]
    assert config.retrieval.dense_weight == 0.6


# --- openclaw.json ----------------------------------------------------------------------------


def test_openclaw_retrieval_reaches_every_store(tmp_path: Path) -> None:
    options, warnings = resolve_store_options(
        {"retrieval": {**SEED, "rerank": "llm", "queryExpansion": True}}, {}, cwd=tmp_path
    )
    assert options.retrieval is not None
    assert options.retrieval.dense_weight == 0.7 and options.retrieval.candidate_pool_size == 20
    assert options.retrieval.rerank.provider is RerankProvider.LLM
    assert any("queryExpansion" in w and "not honoured" in w for w in warnings)


def test_openclaw_cross_encoder_uses_the_flat_rerank_keys(tmp_path: Path) -> None:
    file = {
        "embedding": {"model": "m", "baseURL": "http://127.0.0.1:9/v1"},
        "retrieval": {
            "rerank": "cross-encoder",
            "rerankApiKey": "${RK}",
            "rerankModel": "bge-reranker",
            "rerankEndpoint": "http://127.0.0.1:9/v1/rerank",
            "rerankTimeoutMs": 700,
        },
    }
    options, _ = resolve_store_options(file, {"RK": "k"}, cwd=tmp_path)
    assert options.rerank is not None and options.rerank.enabled
    assert (options.rerank.model, options.rerank.timeout_ms) == ("bge-reranker", 700)
    assert options.retrieval is not None and options.retrieval.rerank == options.rerank


def test_openclaw_cross_encoder_without_an_endpoint_is_a_warning(tmp_path: Path) -> None:
    options, warnings = resolve_store_options(
        {"retrieval": {"rerank": "cross-encoder"}}, {}, cwd=tmp_path
    )
    assert options.rerank is None
    assert options.retrieval is not None and not options.retrieval.rerank.enabled
    assert any("cross-encoder" in w and "no endpoint" in w for w in warnings)


def test_openclaw_rerank_none_turns_the_cross_encoder_off(tmp_path: Path) -> None:
    file = {"rerank": {"apiKey": "${RK}"}, "retrieval": {"rerank": "none"}}
    options, _ = resolve_store_options(file, {"RK": "k"}, cwd=tmp_path)
    assert options.rerank is None
    assert options.retrieval is not None and not options.retrieval.rerank.enabled


def test_openclaw_bad_retrieval_value_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ServerConfigError, match=r"openclaw.json retrieval.candidatePoolSize"):
        resolve_store_options({"retrieval": {"candidatePoolSize": -3}}, {}, cwd=tmp_path)


def test_without_openclaw_retrieval_each_store_keeps_its_own(tmp_path: Path) -> None:
    options, _ = resolve_store_options({}, {}, cwd=tmp_path)
    assert options.retrieval is None


# --- the LLM reranker's answer ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "count", "scores"),
    [
        ('{"scores": [0.9, 0.1]}', 2, [0.9, 0.1]),
        ('```json\n{"scores": [1, 0]}\n```', 2, [1.0, 0.0]),
        ('Here you go: {"scores": [2, -1]} hope it helps', 2, [1.0, 0.0]),
        ('{"scores": [0.9]}', 2, None),
        ('{"scores": [0.9, "x"]}', 2, None),
        ('{"scores": [0.9, true]}', 2, None),
        ('{"scores": [0.9, NaN]}', 2, None),
        ("[0.9, 0.1]", 2, None),
        ("", 2, None),
        ("{", 2, None),
    ],
)
def test_parse_scores(reply: str, count: int, scores: list[float] | None) -> None:
    assert parse_scores(reply, count) == scores


@given(st.text(max_size=300), st.integers(min_value=0, max_value=5))
def test_parse_scores_never_raises(reply: str, count: int) -> None:
    scores = parse_scores(reply, count)
    assert scores is None or (len(scores) == count and all(0 <= s <= 1 for s in scores))


class _Failing:
    def complete(self, system: str, user: str, *, timeout: float) -> str:
        raise CompletionFailed(CompletionFailure.TIMEOUT, "test", "no answer")


class _Foreign:
    def complete(self, system: str, user: str, *, timeout: float) -> str:
        raise OSError("boom")


def test_a_failing_llm_is_no_answer_never_an_exception() -> None:
    for completer in (_Failing(), _Foreign()):
        assert LlmReranker(completer, timeout_s=1).rerank("q", ["a", "b"]) is None


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), True, "5"])
def test_the_time_budget_must_be_positive(timeout: object) -> None:
    from pi_hermes_memory.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        LlmReranker(_Failing(), timeout_s=timeout)  # type: ignore[arg-type]
