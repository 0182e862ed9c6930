"""The server's store settings from `openclaw.json` and the environment (ADR 0047).

Precedence: command line > environment > openclaw.json > defaults. The file is the OpenClaw
plugin configuration (`plugins.entries["pi-memory"].config`, the second seed's format);
`--config FILE` / `PI_MEMORY_CONFIG` name it, else `~/.openclaw/openclaw.json` is read when
it exists. What it sets is mapped onto this library's own configuration sections
(`embedding`, `retrieval.rerank`) and validated by the same parser
(`pi_hermes_memory.config.settings.parse_config`), so a value is accepted here exactly when it would
be accepted in `hermes-memory-config.json`.

`retrieval` is the second seed's `RetrievalConfig` (`mode`, `vectorWeight`, `bm25Weight`,
`minScore`, `rerank`, `candidatePoolSize`, `recencyHalfLifeDays`, `recencyWeight`,
`timeDecayHalfLifeDays`, `lengthNormAnchor`, `hardMinScore`, …): this library's `retrieval`
section reads the same keys (ADR 0070), so the section is passed through and replaces every
store's own. Its `rerank: "cross-encoder"` is the endpoint of the `rerank` section (or of the
seed's flat `rerankApiKey`, `rerankModel`, `rerankEndpoint`, `rerankProvider`,
`rerankTimeoutMs`); `"none"` turns that reranker off; `"lightweight"` and `"llm"` need no
endpoint. A key the library cannot honour is a warning naming why.

The other documented plugin keys (`autoCapture`, `autoRecall*`, `sessionMemory`, `scopes`,
`enableManagementTools`, …) map onto this library's top-level keys, passed to every store as
`open(overrides=...)`; `dbPath` / `PI_MEMORY_DB_PATH` is the database's folder, `memoryDir`
(ADR 0075; the table is in docs/configuration.md).

API keys are never read from a file: `"apiKey": "${NAME}"` names the environment variable
that holds the key (this library's `apiKeyEnv`); a literal key is refused at start. Unknown
keys are warnings; a malformed file or a bad value is a `ServerConfigError` (exit 2).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs
from pi_hermes_memory.config.settings import (
    DB_FILE_NAME,
    EmbeddingConfig,
    EmbeddingProvider,
    RerankConfig,
    RerankProvider,
    RetrievalConfig,
    parse_config,
)
from pi_hermes_memory.errors import ServerConfigError

CONFIG_ENV: Final = "PI_MEMORY_CONFIG"
PLUGIN_NAME: Final = "pi-memory"
EMBED_KEY_ENV: Final = "PI_MEMORY_EMBED_API_KEY"
RERANK_KEY_ENV: Final = "PI_MEMORY_RERANK_API_KEY"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: openclaw.json `embedding` key -> this library's `embedding` key
_EMBEDDING_KEYS: Final = {
    "model": "model",
    "baseURL": "baseUrl",
    "baseUrl": "baseUrl",
    "dimensions": "dimensions",
    "taskQuery": "taskQuery",
    "taskPassage": "taskPassage",
    "normalized": "normalized",
    "timeoutMs": "timeoutMs",
}
_RERANK_KEYS: Final = frozenset({"apiKey", "model", "endpoint", "provider", "timeoutMs"})
#: the plugin config's keys that map onto one top-level key of this library's configuration
#: (docs/configuration.md, "openclaw.json"; ADR 0075)
_SETTING_KEYS: Final = {
    "autoCapture": "autoCapture",
    "autoRecall": "autoRecall",
    "autoRecallMaxItems": "autoRecallMaxItems",
    "autoRecallTimeoutMs": "autoRecallTimeoutMs",
    "autoRecallMinLength": "adaptiveMinLength",
}
#: plugin keys read, but with nothing to set here: why each is ignored
_NOT_HONOURED: Final = {
    "captureAssistant": "auto-capture stores the user's statements only, never the assistant's",
    "smartExtraction": "this library's capture is rule-based; background learning uses the "
    "llm section of hermes-memory-config.json",
    "mdMirror": "this library's Markdown files are always written (memoryDir)",
    "autoRecallMinRepeated": "auto-recall has no repeat window",
    "autoRecallMaxChars": "the block holds autoRecallMaxItems memories, whole",
    "autoRecallPerItemMaxChars": "the block holds autoRecallMaxItems memories, whole",
}
_TOP_KEYS: Final = frozenset(
    {
        "embedding",
        "rerank",
        "retrieval",
        "dbPath",
        "knowledgePaths",
        "scopes",
        "sessionMemory",
        "enableManagementTools",
        *_SETTING_KEYS,
        *_NOT_HONOURED,
    }
)
#: the seed's flat cross-encoder keys of `retrieval` -> the `rerank` section's keys
_FLAT_RERANK_KEYS: Final = {
    "rerankApiKey": "apiKey",
    "rerankModel": "model",
    "rerankEndpoint": "endpoint",
    "rerankProvider": "provider",
    "rerankTimeoutMs": "timeoutMs",
}
_RERANK_PROVIDERS: Final = frozenset({"jina", "jina-compatible"})


@attrs.frozen(kw_only=True)
class StoreOptions:
    """What the server passes to `pi_hermes_memory.open` for every store it opens.

    `db_path`: from `dbPath` / `PI_MEMORY_DB_PATH`, the folder of the database
    (`sessions.db`) and the Markdown files: this library's `memoryDir` (None: each store's
    own). `settings`: top-level keys of this library's configuration mapped from the
    plugin config (autoCapture, autoRecall, sessionSummary, scopes, tools, memoryDir;
    ADR 0075), replacing each store's own. `embedding` / `rerank`: None when neither the
    file nor the environment sets them (then each store's own `hermes-memory-config.json` decides).
    `knowledge_paths`: the knowledge folders of every store (ADR 0048; empty: each store's
    own `knowledge.paths`)."""

    db_path: str | None = None
    settings: Mapping[str, Any] = attrs.field(factory=dict)
    embedding: EmbeddingConfig | None = None
    rerank: RerankConfig | None = None
    knowledge_paths: tuple[str, ...] = ()
    #: the `retrieval` section of openclaw.json, validated; None: each store's own
    retrieval: RetrievalConfig | None = None


def default_config_path(environ: Mapping[str, str]) -> Path | None:
    home = environ.get("HOME", "")
    if not os.path.isabs(home):
        return None
    path = Path(home) / ".openclaw" / "openclaw.json"
    return path if path.is_file() else None


def read_plugin_config(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`plugins.entries["pi-memory"].config` of the openclaw.json at `path`, and warnings."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ServerConfigError(f"cannot read the config file {path} ({exc.strerror})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ServerConfigError(
            f"the config file {path} is not valid JSON (line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise ServerConfigError(f"the config file {path} is nested too deeply") from None
    node: Any = document
    for key in ("plugins", "entries", PLUGIN_NAME, "config"):
        if not isinstance(node, dict) or key not in node:
            where = 'plugins.entries["pi-memory"].config'
            return {}, (f"{path}: no {where}; nothing read from it",)
        node = node[key]
    if not isinstance(node, dict):
        raise ServerConfigError(f'{path}: plugins.entries["pi-memory"].config must be an object')
    return node, ()


def _key_env(value: object, where: str, fallback_env: str) -> str:
    """The variable named by `"${NAME}"`; a literal key is refused (never echoed)."""
    match = _ENV_REF.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ServerConfigError(
            f"{where}: API keys are never read from the config file; write "
            f'"${{ENV_NAME}}" (for example "${{{fallback_env}}}") and put the key in that '
            "environment variable"
        )
    return match.group(1)


def _section(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ServerConfigError(f"openclaw.json {key} must be an object")
    return dict(value)


def _int(raw: str, name: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ServerConfigError(f"{name} must be a positive integer, got {raw!r}") from None
    if value < 1:
        raise ServerConfigError(f"{name} must be a positive integer, got {raw!r}")
    return value


def _embedding_document(
    file: Mapping[str, Any], environ: Mapping[str, str], warnings: list[str]
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """This library's `embedding` section, and where each of its keys came from."""
    section = _section(file, "embedding")
    doc: dict[str, Any] = {}
    source: dict[str, str] = {}
    for key, value in section.items():
        if key == "apiKey":
            doc["apiKeyEnv"] = _key_env(value, "openclaw.json embedding.apiKey", EMBED_KEY_ENV)
            source["apiKeyEnv"] = "openclaw.json embedding.apiKey"
        elif key in _EMBEDDING_KEYS:
            doc[_EMBEDDING_KEYS[key]] = value
            source[_EMBEDDING_KEYS[key]] = f"openclaw.json embedding.{key}"
        else:
            warnings.append(f"openclaw.json embedding.{key} is not a known key; ignored")
    env_keys = {
        "PI_MEMORY_EMBED_BASE_URL": "baseUrl",
        "PI_MEMORY_EMBED_MODEL": "model",
        "PI_MEMORY_EMBED_DIMENSIONS": "dimensions",
    }
    for name, key in env_keys.items():
        raw = environ.get(name, "")
        if raw.strip():
            doc[key] = _int(raw, name) if key == "dimensions" else raw.strip()
            source[key] = name
    if environ.get(EMBED_KEY_ENV, "").strip():
        doc["apiKeyEnv"] = EMBED_KEY_ENV
        source["apiKeyEnv"] = EMBED_KEY_ENV
    if not doc:
        return None, source
    doc["provider"] = EmbeddingProvider.OPENAI_COMPATIBLE.value
    return doc, source


def _rerank_document(
    file: Mapping[str, Any], environ: Mapping[str, str], warnings: list[str]
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    section = _section(file, "rerank")
    given: dict[str, tuple[object, str]] = {}
    for flat, key in _FLAT_RERANK_KEYS.items():
        value = _section(file, "retrieval").get(flat)
        if value is not None:
            given[key] = (value, f"openclaw.json retrieval.{flat}")
    for key, value in section.items():
        if key in _RERANK_KEYS:
            given[key] = (value, f"openclaw.json rerank.{key}")
        else:
            warnings.append(f"openclaw.json rerank.{key} is not a known key; ignored")
    for key in ("model", "endpoint", "provider"):
        name = f"PI_MEMORY_RERANK_{key.upper()}"
        raw = environ.get(name, "")
        if raw.strip():
            given[key] = (raw.strip(), name)
    if environ.get(RERANK_KEY_ENV, "").strip():
        given["apiKey"] = ("${" + RERANK_KEY_ENV + "}", RERANK_KEY_ENV)
    if not given:
        return None, {}
    doc: dict[str, Any] = {"provider": RerankProvider.JINA_COMPATIBLE.value}
    source: dict[str, str] = {}
    if "provider" in given:
        value, where = given["provider"]
        if value not in _RERANK_PROVIDERS:
            raise ServerConfigError(
                f"{where} must be one of {', '.join(sorted(_RERANK_PROVIDERS))}"
            )
    if "apiKey" in given:
        value, where = given["apiKey"]
        doc["apiKeyEnv"] = _key_env(value, where, RERANK_KEY_ENV)
        source["apiKeyEnv"] = where
    if "model" in given:
        doc["model"], source["model"] = given["model"]
    if "timeoutMs" in given:
        doc["timeoutMs"], source["timeoutMs"] = given["timeoutMs"]
    if "endpoint" in given:
        value, where = given["endpoint"]
        # the seed's endpoint is the full URL; this library appends "/rerank" itself
        doc["baseUrl"] = (
            value.rstrip("/").removesuffix("/rerank") if isinstance(value, str) else value
        )
        source["baseUrl"] = where
    return doc, source


def _retrieval_document(file: Mapping[str, Any]) -> dict[str, Any] | None:
    """This library's `retrieval` section from the seed's: the same keys, less the flat
    cross-encoder ones (read by `_rerank_document`) and `rerank: "cross-encoder"` (the
    endpoint the `rerank` keys configure)."""
    if file.get("retrieval") is None:
        return None
    doc = {k: v for k, v in _section(file, "retrieval").items() if k not in _FLAT_RERANK_KEYS}
    if doc.get("rerank") == "cross-encoder":
        del doc["rerank"]
    return doc


def _knowledge_paths(file: Mapping[str, Any], environ: Mapping[str, str]) -> tuple[str, ...]:
    raw = environ.get("PI_MEMORY_KNOWLEDGE_PATHS", "")
    name = "PI_MEMORY_KNOWLEDGE_PATHS"
    value: object
    if raw.strip():
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            raise ServerConfigError(f"{name} must be a JSON array of paths") from None
    else:
        value, name = file.get("knowledgePaths", []), "openclaw.json knowledgePaths"
    if not isinstance(value, list) or not all(isinstance(p, str) and p.strip() for p in value):
        raise ServerConfigError(f"{name} must be a JSON array of non-empty path strings")
    return tuple(value)


def _db_path(file: Mapping[str, Any], environ: Mapping[str, str], cwd: Path) -> str | None:
    """The seed's database path as this library's `memoryDir`: the folder that holds the
    database (`sessions.db`) and the Markdown files. A path to a `sessions.db` file names
    its folder; the seed's own LanceDB directory is refused (this library never writes it:
    `migrate` imports it)."""
    raw: object = environ.get("PI_MEMORY_DB_PATH", "")
    name = "PI_MEMORY_DB_PATH"
    if not (isinstance(raw, str) and raw.strip()):
        raw, name = file.get("dbPath"), "openclaw.json dbPath"
        if raw is None:
            return None
    if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
        raise ServerConfigError(f"{name} must be a non-empty folder path")
    home = environ.get("HOME", "")
    text = raw.strip()
    if os.path.isabs(home) and (text == "~" or text.startswith("~/")):
        text = os.path.join(home, text[2:])
    path = Path(os.path.normpath(os.path.join(cwd, text)))
    if path.name == DB_FILE_NAME:
        path = path.parent
    if path.name == "memories.lance" or (path / "memories.lance").exists():
        raise ServerConfigError(
            f"{name} ({path}) is a pi-memory LanceDB directory; this library keeps its own "
            f"database ({DB_FILE_NAME}) and never writes that one: import it with "
            f"`pi-hermes-memory migrate {path}` and set {name} to another folder"
        )
    return str(path)


def _settings_document(
    file: Mapping[str, Any], warnings: list[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """This library's top-level keys from the plugin config, and where each came from."""
    doc: dict[str, Any] = {}
    source: dict[str, str] = {}
    for key, ours in _SETTING_KEYS.items():
        if key in file:
            doc[ours], source[ours] = file[key], f"openclaw.json {key}"
    for key, why in _NOT_HONOURED.items():
        if key in file:
            warnings.append(f"openclaw.json {key} is not honoured: {why}; ignored")
    session = _section(file, "sessionMemory")
    for key, value in session.items():
        if key == "enabled":
            doc["sessionSummary"], source["sessionSummary"] = value, "openclaw.json sessionMemory"
        elif key == "messageCount":
            warnings.append(
                "openclaw.json sessionMemory.messageCount is not honoured: the session summary "
                "reads the whole session (through the LLM when one is configured); ignored"
            )
        else:
            warnings.append(f"openclaw.json sessionMemory.{key} is not a known key; ignored")
    scopes = _section(file, "scopes")
    for key, value in scopes.items():
        if key == "agentAccess":
            doc["scopes"] = {"agentAccess": value}
            source["scopes"] = "openclaw.json scopes.agentAccess"
        elif key in ("default", "definitions"):
            warnings.append(
                f"openclaw.json scopes.{key} is not honoured: scopes need no declaration here "
                "and a write without a scope goes to global (or the session's project); ignored"
            )
        else:
            warnings.append(f"openclaw.json scopes.{key} is not a known key; ignored")
    tools = file.get("enableManagementTools")
    if tools is True:
        # memory_stats and memory_list are in the second seed's tool set (ADR 0045)
        doc["tools"] = {"sets": ["hermes", "pi-memory"]}
        source["tools"] = "openclaw.json enableManagementTools"
    elif tools is False:
        warnings.append(
            "openclaw.json enableManagementTools: false is not honoured: memory_stats and "
            "memory_list are always part of the pi-memory tool set (tools.sets); ignored"
        )
    elif tools is not None:
        raise ServerConfigError("openclaw.json enableManagementTools must be true or false")
    return doc, source


def _check(
    warnings: tuple[Any, ...],
    sources: Mapping[str, str],
    prefix: str,
    *,
    notes: list[str] | None = None,
) -> None:
    for warning in warnings:
        if not warning.field.startswith(prefix):
            continue
        if notes is not None and warning.message.startswith(("not honoured", "denseWeight")):
            notes.append(f"openclaw.json {warning.field}: {warning.message}")
            continue
        key = warning.field[len(prefix) :]
        where = sources.get(key, warning.field)
        if key == "apiKeyEnv" and "unset or empty" in warning.message:
            continue  # the key is checked when the store opens (the embedding then stays off)
        raise ServerConfigError(f"{where}: {warning.message}")


def resolve_store_options(
    file: Mapping[str, Any], environ: Mapping[str, str], *, cwd: Path
) -> tuple[StoreOptions, tuple[str, ...]]:
    """The store options of the plugin config `file` overridden by `environ`; warnings.

    Raises ServerConfigError naming the variable or the file key of a bad value."""
    warnings: list[str] = [
        f"openclaw.json {key} is not a known key; ignored" for key in file if key not in _TOP_KEYS
    ]
    settings_doc, settings_src = _settings_document(file, warnings)
    if settings_doc:
        _, parsed_settings = parse_config(
            settings_doc, agent_root=cwd, cwd=cwd, environ=environ, physical=lambda path: path
        )
        for warning in parsed_settings:
            key = warning.field.split(".")[0]
            if key in settings_src:
                raise ServerConfigError(f"{settings_src[key]}: {warning.message}")
    db_path = _db_path(file, environ, cwd)
    if db_path is not None:
        settings_doc["memoryDir"] = db_path
    embedding_doc, embedding_src = _embedding_document(file, environ, warnings)
    rerank_doc, rerank_src = _rerank_document(file, environ, warnings)
    retrieval_doc = _retrieval_document(file)
    document: dict[str, Any] = {}
    if embedding_doc is not None:
        document["embedding"] = embedding_doc
    if rerank_doc is not None:
        document["retrieval"] = {"rerank": rerank_doc}
    config, parsed = parse_config(
        document, agent_root=cwd, cwd=cwd, environ=environ, physical=lambda path: path
    )
    _check(parsed, embedding_src, "embedding.")
    _check(parsed, rerank_src, "retrieval.rerank.")
    retrieval: RetrievalConfig | None = None
    if retrieval_doc is not None:
        seeds, seed_warnings = parse_config(
            {"retrieval": retrieval_doc},
            agent_root=cwd,
            cwd=cwd,
            environ=environ,
            physical=lambda path: path,
        )
        sources = {k: f"openclaw.json retrieval.{k}" for k in retrieval_doc}
        _check(seed_warnings, sources, "retrieval.", notes=warnings)
        retrieval = seeds.retrieval
        if file["retrieval"].get("rerank") == "cross-encoder" and rerank_doc is None:
            warnings.append(
                'openclaw.json retrieval.rerank is "cross-encoder" but no endpoint is set '
                "(retrieval.rerankApiKey / rerankEndpoint or the rerank section); reranking is off"
            )
        if "rerank" not in retrieval_doc:  # "cross-encoder" or unset: the endpoint above
            retrieval = attrs.evolve(
                retrieval,
                rerank=config.retrieval.rerank if rerank_doc is not None else RerankConfig(),
            )
    none = retrieval_doc is not None and retrieval_doc.get("rerank") == "none"
    options = StoreOptions(
        db_path=db_path,
        settings=settings_doc,
        embedding=config.embedding if embedding_doc is not None else None,
        rerank=config.retrieval.rerank if rerank_doc is not None and not none else None,
        knowledge_paths=_knowledge_paths(file, environ),
        retrieval=retrieval,
    )
    if options.embedding is not None and not options.embedding.enabled:
        reason = options.embedding.disabled_reason
        warnings.append(f"embedding is configured but off ({reason}); search is lexical only")
    if options.rerank is not None and not options.rerank.enabled:
        warnings.append("the reranker is configured but its key variable is unset; it is off")
    if options.rerank is not None and options.embedding is None:
        warnings.append("the reranker is used only with embeddings; set the embedding too")
    return options, tuple(warnings)
