"""Benchmarks on a real on-disk store: `add` latency, journal replay and `memory_search`.

    python -m tests.bench.run [--quick] [--out results.json]

Prints Markdown tables (machine context, `add` latency by store size, journal replay,
`memory_search` latency by store size) and,
with `--out`, writes the same figures as JSON. `make bench` runs the full sizes (a few minutes
on two cores); `--quick` uses small sizes and is only a smoke run, its figures mean little.

What is measured:

- `add` latency: `Memory.add` on a store opened with `pi_hermes_memory.open` (SQLite journal +
  Markdown files in a temporary agent root, char limits raised to 10^9 so capacity never
  interferes) that already holds N entries in the `memory` target, so the near-duplicate scan
  and the Markdown render see all of them. The N entries are appended as `memory.added.v1`
  events directly through `SqliteStorage` (going through `add` would take O(N^2)); reopening
  the store renders MEMORY.md from the journal. A few warm-up adds run first (the first one
  also fills the token-set cache of all N entries; it is reported as "first add").
- journal replay: a journal of E events (mostly adds, some replaces and removes across the four
  streams) is built through `SqliteStorage.transaction()`; a fresh connection then folds every
  stream from version 0 (`fold(MemoryDocument.empty(t), uow.journal.read(stream_for(t)))`).
  Separately timed on the same connection: fetching the raw rows, decoding them
  (`codec.decode`) and folding the decoded events. Medians over the repeats; the database file
  is in the OS page cache (it was just written), so "cold" means a cold process-level state.
- `memory_search` latency: `SqliteSearchIndex.search` (FTS5 only, no Markdown refresh, no
  embeddings) on a `sessions.db` of N rows (~20% superseded history; 30% Chinese texts; project
  and failure rows over five projects), built by appending events through `SqliteStorage`.
  The session scope is project "web", sharing off. Per query kind (keyword queries in English
  or Chinese, and whole English or Chinese sentences, whose common words match most rows),
  distinct seeded queries are timed after a warm-up pass; p50/p95 over those queries.
- skills at 1,000 skills (`tests/bench/skills.py`): p50 of `SkillService.discover()` (with the
  statistics tables; folders on disk, settled), of `skill view` (`SkillService.get`) and of one
  `create`.
- skill load cleanup: `SqliteSkillTables.cleanup_loads` once on a `skill_load_daily` of N rows
  (1,000 skills x N/1,000 days, all older than the 180-day retention, inserted by executemany),
  budget 500: the time of the one due run and the rows it deleted, then the time of the next
  call within 24 h (not due: the read-only check each discovery pays).

- consolidation pre-clustering (`tests/bench/clustering.py`) at 200 and 2,000 entries.
- the caller-thread cost of lifecycle calls (`tests/bench/lifecycle.py`).
- open, CLI `search` wall time, import times and resident size by history size
  (`tests/bench/open_cli.py`, ADR 0038).
- Claude Code's hooks as child processes: latency per event on a 10k store, and the time from
  `setup claude-code` to the first remembered fact (`tests/bench/hooks.py`, ADR 0090).
- the framework front ends' overhead over a direct library call, write and search
  (`tests/bench/frameworks.py`, ADR 0095).

No figure here is asserted by the test suite; `tests/bench/test_bench_smoke.py` only checks that
the functions return well-formed results.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pi_hermes_memory
from pi_hermes_memory.adapters.sqlite.storage import SqliteStorage
from pi_hermes_memory.adapters.system import UlidFactory
from pi_hermes_memory.config.settings import CONFIG_FILE_NAME
from pi_hermes_memory.domain.memory.document import MemoryDocument, fold, stream_for
from pi_hermes_memory.domain.memory.events import (
    Event,
    MemoryAdded,
    MemoryRemoved,
    MemoryReplaced,
    RemovalReason,
)
from pi_hermes_memory.domain.memory.model import FailureCategory, Target
from pi_hermes_memory.journal.codec import decode

from tests.bench import ts_shape
from tests.support.keyword_previous import search_previous

#: The targets from the issue, printed next to the figures.
ADD_P50_TARGET_MS = 5.0
ADD_TARGET_ENTRIES = 100_000  # issue 17 (was 1,000)
#: issue 29: add p50 ≤ 5 ms at 1k and at 100k (one synced commit per add, ADR 0085)
ADD_TARGET_SIZES = (1_000, ADD_TARGET_ENTRIES)

PROJECT = "bench"
BIG_LIMIT = 10**9
WARMUP_ADDS = 3
_BASE_TIME = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)

# --- realistic, distinct texts ----------------------------------------------------------------

_COMPONENTS = (
    "payments service", "billing worker", "search indexer", "auth gateway", "email relay",
    "report builder", "image resizer", "order pipeline", "pricing engine", "audit logger",
    "inventory sync", "webhook dispatcher", "metrics exporter", "feature flag service",
    "notification hub", "ledger reconciler", "catalog importer", "session store",
    "rate limiter", "job scheduler", "geocoding client", "PDF renderer", "chat backend",
    "analytics loader", "CDN purger", "backup agent", "config loader", "GraphQL layer",
    "mobile API", "admin console", "checkout flow", "tax calculator", "shipping quoter",
    "recommendation model", "translation cache", "upload scanner", "video transcoder",
    "docs site", "support inbox", "release bot",
)  # fmt: skip
_VERBS = (
    "reads", "caches", "retries", "validates", "batches", "compresses", "streams", "archives",
    "deduplicates", "rounds", "paginates", "normalises", "sorts", "signs", "throttles",
    "prefetches", "shards", "mirrors", "snapshots", "indexes", "replays", "aggregates",
    "encodes", "trims", "versions",
)  # fmt: skip
_THINGS = (
    "invoice totals", "customer addresses", "product images", "exchange rates",
    "warehouse stock levels", "delivery slots", "refund requests", "audit records",
    "search suggestions", "user avatars", "coupon codes", "tax tables", "shipping labels",
    "order histories", "price lists", "loyalty points", "support tickets", "feature toggles",
    "daily reports", "log bundles", "webhook payloads", "CSV exports", "translation strings",
    "thumbnail sets", "geo fences", "sales forecasts", "subscription plans", "payout batches",
    "event streams", "schema migrations", "fraud scores", "email templates", "push receipts",
    "store hours", "menu items", "parcel weights", "vendor contracts", "survey answers",
    "health probes", "timezone offsets",
)  # fmt: skip
_WHENS = (
    "after every deploy", "during the nightly batch", "before the weekly release",
    "on the first request of the day", "whenever the queue backs up", "at month end",
    "inside the retry window", "only in the EU region", "for enterprise tenants",
    "behind the canary flag", "when the replica lags", "in the staging cluster",
    "during peak traffic", "on cold starts", "for anonymous visitors", "in dry-run mode",
    "after a schema change", "while migrations run", "for mobile clients",
    "on the Sunday maintenance window", "when the cache is empty", "for legacy accounts",
    "in the load tests", "right after login", "before invoices close", "on failover",
    "for partner integrations", "in the nightly smoke suite", "when disk usage passes 80%",
    "at the top of each hour",
)  # fmt: skip
_ASIDES = (
    "the platform team owns it", "see the runbook chapter on queues",
    "Marta reviewed the design", "it was slow before version 4.2", "metrics live in Grafana",
    "the fix landed in March", "keep the timeout at 30 seconds", "tests cover the edge cases",
    "it doubles as a health check", "alerts page the on-call rotation",
    "the old path is deprecated", "ask Ravi before changing it", "the limit is documented",
    "QA signed off last sprint", "errors go to Sentry", "it uses Postgres advisory locks",
    "Redis holds the hot set", "the contract tests guard it", "the SLA is 99.9 percent",
    "the vendor SDK pins it", "logs are sampled at 10 percent", "the design doc is in Notion",
    "this surprised the new hires", "the benchmark is in CI", "it must stay idempotent",
    "clients expect ISO dates", "the default changed in 2025", "it survived the last outage",
    "the dashboard shows p99", "Kotlin and Go clients agree",
)  # fmt: skip
_SLOTS = (_COMPONENTS, _VERBS, _THINGS, _WHENS, _ASIDES)


class TextGenerator:
    """Seeded entry texts like an agent would save: `The <component> <verb> <thing> <when>; …`.

    With `distinct=True` any two texts differ in at least two of the five slots, which keeps
    their token Jaccard far below the near-duplicate threshold (0.8).
    """

    def __init__(self, seed: int, *, distinct: bool = True) -> None:
        self._rng = random.Random(seed)
        self._distinct = distinct
        self._seen: set[tuple[int, ...]] = set()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while True:
            picks = tuple(self._rng.randrange(len(slot)) for slot in _SLOTS)
            if not self._distinct:
                break
            # every "all slots but one" key must be new: then no two texts share 4 slots
            keys = [(i, *picks[:i], *picks[i + 1 :]) for i in range(len(picks))]
            if not any(k in self._seen for k in keys):
                self._seen.update(keys)
                break
        component, verb, thing, when, aside = (s[i] for s, i in zip(_SLOTS, picks, strict=True))
        return f"The {component} {verb} {thing} {when}; {aside}."


# --- helpers ----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]), like numpy's default."""
    if not values:
        raise ValueError("no values")
    data = sorted(values)
    pos = (len(data) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


@contextmanager
def _workdir(root: Path | None) -> Iterator[Path]:
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        yield root
        return
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        yield Path(tmp)


def _open(root: Path) -> pi_hermes_memory.Memory:
    return pi_hermes_memory.open(
        agent_root=root / "agent", environ={"HOME": str(root)}, cwd=root, project=PROJECT
    )


def _write_config(root: Path) -> None:
    agent = root / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    limits = {"memoryCharLimit": BIG_LIMIT, "userCharLimit": BIG_LIMIT}
    limits["projectCharLimit"] = BIG_LIMIT
    (agent / CONFIG_FILE_NAME).write_text(json.dumps(limits), encoding="utf-8")


def _added(
    stream: str, version: int, at: datetime, entry_id: str, target: Target, text: str
) -> MemoryAdded:
    return MemoryAdded(
        stream=stream,
        version=version,
        at=at,
        entry_id=entry_id,
        target=target,
        text=text,
        project=PROJECT if target in (Target.PROJECT, Target.FAILURE) else None,
        category=FailureCategory.INSIGHT if target is Target.FAILURE else None,
        created=at.date(),
        last_referenced=at.date(),
    )


def machine_context() -> dict[str, Any]:
    cpu_model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        storage = SqliteStorage(Path(tmp) / "probe.db")
        try:
            sqlite_version = str(storage.connection.execute("SELECT sqlite_version()").get)
        finally:
            storage.close()
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "cpu_model": cpu_model,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "sqlite": sqlite_version,
        "platform": platform.platform(),
        "pi_hermes_memory": pi_hermes_memory.__version__,
    }


