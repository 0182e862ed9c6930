"""Configuration values and the pure parser of `hermes-memory-config.json`.

`parse_config` turns the decoded JSON document into an immutable `Config`. It never raises on
any document (only on an invalid explicit project override, a usage error): every field that is
missing, of the wrong type or out of range falls back to its default, and each rejection is
reported as a `ConfigWarning` value. Nothing here reads files or the process environment; the
environment mapping and the physical path resolver are passed in (see
`pi_hermes_memory.adapters.files.config_file` for the real ones).

Warning texts name fields and the expected shape, never the rejected value: a misplaced secret
(an API key pasted into the wrong field) must not travel into logs through a warning.
"""

from __future__ import annotations

import enum
import json
import math
import os.path
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, TypeVar
from urllib.parse import urlsplit

import attrs
from pi_hermes_memory.config.adapters import IMPORT_PATH, AdaptersConfig, parse_adapters
from pi_hermes_memory.config.storage import StorageConfig, parse_storage
from pi_hermes_memory.domain.knowledge.limits import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_FILE_BYTES,
    DEFAULT_INDEX_BYTES,
    DEFAULT_INDEX_FILES,
)
from pi_hermes_memory.domain.memory.model import (
    GLOBAL_NAMESPACE,
    Target,
    is_safe_project_name,
    namespace_problem,
)
from pi_hermes_memory.errors import ConfigError

CONFIG_FILE_NAME: Final = "hermes-memory-config.json"
DEFAULT_MEMORY_DIR_NAME: Final = "pi-hermes-memory"
DEFAULT_PROJECTS_MEMORY_DIR_NAME: Final = "projects-memory"
DB_FILE_NAME: Final = "sessions.db"
# The field named by warnings about the document as a whole (JSONPath's root).
DOCUMENT_FIELD: Final = "$"
# Integers beyond 2**53 - 1 are not exact in the JSON of the JS original (and overflow float
# conversion in consumers that turn milliseconds into seconds), so they are rejected.
MAX_SAFE_INTEGER: Final = 2**53 - 1
EMBEDDING_MAX_TIMEOUT_MS: Final = 30_000
#: autoRecallMinScore's default: the least shown score (0..1) auto-recall injects (ADR 0070)
DEFAULT_RECALL_MIN_SCORE: Final = 0.5
# The usual file-name limit of local file systems; a project name becomes a directory.


@attrs.frozen(kw_only=True)
class ConfigWarning:
    """One rejected or ignored setting. `field` is the dotted JSON path (`$` for the document)."""

    field: str
    message: str


class MemoryMode(enum.StrEnum):
    POLICY_ONLY = "policy-only"
    LEGACY_INJECT = "legacy-inject"


class MemoryPolicyStyle(enum.StrEnum):
    FULL = "full"
    COMPACT = "compact"
    CUSTOM = "custom"
    NONE = "none"


class OverflowStrategy(enum.StrEnum):
    AUTO_CONSOLIDATE = "auto-consolidate"
    REJECT = "reject"
    FIFO_EVICT = "fifo-evict"


class ThinkingLevel(enum.StrEnum):
    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"


class SessionSearchVariant(enum.StrEnum):
    LEGACY = "legacy"
    ANCHORS = "anchors"


@attrs.frozen(kw_only=True)
class CustomAdapter:
    """A provider named by import path (ADR 0057): `open()` imports `path`
    (`package.module:Attribute`) and calls it with `options`, the section as written (a
    read-only mapping, `provider` included); a path that cannot be imported is a
    `ConfigError` at open. The options stay out of repr (they may name secrets' variables)."""

    path: str
    options: Mapping[str, object] = attrs.field(repr=False)


class EmbeddingProvider(enum.StrEnum):
    OFF = "off"
    OPENAI_COMPATIBLE = "openai-compatible"
    #: the offline embedder of the `[local]` extra (ADR 0017); no key, no network
    LOCAL = "local"
    #: a host's own adapter named by import path (`"provider": "pkg.module:Factory"`, ADR 0057)
    CUSTOM = "custom"


class EmbeddingDisabledReason(enum.StrEnum):
    """Why the effective embedding provider is off (for /memory-doctor)."""

    PROVIDER_OFF = "provider-off"
    INVALID_CONFIG = "invalid-config"
    API_KEY_ENV_UNSET = "api-key-env-unset"
    API_KEY_MISSING = "api-key-missing"


class PromotionConflictStrategy(enum.StrEnum):
    BLOCK = "block"
    OVERWRITE = "overwrite"


DEFAULT_EMBEDDING_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_EMBEDDING_MODEL: Final = "text-embedding-3-small"
DEFAULT_EMBEDDING_TIMEOUT_MS: Final = 3000


@attrs.frozen(kw_only=True)
class EmbeddingConfig:
    """The embedding provider settings. `provider` is the effective one: OPENAI_COMPATIBLE only
    when the section is valid and the API key was found in the environment.

    `api_key` and `base_url` are kept out of repr: the key is a secret and the full URL may
    carry tenant names or tokens in its path (use `redacted_base_url` for display).
    """

    provider: EmbeddingProvider = EmbeddingProvider.OFF
    requested_provider: EmbeddingProvider = EmbeddingProvider.OFF
    base_url: str = attrs.field(default=DEFAULT_EMBEDDING_BASE_URL, repr=False)
    model: str = DEFAULT_EMBEDDING_MODEL
    timeout_ms: int = DEFAULT_EMBEDDING_TIMEOUT_MS
    api_key_env: str | None = None
    dimensions: int | None = None
    task_query: str | None = None
    task_passage: str | None = None
    normalized: bool | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    disabled_reason: EmbeddingDisabledReason | None = EmbeddingDisabledReason.PROVIDER_OFF
    #: the adapter of provider CUSTOM
    custom: CustomAdapter | None = None

    @property
    def enabled(self) -> bool:
        return self.provider is not EmbeddingProvider.OFF

    @property
    def model_id(self) -> str:
        """The vector identity stored with each row of the openai-compatible provider:
        `openai-compatible/<model>` (the local embedder names its own, ADR 0017)."""
        return f"{EmbeddingProvider.OPENAI_COMPATIBLE.value}/{self.model}"

    @property
    def redacted_base_url(self) -> str:
        """Scheme and host only: safe to show in reports."""
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.hostname}"


class RerankProvider(enum.StrEnum):
    OFF = "off"
    JINA_COMPATIBLE = "jina-compatible"
    #: a host's own adapter named by import path (ADR 0057)
    CUSTOM = "custom"
    #: the second seed's "lightweight": no model, the rerank stage mixes in each row's cosine
    LIGHTWEIGHT = "lightweight"
    #: the configured `llm` scores the best candidates (ADR 0070); off unless asked for
    LLM = "llm"


class RetrievalMode(enum.StrEnum):
    """`retrieval.mode` (the second seed's): "hybrid" fuses FTS and cosine, "vector" ranks by
    cosine alone (the FTS ranking's weight is 0; without embeddings search stays FTS)."""

    HYBRID = "hybrid"
    VECTOR = "vector"


DEFAULT_RERANK_BASE_URL: Final = "https://api.jina.ai/v1"
DEFAULT_RERANK_MODEL: Final = "jina-reranker-v2-base-multilingual"
DEFAULT_RERANK_TIMEOUT_MS: Final = 5000
DEFAULT_RERANK_TOP_N: Final = 20
#: The scoring stages, in their fixed order (`pi_hermes_memory.search.retrieval.STAGE_ORDER`).
RETRIEVAL_STAGES: Final = (
    "rerank", "recency", "importance", "length", "time_decay", "hard_min", "mmr"
)  # fmt: skip


@attrs.frozen(kw_only=True)
class RerankConfig:
    """`retrieval.rerank`: a cross-encoder behind a Jina-compatible `/rerank` endpoint.
    `provider` is the effective one: JINA_COMPATIBLE only when the section is valid and, with
    `apiKeyEnv` set, the key was found. The key and the full URL stay out of repr."""

    provider: RerankProvider = RerankProvider.OFF
    base_url: str = attrs.field(default=DEFAULT_RERANK_BASE_URL, repr=False)
    model: str = DEFAULT_RERANK_MODEL
    timeout_ms: int = DEFAULT_RERANK_TIMEOUT_MS
    top_n: int = DEFAULT_RERANK_TOP_N
    api_key_env: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    #: the adapter of provider CUSTOM
    custom: CustomAdapter | None = None

    @property
    def enabled(self) -> bool:
        return self.provider is not RerankProvider.OFF


