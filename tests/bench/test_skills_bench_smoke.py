"""The skill benchmarks run and report well-formed figures (no timing assertions)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.bench import skills


def test_bench_skills_is_well_formed(tmp_path: Path) -> None:
    result = skills.bench_skills(40, 4, 2, root=tmp_path)
    assert result.skills == 40
    assert result.offered == 40 - 1  # 20 global skills, 5% of them hidden
    assert result.files >= 40  # every SKILL.md, and some support files
    assert result.create_statuses == {"created": 2}
    for latency, samples in ((result.discover, 4), (result.view, 4), (result.create, 2)):
        assert latency.samples == samples
        values = (latency.p50_ms, latency.p95_ms, latency.mean_ms, latency.max_ms)
        assert all(math.isfinite(v) and v > 0 for v in values)
        assert latency.p50_ms <= latency.p95_ms <= latency.max_ms
    assert result.discover_cold_ms > 0 and result.render_s > 0
    text = "\n".join(skills.render_skills(result))
    assert "## Skills at 40 skills" in text and "`skill view` (`SkillService.get`)" in text


def test_main_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert skills.main(["--skills", "10", "--samples", "2", "--creates", "1"]) == 0
    printed = capsys.readouterr().out
    assert "| discovery (`SkillService.discover`) | 2 |" in printed