# --- add latency ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AddLatency:
    entries: int  # active entries in the `memory` target before the timed adds
    samples: int  # timed adds (warm-up adds excluded)
    warmup: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    max_ms: float
    first_add_ms: float  # the first warm-up add (cold token-set cache)
    prefill_s: float  # appending the N events
    open_s: float  # opening the store (renders MEMORY.md with N entries)
    statuses: dict[str, int]  # status -> count over the timed adds
    latencies_ms: tuple[float, ...] = attrs.field(repr=False)
    #: p50 of the process CPU time per timed add (no fsync or lock waits: the part that
    #: grows with the store, without the disk's noise)
    cpu_p50_ms: float = 0.0
    #: p99 of the timed adds, and `Memory.close` after them (it renders a pending file, ADR 0042)
    p99_ms: float = 0.0
    close_ms: float = 0.0


def prefill(root: Path, entries: int, texts: Iterator[str], *, chunk: int = 5_000) -> float:
    """Create the store under `root` and append `entries` adds to the memory stream; seconds."""
    _write_config(root)
    with _open(root) as memory:  # creates the database and the Markdown directories
        db_path = memory.config.db_path
    started = time.perf_counter()
    ids = UlidFactory()
    stream = stream_for(Target.MEMORY)
    storage = SqliteStorage(db_path)
    try:
        with storage.transaction() as uow:
            version = uow.journal.version(stream)
            done = 0
            while done < entries:
                size = min(chunk, entries - done)
                events = [
                    _added(
                        stream,
                        version + i + 1,
                        _BASE_TIME + timedelta(seconds=version + i),
                        ids.new_id(),
                        Target.MEMORY,
                        next(texts),
                    )
                    for i in range(size)
                ]
                uow.journal.append(stream, version, events)
                uow.projection.apply(events)
                version += size
                done += size
    finally:
        storage.close()
    return time.perf_counter() - started


def bench_add(
    entries: int,
    samples: int,
    *,
    warmup: int = WARMUP_ADDS,
    seed: int = 1,
    root: Path | None = None,
) -> AddLatency:
    """Time `samples` single `Memory.add` calls on a store already holding `entries`."""
    if samples < 1:
        raise ValueError("samples must be >= 1")
    texts = TextGenerator(seed)
    with _workdir(root) as work:
        prefill_s = prefill(work, entries, texts)
        started = time.perf_counter()
        memory = _open(work)
        open_s = time.perf_counter() - started
        try:
            assert len(memory.entries("memory")) == entries
            latencies: list[float] = []
            statuses: dict[str, int] = {}
            first_add_ms = 0.0
            cpu: list[float] = []
            for i in range(warmup + samples):
                text = next(texts)
                started, cpu_started = time.perf_counter(), time.process_time()
                result = memory.add(text, target="memory")
                elapsed_ms = (time.perf_counter() - started) * 1000
                if i == 0:
                    first_add_ms = elapsed_ms
                if i >= warmup:
                    latencies.append(elapsed_ms)
                    cpu.append((time.process_time() - cpu_started) * 1000)
                    statuses[result.status] = statuses.get(result.status, 0) + 1
        finally:
            started = time.perf_counter()
            memory.close()
            close_ms = (time.perf_counter() - started) * 1000
    return AddLatency(
        entries=entries,
        samples=len(latencies),
        warmup=warmup,
        p50_ms=percentile(latencies, 50),
        p95_ms=percentile(latencies, 95),
        mean_ms=statistics.fmean(latencies),
        max_ms=max(latencies),
        first_add_ms=first_add_ms,
        prefill_s=prefill_s,
        open_s=open_s,
        statuses=statuses,
        latencies_ms=tuple(latencies),
        cpu_p50_ms=percentile(cpu, 50),
        p99_ms=percentile(latencies, 99),
        close_ms=close_ms,
    )


