"""`index_grams` (regex-driven) equals the walk over `split_pieces` it replaced (ADR 0012)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.search.similarity import CJK_CHAR, is_cjk
from pi_hermes_memory.domain.search.terms import _has_alnum, bigrams, index_grams, split_pieces


def reference(text: str) -> list[str]:
    keys: list[str] = []
    pieces = split_pieces(text)
    for i, (kind, run) in enumerate(pieces):
        if kind == "cjk":
            keys.extend(bigrams(run))
        elif kind == "word":
            glued = (i > 0 and pieces[i - 1][0] == "cjk") or (
                i + 1 < len(pieces) and pieces[i + 1][0] == "cjk"
            )
            if glued and _has_alnum(run):
                keys.append(run)
    return keys


_MIXED = st.sampled_from(list("ab1_ -.,!é\u0301项目构建命令東京タワー한국어ｱ\u3005\U00020000"))


@given(st.text(_MIXED, max_size=40) | st.text(max_size=40))
def test_index_grams_equals_the_piece_walk(text: str) -> None:
    assert index_grams(text) == reference(text)


def test_examples() -> None:
    assert index_grams("用pytest运行测试") == ["用", "pytest", "运行", "行测", "测试"]
    assert index_grams("a项目b构建c") == ["a", "项目", "b", "构建", "c"]
    assert index_grams("café latte") == []
    assert index_grams("東京 tower") == ["東京"]


def test_the_cjk_class_is_is_cjk() -> None:
    for cp in range(0x110000):
        ch = chr(cp)
        assert (CJK_CHAR.match(ch) is not None) == is_cjk(ch), hex(cp)
