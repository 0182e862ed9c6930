"""The near-duplicate rule on English, Chinese, Japanese, Korean and mixed text (ADR 0008)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.search.similarity import (
    COSINE_THRESHOLD,
    JACCARD_THRESHOLD,
    is_near_duplicate,
    jaccard,
    near_duplicates,
    token_set,
)

NEAR = [
    # the seed's own example pair: one character differs
    (
        "项目构建命令要求每次代码合并之前运行完整类型检查",
        "项目构建命令要求每回代码合并之前运行完整类型检查",
    ),
    ("Use pytest for tests", "use pytest for all tests"),
    (
        "The deploy script lives in scripts/deploy.sh and needs AWS_PROFILE set",
        "The deploy script lives in scripts/deploy.sh and needs the AWS_PROFILE set",
    ),
    (
        "ユーザーはダークモードのエディタ設定を常に好む",
        "ユーザーはダークモードのエディタ設定を常に好みます",
    ),
    (
        "사용자는 모든 프로젝트에서 다크 모드 편집기 설정을 선호한다",
        "사용자는 모든 프로젝트에서 다크 모드 편집기 설정을 선호함",
    ),
    ("使用 pytest 运行全部单元测试并生成覆盖率报告", "使用pytest运行全部单元测试并生成覆盖率报告"),
]
DISTINCT = [
    ("Deploy with make release", "Run tests with make test"),
    (
        "The project uses pytest with xdist for running the test suite",
        "The project uses unittest for running the test suite",
    ),
    ("用户喜欢简洁的回答", "项目使用 PostgreSQL 数据库"),
    ("ユーザーはダークモードを好む", "ユーザーはライトモードを好む"),
    ("사용자는 다크 모드를 선호한다", "빌드는 make 로 실행한다"),
    ("User prefers concise answers", "User prefers concise answers in English"),
]


@pytest.mark.parametrize(("a", "b"), NEAR)
def test_near_pairs_are_blocked(a: str, b: str) -> None:
    assert is_near_duplicate(a, b)
    assert is_near_duplicate(b, a)


@pytest.mark.parametrize(("a", "b"), DISTINCT)
def test_distinct_pairs_pass(a: str, b: str) -> None:
    assert not is_near_duplicate(a, b)


def test_seed_pair_score() -> None:
    a, b = NEAR[0]
    # 23 bigrams each, 2 of them touch the changed character: 21 / 25
    assert jaccard(token_set(a), token_set(b)) == pytest.approx(21 / 25)


def test_cjk_runs_become_code_point_bigrams() -> None:
    assert token_set("项目构建") == {"项目", "目构", "构建"}
    assert token_set("我") == {"我"}
    assert token_set("使用pytest运行") == {"使用", "pytest", "运行"}


def test_supplementary_plane_han_counts_as_one_code_point() -> None:
    text = "\U00020000\U00020001\U00020002"  # CJK extension B
    assert token_set(text) == {"\U00020000\U00020001", "\U00020001\U00020002"}


def test_tokens_are_case_and_width_folded() -> None:
    assert token_set("ＰＹＴＥＳＴ Rocks") == {"pytest", "rocks"}


def test_cosine_hook_blocks_only_at_threshold() -> None:
    a, b = "Deploy with make release", "Run tests with make test"
    assert not is_near_duplicate(a, b, cosine=COSINE_THRESHOLD - 0.01)
    assert is_near_duplicate(a, b, cosine=COSINE_THRESHOLD)
    assert JACCARD_THRESHOLD == 0.8


def test_at_most_three_candidates_best_first() -> None:
    pool = [
        ("a", "alpha beta gamma delta epsilon"),
        ("b", "alpha beta gamma delta epsilon zeta"),
        ("c", "alpha beta gamma delta epsilon eta"),
        ("d", "alpha beta gamma delta epsilon"),
        ("e", "something else entirely"),
    ]
    found = near_duplicates("alpha beta gamma delta epsilon", pool)
    assert len(found) == 3
    assert [c.entry_id for c in found][:2] == ["a", "d"]
    assert all(c.score >= JACCARD_THRESHOLD for c in found)
    assert found[0].score >= found[1].score >= found[2].score


def test_empty_token_sets_are_not_duplicates() -> None:
    assert not is_near_duplicate("!!!", "???")


_WORDS = st.sampled_from(["build", "test", "deploy", "make", "项目", "构建", "テスト", "빌드", "a"])
_TEXTS = st.lists(_WORDS, min_size=1, max_size=8).map(" ".join)


@given(_TEXTS, st.lists(_TEXTS, max_size=12))
def test_the_size_band_prefilter_never_hides_a_candidate(text: str, others: list[str]) -> None:
    pool = [(f"id{i}", t) for i, t in enumerate(others)]
    brute = {i for i, t in pool if is_near_duplicate(text, t)}
    found = {c.entry_id for c in near_duplicates(text, pool, limit=len(pool) or 1)}
    assert found == brute
