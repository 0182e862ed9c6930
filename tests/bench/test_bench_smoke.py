"""The benchmark functions run and return well-formed results (no timing assertions)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pi_hermes_memory.domain.search.similarity import JACCARD_THRESHOLD, jaccard, token_set

from tests.bench import run


def _finite_positive(*values: float) -> bool:
    return all(math.isfinite(v) and v > 0 for v in values)


def test_texts_are_distinct_and_far_from_each_other() -> None:
    texts = [t for _, t in zip(range(300), run.TextGenerator(3), strict=False)]
    assert len(set(texts)) == len(texts)
    tokens = [token_set(t) for t in texts]
    worst = max(jaccard(a, b) for i, a in enumerate(tokens) for b in tokens[i + 1 :])
    assert worst < JACCARD_THRESHOLD
    assert texts == [t for _, t in zip(range(300), run.TextGenerator(3), strict=False)]


def test_percentile() -> None:
    assert run.percentile([3.0], 95) == 3.0
    assert run.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert run.percentile([5.0, 1.0, 3.0], 100) == 5.0
    with pytest.raises(ValueError):
        run.percentile([], 50)


def test_bench_add_is_well_formed(tmp_path: Path) -> None:
    result = run.bench_add(12, 5, warmup=2, root=tmp_path)
    assert result.entries == 12
    assert result.samples == 5 == len(result.latencies_ms)
    assert result.warmup == 2
    assert result.statuses == {"added": 5}  # distinct texts: nothing refused as a near-duplicate
    assert _finite_positive(
        result.p50_ms, result.p95_ms, result.mean_ms, result.max_ms, result.first_add_ms
    )
    assert result.p50_ms <= result.p95_ms <= result.max_ms
    assert result.prefill_s >= 0 and result.open_s > 0


def test_bench_replay_is_well_formed(tmp_path: Path) -> None:
    result = run.bench_replay(400, repeats=2, root=tmp_path)
    assert result.events == 400 == sum(result.by_stream.values()) == sum(result.by_kind.values())
    streams = {"memory:memory", "memory:user", "memory:project", "memory:failure"}
    assert set(result.by_stream) == streams
    assert result.by_kind["add"] > result.by_kind["replace"] + result.by_kind["remove"]
    assert result.history == result.by_kind["replace"]
    assert result.active == result.by_kind["add"] - result.by_kind["remove"]
    assert result.repeats == 2
    assert _finite_positive(
        result.build_s,
        result.cold_total_s,
        result.total_s,
        result.fetch_s,
        result.decode_s,
        result.fold_s,
    )
    assert result.rate(result.total_s) > 0


def test_bench_search_is_well_formed(tmp_path: Path) -> None:
    results = run.bench_search(300, 4, root=tmp_path)
    assert [r.kind for r in results] == list(run.SEARCH_KINDS)
    for r in results:
        assert r.rows == 300 == r.active + r.history and 0 < r.history < r.active
        assert r.samples == 4 == len(r.latencies_ms)
        assert _finite_positive(r.p50_ms, r.p95_ms, r.mean_ms, r.max_ms, r.build_s)
        assert r.p50_ms <= r.p95_ms <= r.max_ms
        assert 0 < r.mean_hits <= 10  # every query kind finds rows of the corpus
        # ADR 0081: CPU time, the old plan and the bare-SQL floor beside ours
        assert _finite_positive(r.cpu_p50_ms, r.old_p50_ms, r.floor_p50_ms, r.floor_p95_ms)
        assert r.statements is not None and r.statements >= 3  # BEGIN, a query, COMMIT
    text = "\n".join(run.render_search(results))
    assert "## `memory_search` latency" in text and "English keywords" in text
    assert "SQL floor p50 ms" in text and "ours / floor" in text and "ours / old" in text


def test_search_queries_are_seeded() -> None:
    for kind in run.SEARCH_KINDS:
        queries = run.search_queries(kind, 5)
        assert queries == run.search_queries(kind, 5) and len(set(queries)) > 1


def test_report_renders_and_serialises(tmp_path: Path) -> None:
    context = run.machine_context()
    assert context["python"] and context["sqlite"] and context["cpu_count"]
    adds = [run.bench_add(10, 3, warmup=1, root=tmp_path / "a")]
    replay = run.bench_replay(50, repeats=1, root=tmp_path / "r")
    text = run.render_markdown(context, adds, replay)
    assert "| entries in scope |" in text and "events/s" in text
    assert f"{run.ADD_P50_TARGET_MS:g} ms" in text
    data = json.loads(json.dumps(run.to_json(context, adds, replay)))
    assert data["add"][0]["samples"] == 3 and len(data["add"][0]["latencies_ms"]) == 3
    assert data["replay"]["events"] == 50


def test_main_writes_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = run.Plan(
        add_sizes=((5, 2),),
        replay_events=30,
        replay_repeats=1,
        search_sizes=((200, 2),),
        hybrid_sizes=((300, 3),),
    )
    monkeypatch.setattr(run, "QUICK", tiny)
    out = tmp_path / "bench.json"
    assert run.main(["--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "## Journal replay" in printed and "## `memory_search` latency" in printed
    assert "## Filling an empty store through `add`" in printed
    data = json.loads(out.read_text())
    assert data["fill"]["checkpoints"] == [5, 10]
    assert [a["entries"] for a in data["add"]] == [5] and data["replay"]["events"] == 30
    assert {s["rows"] for s in data["search"]} == {200} and len(data["search"]) == 4
    assert "hybrid (FTS + cosine + fusion + stages" in printed
    (hybrid,) = data["hybrid"]
    assert hybrid["rows"] == 300 and hybrid["samples"] == 3 and hybrid["dimension"] == 384
    assert 0 < hybrid["candidates"] < 300 and 0 < hybrid["p50_ms"] <= hybrid["p95_ms"]
    assert hybrid["after_replace_ms"] > 0
    assert "## Skills at 30 skills" in printed
    assert "### REST search throughput, 1 vs 4 clients" in printed
    assert data["server_reads"]["readers_0"]["many"]["req_per_s"] > 0
    assert data["skills"]["skills"] == 30 and data["skills"]["create_statuses"] == {"created": 2}