# --- journal replay ---------------------------------------------------------------------------

#: Share of the events per stream, and the operation mix once a stream has active entries.
_STREAM_WEIGHTS = {Target.MEMORY: 0.4, Target.USER: 0.15, Target.PROJECT: 0.3, Target.FAILURE: 0.15}
_ADD_SHARE, _REPLACE_SHARE = 0.8, 0.12  # the rest are removes


@attrs.frozen(kw_only=True)
class ReplayResult:
    events: int
    by_stream: dict[str, int]
    by_kind: dict[str, int]
    active: int  # active entries over all streams after the fold
    history: int
    repeats: int
    build_s: float
    cold_total_s: float  # the first read + decode + fold, on a fresh connection
    total_s: float  # median over the repeats of read + decode + fold via journal.read
    fetch_s: float  # median: raw SELECT of the rows
    decode_s: float  # median: codec.decode of the fetched rows
    fold_s: float  # median: fold of the decoded events

    def rate(self, seconds: float) -> float:
        return self.events / seconds if seconds > 0 else float("inf")


def build_journal(
    db_path: Path, events: int, *, seed: int = 7, chunk: int = 2_000
) -> dict[str, Any]:
    """Append `events` events over the four streams through SqliteStorage; returns counts."""
    rng = random.Random(seed)
    texts = TextGenerator(seed, distinct=False)
    ids = UlidFactory()
    targets = list(_STREAM_WEIGHTS)
    weights = [_STREAM_WEIGHTS[t] for t in targets]
    active: dict[Target, list[str]] = {t: [] for t in targets}
    version = dict.fromkeys(targets, 0)
    pending: dict[Target, list[Event]] = {t: [] for t in targets}
    kinds = {"add": 0, "replace": 0, "remove": 0}
    storage = SqliteStorage(db_path)

    def flush(uow: Any, target: Target) -> None:
        batch = pending[target]
        if batch:
            uow.journal.append(stream_for(target), batch[0].version - 1, batch)
            uow.projection.apply(batch)
            pending[target] = []

    try:
        with storage.transaction() as uow:
            for n in range(events):
                target = rng.choices(targets, weights)[0]
                stream = stream_for(target)
                version[target] += 1
                at = _BASE_TIME + timedelta(seconds=n)
                live = active[target]
                roll = rng.random()
                event: Event
                if not live or roll < _ADD_SHARE:
                    entry_id = ids.new_id()
                    event = _added(stream, version[target], at, entry_id, target, next(texts))
                    live.append(entry_id)
                    kinds["add"] += 1
                elif roll < _ADD_SHARE + _REPLACE_SHARE:
                    slot = rng.randrange(len(live))
                    new_id = ids.new_id()
                    added = _added(stream, version[target], at, new_id, target, next(texts))
                    event = MemoryReplaced(
                        stream=stream,
                        version=version[target],
                        at=at,
                        old_id=live[slot],
                        new_id=new_id,
                        text=added.text,
                        project=added.project,
                        category=added.category,
                        created=added.created,
                        last_referenced=added.last_referenced,
                    )
                    live[slot] = new_id
                    kinds["replace"] += 1
                else:
                    slot = rng.randrange(len(live))
                    live[slot], live[-1] = live[-1], live[slot]
                    event = MemoryRemoved(
                        stream=stream,
                        version=version[target],
                        at=at,
                        entry_id=live.pop(),
                        reason=RemovalReason.TOOL,
                    )
                    kinds["remove"] += 1
                pending[target].append(event)
                if len(pending[target]) >= chunk:
                    flush(uow, target)
            for target in targets:
                flush(uow, target)
    finally:
        storage.close()
    return {
        "by_stream": {stream_for(t): version[t] for t in targets},
        "by_kind": kinds,
        "active": sum(len(v) for v in active.values()),
    }


_SELECT_ROWS = "SELECT tag, data FROM events WHERE stream = ? ORDER BY version"


def _replay_once(db_path: Path) -> dict[str, Any]:
    storage = SqliteStorage(db_path)
    try:
        started = time.perf_counter()
        with storage.transaction() as uow:
            docs = {
                t: fold(MemoryDocument.empty(t), uow.journal.read(stream_for(t))) for t in Target
            }
        total = time.perf_counter() - started

        conn = storage.connection
        started = time.perf_counter()
        rows = {t: list(conn.execute(_SELECT_ROWS, (stream_for(t),))) for t in Target}
        fetch = time.perf_counter() - started

        started = time.perf_counter()
        decoded = {t: [decode(tag, data) for tag, data in rows[t]] for t in Target}
        decode_s = time.perf_counter() - started

        started = time.perf_counter()
        folded = {t: fold(MemoryDocument.empty(t), decoded[t]) for t in Target}
        fold_s = time.perf_counter() - started
    finally:
        storage.close()
    assert all(folded[t].version == docs[t].version for t in Target)
    return {
        "total": total,
        "fetch": fetch,
        "decode": decode_s,
        "fold": fold_s,
        "events": sum(len(v) for v in rows.values()),
        "active": sum(len(d.active) for d in docs.values()),
        "history": sum(len(d.history) for d in docs.values()),
    }