@attrs.frozen(kw_only=True)
class RetrievalConfig:
    """`retrieval`: how memory_search ranks when embeddings are on (ADR 0018, ADR 0019), in
    one vocabulary with the second seed's `RetrievalConfig` (ADR 0070). `dense_weight` None:
    chosen per embedder; `stages`: the enabled scoring stages. Every None below means "the
    built-in value" (`pi_hermes_memory.search.retrieval.Pipeline`, `HybridSettings`)."""

    stages: tuple[str, ...] = RETRIEVAL_STAGES
    #: `denseWeight` / the seed's `vectorWeight`: the dense relevance's weight in the fused
    #: score (ADR 0072)
    dense_weight: float | None = None
    hard_min_score: float = 0.35
    rerank: RerankConfig = RerankConfig()
    #: `retrieval.minCosine`: the relevance floor of rows only the cosine ranking found; None:
    #: chosen per embedder (ADR 0027)
    min_cosine: float | None = None
    #: `mode`: "vector" gives the FTS ranking weight 0
    mode: RetrievalMode = RetrievalMode.HYBRID
    #: `bm25Weight`: the keyword relevance's weight in the fused score (None: 1; ADR 0072)
    fts_weight: float | None = None
    #: `minScore`: search drops hits whose shown score (0..1) is below it (None: no floor
    #: beyond the index's and the embedder's own)
    min_score: float | None = None
    #: `candidatePoolSize`: rows each ranking contributes to the fusion
    candidate_pool_size: int | None = None
    #: `recencyHalfLifeDays` (0 turns the recency stage off) and `recencyWeight`
    recency_half_life_days: float | None = None
    recency_weight: float | None = None
    #: `timeDecayHalfLifeDays` (0 turns the time-decay stage off)
    time_decay_half_life_days: float | None = None
    #: `lengthNormAnchor` in characters (0 turns the length stage off)
    length_norm_anchor: int | None = None
    #: `importanceWeight`: how much a row's importance moves its score,
    #: `score · (1 − w + w · importance)` (the seed's fixed 0.3; 0 turns the stage off)
    importance_weight: float | None = None


class LlmProvider(enum.StrEnum):
    """`llm.provider`: where background learning, consolidation and curation get their text."""

    OFF = "off"
    #: a configured argv: the prompt on stdin, the reply on stdout
    COMMAND = "command"
    #: `pi -p` with llmModelOverride / llmThinkingOverride (the seed's child process)
    PI = "pi"
    #: `claude -p` without tools (Claude Code's print mode; issue 30, ADR 0090)
    CLAUDE = "claude"
    #: POST {baseUrl}/chat/completions
    OPENAI_COMPATIBLE = "openai-compatible"
    #: a host's own adapter named by import path (ADR 0057)
    CUSTOM = "custom"


DEFAULT_LLM_MAX_REPLY_BYTES: Final = 1 << 20
LLM_MAX_REPLY_BYTES_CAP: Final = 64 << 20
LLM_MIN_REPLY_BYTES: Final = 1024
#: ten minutes: no single completion may run longer, whatever the configuration says
LLM_MAX_TIMEOUT_MS: Final = 600_000
LLM_MAX_ARGV_ITEMS: Final = 256


@attrs.frozen(kw_only=True)
class LlmConfig:
    """The `llm` section as written (after validation). Whether an LLM is usable also depends
    on the environment (the API key, the program on PATH):
    `pi_hermes_memory.learning.llm.llm_status`
    decides that. `invalid_fields` lists the rejected fields; any of them turns the LLM off
    (all or nothing, like `embedding`). The base URL stays out of repr (its path may carry a
    tenant or a token); there is no key field at all: keys come only from the environment."""

    provider: LlmProvider = LlmProvider.OFF
    command: tuple[str, ...] | None = None
    #: already resolved: an unset llm.timeoutMs takes consolidationTimeoutMs (capped)
    timeout_ms: int = 60_000
    max_reply_bytes: int = DEFAULT_LLM_MAX_REPLY_BYTES
    base_url: str | None = attrs.field(default=None, repr=False)
    model: str | None = None
    api_key_env: str | None = None
    #: sent as `temperature`; None: the field is left out of the request
    temperature: float | None = 0.0
    invalid_fields: tuple[str, ...] = ()
    #: the adapter of provider CUSTOM
    custom: CustomAdapter | None = None

    @property
    def redacted_base_url(self) -> str | None:
        """Scheme and host only: safe to show in reports."""
        if self.base_url is None:
            return None
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.hostname}"


#: sessionSearch.claudeCodeDir's default (`~` is expanded when the store opens)
DEFAULT_CLAUDE_CODE_DIR: Final = Path("~/.claude")


@attrs.frozen(kw_only=True)
class SessionSearchConfig:
    variant: SessionSearchVariant = SessionSearchVariant.LEGACY
    #: sessionSearch.projectMap: normalised absolute cwd -> project name; a session whose cwd
    #: is a key or lies below one gets that project (the longest key wins), others the cwd's
    #: last path segment (ADR 0020)
    project_map: Mapping[str, str] = attrs.field(factory=dict)
    #: sessionSearch.claudeCodeDir: Claude Code's folder, whose `projects/*/*.jsonl`
    #: transcripts are indexed beside Pi's (`false`: None, not indexed). The default stays
    #: `~/.claude`, expanded when the store opens, so the defaults do not depend on a home
    claude_code_dir: Path | None = DEFAULT_CLAUDE_CODE_DIR


@attrs.frozen(kw_only=True)
class TaskDomain:
    """A configured promotion task domain: a slug id and the terms that signal it."""

    id: str
    description: str | None
    terms: tuple[str, ...]


@attrs.frozen(kw_only=True)
class SkillScopesConfig:
    """Skill roots. `project_skills_dir` None means "derive": the projects memory root."""

    global_skills_dir: Path
    project_skills_dir: Path | None = None


@attrs.frozen(kw_only=True)
class SkillGovernanceConfig:
    scopes: SkillScopesConfig
    promotion_enabled: bool = True
    promotion_min_same_domain_usages: int = 3
    promotion_min_sessions: int = 2
    promotion_min_projects: int = 1
    # None means "use the built-in task domains".
    promotion_task_domains: tuple[TaskDomain, ...] | None = None
    promotion_domain_terms: tuple[str, ...] = ()
    promotion_require_global_safe: bool = True
    promotion_conflict_strategy: PromotionConflictStrategy = PromotionConflictStrategy.BLOCK
    # Already resolved: an unset curationTimeoutMs takes consolidationTimeoutMs.
    curation_timeout_ms: int = 60_000
    curation_max_consecutive_failures: int = 0
    auto_curation_cooldown_ms: int = 86_400_000
    auto_curation_failure_cooldown_ms: int = 3_600_000
    load_event_retention_days: int = 180
    load_event_cleanup_budget: int = 500


@attrs.frozen(kw_only=True)
class AutoMemoryConfig:
    """Auto-recall, auto-capture and adaptive retrieval on the session API (ADR 0049)."""

    #: autoRecall: AgentSession.before_turn may inject a <relevant-memories> block
    recall: bool = True
    #: autoRecallMaxItems: memories in the block (1..20)
    recall_max_items: int = 3
    #: autoRecallTimeoutMs: the turn waits at most this long for the recall search
    recall_timeout_ms: int = 500
    #: autoRecallMinScore: a hit is injected only with a shown score (0..1) at least this;
    #: stricter than search (ADR 0070)
    recall_min_score: float = DEFAULT_RECALL_MIN_SCORE
    #: autoCapture: AgentSession.after_turn may store the user's statements
    capture: bool = True
    #: autoCaptureMaxPerTurn: statements stored per turn at most (1..10)
    capture_max_per_turn: int = 3
    #: adaptiveMinLength / adaptiveMinLengthCjk: shorter messages skip recall (unless they
    #: ask a question or refer to the past)
    min_length: int = 15
    min_length_cjk: int = 6
    #: sessionSummary: at shutdown, store a summary of the session's last messages (off)
    session_summary: bool = False
    #: sessionSummaryMessages: how many of the last messages the summary reads
    session_summary_messages: int = 15


@attrs.frozen(kw_only=True)
class KnowledgeConfig:
    """The knowledge base (ADR 0048): the folders to index, absolute and normalised."""

    #: knowledge.paths / PI_MEMORY_KNOWLEDGE_PATHS (a JSON array; wins over the file)
    paths: tuple[Path, ...] = ()
    #: knowledge.maxFileBytes: larger files are skipped (and counted)
    max_file_bytes: int = DEFAULT_FILE_BYTES
    #: knowledge.maxChunkChars: the cap on one chunk's characters
    max_chunk_chars: int = DEFAULT_CHUNK_CHARS
    #: knowledge.maxIndexFiles / maxIndexBytes: the index's budget (ADR 0063): a run stops
    #: taking files in when the next one would pass either, and says so
    max_index_files: int = DEFAULT_INDEX_FILES
    max_index_bytes: int = DEFAULT_INDEX_BYTES


