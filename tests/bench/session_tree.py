"""A deterministic synthetic Pi sessions tree, for the session indexing and search benchmarks.

    python -m tests.bench.session_tree OUT --sessions 2000 --messages 1000000 [--seed 0]
        [--workers N] [--json]

`write_session_tree(root, sessions=, messages=, seed=)` writes `<root>/sessions/` the way Pi
does: one folder per working directory, named from the encoded cwd (`/home/me/work/api` →
`--home-me-work-api--`, `encode_cwd`), holding `<timestamp>_<uuid>.jsonl` files
(`2026-01-05T10-11-12-345Z_<uuid>.jsonl`), plus a few (one in 200, at least one) session files
directly in `sessions/`. It returns `TreeStats` (files, messages, lines, bytes).

Every file starts with the session header `{"type":"session","version":3,"id","timestamp",
"cwd"}`, usually followed by `model_change` and `thinking_level_change` entries (and now and
then more of them, a `custom` or a `session_info` entry, later in the file). The rest are
`message` entries (`id`, `parentId` chaining every entry to the previous one, ISO `timestamp`
strictly increasing within a file, `message: {role, content, timestamp}`) in the shape of real
agent turns: a `user` message (content a string), then `assistant` messages (content a list of
`thinking`, `text` and `toolCall` blocks, with `api`, `provider`, `model`, `usage`,
`stopReason`) each followed by one `toolResult` message per tool call (content a list with one
large `text` block: file contents, test and build logs, search hits), until an assistant
message without tool calls ends the turn. Tool results make most of the bytes; the average is
about 1 KB per message, so 1M messages are about 1 GB. About 10% of the user and assistant
texts are Chinese (with English terms mixed in, as people write). Text is drawn from the fixed
`VOCABULARY` with Zipf weights (rank r has weight 1/(r+1)), so the first words are everywhere
and the last ones rare, like real term frequencies; `COMMON_TERMS`, `RARE_TERMS` and
`CJK_TERMS` name words a benchmark can query. Sessions spread over the 20 `PROJECTS` with
Zipf-like weights (a few busy projects, a long tail), including a cwd with a space, one with
Chinese characters and two projects whose last path segment is the same.

Same arguments, same bytes: everything comes from `random.Random` seeded from `seed` (one
generator for the plan, one per session), never from the clock, so `workers` (processes writing
disjoint sets of files; the CLI uses one per CPU) changes the speed, never the output. Lines
are built from pre-escaped JSON fragments and written in 4 MB chunks: about 60-80 MB/s per
process on the 2-core dev box, 135 MB/s with two workers (2,000 sessions, 1M messages, 965 MB
in 7 s).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import accumulate
from pathlib import Path
from typing import BinaryIO, TypeVar

import attrs

#: The working directories of the sessions (20 projects).
PROJECTS = (
    "/home/me/work/api-gateway",
    "/home/me/work/billing",
    "/home/me/work/web-frontend",
    "/home/me/src/pi-hermes-memory",
    "/home/me/work/search-service",
    "/home/me/work/auth-service",
    "/Users/alex/code/ios-app",
    "/Users/alex/code/ml-pipeline",
    "/srv/deploy/infra",
    "/home/me/work/data-warehouse",
    "/home/me/src/dotfiles",
    "/home/me/src/rust-cli",
    "/home/me/work/mobile-backend",
    "/home/me/oss/api-gateway",
    "/home/me/src/go-proxy",
    "/home/me/My Projects/game",
    "/home/me/项目/文档站",
    "/home/me/notes",
    "/home/me/work/analytics",
    "/tmp/scratch",
)

#: The word list, most frequent first (Zipf weights by rank).
VOCABULARY = tuple(
    dict.fromkeys(
        """
    the to and a of in is it that for you this with on be not we can i are as if have but
    test file error function code run should will from use so add fix now what then check
    need make let one all there just change value when new data line use config path
    return type build update import module class name list call output result first time
    missing issue read write set get command tests failing works server user request support
    message version python install script before after version default case option string
    number key field query table index database sqlite schema migration column row insert
    select update delete commit branch merge rebase push pull diff status log review ci job
    pipeline deploy release docker image container kubernetes pod service port host network
    timeout retry lock flock mutex thread process async await future task queue worker cache
    memory leak heap stack trace panic exception traceback assert fixture mock patch pytest
    unittest coverage lint ruff mypy format typecheck compile linker cargo rustc crate go
    goroutine channel npm node typescript react component hook state props render css html
    http json yaml toml env variable secret token auth login session cookie header body
    response status endpoint route handler middleware api client sdk library dependency lock
    upgrade downgrade pin requirement wheel package registry build cache artifact binary
    shell bash zsh script cron systemd unit journal logs metrics tracing span prometheus
    grafana alert oncall incident postmortem latency throughput benchmark profile flamegraph
    regression bisect revert hotfix patch feature flag rollout canary rollback backup restore
    snapshot replica primary failover vacuum analyze explain plan join subquery transaction
    isolation deadlock busy wal journal checkpoint fsync atomic rename tempfile permission
    chmod chown symlink mount volume disk inode quota encoding utf unicode locale timezone utc
    datetime parse serialize deserialize schema validate validator regex pattern glob match
    search tokenizer fts ngram bigram stemmer embedding vector cosine similarity rerank score
    rank recall precision dataset sample batch epoch gradient loss model tokenizer prompt
    completion stream chunk buffer socket tls certificate proxy dns resolver apsw cattrs attrs
    structlog httpx numpy pandas polars arrow parquet csv excel pdf markdown frontmatter
    template jinja render widget layout viewport android ios swift kotlin gradle xcode
    simulator emulator signing provisioning keychain webhook stripe invoice refund subscription
    plan tier quota ratelimit throttle backoff jitter idempotency dedupe uuid ulid snowflake
    sequence counter gauge histogram percentile median outlier anomaly threshold heuristic
    fallback degrade circuit breaker bulkhead sidecar mesh envoy nginx caddy traefik terraform
    ansible helm chart values overlay kustomize namespace secretref configmap ingress egress
    firewall vpn bastion ssh keypair gpg signature checksum sha256 blake3 zstd gzip brotli
    tarball zipfile manifest lockfile vendoring monorepo workspace submodule sparse shallow
    clone fetch remote origin upstream fork cherry squash amend stash worktree blame bisect
    flaky nondeterministic race heisenbug segfault sigkill oom cgroup ulimit nice ionice
    """.split()  # noqa: SIM905 (a word list reads better as text)
    )
)
#: Frequent words (searches hitting many sessions).
COMMON_TERMS = ("error", "test", "file", "config", "build", "fix")
#: Rare words (a few hits in a big tree).
RARE_TERMS = ("heisenbug", "ionice", "cgroup", "blake3", "bulkhead", "snowflake")
#: Chinese terms of the CJK texts.
CJK_TERMS = ("数据库", "锁超时", "测试失败", "构建命令", "部署", "配置文件")
_CJK_WORDS = (
    *CJK_TERMS,
    "修复",
    "问题",
    "错误",
    "日志",
    "性能",
    "索引",
    "查询",
    "缓存",
    "内存",
    "会话",
    "用户",
    "项目",
    "版本",
    "依赖",
    "升级",
    "回滚",
    "超时",
    "重试",
    "并发",
    "死锁",
    "事务",
    "迁移",
    "文件",
    "目录",
    "权限",
    "环境变量",
    "单元测试",
    "集成测试",
    "代码审查",
    "提交",
    "分支",
    "合并",
    "发布",
    "监控",
    "告警",
    "延迟",
    "吞吐量",
    "基准测试",
)
_CJK_GLUE = ("的", "了", "在", "把", "用", "和", "还是", "需要", "已经", "可以", "不要", "先")
#: Tools by frequency: bash 50%, read 25%, edit 12%, grep 8%, write 5%.
_TOOL_DRAW = ("bash",) * 10 + ("read",) * 5 + ("edit", "edit") + ("grep", "write")
_MODELS = (
    ("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
    ("anthropic", "anthropic-messages", "claude-opus-4-1"),
    ("openai", "openai-responses", "gpt-5"),
    ("google", "google-generative-ai", "gemini-2.5-pro"),
)
_THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")
_START_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z
_SPAN_MS = 545 * 86_400_000  # sessions start within about 18 months
_CHUNK_CHARS = 4 << 20
_CJK_SHARE = 0.10
_TOOL_CALL_SHARE = 0.6  # an assistant message calls tools with this probability
_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class TreeStats:
    """What `write_session_tree` wrote: session files, `message` entries, JSONL lines, bytes."""

    files: int
    messages: int
    lines: int
    bytes: int


def encode_cwd(cwd: str) -> str:
    """Pi's folder name for a working directory: `/home/me/proj` → `--home-me-proj--`."""
    return "--" + cwd.lstrip("/\\").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