def bench_replay(events: int, *, repeats: int = 3, root: Path | None = None) -> ReplayResult:
    """Build a journal of `events` events, then time cold replays of all four streams."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    with _workdir(root) as work:
        db_path = work / "replay.db"
        started = time.perf_counter()
        built = build_journal(db_path, events)
        build_s = time.perf_counter() - started
        runs = [_replay_once(db_path) for _ in range(repeats)]
    first = runs[0]
    assert first["events"] == events and first["active"] == built["active"]
    return ReplayResult(
        events=first["events"],
        by_stream=built["by_stream"],
        by_kind=built["by_kind"],
        active=first["active"],
        history=first["history"],
        repeats=repeats,
        build_s=build_s,
        cold_total_s=first["total"],
        total_s=statistics.median(r["total"] for r in runs),
        fetch_s=statistics.median(r["fetch"] for r in runs),
        decode_s=statistics.median(r["decode"] for r in runs),
        fold_s=statistics.median(r["fold"] for r in runs),
    )


# --- memory_search ----------------------------------------------------------------------------

#: The target from the issue, printed next to the figures.
SEARCH_P50_TARGET_MS = 1.0
SEARCH_CJK_SENTENCE_P50_TARGET_MS = 5.0
SEARCH_TARGET_ROWS = 100_000
#: issue 29: keyword search at most this times the bare-SQL floor of its plan (ADR 0081)
SEARCH_FLOOR_RATIO = 1.2
#: sizes at which the issue asks for at least the TypeScript original's speed
SEARCH_PEER_ROWS = (1_000, 5_000, 20_000, 100_000)
SEARCH_PROJECTS = ("web", "api", "ml", "ops", "docs")
SEARCH_SESSION_PROJECT = "web"
_SEARCH_TARGET_WEIGHTS = {
    Target.MEMORY: 0.3,
    Target.USER: 0.1,
    Target.PROJECT: 0.4,
    Target.FAILURE: 0.2,
}
_SEARCH_REPLACE_SHARE = 0.2  # of the operations: the superseded history is ~20% of the rows
_SEARCH_CJK_SHARE = 0.3  # of the texts

_ZH_COMPONENTS = (
    "支付服务", "账单任务", "搜索索引", "认证网关", "邮件中继", "报表生成器", "图片缩放",
    "订单流水线", "定价引擎", "审计日志", "库存同步", "回调分发", "指标导出", "功能开关",
    "通知中心", "对账程序", "目录导入", "会话存储", "限流器", "任务调度", "地理编码",
    "聊天后端", "数据加载", "备份代理", "配置加载", "移动接口", "管理后台", "结账流程",
    "税费计算", "运费报价",
)  # fmt: skip
_ZH_VERBS = (
    "读取", "缓存", "重试", "校验", "批量处理", "压缩", "归档", "去重", "分页", "签名",
    "限速", "预取", "分片", "镜像", "快照", "索引", "重放", "聚合", "编码", "裁剪",
)  # fmt: skip
_ZH_THINGS = (
    "发票金额", "客户地址", "商品图片", "汇率数据", "库存数量", "配送时段", "退款申请",
    "审计记录", "搜索建议", "用户头像", "优惠券码", "税率表", "运单标签", "订单历史",
    "价格清单", "会员积分", "客服工单", "功能开关", "每日报表", "日志包", "回调数据",
    "导出文件", "翻译文本", "缩略图", "地理围栏", "销售预测", "订阅计划", "结算批次",
    "事件流", "数据库迁移",
)  # fmt: skip
_ZH_WHENS = (
    "每次部署之后", "夜间批处理期间", "每周发布之前", "每天第一次请求时", "队列积压时",
    "月末结账时", "重试窗口内", "仅在欧洲区域", "对企业租户", "灰度发布期间", "副本延迟时",
    "在预发环境", "流量高峰期间", "冷启动时", "对匿名访客", "演练模式下", "表结构变更后",
    "迁移运行时", "对移动客户端", "周日维护窗口",
)  # fmt: skip
_ZH_ASIDES = (
    "平台组负责维护", "详见运行手册", "设计已经评审", "旧版本曾经很慢", "指标在监控面板",
    "三月已经修复", "超时保持三十秒", "测试覆盖边界情况", "告警会通知值班", "旧路径已经弃用",
    "修改前先问负责人", "限制写在文档里", "上个迭代已验收", "错误上报到告警平台",
    "热点数据放在缓存", "契约测试保护它", "服务等级是三个九", "日志按一成采样",
    "必须保持幂等", "客户端要求标准日期",
)  # fmt: skip
_ZH_SLOTS = (_ZH_COMPONENTS, _ZH_VERBS, _ZH_THINGS, _ZH_WHENS, _ZH_ASIDES)


def _zh_text(rng: random.Random) -> str:
    component, verb, thing, when, aside = (rng.choice(slot) for slot in _ZH_SLOTS)
    return f"{component}{when}{verb}{thing}；{aside}。"


#: The query kinds: keyword queries as an agent writes them, and whole sentences (worst case:
#: common words match most rows, so the all-terms tier is empty and every match is ranked).
SEARCH_KINDS = ("English keywords", "CJK keywords", "English sentence", "CJK sentence")


def search_queries(kind: str, count: int, seed: int = 11) -> list[str]:
    """`count` seeded queries of one kind, drawn from the corpus vocabulary."""
    rng = random.Random(f"{seed}:{kind}")
    out = []
    for _ in range(count):
        if kind == "English keywords":
            out.append(f"{rng.choice(_COMPONENTS)} {rng.choice(_THINGS)}")
        elif kind == "CJK keywords":
            out.append(f"{rng.choice(_ZH_COMPONENTS)} {rng.choice(_ZH_THINGS)}")
        elif kind == "English sentence":
            out.append(f"what does the {rng.choice(_COMPONENTS)} do with the {rng.choice(_THINGS)}")
        else:
            out.append(f"{rng.choice(_ZH_COMPONENTS)}是怎么处理{rng.choice(_ZH_THINGS)}的")
    return out


def build_search_store(
    db_path: Path | None,
    rows: int,
    *,
    seed: int = 5,
    chunk: int = 5_000,
    storage: Any = None,
    single: bool = False,
) -> dict[str, int]:
    """Append events through SqliteStorage (or `storage`, left open) until the `memories`
    table holds `rows` rows.

    With `single`, every event is its own write transaction, as `Memory.add` commits it (ADR
    0102: the keyword index's segments are what single writes leave); else one transaction.
    ~20% of the operations are replaces (the old row stays as superseded history), the rest
    adds; 30% of the texts are Chinese; project and failure rows spread over five projects
    (a fifth of the failures unattributed). Returns the active / history counts.
    """
    rng = random.Random(seed)
    english = TextGenerator(seed, distinct=False)
    ids = UlidFactory()
    targets = list(_SEARCH_TARGET_WEIGHTS)
    weights = [_SEARCH_TARGET_WEIGHTS[t] for t in targets]
    live: dict[Target, list[tuple[str, str | None, FailureCategory | None]]] = {
        t: [] for t in targets
    }
    version = dict.fromkeys(targets, 0)
    pending: dict[Target, list[Event]] = {t: [] for t in targets}
    history = 0
    owned = storage is None
    if storage is None:
        assert db_path is not None
        storage = SqliteStorage(db_path)

    def flush(uow: Any, target: Target) -> None:
        batch = pending[target]
        if batch:
            uow.journal.append(stream_for(target), batch[0].version - 1, batch)
            uow.projection.apply(batch)
            pending[target] = []

    try:
        with contextlib.nullcontext() if single else storage.transaction() as uow:
            for n in range(rows):
                target = rng.choices(targets, weights)[0]
                stream = stream_for(target)
                version[target] += 1
                at = _BASE_TIME + timedelta(seconds=n)
                text = _zh_text(rng) if rng.random() < _SEARCH_CJK_SHARE else next(english)
                pool = live[target]
                event: Event
                if pool and rng.random() < _SEARCH_REPLACE_SHARE:
                    slot = rng.randrange(len(pool))
                    old_id, project, category = pool[slot]
                    new_id = ids.new_id()
                    event = MemoryReplaced(
                        stream=stream,
                        version=version[target],
                        at=at,
                        old_id=old_id,
                        new_id=new_id,
                        text=text,
                        project=project,
                        category=category,
                        created=at.date(),
                        last_referenced=at.date(),
                    )
                    pool[slot] = (new_id, project, category)
                    history += 1
                else:
                    project = None
                    category = None
                    if target is Target.PROJECT or (
                        target is Target.FAILURE and rng.random() < 0.8
                    ):
                        project = rng.choice(SEARCH_PROJECTS)
                    if target is Target.FAILURE:
                        category = rng.choice(list(FailureCategory))
                    entry_id = ids.new_id()
                    event = MemoryAdded(
                        stream=stream,
                        version=version[target],
                        at=at,
                        entry_id=entry_id,
                        target=target,
                        text=text,
                        project=project,
                        category=category,
                        created=at.date(),
                        last_referenced=at.date(),
                    )
                    pool.append((entry_id, project, category))
                pending[target].append(event)
                if single:
                    with storage.transaction() as one:
                        flush(one, target)
                elif len(pending[target]) >= chunk:
                    flush(uow, target)
            for target in targets:
                flush(uow, target)
    finally:
        if owned:
            storage.close()
    return {"active": sum(len(v) for v in live.values()), "history": history}


@attrs.frozen(kw_only=True)
class SearchLatency:
    rows: int  # rows in the `memories` table (active + history)
    active: int
    history: int
    kind: str
    samples: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    max_ms: float
    mean_hits: float
    build_s: float
    latencies_ms: tuple[float, ...]
    #: the TypeScript original's query shape on the same store (`tests/bench/ts_shape.py`),
    #: timed query by query alternating with ours; None when not run
    ts_p50_ms: float | None = None
    ts_p95_ms: float | None = None
    ts_mean_hits: float | None = None
    #: ADR 0081: CPU time of ours (process_time), the search before it (`search_previous`
    #: since ADR 0102: the search as ADR 0081 left it; its own index and caches, timed right
    #: after ours), and the bare-SQL floor: the statements ours ran for that query, replayed
    #: through apsw with no Python around them
    cpu_p50_ms: float | None = None
    old_p50_ms: float | None = None
    old_p95_ms: float | None = None
    floor_p50_ms: float | None = None
    floor_p95_ms: float | None = None
    statements: float | None = None  # median statements per search (ours)


def bench_search(
    rows: int,
    samples: int,
    *,
    root: Path | None = None,
    kinds: Sequence[str] = SEARCH_KINDS,
    reference: bool = True,
) -> list[SearchLatency]:
    """Time `SqliteSearchIndex.search` (FTS5 only) on a store of `rows` rows, per query kind.

    The session is project "web" without sharing (the default scope); each query runs once to
    warm up, then `samples` distinct seeded queries of each kind are timed. With `reference`,
    the TypeScript original's query shape (`tests/bench/ts_shape.py`) runs on the same store,
    each query right after ours, so both see the same machine load.
    """
    from pi_hermes_memory.adapters.sqlite.search import SqliteSearchIndex, scope_sql
    from pi_hermes_memory.domain.memory.scope import SessionScope
    from pi_hermes_memory.ports.search import SearchQuery
    from pi_hermes_memory.search.memory_search import search_clauses

    if samples < 1:
        raise ValueError("samples must be >= 1")
    clauses = search_clauses(SessionScope(project=SEARCH_SESSION_PROJECT))
    results = []
    with _workdir(root) as work:
        db_path = work / "search.db"
        started = time.perf_counter()
        existed = db_path.exists()  # a store built before (ADR 0102: `--work` reuses it)
        built = {} if existed else build_search_store(db_path, rows)
        build_s = time.perf_counter() - started
        storage = SqliteStorage(db_path)
        if existed:
            active, history = storage.connection.execute(
                "SELECT count(*) FILTER (WHERE superseded_by IS NULL), "
                "count(*) FILTER (WHERE superseded_by IS NOT NULL) FROM memories"
            ).fetchone()
            built = {"active": int(active), "history": int(history)}
        try:
            index = SqliteSearchIndex(storage)
            old_index = SqliteSearchIndex(storage)  # the plan before ADR 0081, own caches
            conn = storage.connection
            if reference:
                with storage.transaction():
                    ts_shape.install(conn)

            def ts_search(query: SearchQuery) -> list[Any]:
                where, params = scope_sql(query)
                return ts_shape.search(conn, query.text, where, params, query.limit)

            for kind in kinds:
                queries = [
                    SearchQuery(text=q, clauses=clauses) for q in search_queries(kind, samples)
                ]
                for query in queries[: min(20, len(queries))]:
                    index.search(query)  # warm the page cache and the statement cache
                    if reference:
                        ts_search(query)
                    search_previous(old_index, query)
                latencies: list[float] = []
                ts_latencies: list[float] = []
                cpu: list[float] = []
                old: list[float] = []
                floor: list[float] = []
                counts: list[int] = []
                hits = ts_hits = 0
                for query in queries:
                    # the pages this query reads, read once by a throwaway index (its own
                    # caches): ours, the old plan and the floor then all find them cached,
                    # whichever runs first
                    SqliteSearchIndex(storage).search(query)
                    forget_query_caches()  # each query as if first seen (it is memoised)
                    ran: list[tuple[str, Any]] = []
                    conn.exec_trace = lambda _c, sql, binds, ran=ran: (
                        ran.append((sql, binds)) or True
                    )
                    cpu_started, started = time.process_time(), time.perf_counter()
                    found = index.search(query)
                    latencies.append((time.perf_counter() - started) * 1000)
                    cpu.append((time.process_time() - cpu_started) * 1000)
                    conn.exec_trace = None
                    hits += len(found)
                    counts.append(len(ran))
                    floor.append(_bare(conn, ran))
                    forget_query_caches()
                    started = time.perf_counter()
                    search_previous(old_index, query)
                    old.append((time.perf_counter() - started) * 1000)
                    if reference:
                        started = time.perf_counter()
                        ts_hits += len(ts_search(query))
                        ts_latencies.append((time.perf_counter() - started) * 1000)
                results.append(
                    SearchLatency(
                        rows=rows,
                        active=built["active"],
                        history=built["history"],
                        kind=kind,
                        samples=len(latencies),
                        p50_ms=percentile(latencies, 50),
                        p95_ms=percentile(latencies, 95),
                        mean_ms=statistics.fmean(latencies),
                        max_ms=max(latencies),
                        mean_hits=hits / len(latencies),
                        build_s=build_s,
                        latencies_ms=tuple(latencies),
                        ts_p50_ms=percentile(ts_latencies, 50) if ts_latencies else None,
                        ts_p95_ms=percentile(ts_latencies, 95) if ts_latencies else None,
                        ts_mean_hits=ts_hits / len(ts_latencies) if ts_latencies else None,
                        cpu_p50_ms=percentile(cpu, 50),
                        old_p50_ms=percentile(old, 50),
                        old_p95_ms=percentile(old, 95),
                        floor_p50_ms=percentile(floor, 50),
                        floor_p95_ms=percentile(floor, 95),
                        statements=statistics.median(counts),
                    )
                )
        finally:
            storage.close()
    return results


def forget_query_caches() -> None:
    """Forget what planning a query memoises (its terms, the stems and stop-word answers of
    its words), so a timed query costs what it costs when first seen (ADR 0081)."""
    from pi_hermes_memory.domain.search.terms import is_stop_term, keyword_stem, plan_terms

    plan_terms.cache_clear()
    keyword_stem.cache_clear()
    is_stop_term.cache_clear()


def _bare(conn: Any, statements: Sequence[tuple[str, Any]]) -> float:
    """Milliseconds to run `statements` through apsw, every row stepped, no Python around
    them: the floor of a search plan (ADR 0081)."""
    started = time.perf_counter()
    for sql, binds in statements:
        for _ in conn.execute(sql, binds):
            pass
    return (time.perf_counter() - started) * 1000


# --- skill load cleanup -----------------------------------------------------------------------

CLEANUP_RETENTION_DAYS = 180
CLEANUP_BUDGET = 500
_CLEANUP_SKILLS = 1_000  # rows per day: one per skill


@attrs.frozen(kw_only=True)
class CleanupTiming:
    rows: int  # skill_load_daily rows before the run, all older than the retention
    budget: int
    deleted: int
    more_left: bool
    run_ms: float  # one due cleanup (read check + one bounded IMMEDIATE transaction)
    not_due_ms: float  # the next call within 24 h: the check every discovery pays
    fill_s: float  # the executemany setup (not a target)


def bench_skill_cleanup(
    rows: int, *, budget: int = CLEANUP_BUDGET, root: Path | None = None
) -> CleanupTiming:
    """One opportunistic cleanup on a `skill_load_daily` of `rows` expired rows."""
    from pi_hermes_memory.adapters.sqlite.skill_tables import SqliteSkillTables

    now = _BASE_TIME
    newest = now.date() - timedelta(days=CLEANUP_RETENTION_DAYS + 1)
    with _workdir(root) as work:
        storage = SqliteStorage(work / "skills.db", event_log=None)
        try:
            started = time.perf_counter()
            values = (
                (
                    f"global:skill-{i % _CLEANUP_SKILLS}",
                    PROJECT,
                    (newest - timedelta(days=i // _CLEANUP_SKILLS)).isoformat(),
                    1 + i % 7,
                )
                for i in range(rows)
            )
            with storage.transaction():
                storage.connection.executemany(
                    "INSERT INTO skill_load_daily (skill_id, project, day, count) "
                    "VALUES (?, ?, ?, ?)",
                    values,
                )
            fill_s = time.perf_counter() - started
            telemetry = SqliteSkillTables(storage)
            started = time.perf_counter()
            report = telemetry.cleanup_loads(now, CLEANUP_RETENTION_DAYS, budget)
            run_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            again = telemetry.cleanup_loads(
                now + timedelta(hours=1), CLEANUP_RETENTION_DAYS, budget
            )
            not_due_ms = (time.perf_counter() - started) * 1000
            assert report.ran and not again.ran
        finally:
            storage.close()
    return CleanupTiming(
        rows=rows,
        budget=budget,
        deleted=report.deleted_daily,
        more_left=report.more_daily,
        run_ms=run_ms,
        not_due_ms=not_due_ms,
        fill_s=fill_s,
    )


def render_cleanup(result: CleanupTiming) -> list[str]:
    return [
        "",
        f"## Skill load cleanup (one due run, budget {result.budget}, retention "
        f"{CLEANUP_RETENTION_DAYS} days)",
        "",
        _table(
            ["skill_load_daily rows", "deleted", "more left", "run ms", "not-due check ms"],
            [
                [
                    f"{result.rows:,}",
                    f"{result.deleted:,}",
                    "yes" if result.more_left else "no",
                    f"{result.run_ms:.2f}",
                    f"{result.not_due_ms:.3f}",
                ]
            ],
        ),
        "",
        f"All rows are older than the retention; the table was filled by executemany in "
        f"{result.fill_s:.1f} s (not a target).",
    ]


# --- report -----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Plan:
    add_sizes: tuple[tuple[int, int], ...]  # (entries, samples)
    replay_events: int
    replay_repeats: int
    search_sizes: tuple[tuple[int, int], ...] = ()  # (rows, queries per kind)
    hybrid_sizes: tuple[tuple[int, int], ...] = ()  # (rows, queries), 384 dimensions
    cleanup_rows: int = 2_000  # expired skill_load_daily rows for the cleanup run
    skill_sizes: tuple[int, int, int] = (30, 5, 2)  # (skills, discover/view samples, creates)
    fill_sizes: tuple[int, ...] = (5, 10)  # checkpoints of the fill curve (add_growth.py)


FULL = Plan(
    add_sizes=((100, 200), (1_000, 200), (10_000, 200), (100_000, 50)),
    replay_events=100_000,
    replay_repeats=3,
    search_sizes=((1_000, 200), (5_000, 200), (20_000, 200), (100_000, 200)),
    hybrid_sizes=((100, 200), (1_000, 200), (10_000, 200), (100_000, 200)),
    cleanup_rows=1_000_000,
    skill_sizes=(1_000, 50, 20),
    fill_sizes=(250, 500, 1_000, 2_000),
)
QUICK = Plan(
    add_sizes=((100, 50), (1_000, 50)),
    replay_events=20_000,
    replay_repeats=1,
    search_sizes=((1_000, 50), (10_000, 50)),
    hybrid_sizes=((2_000, 30),),
    cleanup_rows=100_000,
    skill_sizes=(1_000, 20, 5),
    fill_sizes=(50, 100),
)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _add_target(result: AddLatency) -> str:
    if result.entries not in ADD_TARGET_SIZES:
        return "—"
    verdict = "met" if result.p50_ms <= ADD_P50_TARGET_MS else "MISSED"
    return f"p50 ≤ {ADD_P50_TARGET_MS:g} ms: {verdict}"


def _search_target(result: SearchLatency) -> str:
    if result.ts_p50_ms is not None and result.floor_p50_ms:
        # issue 29: at every size, at most the TS shape's time and 1.2x the plan's floor
        ts = "met" if result.p50_ms <= result.ts_p50_ms else "MISSED"
        over = result.p50_ms / result.floor_p50_ms
        floor = "met" if over <= SEARCH_FLOOR_RATIO else "MISSED"
        return f"≤ TS: {ts}; ≤ {SEARCH_FLOOR_RATIO:g}× floor: {floor}"
    if result.rows == SEARCH_TARGET_ROWS and "keywords" in result.kind:
        target = SEARCH_P50_TARGET_MS
    elif result.rows == SEARCH_TARGET_ROWS and "CJK sentence" in result.kind:
        target = SEARCH_CJK_SENTENCE_P50_TARGET_MS
    elif result.rows in SEARCH_PEER_ROWS and result.ts_p50_ms is not None:
        verdict = "met" if result.p50_ms <= result.ts_p50_ms else "MISSED"
        return f"p50 ≤ TS shape: {verdict}"
    else:
        return "—"
    verdict = "met" if result.p50_ms <= target else "MISSED"
    return f"p50 ≤ {target:g} ms: {verdict}"


def _ratio(result: SearchLatency) -> str:
    if result.ts_p50_ms is None or result.p50_ms <= 0:
        return "—"
    return f"{result.ts_p50_ms / result.p50_ms:.2f}×"


def _over(ours: float, other: float | None) -> str:
    return "—" if other is None or other <= 0 else f"{ours / other:.2f}×"


def _optional(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def render_fill(curve: Any) -> list[str]:
    """The fill curve (`add_growth.FillCurve`): growth shows as a rising per-add cost."""
    rows = [
        [f"{n:,}", f"{s:.2f}", f"{ms:.2f}"]
        for n, s, ms in zip(curve.checkpoints, curve.elapsed_s, curve.per_add_ms(), strict=True)
    ]
    return [
        "",
        "## Filling an empty store through `add`, one entry at a time (memory target)",
        "",
        _table(["entries added", "total s", "ms per add (this stretch)"], rows),
    ]


def render_search(searches: Sequence[SearchLatency]) -> list[str]:
    out = [
        "",
        "## `memory_search` latency (SqliteSearchIndex.search, FTS5, scope: project web)",
        "",
    ]
    out.append(
        _table(
            [
                "rows (active + history)",
                "query kind",
                "queries",
                "p50 ms",
                "p95 ms",
                "mean ms",
                "max ms",
                "mean hits",
                "TS shape p50 ms",
                "TS shape p95 ms",
                "TS shape hits",
                "TS p50 / ours",
                "CPU p50 ms",
                "old plan p50 ms",
                "ours / old",
                "SQL floor p50 ms",
                "ours / floor",
                "statements",
                "target (issue)",
            ],
            [
                [
                    f"{r.rows:,} ({r.active:,} + {r.history:,})",
                    r.kind,
                    r.samples,
                    f"{r.p50_ms:.3f}",
                    f"{r.p95_ms:.3f}",
                    f"{r.mean_ms:.3f}",
                    f"{r.max_ms:.3f}",
                    f"{r.mean_hits:.1f}",
                    _optional(r.ts_p50_ms, ".3f"),
                    _optional(r.ts_p95_ms, ".3f"),
                    _optional(r.ts_mean_hits, ".1f"),
                    _ratio(r),
                    _optional(r.cpu_p50_ms, ".3f"),
                    _optional(r.old_p50_ms, ".3f"),
                    _over(r.p50_ms, r.old_p50_ms),
                    _optional(r.floor_p50_ms, ".3f"),
                    _over(r.p50_ms, r.floor_p50_ms),
                    _optional(r.statements, "g"),
                    _search_target(r),
                ]
                for r in searches
            ],
        )
    )
    target = (
        f"p50 ≤ {SEARCH_P50_TARGET_MS:g} ms for keywords and ≤ "
        f"{SEARCH_CJK_SENTENCE_P50_TARGET_MS:g} ms for CJK sentences at "
        f"{SEARCH_TARGET_ROWS:,} rows; at {' and '.join(f'{n:,}' for n in SEARCH_PEER_ROWS)} "
        "rows at least as fast as the TypeScript original"
    )
    builds = ", ".join(
        f"{r.rows:,} rows {r.build_s:.1f} s" for r in searches if r.kind == searches[0].kind
    )
    out += [
        "",
        f"Targets from the issue: {target}. 'TS shape' is the TypeScript original's query "
        "shape, reproduced in SQL on the same store (not the TypeScript code itself: "
        "`tests/bench/ts_shape.py`): one trigram FTS5 query, newest first, no relevance "
        "ranking, OR fallback only when the AND query finds nothing; it builds no result "
        "objects. Timed query by query alternating with ours. 'old plan' is the search "
        "before ADR 0102 (`tests/support/keyword_previous.py`, its own caches); 'SQL floor' "
        "replays the statements ours ran for the same query through apsw, every row stepped, "
        f"no Python around them (issue 29: ours ≤ TS and ≤ {SEARCH_FLOOR_RATIO:g}× floor). "
        f"Store build (not a target): {builds}.",
    ]
    return out


def render_markdown(
    context: dict[str, Any],
    adds: Sequence[AddLatency],
    replay: ReplayResult | None,
    searches: Sequence[SearchLatency] = (),
) -> str:
    out = ["## Machine", ""]
    out.append(
        _table(
            ["CPUs (usable)", "CPU model", "Python", "SQLite", "platform"],
            [
                [
                    f"{context['cpu_count']} ({context['cpus_usable']})",
                    context["cpu_model"],
                    f"{context['implementation']} {context['python']}",
                    context["sqlite"],
                    context["platform"],
                ]
            ],
        )
    )
    out += ["", "## `add` latency (memory target, SQLite + Markdown on disk)", ""]
    out.append(
        _table(
            [
                "entries in scope",
                "samples",
                "p50 ms",
                "p95 ms",
                "CPU p50 ms",
                "mean ms",
                "max ms",
                "first add ms",
                "statuses",
                "target (issue)",
            ],
            [
                [
                    f"{r.entries:,}",
                    r.samples,
                    f"{r.p50_ms:.2f}",
                    f"{r.p95_ms:.2f}",
                    f"{r.cpu_p50_ms:.2f}",
                    f"{r.mean_ms:.2f}",
                    f"{r.max_ms:.2f}",
                    f"{r.first_add_ms:.2f}",
                    ", ".join(f"{k}={v}" for k, v in sorted(r.statuses.items())),
                    _add_target(r),
                ]
                for r in adds
            ],
        )
    )
    sizes = " and ".join(f"{n:,}" for n in ADD_TARGET_SIZES)
    target = f"add p50 ≤ {ADD_P50_TARGET_MS:g} ms at {sizes} entries"
    out += ["", f"Target from the issue: {target}. {WARMUP_ADDS} warm-up adds precede the samples."]
    if replay is not None:
        kinds = ", ".join(f"{k}={v:,}" for k, v in replay.by_kind.items())
        out += [
            "",
            f"## Journal replay ({replay.events:,} events: {kinds}; "
            f"{replay.active:,} active + {replay.history:,} history entries after the fold)",
            "",
        ]
        rows: list[tuple[str, float]] = [
            ("read + decode + fold (cold, first run)", replay.cold_total_s),
            (f"read + decode + fold (median of {replay.repeats})", replay.total_s),
            ("  SQL fetch only", replay.fetch_s),
            ("  decode only (codec.decode)", replay.decode_s),
            ("  fold only", replay.fold_s),
        ]
        out.append(
            _table(
                ["phase", "seconds", "events/s"],
                [[name, f"{s:.3f}", f"{replay.rate(s):,.0f}"] for name, s in rows],
            )
        )
        out += ["", f"Journal build (not a target): {replay.build_s:.1f} s."]
    if searches:
        out += render_search(searches)
    return "\n".join(out)


def to_json(
    context: dict[str, Any],
    adds: Sequence[AddLatency],
    replay: ReplayResult | None,
    searches: Sequence[SearchLatency] = (),
) -> dict[str, Any]:
    return {
        "context": context,
        "targets": {
            "add_p50_ms": ADD_P50_TARGET_MS,
            "add_at_entries": ADD_TARGET_ENTRIES,
            "search_p50_ms": SEARCH_P50_TARGET_MS,
            "search_at_rows": SEARCH_TARGET_ROWS,
        },
        "add": [attrs.asdict(r) for r in adds],
        "replay": None if replay is None else attrs.asdict(replay),
        "search": [attrs.asdict(r) for r in searches],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    context = machine_context()
    adds = []
    for entries, samples in plan.add_sizes:
        print(f"… add latency at {entries:,} entries", file=sys.stderr, flush=True)
        adds.append(bench_add(entries, samples))
    from tests.bench.add_growth import bench_fill

    print(f"… fill curve to {max(plan.fill_sizes):,} entries", file=sys.stderr, flush=True)
    fill = bench_fill(plan.fill_sizes)
    print(f"… journal replay of {plan.replay_events:,} events", file=sys.stderr, flush=True)
    replay = bench_replay(plan.replay_events, repeats=plan.replay_repeats)
    searches: list[SearchLatency] = []
    for rows, samples in plan.search_sizes:
        print(f"… memory_search at {rows:,} rows", file=sys.stderr, flush=True)
        searches.extend(bench_search(rows, samples))
    from tests.bench.hybrid import bench_hybrid, render_hybrid

    hybrids = []
    for rows, samples in plan.hybrid_sizes:
        print(f"… hybrid memory_search at {rows:,} rows", file=sys.stderr, flush=True)
        hybrids.append(bench_hybrid(rows, samples))
    print(f"… skill load cleanup on {plan.cleanup_rows:,} rows", file=sys.stderr, flush=True)
    cleanup = bench_skill_cleanup(plan.cleanup_rows)
    from tests.bench.skills import bench_skills, render_skills

    skill_count, skill_samples, skill_creates = plan.skill_sizes
    print(f"… skills at {skill_count:,} skills", file=sys.stderr, flush=True)
    skills = bench_skills(skill_count, skill_samples, skill_creates)
    print(render_markdown(context, adds, replay, searches))
    print("\n".join(render_fill(fill)))
    print("\n".join(render_hybrid(hybrids)))
    print("\n".join(render_cleanup(cleanup)))
    print("\n".join(render_skills(skills)))
    from tests.bench import scale

    scaled = scale.run(scale.QUICK if args.quick else scale.FULL)
    print(scale.render(scaled))
    from tests.bench import clustering

    print("… consolidation pre-clustering", file=sys.stderr, flush=True)
    clustered = clustering.run(
        (200,) if args.quick else (200, 2000), repeats=1 if args.quick else 3
    )
    print("\n".join(clustering.render_clustering(clustered)))
    from tests.bench import lifecycle

    print("… lifecycle call overhead", file=sys.stderr, flush=True)
    life = lifecycle.run(200 if args.quick else 600)
    print("\n".join(lifecycle.render(life)))
    from tests.bench import doctor

    print("… doctor: cross-scope scan and the whole doctor", file=sys.stderr, flush=True)
    doctored = doctor.run(2_000 if args.quick else 20_000, 10 if args.quick else 50, 384)
    print("\n".join(doctor.render(doctored)))
    from tests.bench import add_syscalls

    print("… system calls per add", file=sys.stderr, flush=True)
    traced = add_syscalls.count(1_000, 10 if args.quick else 50)
    print("\n".join(add_syscalls.render(traced)))
    # ADR 0100: steady adds at 1k and 100k, this checkout beside `BENCH_REF` (e.g. main)
    steady = add_syscalls.compare(
        (1_000,) if args.quick else (1_000, 100_000),
        10 if args.quick else 50,
        os.environ.get("BENCH_REF"),
        rounds=1 if args.quick else 3,
    )
    print("\n".join(add_syscalls.render_compare(steady)))
    # ADR 0104: the same after the process read the document (a session's memory block)
    after_read = add_syscalls.compare(
        (1_000,),
        10 if args.quick else 50,
        os.environ.get("BENCH_REF"),
        rounds=1 if args.quick else 3,
        folded=True,
    )
    print("\n".join(add_syscalls.render_compare(after_read)))
    from tests.bench import open_cli

    opened = open_cli.run(
        open_cli.QUICK_SIZES if args.quick else open_cli.FULL_SIZES,
        start_sizes=open_cli.START_SIZES_QUICK if args.quick else open_cli.START_SIZES_FULL,
    )
    print(open_cli.render(opened))
    from tests.bench import hooks

    print(
        "… Claude Code hooks: latency per event, setup to first fact", file=sys.stderr, flush=True
    )
    hooked = hooks.run(1_000 if args.quick else 10_000, 5 if args.quick else 20)
    print(hooks.render(hooked["hooks"], hooked["first_fact"]))
    from tests.bench import server

    print("… REST search throughput, 1 vs many clients", file=sys.stderr, flush=True)
    served = server.concurrency(4, 5, 16, 1) if args.quick else server.concurrency(16, 40, 200, 3)
    print("\n".join(server.render_concurrency(served)))
    from tests.bench import first_write

    first_writes = first_write.run(
        first_write.QUICK_SIZES if args.quick else first_write.FULL_SIZES,
        repeats=1 if args.quick else 3,
        ref=os.environ.get("BENCH_REF"),
    )
    print(first_write.render(first_writes))
    from tests.bench import frameworks

    framework_rows = frameworks.run(frameworks.QUICK if args.quick else frameworks.FULL)
    print(frameworks.render(framework_rows))
    print(f"\n(total benchmark time {time.perf_counter() - started:.0f} s)", flush=True)
    if args.out is not None:
        data = to_json(context, adds, replay, searches)
        data["fill"] = attrs.asdict(fill)
        data["hybrid"] = [attrs.asdict(r) for r in hybrids]
        data["skill_cleanup"] = attrs.asdict(cleanup)
        data["skills"] = attrs.asdict(skills)
        data["scale"] = scaled
        data["clustering"] = [attrs.asdict(r) for r in clustered]
        data["lifecycle"] = attrs.asdict(life)
        data["doctor"] = doctored
        data["open_cli"] = opened
        data["claude_code_hooks"] = hooked
        data["add_syscalls"] = traced
        data["add_steady"] = steady
        data["server_reads"] = served
        data["first_write"] = first_writes
        data["frameworks"] = framework_rows
        args.out.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