@attrs.frozen(kw_only=True)
class Config:
    """The effective configuration. Paths are absolute and lexically normalised.

    Correction pattern/word fields: None means "built-in rules", an empty tuple disables them.
    """

    agent_root: Path
    memory_dir: Path
    projects_memory_dir: Path
    project: str | None
    memory_mode: MemoryMode = MemoryMode.POLICY_ONLY
    memory_policy_style: MemoryPolicyStyle = MemoryPolicyStyle.FULL
    memory_policy_custom_text: str | None = None
    memory_char_limit: int = 5000
    user_char_limit: int = 5000
    project_char_limit: int = 5000
    project_memory_sharing: bool = False
    nudge_interval: int = 10
    review_recent_messages: int = 0
    review_enabled: bool = True
    review_skills_enabled: bool = True
    flush_on_compact: bool = True
    flush_on_shutdown: bool = True
    flush_min_turns: int = 6
    flush_recent_messages: int = 0
    session_search: SessionSearchConfig = SessionSearchConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    llm: LlmConfig = LlmConfig()
    llm_model_override: str | None = None
    llm_thinking_override: ThinkingLevel | None = None
    overflow_strategy: OverflowStrategy = OverflowStrategy.AUTO_CONSOLIDATE
    correction_detection: bool = True
    correction_strong_patterns: tuple[str, ...] | None = None
    correction_weak_patterns: tuple[str, ...] | None = None
    correction_negative_patterns: tuple[str, ...] | None = None
    correction_directive_words: tuple[str, ...] | None = None
    failure_injection_enabled: bool = True
    failure_injection_max_age_days: int = 7
    failure_injection_max_entries: int = 5
    nudge_tool_calls: int = 15
    skill_review_tool_calls: int = 10
    consolidation_timeout_ms: int = 60_000
    #: the share of a target's entries one consolidation plan may delete (ADR 0062)
    consolidation_max_removed_share: float = 0.3
    #: model-proposed adds one background review applies (ADR 0062)
    review_max_adds: int = 10
    #: scopes.agentAccess: agent id -> namespaces it may read and write (ADR 0014)
    agent_access: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    skill_governance: SkillGovernanceConfig
    #: tools.sets: which tool sets `Memory.tool_definitions()` offers (ADR 0045): "hermes"
    #: (this library's tools), "pi-memory" (the second seed's memory_recall, memory_store, …)
    tool_sets: tuple[str, ...] = ("hermes",)
    auto_memory: AutoMemoryConfig = AutoMemoryConfig()
    knowledge: KnowledgeConfig = KnowledgeConfig()
    #: storage: the local SQLite store or a shared PostgreSQL one (ADR 0050)
    storage: StorageConfig = attrs.field(factory=StorageConfig)
    #: adapters: storage-side parts named by import path (ADR 0060)
    adapters: AdaptersConfig = attrs.field(factory=AdaptersConfig)
    #: why the file could not be parsed while it may say where the data lives (`storage`,
    #: `adapters`, `memoryDir`, `projectsMemoryDir`): the store then opens read-only at the
    #: default place, and every write is refused with this line (ADR 0065)
    location_unknown: str | None = None

    @classmethod
    def default(cls, agent_root: Path, cwd: Path) -> Config:
        """Every field at its default (no file, empty environment, lexical paths)."""
        config, _ = parse_config(
            {}, agent_root=agent_root, cwd=cwd, environ={}, physical=lambda path: path
        )
        return config

    @property
    def config_path(self) -> Path:
        return self.agent_root / CONFIG_FILE_NAME

    @property
    def db_path(self) -> Path:
        return self.memory_dir / DB_FILE_NAME

    @property
    def auto_consolidate(self) -> bool:
        """The legacy `autoConsolidate` flag, derived from the overflow strategy."""
        return self.overflow_strategy is OverflowStrategy.AUTO_CONSOLIDATE

    @property
    def effective_policy_style(self) -> MemoryPolicyStyle:
        """`custom` without custom text falls back to the compact policy."""
        if self.memory_policy_style is MemoryPolicyStyle.CUSTOM and not (
            self.memory_policy_custom_text
        ):
            return MemoryPolicyStyle.COMPACT
        return self.memory_policy_style

    @property
    def embedding_disabled_reason(self) -> EmbeddingDisabledReason | None:
        return self.embedding.disabled_reason

    @property
    def project_skills_root(self) -> Path:
        return self.skill_governance.scopes.project_skills_dir or self.projects_memory_dir

    @property
    def active_project_skills_dir(self) -> Path | None:
        """`<project skills root>/<project>/skills`, or None without a current project."""
        if self.project is None:
            return None
        return self.project_skills_root / self.project / "skills"


# --- names ------------------------------------------------------------------------------------

_SLUG: Final = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_ENV_VAR_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _has_control_char(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)


def _agent_access(scopes: _Section) -> dict[str, frozenset[str]]:
    """scopes.agentAccess: {"<agent id>": ["global", "agent:<id>", "custom:<name>", …]}.

    Fails closed: an agent whose list is invalid gets no scope at all (its writes are refused
    as forbidden) rather than the default, which could widen what the map meant to restrict.
    An entry with an invalid agent id is dropped (such an id cannot open a session). Each
    problem is a warning.
    """
    raw = scopes.get("agentAccess")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        scopes.reject("agentAccess", "expected an object of agent id -> list of scopes")
        return {}
    access: dict[str, frozenset[str]] = {}
    for agent, granted in raw.items():
        if namespace_problem(f"agent:{agent}", Target.MEMORY) is not None:
            scopes.warn(
                "agentAccess",
                "agent ids are letters, digits, '.', '_' and '-'; "
                "an entry with another id was ignored",
            )
            continue
        if not isinstance(granted, list) or not all(
            isinstance(g, str) and (g == GLOBAL_NAMESPACE or _valid_namespace(g)) for g in granted
        ):
            scopes.warn(
                "agentAccess",
                f"the scopes of agent {agent!r} must be a list of global, agent:<id>, "
                "custom:<name> or user:<id>; that agent gets no scope until this is fixed",
            )
            access[agent] = frozenset()
            continue
        access[agent] = frozenset(granted)
    return access


def _valid_namespace(name: str) -> bool:
    return any(namespace_problem(name, t) is None for t in (Target.MEMORY, Target.USER))


def _is_safe_dir_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not any(ch in name for ch in "/\\\x00")


# --- the field reader -------------------------------------------------------------------------

_E = TypeVar("_E", bound=enum.StrEnum)


def _show(value: object) -> str:
    """A default value as the user would write it in JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return repr(value.value)
    return str(value)


def _integral(value: object) -> int | None:
    """An int, or an integral finite float (JSON does not distinguish 5000 from 5000.0)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _range_text(minimum: int, maximum: int) -> str:
    if maximum >= MAX_SAFE_INTEGER:
        return f"an integer >= {minimum}"
    return f"an integer from {minimum} to {maximum}"