@attrs.frozen
class _Planned:
    """One session file to write: where, which session, how many messages."""

    index: int
    path: Path
    session_id: str
    cwd: str
    start_ms: int
    messages: int


def write_session_tree(
    root: Path, *, sessions: int, messages: int, seed: int = 0, workers: int = 1
) -> TreeStats:
    """Write `sessions` Pi session files holding `messages` message entries in all under
    `root/sessions/` (deterministic in `sessions`, `messages` and `seed`; `workers` > 1 writes
    the files from that many processes, with the same bytes)."""
    if sessions < 1 or messages < 0 or workers < 1:
        raise ValueError("sessions and workers must be at least 1, messages at least 0")
    plan = _plan(root / "sessions", sessions, messages, seed)
    for folder in {p.path.parent for p in plan}:
        folder.mkdir(parents=True, exist_ok=True)
    if workers == 1:
        results = [_write_batch(seed, plan)]
    else:
        batches = [plan[i::workers] for i in range(workers)]
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_write_batch, [seed] * workers, batches))
    return TreeStats(
        files=sessions,
        messages=messages,
        lines=sum(lines for lines, _ in results),
        bytes=sum(size for _, size in results),
    )


def _plan(base: Path, sessions: int, messages: int, seed: int) -> list[_Planned]:
    rng = random.Random(f"pi-session-tree/{seed}")
    counts = _split(rng, messages, sessions)
    project_weights = tuple(accumulate(1.0 / (rank + 1) ** 0.8 for rank in range(len(PROJECTS))))
    root_level = set(rng.sample(range(sessions), max(1, sessions // 200)))
    plan = []
    for index, count in enumerate(counts):
        cwd = rng.choices(PROJECTS, cum_weights=project_weights)[0]
        start_ms = _START_MS + rng.randrange(_SPAN_MS)
        session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        folder = base if index in root_level else base / encode_cwd(cwd)
        stamp = _iso(start_ms).replace(":", "-").replace(".", "-")
        path = folder / f"{stamp}_{session_id}.jsonl"
        plan.append(_Planned(index, path, session_id, cwd, start_ms, count))
    return plan


def _write_batch(seed: int, plan: list[_Planned]) -> tuple[int, int]:
    """Write these sessions; return (lines, bytes)."""
    text = _TextPools(random.Random(f"pi-session-tree/{seed}/pools"))
    lines = size = 0
    for planned in plan:
        rng = random.Random(f"pi-session-tree/{seed}/{planned.index}")
        with planned.path.open("wb") as out:
            session = _Session(rng, text, out, planned)
            session.write(planned.messages)
        lines += session.lines
        size += session.bytes
    return lines, size


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    """`total` split into `parts` log-normally varying counts (at least 1 when there are
    enough), summing exactly to `total`."""
    weights = [rng.lognormvariate(0.0, 1.0) for _ in range(parts)]
    floor = 1 if total >= parts else 0
    spare = total - floor * parts
    scale = spare / sum(weights)
    counts = [floor + int(w * scale) for w in weights]
    for index in rng.sample(range(parts), total - sum(counts)):
        counts[index] += 1
    return counts


def _iso(ms: int) -> str:
    t = time.gmtime(ms // 1000)
    return f"{t[0]:04d}-{t[1]:02d}-{t[2]:02d}T{t[3]:02d}:{t[4]:02d}:{t[5]:02d}.{ms % 1000:03d}Z"


def _esc(text: str) -> str:
    """`text` as the inside of a JSON string (UTF-8 kept as is, as Pi writes it)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class _TextPools:
    """Pre-escaped text fragments the sessions are assembled from (built once per process).

    `stream` is a long pre-drawn Zipf word sequence: a slice of it at a random offset is as
    good as fresh draws and a hundred times cheaper.
    """

    def __init__(self, rng: random.Random) -> None:
        cum = tuple(accumulate(1.0 / (rank + 1) for rank in range(len(VOCABULARY))))
        self.stream = rng.choices(VOCABULARY, cum_weights=cum, k=1 << 18)
        self.rng = rng
        self.sentences = [_esc(self.sentence()) for _ in range(4096)]
        self.cjk = [_esc(self.cjk_sentence()) for _ in range(1024)]
        self.output = [_esc(self.output_line()) for _ in range(16_384)]
        self.code = [_esc(self.code_line()) for _ in range(4096)]
        self.commands = [_esc(self.command()) for _ in range(4096)]
        self.paths = [_esc(f"src/{a}/{b}.py") for a, b in (self.words(2) for _ in range(4096))]
        self.usages = [self.usage() for _ in range(1024)]

    def words(self, k: int, rng: random.Random | None = None) -> list[str]:
        start = int((rng or self.rng).random() * (len(self.stream) - k))
        return self.stream[start : start + k]

    def sentence(self) -> str:
        rng = self.rng
        words = self.words(rng.randint(5, 18))
        return " ".join(words).capitalize() + rng.choice((".", ".", ".", "?", "!", ":"))

    def cjk_sentence(self) -> str:
        rng = self.rng
        parts: list[str] = []
        for _ in range(rng.randint(3, 8)):
            parts.append(rng.choice(_CJK_WORDS))
            roll = rng.random()
            if roll < 0.5:
                parts.append(rng.choice(_CJK_GLUE))
            elif roll < 0.65:
                parts.append(rng.choice(self.stream))
        return "".join(parts) + rng.choice(("。", "？", "，", "！"))

    def usage(self) -> str:
        """An assistant message's `usage` field (token counts and cost in dollars)."""
        rng = self.rng
        tokens_in, tokens_out = rng.randint(200, 180_000), rng.randint(20, 4_000)
        cached = rng.randint(0, tokens_in)
        cost_in, cost_out, cost_cached = tokens_in * 3e-6, tokens_out * 1.5e-5, cached * 3e-7
        return (
            f'"usage":{{"input":{tokens_in - cached},"output":{tokens_out},'
            f'"cacheRead":{cached},"cacheWrite":0,"totalTokens":{tokens_in + tokens_out},'
            f'"cost":{{"input":{cost_in:.6f},"output":{cost_out:.6f},'
            f'"cacheRead":{cost_cached:.6f},"cacheWrite":0,"total":{cost_in + cost_out:.6f}}}}}'
        )

    def command(self) -> str:
        w = self.words(3)
        return self.rng.choice(
            (
                f"rg -n {w[0]} src/ tests/",
                f"pytest -q tests/test_{w[0]}.py -k {w[1]}",
                "git status --short && git diff --stat",
                f"git log --oneline -n 20 -- src/{w[0]}",
                f"ls -la src/{w[0]}",
                f"sed -n 1,120p src/{w[0]}/{w[1]}.py",
                f"make {w[0]} 2>&1 | tail -40",
                f"grep -rn '{w[0]} {w[1]}' docs/ | head",
            )
        )

    def output_line(self) -> str:
        rng = self.rng
        w = self.words(6)
        kind = rng.randrange(8)
        if kind == 0:
            return f"src/{w[0]}/{w[1]}.py:{rng.randint(1, 900)}: {w[2]} {w[3]} {w[4]} {w[5]}"
        if kind == 1:
            verdict = rng.choice(("PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"))
            return f"tests/test_{w[0]}.py::test_{w[1]}_{w[2]} {verdict} [{rng.randint(0, 100)}%]"
        if kind == 2:
            level = rng.choice(("INFO", "INFO", "DEBUG", "WARN", "ERROR"))
            return (
                f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} "
                f"{level} {w[0]}.{w[1]}: {w[2]} {w[3]} {w[4]} {w[5]} id={rng.getrandbits(32):08x}"
            )
        if kind == 3:
            return f'  File "/home/me/src/{w[0]}/{w[1]}.py", line {rng.randint(1, 900)}, in {w[2]}'
        if kind == 4:
            size, day = rng.randint(0, 99_999), rng.randint(1, 28)
            return f"-rw-r--r-- 1 me me {size:>6} Jan {day:>2} {w[0]}_{w[1]}.{w[2][:3]}"
        return self.code_line()

    def code_line(self) -> str:
        rng = self.rng
        w = self.words(5)
        indent = "    " * rng.randint(0, 3)
        kind = rng.randrange(6)
        if kind == 0:
            return f"{indent}def {w[0]}_{w[1]}({w[2]}: str, {w[3]}: int = 0) -> {w[4].title()}:"
        if kind == 1:
            return f"{indent}{w[0]} = {w[1]}.{w[2]}({w[3]}, {w[4]}=True)"
        if kind == 2:
            return f'{indent}raise {w[0].title()}Error(f"{w[1]} {w[2]} {{{w[3]}!r}}")'
        if kind == 3:
            return f"{indent}# {w[0]} {w[1]} {w[2]} {w[3]} {w[4]}"
        if kind == 4:
            return f"{indent}if {w[0]} is None or not {w[1]}.{w[2]}:"
        return f"{indent}return {w[0]}_{w[1]}[{w[2]!r}]"


class _Session:
    """One session file: the header, then turns until `count` message entries are written.

    Hot path: random numbers come from `rng.random()` scaled by hand (`randint` and `choice`
    cost ten times more), and every line is one f-string of pre-escaped fragments.
    """

    def __init__(
        self, rng: random.Random, text: _TextPools, out: BinaryIO, planned: _Planned
    ) -> None:
        self.rng = rng
        self.r = rng.random
        self.text = text
        self.out = out
        self.chunks: list[str] = []
        self.size = 0
        self.lines = 0
        self.bytes = 0
        self.ms = planned.start_ms
        self.minute = -1
        self.minute_prefix = ""
        self.parent = "null"
        self.turn_over = True  # the next message starts a turn (a user message)
        self.cjk = False  # this message's prose is Chinese
        provider, api, model = self.pick(_MODELS)
        self.model = f'"api":"{api}","provider":"{provider}","model":"{model}"'
        self.emit(
            f'{{"type":"session","version":3,"id":"{planned.session_id}",'
            f'"timestamp":"{_iso(planned.start_ms)}","cwd":"{_esc(planned.cwd)}"}}'
        )
        if self.r() < 0.9:
            self.model_change(provider, model)
            self.entry("thinking_level_change", f'"thinkingLevel":"{self.pick(_THINKING_LEVELS)}"')

    # -- helpers

    def between(self, low: int, high: int) -> int:
        return low + int(self.r() * (high - low + 1))

    def pick(self, items: Sequence[_T]) -> _T:
        return items[int(self.r() * len(items))]

    def stamp(self) -> str:
        """`self.ms` as an ISO timestamp (the date-and-minute prefix is cached)."""
        seconds, ms = divmod(self.ms, 1000)
        minute, second = divmod(seconds, 60)
        if minute != self.minute:
            self.minute = minute
            self.minute_prefix = _iso(minute * 60_000)[:17]
        return f"{self.minute_prefix}{second:02d}.{ms:03d}Z"

    # -- writing

    def emit(self, line: str) -> None:
        self.chunks.append(line)
        self.size += len(line)
        self.lines += 1
        if self.size >= _CHUNK_CHARS:
            self.flush()

    def flush(self) -> None:
        if self.chunks:
            data = ("\n".join(self.chunks) + "\n").encode("utf-8")
            self.out.write(data)
            self.bytes += len(data)
        self.chunks.clear()
        self.size = 0

    def head(self, kind: str, step_ms: int) -> str:
        """The common fields of an entry: type, id, parentId (the previous entry), timestamp."""
        self.ms += step_ms
        entry_id = f"{self.rng.getrandbits(32):08x}"
        parent = self.parent
        self.parent = f'"{entry_id}"'
        return (
            f'{{"type":"{kind}","id":"{entry_id}","parentId":{parent},"timestamp":"{self.stamp()}"'
        )

    def entry(self, kind: str, fields: str) -> None:
        self.emit(f"{self.head(kind, self.between(1, 400))},{fields}}}")

    def model_change(self, provider: str, model: str) -> None:
        self.entry("model_change", f'"provider":"{provider}","modelId":"{model}"')

    def message(self, step_ms: int, body: str) -> None:
        """A message entry (the hot path: `head` and `emit` inlined)."""
        self.ms = ms = self.ms + step_ms
        entry_id = f"{self.rng.getrandbits(32):08x}"
        parent = self.parent
        self.parent = f'"{entry_id}"'
        line = (
            f'{{"type":"message","id":"{entry_id}","parentId":{parent},'
            f'"timestamp":"{self.stamp()}","message":{{{body},"timestamp":{ms}}}}}'
        )
        self.chunks.append(line)
        self.size += len(line)
        self.lines += 1
        if self.size >= _CHUNK_CHARS:
            self.flush()

    # -- the conversation

    def write(self, count: int) -> None:
        r = self.r
        pending: list[tuple[str, str]] = []  # tool calls waiting for their results
        for _ in range(count):
            if r() < 0.004:
                self.interlude()
            if pending:
                call_id, tool = pending.pop(0)
                self.tool_result(call_id, tool)
            elif self.turn_over:
                self.user()
                self.turn_over = False
            else:
                pending = self.assistant()
                self.turn_over = not pending
        self.flush()

    def interlude(self) -> None:
        roll = self.r()
        if roll < 0.4:
            provider, _, model = self.pick(_MODELS)
            self.model_change(provider, model)
        elif roll < 0.8:
            self.entry("thinking_level_change", f'"thinkingLevel":"{self.pick(_THINKING_LEVELS)}"')
        elif roll < 0.9:
            name = " ".join(self.text.words(self.between(2, 5), self.rng))
            self.entry("session_info", f'"name":"{name}"')
        else:
            self.entry("custom", f'"customType":"todo-list","data":{{"open":{self.between(0, 9)}}}')

    def prose(self, low: int, high: int) -> str:
        """`low`..`high` sentences (escaped) and a few fresh words, Chinese when `self.cjk`."""
        pool = self.text.cjk if self.cjk else self.text.sentences
        parts = [self.pick(pool) for _ in range(self.between(low, high))]
        parts.append(" ".join(self.text.words(self.between(2, 6), self.rng)))
        return " ".join(parts)

    def user(self) -> None:
        step = self.between(5_000, 600_000)
        self.cjk = self.r() < _CJK_SHARE
        self.message(step, f'"role":"user","content":"{self.prose(1, 3)}"')

    def assistant(self) -> list[tuple[str, str]]:
        r = self.r
        self.cjk = r() < _CJK_SHARE
        blocks: list[str] = []
        if r() < 0.7:
            blocks.append(f'{{"type":"thinking","thinking":"{self.prose(1, 3)}"}}')
        calls: list[tuple[str, str]] = []
        if r() < _TOOL_CALL_SHARE:
            if r() < 0.4:
                blocks.append(f'{{"type":"text","text":"{self.prose(1, 2)}"}}')
            for _ in range(2 if r() < 0.12 else 1):
                tool = _TOOL_DRAW[int(r() * len(_TOOL_DRAW))]
                call_id = f"toolu_{self.rng.getrandbits(96):024x}"
                blocks.append(
                    f'{{"type":"toolCall","id":"{call_id}","name":"{tool}",'
                    f'"arguments":{self.arguments(tool)}}}'
                )
                calls.append((call_id, tool))
            stop = "toolUse"
        else:
            blocks.append(f'{{"type":"text","text":"{self.prose(1, 4)}"}}')
            stop = "stop"
        usage = self.pick(self.text.usages)
        self.message(
            self.between(1_500, 60_000),
            f'"role":"assistant","content":[{",".join(blocks)}],{self.model},{usage},'
            f'"stopReason":"{stop}"',
        )
        return calls

    def arguments(self, tool: str) -> str:
        text = self.text
        if tool == "bash":
            timeout = self.pick((30, 60, 120, 600))
            return f'{{"command":"{self.pick(text.commands)}","timeout":{timeout}}}'
        if tool == "read":
            return (
                f'{{"path":"{self.pick(text.paths)}","offset":{self.between(1, 400)},"limit":200}}'
            )
        if tool == "grep":
            return f'{{"pattern":"{self.pick(text.stream)}","path":"src"}}'
        if tool == "edit":
            old, new = self.pick(text.code), self.pick(text.code)
            return f'{{"path":"{self.pick(text.paths)}","oldText":"{old}","newText":"{new}"}}'
        body = self.block(text.code, self.between(10, 60))
        return f'{{"path":"{self.pick(text.paths)}","content":"{body}"}}'

    def block(self, pool: list[str], n: int) -> str:
        """`n` consecutive pool lines from a random place (escaped, joined by newlines)."""
        start = int(self.r() * len(pool))
        picked = pool[start : start + n]
        if len(picked) < n:
            picked += pool[: n - len(picked)]
        return "\\n".join(picked)

    def tool_result(self, call_id: str, tool: str) -> None:
        rng = self.rng
        n = min(int(rng.lognormvariate(2.95, 1.0)) + 1, 1_500)
        pool = self.text.code if tool in ("read", "write") else self.text.output
        error = "true" if self.r() < 0.06 else "false"
        self.message(
            self.between(30, 8_000),
            f'"role":"toolResult","toolCallId":"{call_id}","toolName":"{tool}",'
            f'"content":[{{"type":"text","text":"{self.block(pool, n)}"}}],"isError":{error}',
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.session_tree", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("out", type=Path, help="the agent root; sessions go to OUT/sessions/")
    parser.add_argument("--sessions", type=int, default=2_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="writing processes (same bytes)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    stats = write_session_tree(
        args.out,
        sessions=args.sessions,
        messages=args.messages,
        seed=args.seed,
        workers=args.workers,
    )
    seconds = time.perf_counter() - started
    rate = stats.bytes / 1e6 / seconds if seconds else 0.0
    if args.json:
        print(json.dumps({**attrs.asdict(stats), "seconds": round(seconds, 3), "mb_s": rate}))
    else:
        print(
            f"{stats.files} files, {stats.messages} messages, {stats.lines} lines, "
            f"{stats.bytes / 1e6:.1f} MB in {seconds:.1f} s ({rate:.0f} MB/s) "
            f"under {args.out / 'sessions'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
