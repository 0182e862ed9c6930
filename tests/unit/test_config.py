"""The pure configuration parser: defaults, every field's rule and every fallback."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pi_hermes_memory.config.settings import (
    DOCUMENT_FIELD,
    MAX_SAFE_INTEGER,
    Config,
    ConfigWarning,
    EmbeddingDisabledReason,
    EmbeddingProvider,
    MemoryMode,
    MemoryPolicyStyle,
    OverflowStrategy,
    PromotionConflictStrategy,
    RerankProvider,
    SessionSearchVariant,
    TaskDomain,
    ThinkingLevel,
    is_safe_project_name,
    parse_config,
)
from pi_hermes_memory.errors import ConfigError

HOME = Path("/home/u")
ROOT = HOME / ".pi" / "agent"
CWD = Path("/work/my-app")
SECRET = "sk-live-SENTINEL-0123456789"


def identity(path: Path) -> Path:
    return path


def parse(
    raw: object,
    *,
    environ: Mapping[str, str] | None = None,
    physical: Callable[[Path], Path] = identity,
    override: str | None = None,
    cwd: Path = CWD,
    home: Path | None = HOME,
) -> tuple[Config, tuple[ConfigWarning, ...]]:
    return parse_config(
        raw,
        agent_root=ROOT,
        cwd=cwd,
        environ=environ or {},
        physical=physical,
        project_override=override,
        home=home,
    )


def fields(warnings: tuple[ConfigWarning, ...]) -> list[str]:
    return [warning.field for warning in warnings]


def get(config: object, dotted: str) -> object:
    for name in dotted.split("."):
        config = getattr(config, name)
    return config


def nest(key: str, value: object) -> dict[str, object]:
    """`{"a": {"b": value}}` for key "a.b"."""
    head, _, rest = key.partition(".")
    return {head: nest(rest, value) if rest else value}


# --- defaults ---------------------------------------------------------------------------------


def test_empty_document_gives_the_spec_defaults_without_warnings() -> None:
    config, warnings = parse({})
    assert warnings == ()
    assert config.agent_root == ROOT
    assert config.memory_dir == ROOT / "pi-hermes-memory"
    assert config.projects_memory_dir == ROOT / "projects-memory"
    assert config.db_path == ROOT / "pi-hermes-memory" / "sessions.db"
    assert config.config_path == ROOT / "hermes-memory-config.json"
    assert config.project == "my-app"
    assert config.memory_mode is MemoryMode.POLICY_ONLY
    assert config.memory_policy_style is MemoryPolicyStyle.FULL
    assert config.memory_policy_custom_text is None
    assert (config.memory_char_limit, config.user_char_limit, config.project_char_limit) == (
        5000,
        5000,
        5000,
    )
    assert config.project_memory_sharing is False
    assert (config.nudge_interval, config.review_recent_messages) == (10, 0)
    assert config.review_enabled and config.review_skills_enabled
    assert config.flush_on_compact and config.flush_on_shutdown
    assert (config.flush_min_turns, config.flush_recent_messages) == (6, 0)
    assert config.session_search.variant is SessionSearchVariant.LEGACY
    assert config.llm_model_override is None and config.llm_thinking_override is None
    assert config.overflow_strategy is OverflowStrategy.AUTO_CONSOLIDATE
    assert config.auto_consolidate is True
    assert config.correction_detection is True
    assert config.correction_strong_patterns is None
    assert config.correction_weak_patterns is None
    assert config.correction_negative_patterns is None
    assert config.correction_directive_words is None
    assert config.failure_injection_enabled is True
    assert (config.failure_injection_max_age_days, config.failure_injection_max_entries) == (7, 5)
    assert (config.nudge_tool_calls, config.skill_review_tool_calls) == (15, 10)
    assert config.consolidation_timeout_ms == 60_000


def test_default_embedding_is_off_with_the_spec_settings() -> None:
    embedding = parse({})[0].embedding
    assert embedding.provider is EmbeddingProvider.OFF
    assert not embedding.enabled
    assert embedding.disabled_reason is EmbeddingDisabledReason.PROVIDER_OFF
    assert embedding.base_url == "https://api.openai.com/v1"
    assert embedding.model == "text-embedding-3-small"
    assert embedding.timeout_ms == 3000
    assert embedding.api_key is None and embedding.api_key_env is None


def test_default_skill_governance() -> None:
    config = parse({})[0]
    governance = config.skill_governance
    assert governance.scopes.global_skills_dir == ROOT / "pi-hermes-memory" / "skills"
    assert governance.scopes.project_skills_dir is None
    assert config.project_skills_root == ROOT / "projects-memory"
    assert config.active_project_skills_dir == ROOT / "projects-memory" / "my-app" / "skills"
    assert governance.promotion_enabled is True
    assert governance.promotion_min_same_domain_usages == 3
    assert governance.promotion_min_sessions == 2
    assert governance.promotion_min_projects == 1
    assert governance.promotion_task_domains is None
    assert governance.promotion_domain_terms == ()
    assert governance.promotion_require_global_safe is True
    assert governance.promotion_conflict_strategy is PromotionConflictStrategy.BLOCK
    assert governance.curation_timeout_ms == 60_000
    assert governance.curation_max_consecutive_failures == 0
    assert governance.auto_curation_cooldown_ms == 86_400_000
    assert governance.auto_curation_failure_cooldown_ms == 3_600_000
    assert governance.load_event_retention_days == 180
    assert governance.load_event_cleanup_budget == 500


def test_config_default_equals_parsing_an_empty_document() -> None:
    assert Config.default(ROOT, CWD) == parse({}, home=None)[0]


def test_config_is_immutable() -> None:
    config = parse({})[0]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.memory_char_limit = 1  # type: ignore[misc]


# --- the document -----------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, [], [{"memoryCharLimit": 10}], "x", 5, 1.5, True])
def test_a_document_that_is_not_an_object_gives_defaults_and_one_warning(raw: object) -> None:
    config, warnings = parse(raw)
    assert config == parse({})[0]
    assert fields(warnings) == [DOCUMENT_FIELD]


def test_unknown_keys_are_ignored_silently() -> None:
    config, warnings = parse(
        {"noSuchField": 1, "embedding": {"whatever": True}, "memoryCharLimit": 7}
    )
    assert warnings == ()
    assert config.memory_char_limit == 7


def test_json_null_counts_as_absent() -> None:
    config, warnings = parse({"memoryCharLimit": None, "reviewEnabled": None, "embedding": None})
    assert warnings == ()
    assert config == parse({})[0]


# --- booleans ---------------------------------------------------------------------------------

BOOLEANS = [
    ("projectMemorySharing", "project_memory_sharing", False),
    ("reviewEnabled", "review_enabled", True),
    ("reviewSkillsEnabled", "review_skills_enabled", True),
    ("flushOnCompact", "flush_on_compact", True),
    ("flushOnShutdown", "flush_on_shutdown", True),
    ("correctionDetection", "correction_detection", True),
    ("failureInjectionEnabled", "failure_injection_enabled", True),
    ("skillGovernance.promotionEnabled", "skill_governance.promotion_enabled", True),
    (
        "skillGovernance.promotionRequireGlobalSafe",
        "skill_governance.promotion_require_global_safe",
        True,
    ),
]


@pytest.mark.parametrize(("key", "attribute", "default"), BOOLEANS)
def test_boolean_fields_accept_json_booleans(key: str, attribute: str, default: bool) -> None:
    config, warnings = parse(nest(key, not default))
    assert warnings == ()
    assert get(config, attribute) is (not default)


@pytest.mark.parametrize("bad", [0, 1, "true", "false", [], {}])
@pytest.mark.parametrize(("key", "attribute", "default"), BOOLEANS)
def test_boolean_fields_reject_anything_but_a_boolean(
    key: str, attribute: str, default: bool, bad: object
) -> None:
    config, warnings = parse(nest(key, bad))
    assert get(config, attribute) is default
    assert fields(warnings) == [key]


# --- integers ---------------------------------------------------------------------------------

INTEGERS = [
    ("memoryCharLimit", "memory_char_limit", 5000, 1),
    ("userCharLimit", "user_char_limit", 5000, 1),
    ("projectCharLimit", "project_char_limit", 5000, 1),
    ("nudgeInterval", "nudge_interval", 10, 1),
    ("reviewRecentMessages", "review_recent_messages", 0, 0),
    ("flushMinTurns", "flush_min_turns", 6, 0),
    ("flushRecentMessages", "flush_recent_messages", 0, 0),
    ("failureInjectionMaxAgeDays", "failure_injection_max_age_days", 7, 0),
    ("failureInjectionMaxEntries", "failure_injection_max_entries", 5, 0),
    ("nudgeToolCalls", "nudge_tool_calls", 15, 0),
    ("skillReviewToolCalls", "skill_review_tool_calls", 10, 0),
    ("consolidationTimeoutMs", "consolidation_timeout_ms", 60_000, 1),
    (
        "skillGovernance.promotionMinSameDomainUsages",
        "skill_governance.promotion_min_same_domain_usages",
        3,
        0,
    ),
    ("skillGovernance.promotionMinSessions", "skill_governance.promotion_min_sessions", 2, 0),
    ("skillGovernance.promotionMinProjects", "skill_governance.promotion_min_projects", 1, 0),
    (
        "skillGovernance.curationMaxConsecutiveFailures",
        "skill_governance.curation_max_consecutive_failures",
        0,
        0,
    ),
    (
        "skillGovernance.autoCurationCooldownMs",
        "skill_governance.auto_curation_cooldown_ms",
        86_400_000,
        0,
    ),
    (
        "skillGovernance.autoCurationFailureCooldownMs",
        "skill_governance.auto_curation_failure_cooldown_ms",
        3_600_000,
        0,
    ),
    (
        "skillGovernance.loadEventRetentionDays",
        "skill_governance.load_event_retention_days",
        180,
        0,
    ),
    (
        "skillGovernance.loadEventCleanupBudget",
        "skill_governance.load_event_cleanup_budget",
        500,
        0,
    ),
]


@pytest.mark.parametrize(("key", "attribute", "default", "minimum"), INTEGERS)
def test_integer_fields_accept_values_from_their_minimum(
    key: str, attribute: str, default: int, minimum: int
) -> None:
    for value in (minimum, 12_345, MAX_SAFE_INTEGER):
        config, warnings = parse(nest(key, value))
        assert warnings == ()
        assert get(config, attribute) == value


@pytest.mark.parametrize(("key", "attribute", "default", "minimum"), INTEGERS)
def test_integer_fields_accept_integral_floats(
    key: str, attribute: str, default: int, minimum: int
) -> None:
    config, warnings = parse(nest(key, 42.0))
    assert warnings == ()
    value = get(config, attribute)
    assert value == 42 and type(value) is int


@pytest.mark.parametrize(
    "bad", [1.5, True, False, "10", math.nan, math.inf, -math.inf, MAX_SAFE_INTEGER + 1, [1]]
)
@pytest.mark.parametrize(("key", "attribute", "default", "minimum"), INTEGERS)
def test_integer_fields_reject_non_integers(
    key: str, attribute: str, default: int, minimum: int, bad: object
) -> None:
    config, warnings = parse(nest(key, bad))
    assert get(config, attribute) == default
    assert fields(warnings) == [key]


@pytest.mark.parametrize(("key", "attribute", "default", "minimum"), INTEGERS)
def test_integer_fields_reject_values_below_their_minimum(
    key: str, attribute: str, default: int, minimum: int
) -> None:
    config, warnings = parse(nest(key, minimum - 1))
    assert get(config, attribute) == default
    assert fields(warnings) == [key]
    assert f">= {minimum}" in warnings[0].message


# --- enums ------------------------------------------------------------------------------------

ENUMS = [
    ("memoryMode", "memory_mode", MemoryMode.POLICY_ONLY, MemoryMode.LEGACY_INJECT),
    ("memoryPolicyStyle", "memory_policy_style", MemoryPolicyStyle.FULL, MemoryPolicyStyle.NONE),
    (
        "sessionSearch.variant",
        "session_search.variant",
        SessionSearchVariant.LEGACY,
        SessionSearchVariant.ANCHORS,
    ),
    (
        "memoryOverflowStrategy",
        "overflow_strategy",
        OverflowStrategy.AUTO_CONSOLIDATE,
        OverflowStrategy.FIFO_EVICT,
    ),
    ("llmThinkingOverride", "llm_thinking_override", None, ThinkingLevel.XHIGH),
    (
        "skillGovernance.promotionConflictStrategy",
        "skill_governance.promotion_conflict_strategy",
        PromotionConflictStrategy.BLOCK,
        PromotionConflictStrategy.OVERWRITE,
    ),
]


@pytest.mark.parametrize(("key", "attribute", "default", "other"), ENUMS)
def test_enum_fields_accept_their_values(
    key: str, attribute: str, default: object, other: object
) -> None:
    config, warnings = parse(nest(key, str(other)))
    assert warnings == ()
    assert get(config, attribute) is other


@pytest.mark.parametrize("bad", ["", "LEGACY", "Full", "nope", 1, True, ["legacy"]])
@pytest.mark.parametrize(("key", "attribute", "default", "other"), ENUMS)
def test_enum_fields_reject_unknown_values(
    key: str, attribute: str, default: object, other: object, bad: object
) -> None:
    config, warnings = parse(nest(key, bad))
    assert get(config, attribute) is default
    assert fields(warnings) == [key]
    assert repr(str(other)) in warnings[0].message  # the accepted values are listed


@pytest.mark.parametrize("level", list(ThinkingLevel))
def test_every_thinking_level_is_accepted(level: ThinkingLevel) -> None:
    assert parse({"llmThinkingOverride": level.value})[0].llm_thinking_override is level


def test_session_search_that_is_not_an_object_is_ignored_with_a_warning() -> None:
    config, warnings = parse({"sessionSearch": "anchors"})
    assert config.session_search.variant is SessionSearchVariant.LEGACY
    assert fields(warnings) == ["sessionSearch"]


# --- overflow strategy and legacy autoConsolidate ---------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"autoConsolidate": True}, OverflowStrategy.AUTO_CONSOLIDATE),
        ({"autoConsolidate": False}, OverflowStrategy.REJECT),
        (
            {"autoConsolidate": False, "memoryOverflowStrategy": "auto-consolidate"},
            OverflowStrategy.AUTO_CONSOLIDATE,
        ),
        (
            {"autoConsolidate": True, "memoryOverflowStrategy": "fifo-evict"},
            OverflowStrategy.FIFO_EVICT,
        ),
        ({"autoConsolidate": True, "memoryOverflowStrategy": "reject"}, OverflowStrategy.REJECT),
    ],
)
def test_explicit_strategy_wins_and_legacy_flag_maps_when_absent(
    raw: dict[str, object], expected: OverflowStrategy
) -> None:
    config, warnings = parse(raw)
    assert warnings == ()
    assert config.overflow_strategy is expected
    assert config.auto_consolidate is (expected is OverflowStrategy.AUTO_CONSOLIDATE)


def test_an_invalid_strategy_falls_back_to_the_legacy_flag() -> None:
    config, warnings = parse({"memoryOverflowStrategy": "drop", "autoConsolidate": False})
    assert config.overflow_strategy is OverflowStrategy.REJECT
    assert fields(warnings) == ["memoryOverflowStrategy"]


def test_a_non_boolean_legacy_flag_is_ignored_with_a_warning() -> None:
    config, warnings = parse({"autoConsolidate": "no"})
    assert config.overflow_strategy is OverflowStrategy.AUTO_CONSOLIDATE
    assert fields(warnings) == ["autoConsolidate"]


# --- text fields ------------------------------------------------------------------------------


def test_custom_policy_text_is_kept_and_used_by_the_custom_style() -> None:
    config, warnings = parse(
        {"memoryPolicyStyle": "custom", "memoryPolicyCustomText": "<p>mine</p>"}
    )
    assert warnings == ()
    assert config.memory_policy_custom_text == "<p>mine</p>"
    assert config.effective_policy_style is MemoryPolicyStyle.CUSTOM


@pytest.mark.parametrize("text", [None, "", "   \n"])
def test_custom_style_without_text_falls_back_to_compact(text: str | None) -> None:
    config, warnings = parse({"memoryPolicyStyle": "custom", "memoryPolicyCustomText": text})
    assert warnings == ()
    assert config.memory_policy_custom_text is None
    assert config.effective_policy_style is MemoryPolicyStyle.COMPACT


def test_custom_policy_text_must_be_a_string() -> None:
    config, warnings = parse({"memoryPolicyCustomText": ["x"]})
    assert config.memory_policy_custom_text is None
    assert fields(warnings) == ["memoryPolicyCustomText"]


def test_model_override_is_trimmed_and_an_empty_one_ignored_silently() -> None:
    assert parse({"llmModelOverride": "  prov/model \n"})[0].llm_model_override == "prov/model"
    config, warnings = parse({"llmModelOverride": "   "})
    assert config.llm_model_override is None and warnings == ()


def test_model_override_must_be_a_string() -> None:
    config, warnings = parse({"llmModelOverride": 3})
    assert config.llm_model_override is None
    assert fields(warnings) == ["llmModelOverride"]


# --- correction rules -------------------------------------------------------------------------

PATTERN_FIELDS = [
    ("correctionStrongPatterns", "correction_strong_patterns"),
    ("correctionWeakPatterns", "correction_weak_patterns"),
    ("correctionNegativePatterns", "correction_negative_patterns"),
]


@pytest.mark.parametrize(("key", "attribute"), PATTERN_FIELDS)
def test_pattern_fields_keep_valid_regexes_verbatim(key: str, attribute: str) -> None:
    config, warnings = parse({key: [r"^actually,\s+(.+)$", r" spaced "]})
    assert warnings == ()
    assert getattr(config, attribute) == (r"^actually,\s+(.+)$", r" spaced ")


@pytest.mark.parametrize(("key", "attribute"), PATTERN_FIELDS)
def test_an_empty_pattern_list_disables_the_rule(key: str, attribute: str) -> None:
    config, warnings = parse({key: []})
    assert warnings == ()
    assert getattr(config, attribute) == ()


@pytest.mark.parametrize(
    ("given", "kept", "named"),
    [
        (["ok", "a{2,1}"], ("ok",), "item 1 is not"),
        (["(unclosed", r"^actually,\s+(.+)$", "[z-a]"], (r"^actually,\s+(.+)$",), "item 0"),
        (["(unclosed"], (), "item 0 is not a valid regular expression (missing ), unterminated"),
    ],
)
@pytest.mark.parametrize(("key", "attribute"), PATTERN_FIELDS)
def test_an_invalid_pattern_is_skipped_with_a_warning_naming_it_and_the_rest_kept(
    key: str, attribute: str, given: list[str], kept: tuple[str, ...], named: str
) -> None:
    config, warnings = parse({key: given})
    assert getattr(config, attribute) == kept  # never the built-in rules in their place
    bad = [w for w in warnings if w.field == key]
    assert len(bad) == sum(1 for p in given if p not in kept)
    assert named in bad[0].message and "not a valid regular expression" in bad[0].message
    if not kept:
        assert "this rule is off" in bad[0].message


def test_an_invalid_pattern_is_named_by_its_index_never_by_its_text() -> None:
    token = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5("
    config, warnings = parse({"correctionStrongPatterns": ["ok", token]})
    assert config.correction_strong_patterns == ("ok",)
    assert "item 1 is not" in warnings[0].message and "ghp_" not in warnings[0].message


@pytest.mark.parametrize("bad", [[""], "^x$", [1], {}])
@pytest.mark.parametrize(("key", "attribute"), PATTERN_FIELDS)
def test_a_pattern_list_of_the_wrong_shape_falls_back_to_the_built_in_rules(
    key: str, attribute: str, bad: object
) -> None:
    config, warnings = parse({key: bad})
    assert getattr(config, attribute) is None
    assert fields(warnings) == [key]


def test_directive_words_are_trimmed_and_can_be_disabled() -> None:
    assert parse({"correctionDirectiveWords": [" remember ", "prefer"]})[
        0
    ].correction_directive_words == ("remember", "prefer")
    assert parse({"correctionDirectiveWords": []})[0].correction_directive_words == ()


@pytest.mark.parametrize("bad", [["ok", ""], ["  "], "remember", [None]])
def test_invalid_directive_words_fall_back_to_the_built_in_words(bad: object) -> None:
    config, warnings = parse({"correctionDirectiveWords": bad})
    assert config.correction_directive_words is None
    assert fields(warnings) == ["correctionDirectiveWords"]


# --- memoryDir --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ROOT / "pi-hermes-memory"),
        ("   ", ROOT / "pi-hermes-memory"),
        ("data", ROOT / "data"),
        ("nested/data/", ROOT / "nested" / "data"),
        ("./a/../b", ROOT / "b"),
        ("../outside", HOME / ".pi" / "outside"),
        ("~/mem", HOME / "mem"),
        ("/srv/memory", Path("/srv/memory")),
        ("  /srv/memory  ", Path("/srv/memory")),
    ],
)
def test_memory_dir_path_rules(value: str, expected: Path) -> None:
    config, warnings = parse({"memoryDir": value})
    assert warnings == ()
    assert config.memory_dir == expected
    assert config.db_path == expected / "sessions.db"


@pytest.mark.parametrize("bad", ["~other/mem", "a\x00b", 5, ["x"]])
def test_an_unusable_memory_dir_falls_back_to_the_default(bad: object) -> None:
    config, warnings = parse({"memoryDir": bad})
    assert config.memory_dir == ROOT / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]


def test_tilde_cannot_be_expanded_without_a_home() -> None:
    config, warnings = parse({"memoryDir": "~/mem"}, home=None)
    assert config.memory_dir == ROOT / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]


def test_home_defaults_to_the_home_variable_of_the_environment() -> None:
    config, warnings = parse({"memoryDir": "~/mem"}, home=None, environ={"HOME": "/h"})
    assert warnings == ()
    assert config.memory_dir == Path("/h/mem")


# --- projectsMemoryDir ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("projects-memory", "projects-memory"),
        ("team projects", "team projects"),
        (" pm ", "pm"),
        (str(ROOT / "pm"), "pm"),
        (str(ROOT / "pm") + "/", "pm"),
        ("~/.pi/agent/pm", "pm"),
    ],
)
def test_projects_memory_dir_accepts_a_single_name_under_the_agent_root(
    value: str, name: str
) -> None:
    config, warnings = parse({"projectsMemoryDir": value})
    assert warnings == ()
    assert config.projects_memory_dir == ROOT / name


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "  ",
        ".",
        "..",
        "a/b",
        "a\\b",
        "a\x00b",
        "~other",
        "/elsewhere/pm",
        str(ROOT / "a" / "b"),
        str(ROOT),
        str(ROOT / ".."),
        5,
    ],
)
def test_projects_memory_dir_rejects_anything_else(bad: object) -> None:
    config, warnings = parse({"projectsMemoryDir": bad})
    assert config.projects_memory_dir == ROOT / "projects-memory"
    assert fields(warnings) == ["projectsMemoryDir"]


# --- keeping the two memory roots apart -------------------------------------------------------


@pytest.mark.parametrize(
    "memory_dir",
    [
        "projects-memory",  # the same directory
        ".",  # the agent root contains the projects root
        str(ROOT),
        "projects-memory/global",  # inside the projects root
    ],
)
def test_a_memory_dir_sharing_the_projects_root_falls_back(memory_dir: str) -> None:
    config, warnings = parse({"memoryDir": memory_dir})
    assert config.memory_dir == ROOT / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]
    assert "physical" in warnings[0].message


def test_a_projects_dir_equal_to_the_memory_dir_falls_back() -> None:
    config, warnings = parse({"projectsMemoryDir": "pi-hermes-memory"})
    assert config.projects_memory_dir == ROOT / "projects-memory"
    assert fields(warnings) == ["projectsMemoryDir"]


def test_when_both_are_explicit_and_conflict_both_fall_back() -> None:
    config, warnings = parse({"memoryDir": "shared", "projectsMemoryDir": "shared"})
    assert config.memory_dir == ROOT / "pi-hermes-memory"
    assert config.projects_memory_dir == ROOT / "projects-memory"
    assert fields(warnings) == ["memoryDir", "projectsMemoryDir"]


def test_the_comparison_uses_the_physical_paths() -> None:
    def physical(path: Path) -> Path:
        # `mem` is a symlink to the projects root.
        return ROOT / "projects-memory" if path == ROOT / "mem" else path

    config, warnings = parse({"memoryDir": "mem"}, physical=physical)
    assert config.memory_dir == ROOT / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]


def test_a_conflict_that_survives_the_fallback_is_reported() -> None:
    def physical(path: Path) -> Path:
        # The default memory directory itself is a symlink to the projects root on disk.
        return ROOT / "projects-memory" if path == ROOT / "pi-hermes-memory" else path

    config, warnings = parse({}, physical=physical)
    assert config.memory_dir == ROOT / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]
    assert "still share" in warnings[0].message


def test_resolution_errors_fall_back_to_the_lexical_comparison() -> None:
    def denied(path: Path) -> Path:
        raise PermissionError(13, "denied", str(path))

    assert parse({"memoryDir": "mem"}, physical=denied) == (
        parse({"memoryDir": "mem"})[0],
        (),
    )
    config, warnings = parse({"memoryDir": "projects-memory"}, physical=denied)
    assert config.memory_dir == ROOT / "pi-hermes-memory"
    assert fields(warnings) == ["memoryDir"]


def test_the_physical_resolver_sees_absolute_paths() -> None:
    seen: list[Path] = []

    def recording(path: Path) -> Path:
        seen.append(path)
        return path

    parse({"memoryDir": "m", "projectsMemoryDir": "p"}, physical=recording)
    assert set(seen) == {ROOT / "m", ROOT / "p"}


# --- projectName ------------------------------------------------------------------------------


def test_the_project_defaults_to_the_cwd_basename() -> None:
    assert parse({}, cwd=Path("/src/svc-a/"))[0].project == "svc-a"


@pytest.mark.parametrize("cwd", [Path("/"), Path("/src/a,b"), Path("/src/a<b>"), Path("/x/..")])
def test_an_unsafe_cwd_basename_means_no_project(cwd: Path) -> None:
    config, warnings = parse({}, cwd=cwd)
    assert config.project is None
    assert config.active_project_skills_dir is None
    assert warnings == ()


def test_an_explicit_project_name_is_trimmed() -> None:
    config, warnings = parse({"projectName": "  my project  "})
    assert warnings == ()
    assert config.project == "my project"


UNSAFE_NAMES = ["", "   ", ".", "..", "a/b", "a\\b", "a,b", "a<b", "a>b", "a\nb", "a\rb", "a\x00b"]


@pytest.mark.parametrize("bad", [*UNSAFE_NAMES, 42, ["x"]])
def test_an_unsafe_project_name_is_ignored_for_the_cwd_basename(bad: object) -> None:
    config, warnings = parse({"projectName": bad})
    assert config.project == "my-app"
    assert fields(warnings) == ["projectName"]


def test_an_unsafe_project_name_with_an_unsafe_cwd_means_no_project() -> None:
    config, warnings = parse({"projectName": ".."}, cwd=Path("/"))
    assert config.project is None
    assert fields(warnings) == ["projectName"]


def test_the_project_override_wins_over_the_file_and_is_trimmed() -> None:
    config, warnings = parse({"projectName": "from-file"}, override="  from-cli ")
    assert warnings == ()
    assert config.project == "from-cli"


@pytest.mark.parametrize("bad", UNSAFE_NAMES)
def test_an_unsafe_project_override_is_a_usage_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="invalid project name"):
        parse({}, override=bad)


@pytest.mark.parametrize("name", ["svc", "my app", "项目-1", "a.b", "_x", "x" * 255])
def test_safe_project_names(name: str) -> None:
    assert is_safe_project_name(name)


@pytest.mark.parametrize(
    "name", [*UNSAFE_NAMES, " x", "x ", "a\tb", "a\x7fb", "x" * 256, "é" * 128]
)
def test_unsafe_project_names(name: str) -> None:
    assert not is_safe_project_name(name)


# --- embedding --------------------------------------------------------------------------------

VALID_EMBEDDING = {
    "provider": "openai-compatible",
    "baseUrl": "https://llm.example.com/v1/",
    "apiKeyEnv": "EMBED_KEY",
    "model": "bge-m3",
    "timeoutMs": 30_000,
    "dimensions": 1024,
    "taskQuery": "query: ",
    "taskPassage": "passage: ",
    "normalized": True,
}


def test_a_valid_embedding_section_with_a_key_in_the_environment_is_enabled() -> None:
    config, warnings = parse({"embedding": VALID_EMBEDDING}, environ={"EMBED_KEY": f" {SECRET}\n"})
    embedding = config.embedding
    assert warnings == ()
    assert embedding.enabled and embedding.provider is EmbeddingProvider.OPENAI_COMPATIBLE
    assert embedding.disabled_reason is None and config.embedding_disabled_reason is None
    assert embedding.api_key == SECRET
    assert embedding.base_url == "https://llm.example.com/v1"
    assert embedding.redacted_base_url == "https://llm.example.com"
    assert (embedding.model, embedding.model_id) == ("bge-m3", "openai-compatible/bge-m3")
    assert embedding.timeout_ms == 30_000
    assert embedding.dimensions == 1024
    assert (embedding.task_query, embedding.task_passage, embedding.normalized) == (
        "query: ",
        "passage: ",
        True,
    )


def test_the_minimal_enabled_section_takes_the_defaults() -> None:
    raw = {"embedding": {"provider": "openai-compatible", "apiKeyEnv": "K"}}
    embedding = parse(raw, environ={"K": "k"})[0].embedding
    assert embedding.enabled
    assert embedding.base_url == "https://api.openai.com/v1"
    assert embedding.model == "text-embedding-3-small"
    assert embedding.timeout_ms == 3000
    assert embedding.dimensions is None and embedding.normalized is None


def test_without_an_api_key_env_name_the_provider_is_off() -> None:
    config, warnings = parse({"embedding": {"provider": "openai-compatible"}})
    assert warnings == ()
    assert not config.embedding.enabled
    assert config.embedding.requested_provider is EmbeddingProvider.OPENAI_COMPATIBLE
    assert config.embedding_disabled_reason is EmbeddingDisabledReason.API_KEY_ENV_UNSET


@pytest.mark.parametrize("environ", [{}, {"EMBED_KEY": ""}, {"EMBED_KEY": "  \n"}])
def test_a_missing_or_empty_key_variable_turns_the_provider_off(environ: dict[str, str]) -> None:
    config, warnings = parse({"embedding": VALID_EMBEDDING}, environ=environ)
    assert warnings == ()
    assert not config.embedding.enabled and config.embedding.api_key is None
    assert config.embedding_disabled_reason is EmbeddingDisabledReason.API_KEY_MISSING


def test_provider_off_never_reads_the_key() -> None:
    config, _ = parse(
        {"embedding": {**VALID_EMBEDDING, "provider": "off"}}, environ={"EMBED_KEY": "k"}
    )
    assert config.embedding.api_key is None
    assert config.embedding_disabled_reason is EmbeddingDisabledReason.PROVIDER_OFF


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("provider", "azure"),
        ("provider", True),
        ("baseUrl", "ftp://llm.example.com"),
        ("baseUrl", "https://"),
        ("baseUrl", "llm.example.com/v1"),
        ("baseUrl", "https://llm.example.com/v 1"),
        ("baseUrl", "https://user:pw@llm.example.com"),
        ("baseUrl", "https://llm.example.com/v1?key=1"),
        ("baseUrl", "https://llm.example.com:99999"),
        ("baseUrl", "http://[::1"),
        ("baseUrl", 42),
        ("model", ""),
        ("model", "   "),
        ("model", 5),
        ("timeoutMs", 0),
        ("timeoutMs", -1),
        ("timeoutMs", 30_001),
        ("timeoutMs", 1.5),
        ("timeoutMs", "3000"),
        ("timeoutMs", True),
        ("apiKeyEnv", "MY-KEY"),
        ("apiKeyEnv", "1KEY"),
        ("apiKeyEnv", ""),
        ("apiKeyEnv", 7),
        ("dimensions", 0),
        ("dimensions", 1.5),
        ("taskQuery", ""),
        ("taskPassage", 3),
        ("normalized", "yes"),
    ],
)
def test_any_invalid_embedding_field_turns_the_whole_section_off(key: str, bad: object) -> None:
    config, warnings = parse(
        {"embedding": {**VALID_EMBEDDING, key: bad}}, environ={"EMBED_KEY": SECRET}
    )
    assert not config.embedding.enabled
    assert config.embedding.api_key is None
    assert config.embedding_disabled_reason is EmbeddingDisabledReason.INVALID_CONFIG
    assert fields(warnings) == [f"embedding.{key}"]
    assert "embedding is disabled" in warnings[0].message


def test_an_embedding_section_that_is_not_an_object_is_off() -> None:
    config, warnings = parse({"embedding": "openai-compatible"}, environ={"EMBED_KEY": "k"})
    assert config.embedding_disabled_reason is EmbeddingDisabledReason.INVALID_CONFIG
    assert fields(warnings) == ["embedding"]


def test_a_key_in_the_file_is_ignored_with_a_warning_and_never_used() -> None:
    raw = {"embedding": {"provider": "openai-compatible", "apiKey": SECRET}}
    config, warnings = parse(raw)
    assert config.embedding.api_key is None
    assert config.embedding_disabled_reason is EmbeddingDisabledReason.API_KEY_ENV_UNSET
    assert fields(warnings) == ["embedding.apiKey"]
    assert SECRET not in warnings[0].message


def test_a_key_in_the_file_does_not_stop_the_key_from_the_environment() -> None:
    raw = {"embedding": {**VALID_EMBEDDING, "apiKey": "other"}}
    config, warnings = parse(raw, environ={"EMBED_KEY": SECRET})
    assert config.embedding.api_key == SECRET
    assert fields(warnings) == ["embedding.apiKey"]


def test_the_key_and_the_base_url_never_appear_in_repr() -> None:
    secret_url = "https://tenant-SENTINEL.example.com/v1/proj-SENTINEL"
    raw = {"embedding": {**VALID_EMBEDDING, "baseUrl": secret_url}}
    config, _ = parse(raw, environ={"EMBED_KEY": SECRET})
    assert config.embedding.api_key == SECRET
    assert "SENTINEL" not in repr(config)
    assert "SENTINEL" not in str(config.embedding)


def test_warnings_never_echo_rejected_values() -> None:
    """A secret pasted into any field must not leak through a warning."""
    everything: dict[str, object] = {
        key: SECRET
        for key in [
            "memoryMode", "memoryPolicyStyle", "memoryCharLimit", "projectMemorySharing",
            "memoryDir", "projectsMemoryDir", "llmThinkingOverride", "memoryOverflowStrategy",
            "autoConsolidate", "correctionStrongPatterns", "correctionDirectiveWords",
            "consolidationTimeoutMs", "sessionSearch",
        ]
    }  # fmt: skip
    everything["projectName"] = f"{SECRET}/x"
    everything["memoryDir"] = f"~{SECRET}"
    everything["correctionWeakPatterns"] = [f"({SECRET}"]
    everything["embedding"] = {
        "provider": "openai-compatible",
        "baseUrl": f"https://u:{SECRET}@h.example.com",
        "apiKeyEnv": SECRET,
        "apiKey": SECRET,
        "model": 1,
    }
    everything["skillGovernance"] = {
        "scopes": {"globalSkillsDir": f"~{SECRET}"},
        "promotionTaskDomains": [{"id": SECRET, "terms": [SECRET]}],
        "promotionConflictStrategy": SECRET,
    }
    _, warnings = parse(everything, environ={SECRET: SECRET})
    assert len(warnings) >= 15
    for warning in warnings:
        assert "SENTINEL" not in warning.message
        assert "SENTINEL" not in warning.field


# --- skill governance -------------------------------------------------------------------------


def test_the_global_skills_dir_follows_a_custom_memory_dir() -> None:
    config = parse({"memoryDir": "/srv/mem"})[0]
    assert config.skill_governance.scopes.global_skills_dir == Path("/srv/mem/skills")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("skills-root", ROOT / "skills-root"),
        ("/abs/skills", Path("/abs/skills")),
        ("~/skills", HOME / "skills"),
        ("", None),
    ],
)
def test_skill_scope_directories_resolve_under_the_agent_root(
    value: str, expected: Path | None
) -> None:
    scopes = {"globalSkillsDir": value, "projectSkillsDir": value}
    config, warnings = parse({"skillGovernance": {"scopes": scopes}})
    assert warnings == ()
    parsed = config.skill_governance.scopes
    assert parsed.global_skills_dir == (expected or ROOT / "pi-hermes-memory" / "skills")
    assert parsed.project_skills_dir == expected
    root = expected or ROOT / "projects-memory"
    assert config.active_project_skills_dir == root / "my-app" / "skills"


@pytest.mark.parametrize("key", ["globalSkillsDir", "projectSkillsDir"])
@pytest.mark.parametrize("bad", [3, "~x/skills", "a\x00"])
def test_an_unusable_skill_scope_directory_falls_back(key: str, bad: object) -> None:
    config, warnings = parse({"skillGovernance": {"scopes": {key: bad}}})
    assert config.skill_governance == parse({})[0].skill_governance
    assert fields(warnings) == [f"skillGovernance.scopes.{key}"]


@pytest.mark.parametrize("raw", [{"skillGovernance": 1}, {"skillGovernance": {"scopes": []}}])
def test_governance_sections_that_are_not_objects_are_ignored(raw: dict[str, object]) -> None:
    config, warnings = parse(raw)
    assert config.skill_governance == parse({})[0].skill_governance
    assert len(warnings) == 1


def test_curation_timeout_falls_back_to_the_consolidation_timeout() -> None:
    config = parse({"consolidationTimeoutMs": 90_000})[0]
    assert config.skill_governance.curation_timeout_ms == 90_000
    explicit = parse(
        {"consolidationTimeoutMs": 90_000, "skillGovernance": {"curationTimeoutMs": 5}}
    )
    assert explicit[0].skill_governance.curation_timeout_ms == 5


@pytest.mark.parametrize("bad", [0, -5, 2.5, "60000"])
def test_an_invalid_curation_timeout_uses_the_consolidation_timeout(bad: object) -> None:
    raw = {"consolidationTimeoutMs": 70_000, "skillGovernance": {"curationTimeoutMs": bad}}
    config, warnings = parse(raw)
    assert config.skill_governance.curation_timeout_ms == 70_000
    assert fields(warnings) == ["skillGovernance.curationTimeoutMs"]


def test_promotion_task_domains_are_parsed() -> None:
    raw = {
        "skillGovernance": {
            "promotionTaskDomains": [
                {"id": "repo-workflow", "description": "Builds.", "terms": [" build ", "test"]},
                {"id": "db2", "terms": ["sql"], "extra": 1},
            ]
        }
    }
    config, warnings = parse(raw)
    assert warnings == ()
    assert config.skill_governance.promotion_task_domains == (
        TaskDomain(id="repo-workflow", description="Builds.", terms=("build", "test")),
        TaskDomain(id="db2", description=None, terms=("sql",)),
    )


def test_an_empty_task_domain_list_is_kept() -> None:
    raw: dict[str, object] = {"skillGovernance": {"promotionTaskDomains": []}}
    assert parse(raw)[0].skill_governance.promotion_task_domains == ()


@pytest.mark.parametrize(
    "bad",
    [
        "repo",
        {"id": "x", "terms": ["a"]},
        ["repo"],
        [{"id": "Repo", "terms": ["a"]}],
        [{"id": "1repo", "terms": ["a"]}],
        [{"id": "repo-", "terms": ["a"]}],
        [{"id": "", "terms": ["a"]}],
        [{"terms": ["a"]}],
        [{"id": "repo", "terms": []}],
        [{"id": "repo", "terms": [""]}],
        [{"id": "repo", "terms": "build"}],
        [{"id": "repo"}],
        [{"id": "repo", "terms": ["a"], "description": 5}],
        [{"id": "repo", "terms": ["a"]}, {"id": "repo", "terms": ["b"]}],
    ],
)
def test_an_invalid_task_domain_list_falls_back_to_the_built_in_domains(bad: object) -> None:
    config, warnings = parse({"skillGovernance": {"promotionTaskDomains": bad}})
    assert config.skill_governance.promotion_task_domains is None
    assert fields(warnings) == ["skillGovernance.promotionTaskDomains"]


def test_promotion_domain_terms() -> None:
    raw = {"skillGovernance": {"promotionDomainTerms": [" git ", "ci"]}}
    assert parse(raw)[0].skill_governance.promotion_domain_terms == ("git", "ci")
    config, warnings = parse({"skillGovernance": {"promotionDomainTerms": ["git", 1]}})
    assert config.skill_governance.promotion_domain_terms == ()
    assert fields(warnings) == ["skillGovernance.promotionDomainTerms"]


# --- never raises -----------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
TOP_KEYS = [
    "memoryMode", "memoryPolicyStyle", "memoryPolicyCustomText", "memoryCharLimit",
    "userCharLimit", "projectCharLimit", "projectMemorySharing", "nudgeInterval",
    "reviewRecentMessages", "reviewEnabled", "reviewSkillsEnabled", "flushOnCompact",
    "flushOnShutdown", "flushMinTurns", "flushRecentMessages", "memoryDir", "projectsMemoryDir",
    "projectName", "llmModelOverride", "llmThinkingOverride", "memoryOverflowStrategy",
    "autoConsolidate", "correctionDetection", "correctionStrongPatterns",
    "correctionWeakPatterns", "correctionNegativePatterns", "correctionDirectiveWords",
    "failureInjectionEnabled", "failureInjectionMaxAgeDays", "failureInjectionMaxEntries",
    "nudgeToolCalls", "skillReviewToolCalls", "consolidationTimeoutMs",
    "consolidationMaxRemovedShare", "reviewMaxAdds",
]  # fmt: skip
EMBEDDING_KEYS = [
    "provider", "baseUrl", "apiKeyEnv", "apiKey", "model", "timeoutMs", "dimensions",
    "taskQuery", "taskPassage", "normalized",
]  # fmt: skip
GOVERNANCE_KEYS = [
    "promotionEnabled", "promotionMinSameDomainUsages", "promotionMinSessions",
    "promotionMinProjects", "promotionTaskDomains", "promotionDomainTerms",
    "promotionRequireGlobalSafe", "promotionConflictStrategy", "curationTimeoutMs",
    "curationMaxConsecutiveFailures", "autoCurationCooldownMs", "autoCurationFailureCooldownMs",
    "loadEventRetentionDays", "loadEventCleanupBudget",
]  # fmt: skip


def sections(
    keys: list[str], values: st.SearchStrategy[object]
) -> st.SearchStrategy[dict[str, object]]:
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), values, max_size=8)


governance = st.fixed_dictionaries(
    {},
    optional={
        "scopes": sections(["globalSkillsDir", "projectSkillsDir"], json_values) | json_values,
    },
).flatmap(lambda head: sections(GOVERNANCE_KEYS, json_values).map(lambda rest: {**rest, **head}))
documents = json_values | st.fixed_dictionaries(
    {},
    optional={
        "embedding": sections(EMBEDDING_KEYS, json_values) | json_values,
        "sessionSearch": sections(["variant"], json_values) | json_values,
        "skillGovernance": governance | json_values,
    },
).flatmap(lambda head: sections(TOP_KEYS, json_values).map(lambda rest: {**rest, **head}))


@settings(max_examples=400, deadline=None)
@given(documents, st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3))
def test_parse_config_never_raises_and_keeps_its_invariants(
    raw: object, environ: dict[str, str]
) -> None:
    config, warnings = parse(raw, environ=environ)
    assert isinstance(config, Config)
    assert all(isinstance(warning, ConfigWarning) for warning in warnings)
    assert config.memory_dir.is_absolute() and config.projects_memory_dir.is_absolute()
    assert config.projects_memory_dir.parent == ROOT
    memory, projects = config.memory_dir, config.projects_memory_dir
    assert not (memory.is_relative_to(projects) or projects.is_relative_to(memory))
    assert config.project is None or is_safe_project_name(config.project)
    assert config.embedding.enabled == (config.embedding.api_key is not None)
    assert config.embedding.enabled == (config.embedding_disabled_reason is None)
    assert 1 <= config.embedding.timeout_ms <= 30_000
    assert config.memory_char_limit >= 1 and config.skill_governance.curation_timeout_ms >= 1


def test_agent_access_map_is_parsed_and_fails_closed_per_agent() -> None:
    from pathlib import Path as _P

    raw = {
        "scopes": {
            "agentAccess": {
                "coder": ["global", "agent:coder", "custom:team"],
                "limited": ["custom:team", "not a scope"],
                "bad id": ["global"],
            }
        }
    }
    config, warnings = parse_config(
        raw,
        agent_root=_P("/tmp/agent"),
        cwd=_P("/tmp/work"),
        environ={"HOME": "/tmp"},
        physical=lambda p: p,
    )
    assert config.agent_access["coder"] == frozenset({"global", "agent:coder", "custom:team"})
    assert config.agent_access["limited"] == frozenset()  # never widened to the default
    assert "bad id" not in config.agent_access
    assert [w.field for w in warnings] == ["scopes.agentAccess", "scopes.agentAccess"]
    off, warned = parse_config(
        {"scopes": {"agentAccess": ["global"]}},
        agent_root=_P("/tmp/agent"),
        cwd=_P("/tmp/work"),
        environ={"HOME": "/tmp"},
        physical=lambda p: p,
    )
    assert off.agent_access == {} and warned[0].field == "scopes.agentAccess"


# --- retrieval (ADR 0019) ---------------------------------------------------------------------


def test_retrieval_defaults() -> None:
    retrieval = parse({})[0].retrieval
    assert retrieval.stages == (
        "rerank",
        "recency",
        "importance",
        "length",
        "time_decay",
        "hard_min",
        "mmr",
    )
    assert retrieval.dense_weight is None and retrieval.hard_min_score == 0.35
    rerank = retrieval.rerank
    assert rerank.provider is RerankProvider.OFF and not rerank.enabled
    assert rerank.base_url == "https://api.jina.ai/v1" and rerank.timeout_ms == 5000
    assert rerank.model == "jina-reranker-v2-base-multilingual" and rerank.top_n == 20


def test_retrieval_fields_are_read_and_stage_order_is_fixed() -> None:
    config, warnings = parse(
        {
            "retrieval": {
                "stages": ["mmr", "rerank"],
                "denseWeight": 0.25,
                "hardMinScore": 0,
                "minCosine": 0.42,
                "rerank": {
                    "provider": "jina-compatible",
                    "baseUrl": "http://127.0.0.1:8080/v1/",
                    "model": "bge-reranker",
                    "apiKeyEnv": "RERANK_KEY",
                    "timeoutMs": 800,
                    "topN": 5,
                },
            }
        },
        environ={"RERANK_KEY": SECRET},
    )
    assert warnings == ()
    r = config.retrieval
    assert r.stages == ("rerank", "mmr") and r.dense_weight == 0.25 and r.hard_min_score == 0.0
    assert r.min_cosine == 0.42
    assert r.rerank.enabled and r.rerank.api_key == SECRET
    assert r.rerank.base_url == "http://127.0.0.1:8080/v1" and r.rerank.model == "bge-reranker"
    assert (r.rerank.timeout_ms, r.rerank.top_n) == (800, 5)
    assert SECRET not in repr(config) and "127.0.0.1" not in repr(r.rerank)


def test_a_keyless_local_reranker_needs_no_key_env() -> None:
    config, warnings = parse(
        {"retrieval": {"rerank": {"provider": "jina-compatible", "baseUrl": "http://localhost:1"}}}
    )
    assert warnings == () and config.retrieval.rerank.enabled
    assert config.retrieval.rerank.api_key is None


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"stages": ["bogus"]}, "retrieval.stages"),
        ({"stages": ["mmr", "mmr"]}, "retrieval.stages"),
        ({"stages": "mmr"}, "retrieval.stages"),
        ({"denseWeight": 1.5}, "retrieval.denseWeight"),
        ({"denseWeight": True}, "retrieval.denseWeight"),
        ({"minCosine": 1.5}, "retrieval.minCosine"),
        ({"minCosine": "0.8"}, "retrieval.minCosine"),
        ({"hardMinScore": -0.1}, "retrieval.hardMinScore"),
        ({"hardMinScore": "0.3"}, "retrieval.hardMinScore"),
        ({"rerank": "on"}, "retrieval.rerank"),
        ({"rerank": {"provider": "cohere"}}, "retrieval.rerank.provider"),
        (
            {"rerank": {"provider": "jina-compatible", "baseUrl": "ftp://x"}},
            "retrieval.rerank.baseUrl",
        ),
        (
            {"rerank": {"provider": "jina-compatible", "apiKeyEnv": "not a name"}},
            "retrieval.rerank.apiKeyEnv",
        ),
        ({"rerank": {"provider": "jina-compatible", "timeoutMs": 0}}, "retrieval.rerank.timeoutMs"),
        ({"rerank": {"provider": "jina-compatible", "topN": 101}}, "retrieval.rerank.topN"),
        (
            {"rerank": {"provider": "jina-compatible", "apiKeyEnv": "UNSET_VAR"}},
            "retrieval.rerank.apiKeyEnv",
        ),
        ({"rerank": {"provider": "jina-compatible", "apiKey": SECRET}}, "retrieval.rerank.apiKey"),
    ],
)
def test_bad_retrieval_fields_warn_and_fall_back(raw: dict[str, object], field: str) -> None:
    config, warnings = parse({"retrieval": raw})
    assert field in fields(warnings)
    assert all(SECRET not in w.message for w in warnings)
    default = parse({})[0].retrieval
    r = config.retrieval
    assert not r.rerank.enabled  # any problem in the rerank section turns reranking off
    assert r.stages in (default.stages,) or "stages" not in raw
    assert r.dense_weight is None and r.hard_min_score == 0.35 and r.min_cosine is None


# --- the guards of model-proposed writes (issue 26 §1, ADR 0062) --------------------------------


def test_the_consolidation_share_and_the_review_add_cap_have_their_defaults() -> None:
    config, warnings = parse({})
    assert warnings == ()
    assert config.consolidation_max_removed_share == 0.3
    assert config.review_max_adds == 10


@pytest.mark.parametrize("value", [0, 0.1, 0.5, 1])
def test_consolidation_max_removed_share_takes_a_number_from_0_to_1(value: float) -> None:
    config, warnings = parse({"consolidationMaxRemovedShare": value})
    assert warnings == () and config.consolidation_max_removed_share == value


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.3", True, math.nan, [0.3]])
def test_a_bad_consolidation_share_keeps_the_default_with_a_warning(bad: object) -> None:
    config, warnings = parse({"consolidationMaxRemovedShare": bad})
    assert config.consolidation_max_removed_share == 0.3
    assert fields(warnings) == ["consolidationMaxRemovedShare"]


@pytest.mark.parametrize(
    ("value", "expected", "warned"),
    [
        (0, 0, False),
        (50, 50, False),
        (51, 10, True),
        (-1, 10, True),
        (2.5, 10, True),
        ("3", 10, True),
    ],
)
def test_review_max_adds_is_an_integer_from_0_to_50(
    value: object, expected: int, warned: bool
) -> None:
    config, warnings = parse({"reviewMaxAdds": value})
    assert config.review_max_adds == expected
    assert fields(warnings) == (["reviewMaxAdds"] if warned else [])