class _Section:
    """Reads typed fields out of one JSON object, recording a warning per rejected field.

    JSON null counts as absent: it is the natural way to write "unset" in JSON.
    """

    def __init__(
        self, raw: Mapping[str, object], prefix: str, sink: list[ConfigWarning], *, valid: bool
    ) -> None:
        self._raw = raw
        self._prefix = prefix
        self._sink = sink
        self.valid = valid
        self.rejected: list[str] = []

    def field(self, key: str) -> str:
        return f"{self._prefix}{key}"

    def get(self, key: str) -> object:
        return self._raw.get(key)

    @property
    def raw(self) -> Mapping[str, object]:
        return self._raw

    def warn_field(self, field: str, message: str) -> None:
        """A warning about a setting outside the file (an environment variable)."""
        self.rejected.append(field)
        self._sink.append(ConfigWarning(field=field, message=message))

    def warn(self, key: str, message: str) -> None:
        self._sink.append(ConfigWarning(field=self.field(key), message=message))

    def reject(self, key: str, message: str) -> None:
        self.rejected.append(self.field(key))
        self.warn(key, message)

    def section(self, key: str) -> _Section:
        value = self.get(key)
        prefix = f"{self.field(key)}."
        if value is None:
            return _Section({}, prefix, self._sink, valid=True)
        if isinstance(value, Mapping):
            return _Section(value, prefix, self._sink, valid=True)
        self.reject(key, "expected an object; using defaults for the whole section")
        return _Section({}, prefix, self._sink, valid=False)

    def optional_boolean(self, key: str, *, fallback: str) -> bool | None:
        value = self.get(key)
        if value is None or isinstance(value, bool):
            return value
        self.reject(key, f"expected true or false; {fallback}")
        return None

    def boolean(self, key: str, default: bool) -> bool:
        value = self.optional_boolean(key, fallback=f"using default {_show(default)}")
        return default if value is None else value

    def optional_integer(
        self, key: str, *, minimum: int, maximum: int = MAX_SAFE_INTEGER, fallback: str
    ) -> int | None:
        value = self.get(key)
        if value is None:
            return None
        number = _integral(value)
        if number is not None and minimum <= number <= maximum:
            return number
        self.reject(key, f"expected {_range_text(minimum, maximum)}; {fallback}")
        return None

    def integer(
        self, key: str, default: int, *, minimum: int = 0, maximum: int = MAX_SAFE_INTEGER
    ) -> int:
        value = self.optional_integer(
            key, minimum=minimum, maximum=maximum, fallback=f"using default {default}"
        )
        return default if value is None else value

    def optional_choice(self, key: str, kind: type[_E], *, fallback: str) -> _E | None:
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            for member in kind:
                if member.value == value:
                    return member
        choices = ", ".join(repr(member.value) for member in kind)
        self.reject(key, f"expected one of {choices}; {fallback}")
        return None

    def choice(self, key: str, default: _E) -> _E:
        value = self.optional_choice(key, type(default), fallback=f"using default {_show(default)}")
        return default if value is None else value

    def optional_text(self, key: str, *, fallback: str) -> str | None:
        value = self.get(key)
        if value is None or isinstance(value, str):
            return value
        self.reject(key, f"expected a string; {fallback}")
        return None

    def non_empty_text(self, key: str, *, fallback: str) -> str | None:
        value = self.optional_text(key, fallback=fallback)
        if value is None or value.strip():
            return value
        self.reject(key, f"expected a non-empty string; {fallback}")
        return None

    def string_list(self, key: str, *, trim: bool, fallback: str) -> tuple[str, ...] | None:
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, list) and all(
            isinstance(item, str) and item.strip() for item in value
        ):
            return tuple(item.strip() if trim else item for item in value)
        self.reject(key, f"expected a list of non-empty strings; {fallback}")
        return None


def _document(raw: object, sink: list[ConfigWarning]) -> _Section:
    if isinstance(raw, Mapping):
        return _Section(raw, "", sink, valid=True)
    sink.append(
        ConfigWarning(
            field=DOCUMENT_FIELD,
            message="the configuration must be a JSON object; using defaults for every field",
        )
    )
    return _Section({}, "", sink, valid=False)


# --- paths ------------------------------------------------------------------------------------


def _lexical(path: Path | str, base: Path) -> Path:
    """Absolute and normalised like Node's path.resolve (no file system access)."""
    return Path(os.path.normpath(os.path.join(base, path)))


def _expand_home(value: str, home: Path | None) -> str | None:
    """`~` and `~/...` expanded; None when that is impossible (`~user`, or no home known)."""
    if not value.startswith("~"):
        return value
    head, _, tail = value.partition("/")
    if head != "~" or home is None:
        return None
    return os.path.join(home, tail) if tail else str(home)


def _directory(section: _Section, key: str, *, base: Path, home: Path | None) -> Path | None:
    """An optional directory setting: relative to `base`, `~` expanded; None when unset."""
    text = section.optional_text(key, fallback="using the default directory")
    if text is None or not text.strip():
        return None
    expanded = _expand_home(text.strip(), home)
    if expanded is None:
        section.reject(key, "only '~' and '~/...' can be expanded; using the default directory")
        return None
    if "\x00" in expanded:
        section.reject(key, "a path cannot contain NUL; using the default directory")
        return None
    return _lexical(expanded, base)


def _projects_dir_name(top: _Section, *, agent_root: Path, home: Path | None) -> str | None:
    """The explicit projectsMemoryDir as a directory name under agentRoot, or None."""
    text = top.optional_text("projectsMemoryDir", fallback="using the default")
    if text is None:
        return None
    expanded = _expand_home(text.strip(), home)
    if expanded is not None and os.path.isabs(expanded) and "\x00" not in expanded:
        absolute = _lexical(expanded, agent_root)
        if absolute.parent == agent_root and _is_safe_dir_name(absolute.name):
            return absolute.name
    elif expanded is not None and _is_safe_dir_name(expanded):
        return expanded
    top.reject(
        "projectsMemoryDir",
        "expected a single directory name under agentRoot (or an absolute path directly inside"
        f" it); using default {DEFAULT_PROJECTS_MEMORY_DIR_NAME!r}",
    )
    return None


Physical = Callable[[Path], Path]


def _physical_or_lexical(path: Path, physical: Physical) -> Path:
    # Permission errors and symlink loops are not a reason to fail start-up: compare the
    # lexical absolute paths instead, as the spec prescribes.
    try:
        return Path(os.path.normpath(physical(path)))
    except (OSError, RuntimeError, ValueError):
        return path


def _share_root(a: Path, b: Path, physical: Physical) -> bool:
    real_a, real_b = _physical_or_lexical(a, physical), _physical_or_lexical(b, physical)
    return real_a == real_b or real_a.is_relative_to(real_b) or real_b.is_relative_to(real_a)


_CONFLICT: Final = (
    "resolves to the same physical directory as the other memory root (or one contains the"
    " other); using the default"
)


def _memory_roots(
    top: _Section, *, agent_root: Path, home: Path | None, physical: Physical
) -> tuple[Path, Path]:
    """memoryDir and the projects memory root, kept on different physical roots."""
    default_memory = agent_root / DEFAULT_MEMORY_DIR_NAME
    default_projects = agent_root / DEFAULT_PROJECTS_MEMORY_DIR_NAME
    explicit_memory = _directory(top, "memoryDir", base=agent_root, home=home)
    projects_name = _projects_dir_name(top, agent_root=agent_root, home=home)
    memory = explicit_memory or default_memory
    projects = default_projects if projects_name is None else agent_root / projects_name
    if not _share_root(memory, projects, physical):
        return memory, projects
    if explicit_memory is not None:
        top.reject("memoryDir", _CONFLICT)
        memory = default_memory
    if projects_name is not None:
        top.reject("projectsMemoryDir", _CONFLICT)
        projects = default_projects
    if _share_root(memory, projects, physical):
        top.warn(
            "memoryDir",
            "memoryDir and projectsMemoryDir still share a physical root (a symlink on disk);"
            " project and global memory are not separated",
        )
    return memory, projects


# --- fields with their own rules --------------------------------------------------------------


def _cwd_project(cwd: Path) -> str | None:
    name = Path(os.path.normpath(cwd)).name.strip()
    return name if is_safe_project_name(name) else None


def _project(top: _Section, *, cwd: Path, override: str | None) -> str | None:
    text = top.optional_text("projectName", fallback="deriving the project from the cwd")
    explicit = None if text is None else text.strip()
    if explicit is not None and not is_safe_project_name(explicit):
        top.reject(
            "projectName",
            "must be non-empty, not '.' or '..', and contain no / \\ , < >, control or bidi"
            " characters; deriving the project from the cwd",
        )
        explicit = None
    if override is not None:
        if not is_safe_project_name(override.strip()):
            raise ConfigError(
                "invalid project name: it must be non-empty, not '.' or '..', and contain no"
                " / \\ , < >, control or bidi characters (U+202A..U+202E, U+2066..U+2069,"
                " U+200E, U+200F, U+061C)"
            )
        return override.strip()
    return explicit if explicit is not None else _cwd_project(cwd)


def _overflow_strategy(top: _Section) -> OverflowStrategy:
    explicit = top.optional_choice(
        "memoryOverflowStrategy",
        OverflowStrategy,
        fallback="using autoConsolidate or the default 'auto-consolidate'",
    )
    legacy = top.optional_boolean("autoConsolidate", fallback="ignoring it")
    if explicit is not None:
        return explicit
    if legacy is False:
        return OverflowStrategy.REJECT
    return OverflowStrategy.AUTO_CONSOLIDATE


def _policy_custom_text(top: _Section) -> str | None:
    text = top.optional_text("memoryPolicyCustomText", fallback="ignoring it")
    return text if text and text.strip() else None


