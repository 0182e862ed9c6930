"""Adaptive retrieval (issue 15 §2, ADR 0049): which user messages auto-recall searches for,
table-driven in English and Chinese, with the negative cases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pi_hermes_memory.domain.prompt.adaptive import RetrievalReason, asks_question, should_retrieve

R = RetrievalReason

SKIP = [
    ("", R.EMPTY),
    ("   \n ", R.EMPTY),
    ("hi", R.GREETING),
    ("Hello there!", R.GREETING),
    ("hey everyone", R.GREETING),
    ("good morning", R.GREETING),
    ("你好", R.GREETING),
    ("大家好！", R.GREETING),
    ("HEARTBEAT", R.GREETING),
    ("[heartbeat]", R.GREETING),
    ("ok", R.CONFIRMATION),
    ("OK, thanks!", R.CONFIRMATION),
    ("yes please", R.CONFIRMATION),
    ("sounds good", R.CONFIRMATION),
    ("lgtm", R.CONFIRMATION),
    ("好的", R.CONFIRMATION),
    ("收到", R.CONFIRMATION),
    ("嗯嗯，明白了", R.CONFIRMATION),
    ("没问题", R.CONFIRMATION),
    ("go on", R.CONTINUATION),
    ("continue", R.CONTINUATION),
    ("keep going", R.CONTINUATION),
    ("and?", R.CONTINUATION),
    ("继续", R.CONTINUATION),
    ("然后呢？", R.CONTINUATION),
    ("/new", R.COMMAND),
    ("/help me with the parser", R.COMMAND),
    ("$ ls -la", R.COMMAND),
    ("git status", R.COMMAND),
    ("git push origin main", R.COMMAND),
    ("npm install --save-dev vitest", R.COMMAND),
    ("pytest -q tests/unit", R.COMMAND),
    ("cat README.md | grep install", R.COMMAND),
    ("go test ./...", R.COMMAND),
    # qa15: a script run by its path, a continuation with "please"
    ("./deploy.sh --prod", R.COMMAND),
    ("~/bin/run.sh --fast", R.COMMAND),
    ("../scripts/sync", R.COMMAND),
    ("go ahead please", R.CONTINUATION),
    ("[system] context compacted", R.SYSTEM),
    ("<system-reminder>be brief</system-reminder>", R.SYSTEM),
    ("<command-name>/clear</command-name>", R.SYSTEM),
    ("<div-wrapper>injected by the host</div-wrapper>", R.SYSTEM),
    ("👍", R.EMOJI),
    ("🎉🎉 👍🏽", R.EMOJI),
    ("fix it", R.TOO_SHORT),
    ("make test", R.TOO_SHORT),
    ("改一下", R.TOO_SHORT),
    ("重新跑", R.TOO_SHORT),
]

RETRIEVE = [
    # the upstream quirk: a text starting with "hi" is not a greeting
    ("history of the project", R.DEFAULT),
    ("hiring plan for the backend team", R.DEFAULT),
    ("hello-world service uses port 8080", R.DEFAULT),
    ("refactor the parser module to use attrs", R.DEFAULT),
    ("git push fails with permission denied on CI", R.DEFAULT),
    ("/usr/bin/python crashes when I import numpy", R.DEFAULT),
    ("make the parser faster please", R.DEFAULT),
    ("帮我重构解析模块", R.DEFAULT),
    ("why does the build fail?", R.QUESTION),
    ("how do I deploy", R.QUESTION),
    ("怎么部署", R.QUESTION),
    ("这个能用吗", R.QUESTION),
    ("port?", R.QUESTION),
    # qa15: colloquial Chinese questions, shorter than the CJK minimum
    ("为啥", R.QUESTION),
    ("咋办", R.QUESTION),
    ("要多久", R.QUESTION),
    ("./deploy.sh fails on the staging host", R.DEFAULT),
    # qa15: a question about an HTML element is no harness tag
    ("<div> is not centered in the modal", R.DEFAULT),
    ("<button> click handler fires twice, why?", R.QUESTION),
    ("do you remember my editor?", R.MEMORY_REFERENCE),
    ("what did we decide last time", R.MEMORY_REFERENCE),
    ("as before", R.MEMORY_REFERENCE),
    ("previously we used yarn", R.MEMORY_REFERENCE),
    ("recall the deploy steps", R.MEMORY_REFERENCE),
    ("上次那个bug", R.MEMORY_REFERENCE),
    ("之前的方案", R.MEMORY_REFERENCE),
    ("还记得吗", R.MEMORY_REFERENCE),
    ("以前怎么做", R.MEMORY_REFERENCE),
]


@pytest.mark.parametrize(("text", "reason"), SKIP)
def test_skipped(text: str, reason: RetrievalReason) -> None:
    decision = should_retrieve(text)
    assert (decision.retrieve, decision.reason) == (False, reason)


@pytest.mark.parametrize(("text", "reason"), RETRIEVE)
def test_retrieved(text: str, reason: RetrievalReason) -> None:
    decision = should_retrieve(text)
    assert (decision.retrieve, decision.reason) == (True, reason)


def test_the_minimum_length_is_configurable() -> None:
    text = "rename the module"  # 17 characters
    assert should_retrieve(text).retrieve
    assert should_retrieve(text, min_length=20).reason is R.TOO_SHORT
    assert should_retrieve("改一下", min_length_cjk=3).reason is R.DEFAULT
    assert should_retrieve("改一下吧好", min_length_cjk=6).reason is R.TOO_SHORT
    assert should_retrieve("fix it", min_length=0).retrieve


def test_a_memory_reference_beats_the_length_floor() -> None:
    assert should_retrieve("as before", min_length=100).retrieve
    assert should_retrieve("上次", min_length_cjk=50).retrieve


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("why?", True),
        ("what is it", True),
        ("是不是这样", False),
        ("它是什么", True),
        ("hi", False),
    ],
)
def test_asks_question(text: str, question: bool) -> None:
    assert asks_question(text) is question


@given(st.text(max_size=80))
def test_total_on_any_text(text: str) -> None:
    decision = should_retrieve(text)
    assert isinstance(decision.retrieve, bool)
    assert decision.retrieve == (decision.reason in (R.MEMORY_REFERENCE, R.QUESTION, R.DEFAULT))


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("ls -la", True),
        ("ls -la is what I use to check the permissions of the deploy folder", False),
        ("docker compose up -d", True),
        ("echo $PATH | tr : '\\n'", True),
        ("source of the memory leak is the cache", False),
    ],
)
def test_shell_like_lines(text: str, command: bool) -> None:
    assert (should_retrieve(text).reason is R.COMMAND) is command


def test_a_pasted_megabyte_is_decided_from_its_start_at_once() -> None:
    # qa15: the CJK check walked every character in Python: 0.8 s for 1 MB, more than the
    # whole recall budget, spent before the search even started
    import time

    for text in ("x " * 1_000_000, "数据库用什么？" * 300_000, "/deploy now " + "y" * 2_000_000):
        started = time.perf_counter()
        decision = should_retrieve(text)
        assert time.perf_counter() - started < 0.5
        assert decision.reason in (R.DEFAULT, R.QUESTION, R.COMMAND)
    assert should_retrieve("/deploy now " + "y" * 2_000_000).reason is R.COMMAND


@given(st.text(max_size=40))
def test_has_cjk_is_any_is_cjk(text: str) -> None:
    from pi_hermes_memory.domain.prompt.blocks import has_cjk, is_cjk

    assert has_cjk(text) == any(is_cjk(ch) for ch in text)