def _model_override(top: _Section) -> str | None:
    text = top.optional_text("llmModelOverride", fallback="ignoring it")
    return text.strip() if text and text.strip() else None


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError, MemoryError):
        return False
    return True


def _patterns(section: _Section, key: str) -> tuple[str, ...] | None:
    fallback = "using the built-in rules"
    patterns = section.string_list(key, trim=False, fallback=fallback)
    if patterns is None:
        return None
    kept = tuple(pattern for pattern in patterns if _compiles(pattern))
    rest = "the others are kept" if kept else "no valid pattern is left: this rule is off"
    for index, pattern in enumerate(patterns):
        problem = _regex_problem(pattern)
        if problem is not None:  # skipped alone, the valid ones kept (ADR 0065); its text is
            # never echoed (it may be anything pasted into the file)
            section.warn(
                key, f"item {index} is not a valid regular expression ({problem}); skipped, {rest}"
            )
    return kept


def _regex_problem(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as error:
        return f"{error.msg} at position {error.pos}" if error.pos is not None else error.msg
    except (OverflowError, RecursionError, ValueError, MemoryError) as error:
        return type(error).__name__
    return None


def _task_domain_problem(item: object) -> str | None:
    if not isinstance(item, Mapping):
        return "is not an object"
    domain_id = item.get("id")
    if not isinstance(domain_id, str) or not _SLUG.fullmatch(domain_id):
        return "id must be a slug starting with a lowercase letter"
    description = item.get("description")
    if description is not None and not isinstance(description, str):
        return "description must be a string"
    terms = item.get("terms")
    if not isinstance(terms, list) or not terms:
        return "terms must be a non-empty list"
    if not all(isinstance(term, str) and term.strip() for term in terms):
        return "terms must be non-empty strings"
    return None


def _task_domain(item: Mapping[str, object]) -> TaskDomain:
    description = item.get("description")
    terms = item.get("terms")
    assert isinstance(terms, list)  # checked by _task_domain_problem
    return TaskDomain(
        id=str(item["id"]),
        description=description if isinstance(description, str) else None,
        terms=tuple(str(term).strip() for term in terms),
    )


def _task_domains(section: _Section) -> tuple[TaskDomain, ...] | None:
    key = "promotionTaskDomains"
    value = section.get(key)
    if value is None:
        return None
    problem: str | None = "expected a list of {id, description?, terms} objects"
    if isinstance(value, list):
        problems = ((index, _task_domain_problem(item)) for index, item in enumerate(value))
        problem = next((f"item {i}: {p}" for i, p in problems if p is not None), None)
    if problem is None:
        assert isinstance(value, list)
        domains = tuple(_task_domain(item) for item in value)
        if len({domain.id for domain in domains}) == len(domains):
            return domains
        problem = "domain ids must be unique"
    section.reject(key, f"{problem}; using the built-in task domains")
    return None


# --- session search ---------------------------------------------------------------------------


def _session_search(top: _Section, *, home: Path | None) -> SessionSearchConfig:
    section = top.section("sessionSearch")
    return SessionSearchConfig(
        variant=section.choice("variant", SessionSearchVariant.LEGACY),
        project_map=_project_map(section, home=home),
        claude_code_dir=_claude_code_dir(section, home=home),
    )


def _claude_code_dir(section: _Section, *, home: Path | None) -> Path | None:
    """sessionSearch.claudeCodeDir: an absolute path or `~/...`, or false (off); default
    `~/.claude`, left unexpanded (nothing is indexed while it does not exist)."""
    raw = section.get("claudeCodeDir")
    default = DEFAULT_CLAUDE_CODE_DIR
    if raw is None or raw is True:
        return default
    if raw is False:
        return None
    expanded = _expand_home(raw.strip(), home) if isinstance(raw, str) else None
    if expanded is None or not os.path.isabs(expanded) or "\x00" in expanded:
        section.reject("claudeCodeDir", "expected an absolute path (or ~/...), or false")
        return default
    return Path(expanded)


def _project_map(section: _Section, *, home: Path | None) -> dict[str, str]:
    """sessionSearch.projectMap: {"<absolute cwd or ~/...>": "<project name>"}. An entry with
    a relative path or an unsafe project name is dropped with a warning; the rest apply."""
    raw = section.get("projectMap")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        section.reject("projectMap", "expected an object of working directory -> project name")
        return {}
    mapping: dict[str, str] = {}
    for key, name in raw.items():
        expanded = _expand_home(key.strip(), home) if isinstance(key, str) else None
        if expanded is None or not os.path.isabs(expanded) or "\x00" in expanded:
            section.warn(
                "projectMap",
                "keys are absolute working directories (or ~/...); an entry with another key "
                "was ignored",
            )
            continue
        if not isinstance(name, str) or not is_safe_project_name(name.strip()):
            section.warn(
                "projectMap",
                "values are project names (non-empty, no / \\ , < > or control characters); an "
                "entry with another value was ignored",
            )
            continue
        from pi_hermes_memory.domain.history.transcripts import normalize_cwd

        mapping[normalize_cwd(expanded)] = name.strip()
    return mapping


# --- embedding --------------------------------------------------------------------------------

_EMBEDDING_OFF: Final = "embedding is disabled"


def _url_problem(url: str, endpoint: str = "/embeddings") -> str | None:
    if any(ch.isspace() for ch in url) or _has_control_char(url):
        return "must not contain whitespace or control characters"
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "must be an http or https URL"
    if not parts.hostname:
        return "must include a host"
    if parts.username is not None or parts.password is not None:
        return "must not embed credentials"
    if parts.query or parts.fragment:
        return f"must not have a query or fragment ('{endpoint}' is appended to it)"
    return None


def _base_url(
    section: _Section,
    *,
    default: str = DEFAULT_EMBEDDING_BASE_URL,
    endpoint: str = "/embeddings",
    fallback: str = _EMBEDDING_OFF,
) -> str:
    text = section.optional_text("baseUrl", fallback=fallback)
    if text is None:
        return default
    url = text.strip().rstrip("/")
    problem = _url_problem(url, endpoint)
    if problem is None:
        return url
    section.reject("baseUrl", f"{problem}; {fallback}")
    return default


def _custom(section: _Section, *, fallback: str) -> CustomAdapter | None:
    """The adapter named by `provider` when it is an import path (ADR 0057); the literal
    "custom" names none and is rejected."""
    value = section.get("provider")
    if isinstance(value, str) and IMPORT_PATH.fullmatch(value):
        import types

        return CustomAdapter(path=value, options=types.MappingProxyType(dict(section.raw)))
    if value == "custom":
        section.reject(
            "provider",
            "name your adapter by import path ('package.module:Attribute'), not 'custom'; "
            + fallback,
        )
    return None


def _api_key_env(section: _Section, *, fallback: str = _EMBEDDING_OFF) -> str | None:
    name = section.optional_text("apiKeyEnv", fallback=fallback)
    if name is None or _ENV_VAR_NAME.fullmatch(name):
        return name
    section.reject(
        "apiKeyEnv",
        f"expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*); {fallback}",
    )
    return None


def _with_api_key(settings: EmbeddingConfig, environ: Mapping[str, str]) -> EmbeddingConfig:
    if settings.requested_provider is EmbeddingProvider.LOCAL:  # needs no key
        return attrs.evolve(settings, provider=EmbeddingProvider.LOCAL, disabled_reason=None)
    if settings.requested_provider is not EmbeddingProvider.OPENAI_COMPATIBLE:
        return settings
    if settings.api_key_env is None:
        return attrs.evolve(settings, disabled_reason=EmbeddingDisabledReason.API_KEY_ENV_UNSET)
    key = environ.get(settings.api_key_env, "").strip()
    if not key:
        return attrs.evolve(settings, disabled_reason=EmbeddingDisabledReason.API_KEY_MISSING)
    return attrs.evolve(
        settings, provider=EmbeddingProvider.OPENAI_COMPATIBLE, api_key=key, disabled_reason=None
    )


def _embedding(top: _Section, environ: Mapping[str, str]) -> EmbeddingConfig:
    section = top.section("embedding")
    custom = _custom(section, fallback=_EMBEDDING_OFF)
    provider = (
        EmbeddingProvider.CUSTOM
        if custom is not None
        else section.optional_choice("provider", EmbeddingProvider, fallback=_EMBEDDING_OFF)
    )
    if provider is EmbeddingProvider.CUSTOM and custom is None:
        provider = None  # "custom" itself was rejected above
    settings = EmbeddingConfig(
        requested_provider=provider or EmbeddingProvider.OFF,
        base_url=_base_url(section),
        model=(section.non_empty_text("model", fallback=_EMBEDDING_OFF) or "").strip()
        or DEFAULT_EMBEDDING_MODEL,
        timeout_ms=section.optional_integer(
            "timeoutMs", minimum=1, maximum=EMBEDDING_MAX_TIMEOUT_MS, fallback=_EMBEDDING_OFF
        )
        or DEFAULT_EMBEDDING_TIMEOUT_MS,
        api_key_env=_api_key_env(section),
        dimensions=section.optional_integer("dimensions", minimum=1, fallback=_EMBEDDING_OFF),
        task_query=section.non_empty_text("taskQuery", fallback=_EMBEDDING_OFF),
        task_passage=section.non_empty_text("taskPassage", fallback=_EMBEDDING_OFF),
        normalized=section.optional_boolean("normalized", fallback=_EMBEDDING_OFF),
    )
    if section.get("apiKey") is not None:
        # Ignored, not fatal: the rest of the section may be fine and the key may be in the
        # environment too. The warning is the nudge to remove the plaintext secret.
        section.warn(
            "apiKey",
            "API keys are never read from the config file; it was ignored. Put the key in an"
            " environment variable and name it in embedding.apiKeyEnv",
        )
    if not section.valid or section.rejected:
        return attrs.evolve(settings, disabled_reason=EmbeddingDisabledReason.INVALID_CONFIG)
    if custom is not None:  # the adapter reads its own key, if it needs one
        return attrs.evolve(
            settings, provider=EmbeddingProvider.CUSTOM, custom=custom, disabled_reason=None
        )
    return _with_api_key(settings, environ)


# --- retrieval --------------------------------------------------------------------------------

_RERANK_OFF: Final = "reranking is off"


def _unit_number(section: _Section, key: str, default: float | None) -> float | None:
    value = section.get(key)
    if value is None:
        return default
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    ):
        return float(value)
    shown = "chosen per embedder" if default is None else _show(default)
    section.reject(key, f"expected a number from 0 to 1; using {shown}")
    return default


def _stages(section: _Section) -> tuple[str, ...]:
    value = section.get("stages")
    if value is None:
        return RETRIEVAL_STAGES
    if (
        isinstance(value, list)
        and all(isinstance(v, str) and v in RETRIEVAL_STAGES for v in value)
        and len(set(value)) == len(value)
    ):
        return tuple(s for s in RETRIEVAL_STAGES if s in value)  # the order is fixed
    section.reject(
        "stages",
        f"expected a list of distinct stage names from {', '.join(RETRIEVAL_STAGES)}; "
        "using every stage",
    )
    return RETRIEVAL_STAGES


#: `retrieval.rerank` written as the second seed's string
_RERANK_WORDS: Final = {
    "none": RerankProvider.OFF,
    "off": RerankProvider.OFF,
    "lightweight": RerankProvider.LIGHTWEIGHT,
    "llm": RerankProvider.LLM,
}
#: providers that need no endpoint: valid as soon as the section is
_LOCAL_RERANKERS: Final = frozenset({RerankProvider.LIGHTWEIGHT, RerankProvider.LLM})


def _rerank_word(retrieval: _Section) -> RerankConfig | None:
    """`retrieval.rerank` as a string ("none", "lightweight", "llm", "cross-encoder"); None
    when it is not a string (the object form, or unset)."""
    value = retrieval.get("rerank")
    if not isinstance(value, str):
        return None
    provider = _RERANK_WORDS.get(value)
    if provider is not None:
        return RerankConfig(provider=provider)
    if value == "cross-encoder":
        retrieval.reject(
            "rerank",
            "a cross-encoder needs its endpoint: write retrieval.rerank as an object, e.g. "
            '{"provider": "jina-compatible", "baseUrl": ..., "apiKeyEnv": ...}; ' + _RERANK_OFF,
        )
    else:
        retrieval.reject(
            "rerank",
            'expected "none", "lightweight", "llm", "cross-encoder" or an object; ' + _RERANK_OFF,
        )
    return RerankConfig()


def _rerank(section: _Section, environ: Mapping[str, str]) -> RerankConfig:
    custom = _custom(section, fallback=_RERANK_OFF)
    provider = (
        RerankProvider.CUSTOM
        if custom is not None
        else section.optional_choice("provider", RerankProvider, fallback=_RERANK_OFF)
    )
    base_url = _base_url(
        section, default=DEFAULT_RERANK_BASE_URL, endpoint="/rerank", fallback=_RERANK_OFF
    )
    key_env = _api_key_env(section, fallback=_RERANK_OFF)
    settings = RerankConfig(
        base_url=base_url,
        model=(section.non_empty_text("model", fallback=_RERANK_OFF) or "").strip()
        or DEFAULT_RERANK_MODEL,
        timeout_ms=section.optional_integer(
            "timeoutMs", minimum=1, maximum=EMBEDDING_MAX_TIMEOUT_MS, fallback=_RERANK_OFF
        )
        or DEFAULT_RERANK_TIMEOUT_MS,
        top_n=section.optional_integer("topN", minimum=1, maximum=100, fallback=_RERANK_OFF)
        or DEFAULT_RERANK_TOP_N,
        api_key_env=key_env,
    )
    if section.get("apiKey") is not None:
        # ignored; without apiKeyEnv the endpoint would be called without the key meant for it
        (section.warn if key_env is not None else section.reject)(
            "apiKey",
            "API keys are never read from the config file; it was ignored. Put the key in an"
            " environment variable and name it in retrieval.rerank.apiKeyEnv",
        )
    if custom is not None and section.valid and not section.rejected:
        return attrs.evolve(settings, provider=RerankProvider.CUSTOM, custom=custom)
    if provider in _LOCAL_RERANKERS and section.valid and not section.rejected:
        return attrs.evolve(settings, provider=provider)
    if provider is not RerankProvider.JINA_COMPATIBLE or not section.valid or section.rejected:
        return settings
    key = None
    if key_env is not None:
        key = environ.get(key_env, "").strip()
        if not key:
            section.warn("apiKeyEnv", f"the variable {key_env} is unset or empty; {_RERANK_OFF}")
            return settings
    return attrs.evolve(settings, provider=RerankProvider.JINA_COMPATIBLE, api_key=key)


#: the second seed's retrieval keys this library cannot honour, and why (ADR 0070)
_UNHONOURED: Final = {
    "queryExpansion": "the seed's synonym list is not used here; search expands nothing",
    "filterNoise": "noise is always filtered, at capture and at auto-recall",
    "reinforcementFactor": "access reinforcement of the decay half-life is not implemented",
    "maxHalfLifeMultiplier": "access reinforcement of the decay half-life is not implemented",
    "tagPrefixes": "tag-prefixed queries are searched like any other",
    "rerankApiKey": "write retrieval.rerank as an object with apiKeyEnv",
    "rerankModel": "write retrieval.rerank as an object with model",
    "rerankEndpoint": "write retrieval.rerank as an object with baseUrl",
    "rerankProvider": "write retrieval.rerank as an object with provider",
    "rerankTimeoutMs": "write retrieval.rerank as an object with timeoutMs",
}


def _non_negative_number(section: _Section, key: str, *, maximum: float = 3650.0) -> float | None:
    value = section.get(key)
    if value is None:
        return None
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= maximum
    ):
        return float(value)
    section.reject(key, f"expected a number from 0 to {maximum:g}; using the built-in value")
    return None


def _dense_weight(section: _Section) -> float | None:
    """`denseWeight`, or the seed's name for it, `vectorWeight` (ours wins when both differ)."""
    ours = _unit_number(section, "denseWeight", None)
    seeds = _unit_number(section, "vectorWeight", None)
    if ours is not None and seeds is not None and ours != seeds:
        section.warn("vectorWeight", "denseWeight is set too and differs; using denseWeight")
    return ours if ours is not None else seeds


def _retrieval(top: _Section, environ: Mapping[str, str]) -> RetrievalConfig:
    section = top.section("retrieval")
    for key, why in _UNHONOURED.items():
        if section.get(key) is not None and not (key == "filterNoise" and section.get(key) is True):
            section.warn(key, f"not honoured: {why}; ignored")
    rerank = _rerank_word(section)
    return RetrievalConfig(
        stages=_stages(section),
        dense_weight=_dense_weight(section),
        hard_min_score=_unit_number(section, "hardMinScore", 0.35) or 0.0,
        rerank=rerank if rerank is not None else _rerank(section.section("rerank"), environ),
        min_cosine=_unit_number(section, "minCosine", None),
        mode=section.choice("mode", RetrievalMode.HYBRID),
        fts_weight=_unit_number(section, "bm25Weight", None),
        min_score=_unit_number(section, "minScore", None),
        candidate_pool_size=section.optional_integer(
            "candidatePoolSize", minimum=1, maximum=1000, fallback="using the built-in 50"
        ),
        recency_half_life_days=_non_negative_number(section, "recencyHalfLifeDays"),
        recency_weight=_unit_number(section, "recencyWeight", None),
        time_decay_half_life_days=_non_negative_number(section, "timeDecayHalfLifeDays"),
        length_norm_anchor=section.optional_integer(
            "lengthNormAnchor", minimum=0, maximum=1_000_000, fallback="using the built-in 500"
        ),
        importance_weight=_unit_number(section, "importanceWeight", None),
    )


# --- llm ------------------------------------------------------------------------------------

_LLM_OFF: Final = "the LLM is off"


def _holds_secret(text: str) -> bool:
    # the scanner's rules compile many patterns: loaded when a value needs checking (ADR 0038)
    from pi_hermes_memory.domain.scanning.scanner import ScanCategory, scan

    return any(f.category is ScanCategory.SECRET for f in scan(text).findings)


def _argv(section: _Section) -> tuple[str, ...] | None:
    """llm.command: a non-empty argv list of strings (never a shell line). An item the content
    scanner refuses (a key pasted into the command line) rejects the list: argv is visible
    to every local user and would travel into error messages."""
    value = section.get("command")
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not value
        or len(value) > LLM_MAX_ARGV_ITEMS
        or not all(isinstance(item, str) and "\x00" not in item for item in value)
        or not value[0].strip()
    ):
        section.reject(
            "command",
            f"expected a non-empty list of at most {LLM_MAX_ARGV_ITEMS} strings (the program "
            f"and its arguments, no shell), the first not blank; {_LLM_OFF}",
        )
        return None
    if any(_holds_secret(item) for item in value):
        section.reject(
            "command",
            "an argument looks like a secret; keys are never read from the config file. Put "
            "the key in an environment variable (the command inherits the environment); "
            f"{_LLM_OFF}",
        )
        return None
    return tuple(value)


def _temperature(section: _Section) -> float | None:
    value = section.get("temperature")
    if value is None:
        return 0.0
    if value is False:
        return None
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 2
    ):
        return float(value)
    section.reject("temperature", f"expected a number from 0 to 2, or false; {_LLM_OFF}")
    return 0.0


def _llm(top: _Section, *, fallback_timeout: int) -> LlmConfig:
    section = top.section("llm")
    custom = _custom(section, fallback=_LLM_OFF)
    provider = (
        LlmProvider.CUSTOM
        if custom is not None
        else section.optional_choice("provider", LlmProvider, fallback=_LLM_OFF)
    )
    if provider is LlmProvider.CUSTOM and custom is None:
        provider = None  # "custom" itself was rejected above
    model = section.non_empty_text("model", fallback=_LLM_OFF)
    if model is not None and _holds_secret(model):  # the status line shows the model
        section.reject("model", f"looks like a secret, not a model name; {_LLM_OFF}")
        model = None
    base_url = None
    if section.get("baseUrl") is not None:
        base_url = _base_url(section, default="", endpoint="/chat/completions", fallback=_LLM_OFF)
    key_env = _api_key_env(section, fallback=_LLM_OFF)
    if section.get("apiKey") is not None:
        section.reject(
            "apiKey",
            "API keys are never read from the config file; it was ignored. Put the key in an"
            f" environment variable and name it in llm.apiKeyEnv; {_LLM_OFF}",
        )
    timeout = section.optional_integer(
        "timeoutMs", minimum=1, maximum=LLM_MAX_TIMEOUT_MS, fallback=_LLM_OFF
    )
    settings = LlmConfig(
        provider=provider or LlmProvider.OFF,
        command=_argv(section),
        timeout_ms=timeout or min(fallback_timeout, LLM_MAX_TIMEOUT_MS),
        max_reply_bytes=section.optional_integer(
            "maxReplyBytes",
            minimum=LLM_MIN_REPLY_BYTES,
            maximum=LLM_MAX_REPLY_BYTES_CAP,
            fallback=_LLM_OFF,
        )
        or DEFAULT_LLM_MAX_REPLY_BYTES,
        base_url=base_url or None,
        model=model.strip() if model else None,
        api_key_env=key_env,
        temperature=_temperature(section),
        custom=custom,
    )
    invalid = tuple(section.rejected) if section.valid else (top.field("llm"),)
    return attrs.evolve(settings, invalid_fields=invalid)


# --- skill governance -------------------------------------------------------------------------


def _skill_governance(
    top: _Section, *, agent_root: Path, home: Path | None, memory_dir: Path, fallback_timeout: int
) -> SkillGovernanceConfig:
    section = top.section("skillGovernance")
    scopes = section.section("scopes")
    global_dir = _directory(scopes, "globalSkillsDir", base=agent_root, home=home)
    curation_timeout = section.optional_integer(
        "curationTimeoutMs", minimum=1, fallback="using consolidationTimeoutMs"
    )
    return SkillGovernanceConfig(
        scopes=SkillScopesConfig(
            global_skills_dir=global_dir or memory_dir / "skills",
            project_skills_dir=_directory(scopes, "projectSkillsDir", base=agent_root, home=home),
        ),
        promotion_enabled=section.boolean("promotionEnabled", True),
        promotion_min_same_domain_usages=section.integer("promotionMinSameDomainUsages", 3),
        promotion_min_sessions=section.integer("promotionMinSessions", 2),
        promotion_min_projects=section.integer("promotionMinProjects", 1),
        promotion_task_domains=_task_domains(section),
        promotion_domain_terms=section.string_list(
            "promotionDomainTerms", trim=True, fallback="using default []"
        )
        or (),
        promotion_require_global_safe=section.boolean("promotionRequireGlobalSafe", True),
        promotion_conflict_strategy=section.choice(
            "promotionConflictStrategy", PromotionConflictStrategy.BLOCK
        ),
        curation_timeout_ms=curation_timeout or fallback_timeout,
        curation_max_consecutive_failures=section.integer("curationMaxConsecutiveFailures", 0),
        auto_curation_cooldown_ms=section.integer("autoCurationCooldownMs", 86_400_000),
        auto_curation_failure_cooldown_ms=section.integer(
            "autoCurationFailureCooldownMs", 3_600_000
        ),
        load_event_retention_days=section.integer("loadEventRetentionDays", 180),
        load_event_cleanup_budget=section.integer("loadEventCleanupBudget", 500),
    )


# --- the parser -------------------------------------------------------------------------------


def _home_from(environ: Mapping[str, str]) -> Path | None:
    home = environ.get("HOME", "")
    return Path(home) if os.path.isabs(home) else None


TOOL_SETS: Final = ("hermes", "pi-memory")


def _tool_sets(tools: _Section) -> tuple[str, ...]:
    """tools.sets: a non-empty list of "hermes" and/or "pi-memory" (ADR 0045); anything else
    is a warning and the default, this library's tools only."""
    raw = tools.get("sets")
    if raw is None:
        return ("hermes",)
    if (
        isinstance(raw, list)
        and raw
        and all(isinstance(item, str) and item in TOOL_SETS for item in raw)
    ):
        return tuple(name for name in TOOL_SETS if name in raw)
    tools.reject("sets", 'expected a non-empty list of "hermes" and "pi-memory"; using ["hermes"]')
    return ("hermes",)


def _auto_memory(top: _Section) -> AutoMemoryConfig:
    """The flat auto-memory keys (ADR 0049); a bad value is a warning and the default."""
    return AutoMemoryConfig(
        recall=top.boolean("autoRecall", True),
        recall_max_items=top.integer("autoRecallMaxItems", 3, minimum=1, maximum=20),
        recall_timeout_ms=top.integer("autoRecallTimeoutMs", 500, minimum=1, maximum=60_000),
        recall_min_score=_unit_number(top, "autoRecallMinScore", DEFAULT_RECALL_MIN_SCORE) or 0.0,
        capture=top.boolean("autoCapture", True),
        capture_max_per_turn=top.integer("autoCaptureMaxPerTurn", 3, minimum=1, maximum=10),
        min_length=top.integer("adaptiveMinLength", 15, minimum=0, maximum=1_000),
        min_length_cjk=top.integer("adaptiveMinLengthCjk", 6, minimum=0, maximum=1_000),
        session_summary=top.boolean("sessionSummary", False),
        session_summary_messages=top.integer(
            "sessionSummaryMessages", 15, minimum=1, maximum=1_000
        ),
    )


KNOWLEDGE_PATHS_ENV: Final = "PI_MEMORY_KNOWLEDGE_PATHS"
_KNOWLEDGE_PATHS_MESSAGE: Final = (
    "expected a JSON array of non-empty folder paths (of '~' forms only '~' and '~/...' are "
    "expanded); the knowledge base is off"
)


def _knowledge_paths(
    section: _Section, environ: Mapping[str, str], *, cwd: Path, home: Path | None
) -> tuple[Path, ...]:
    raw = environ.get(KNOWLEDGE_PATHS_ENV, "")
    value: object
    if raw.strip():
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
        where = KNOWLEDGE_PATHS_ENV
    else:
        value, where = section.get("paths"), ""
        if value is None:
            return ()
    paths: list[Path] = []
    if isinstance(value, list) and all(
        isinstance(item, str) and item.strip() and "\x00" not in item for item in value
    ):
        for item in value:
            expanded = _expand_home(item.strip(), home)
            if expanded is None:
                break
            path = _lexical(expanded, cwd)
            if path not in paths:
                paths.append(path)
        else:
            return tuple(paths)
    if where:
        section.warn_field(where, _KNOWLEDGE_PATHS_MESSAGE)
    else:
        section.reject("paths", _KNOWLEDGE_PATHS_MESSAGE)
    return ()


def _knowledge(
    top: _Section, environ: Mapping[str, str], *, cwd: Path, home: Path | None
) -> KnowledgeConfig:
    section = top.section("knowledge")
    return KnowledgeConfig(
        paths=_knowledge_paths(section, environ, cwd=cwd, home=home),
        max_file_bytes=section.integer(
            "maxFileBytes", DEFAULT_FILE_BYTES, minimum=1, maximum=1 << 30
        ),
        max_chunk_chars=section.integer(
            "maxChunkChars", DEFAULT_CHUNK_CHARS, minimum=100, maximum=100_000
        ),
        max_index_files=section.integer(
            "maxIndexFiles", DEFAULT_INDEX_FILES, minimum=1, maximum=10_000_000
        ),
        max_index_bytes=section.integer(
            "maxIndexBytes", DEFAULT_INDEX_BYTES, minimum=1, maximum=1 << 40
        ),
    )


def parse_config(
    raw: object,
    *,
    agent_root: Path,
    cwd: Path,
    environ: Mapping[str, str],
    physical: Callable[[Path], Path],
    project_override: str | None = None,
    home: Path | None = None,
) -> tuple[Config, tuple[ConfigWarning, ...]]:
    """The effective configuration of the decoded document `raw`, and the warnings.

    `physical` maps an absolute path to its physical form (symlinks resolved); it is only used
    to keep memoryDir and projectsMemoryDir apart and may raise OSError (then paths are
    compared lexically). `home` expands `~`; by default it is `environ["HOME"]`.
    Raises ConfigError only for an invalid `project_override`.
    """
    sink: list[ConfigWarning] = []
    top = _document(raw, sink)
    root = _lexical(agent_root, cwd)
    home = home if home is not None else _home_from(environ)
    memory_dir, projects_dir = _memory_roots(top, agent_root=root, home=home, physical=physical)
    consolidation_timeout = top.integer("consolidationTimeoutMs", 60_000, minimum=1)
    config = Config(
        agent_root=root,
        memory_dir=memory_dir,
        projects_memory_dir=projects_dir,
        project=_project(top, cwd=cwd, override=project_override),
        memory_mode=top.choice("memoryMode", MemoryMode.POLICY_ONLY),
        memory_policy_style=top.choice("memoryPolicyStyle", MemoryPolicyStyle.FULL),
        memory_policy_custom_text=_policy_custom_text(top),
        # A zero character limit would make every write fail: limits must be positive.
        memory_char_limit=top.integer("memoryCharLimit", 5000, minimum=1),
        user_char_limit=top.integer("userCharLimit", 5000, minimum=1),
        project_char_limit=top.integer("projectCharLimit", 5000, minimum=1),
        project_memory_sharing=top.boolean("projectMemorySharing", False),
        # "Every 0 turns" has no meaning (and would be a modulo by zero): must be positive.
        nudge_interval=top.integer("nudgeInterval", 10, minimum=1),
        review_recent_messages=top.integer("reviewRecentMessages", 0),
        review_enabled=top.boolean("reviewEnabled", True),
        review_skills_enabled=top.boolean("reviewSkillsEnabled", True),
        review_max_adds=top.integer("reviewMaxAdds", 10, maximum=50),
        flush_on_compact=top.boolean("flushOnCompact", True),
        flush_on_shutdown=top.boolean("flushOnShutdown", True),
        flush_min_turns=top.integer("flushMinTurns", 6),
        flush_recent_messages=top.integer("flushRecentMessages", 0),
        agent_access=_agent_access(top.section("scopes")),
        session_search=_session_search(top, home=home),
        embedding=_embedding(top, environ),
        retrieval=_retrieval(top, environ),
        llm=_llm(top, fallback_timeout=consolidation_timeout),
        llm_model_override=_model_override(top),
        llm_thinking_override=top.optional_choice(
            "llmThinkingOverride", ThinkingLevel, fallback="using the default thinking level"
        ),
        overflow_strategy=_overflow_strategy(top),
        correction_detection=top.boolean("correctionDetection", True),
        correction_strong_patterns=_patterns(top, "correctionStrongPatterns"),
        correction_weak_patterns=_patterns(top, "correctionWeakPatterns"),
        correction_negative_patterns=_patterns(top, "correctionNegativePatterns"),
        correction_directive_words=top.string_list(
            "correctionDirectiveWords", trim=True, fallback="using the built-in words"
        ),
        failure_injection_enabled=top.boolean("failureInjectionEnabled", True),
        failure_injection_max_age_days=top.integer("failureInjectionMaxAgeDays", 7),
        failure_injection_max_entries=top.integer("failureInjectionMaxEntries", 5),
        nudge_tool_calls=top.integer("nudgeToolCalls", 15),
        skill_review_tool_calls=top.integer("skillReviewToolCalls", 10),
        consolidation_timeout_ms=consolidation_timeout,
        consolidation_max_removed_share=_unit_number(top, "consolidationMaxRemovedShare", 0.3)
        or 0.0,
        tool_sets=_tool_sets(top.section("tools")),
        auto_memory=_auto_memory(top),
        knowledge=_knowledge(top, environ, cwd=cwd, home=home),
        storage=parse_storage(top, environ),
        adapters=parse_adapters(top),
        skill_governance=_skill_governance(
            top,
            agent_root=root,
            home=home,
            memory_dir=memory_dir,
            fallback_timeout=consolidation_timeout,
        ),
    )
    return config, tuple(sink)


__all__ = [
    "CONFIG_FILE_NAME",
    "DB_FILE_NAME",
    "DEFAULT_EMBEDDING_BASE_URL",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_EMBEDDING_TIMEOUT_MS",
    "DEFAULT_LLM_MAX_REPLY_BYTES",
    "DEFAULT_MEMORY_DIR_NAME",
    "DEFAULT_PROJECTS_MEMORY_DIR_NAME",
    "DEFAULT_RECALL_MIN_SCORE",
    "DEFAULT_RERANK_BASE_URL",
    "DEFAULT_RERANK_MODEL",
    "DEFAULT_RERANK_TIMEOUT_MS",
    "DEFAULT_RERANK_TOP_N",
    "DOCUMENT_FIELD",
    "EMBEDDING_MAX_TIMEOUT_MS",
    "KNOWLEDGE_PATHS_ENV",
    "LLM_MAX_ARGV_ITEMS",
    "LLM_MAX_REPLY_BYTES_CAP",
    "LLM_MAX_TIMEOUT_MS",
    "LLM_MIN_REPLY_BYTES",
    "MAX_SAFE_INTEGER",
    "RETRIEVAL_STAGES",
    "TOOL_SETS",
    "AutoMemoryConfig",
    "Config",
    "ConfigError",
    "ConfigWarning",
    "EmbeddingConfig",
    "EmbeddingDisabledReason",
    "EmbeddingProvider",
    "KnowledgeConfig",
    "LlmConfig",
    "LlmProvider",
    "MemoryMode",
    "MemoryPolicyStyle",
    "OverflowStrategy",
    "Physical",
    "PromotionConflictStrategy",
    "RerankConfig",
    "RerankProvider",
    "RetrievalConfig",
    "RetrievalMode",
    "SessionSearchConfig",
    "SessionSearchVariant",
    "SkillGovernanceConfig",
    "SkillScopesConfig",
    "TaskDomain",
    "ThinkingLevel",
    "parse_config",
]
