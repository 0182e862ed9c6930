"""mem0's `Memory` method and result shapes over this store (issue 31 §4, ADR 0095).

    from pi_hermes_memory.compat.mem0 import Memory
    m = Memory(agent_root="/tmp/agent")
    m.add("I am vegetarian", user_id="alice")
    m.search("what does alice eat", filters={"user_id": "alice"})

Identities map to scopes (ADR 0014): `user_id` -> `user:<id>` (the user profile layer),
else `agent_id` -> `agent:<id>`, else `run_id` -> `custom:run-<id>` (memory layer). Each
identity is served by its own session of the store, opened on first use with access to its
scope only, so one user's memories are never read or deduplicated against another's. Every
write goes through `pi_hermes_memory.Memory` (scanner, near-duplicate rule, journal,
supersede history): a refused write raises `pi_hermes_memory.errors.WriteRefused`.
Ids are the store's stable memory ids: `update` keeps the id, `history` is its supersede chain.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pi_hermes_memory.domain.learning.capture import capture_candidates
from pi_hermes_memory.domain.memory.model import Target, namespace_problem
from pi_hermes_memory.domain.status import SUCCESS, Status
from pi_hermes_memory.errors import CompletionFailed, InvalidArgument, WriteRefused

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory as Store
    from pi_hermes_memory.results import EntryView, WriteResult

__all__ = ["Memory"]

_LOG = logging.getLogger("pi_hermes_memory.compat.mem0")
#: the agent id of the sessions that serve user and run scopes
COMPAT_AGENT: Final = "mem0-compat"
_IDENTITIES: Final = ("user_id", "agent_id", "run_id")
#: userCharLimit / memoryCharLimit of the sessions this opens (unless `overrides` sets them)
CHAR_LIMIT: Final = 10_000_000
#: statements of a user message kept when no LLM extracts facts (auto-capture's own rule)
_CAPTURE_LIMIT: Final = 20
#: hits read per search (the store's maximum): rows of other scopes are dropped after it
_SEARCH_LIMIT: Final = 20
_FACTS_SYSTEM: Final = (
    "You extract durable facts about the user from a conversation for a long-term memory. "
    'Reply with JSON only: {"facts": ["...", ...]}, each fact one short self-contained '
    'sentence; {"facts": []} when there is nothing worth keeping. Never include secrets.'
)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> tuple[str, str]:
    """(scope, target) of an identity: user wins over agent, agent over run."""
    for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidArgument(f"{name} must be a non-empty string")
    if user_id is not None:
        found = f"user:{user_id.strip()}", Target.USER
    elif agent_id is not None:
        found = f"agent:{agent_id.strip()}", Target.MEMORY
    elif run_id is not None:
        found = f"custom:run-{run_id.strip()}", Target.MEMORY
    else:
        raise InvalidArgument("one of user_id, agent_id or run_id is required")
    problem = namespace_problem(*found)
    if problem is not None:
        raise InvalidArgument(problem)
    return found[0], found[1].value


def _identity(scope: str) -> dict[str, str]:
    kind, _, name = scope.partition(":")
    if kind == "user":
        return {"user_id": name}
    if kind == "agent":
        return {"agent_id": name}
    if kind == "custom" and name.startswith("run-"):
        return {"run_id": name.removeprefix("run-")}
    return {}  # a global or another custom scope's row: no mem0 identity


def _hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def _messages(messages: Any) -> list[dict[str, str]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, Sequence) or isinstance(messages, bytes):
        raise InvalidArgument("messages must be a str, a dict or a list of dicts")
    out = []
    for m in messages:
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            raise InvalidArgument('each message must be a dict with a string "content"')
        out.append({"role": str(m.get("role", "user")), "content": m["content"]})
    return out


def _history_event(view: EntryView, old: str | None, new: str | None) -> dict[str, Any]:
    event = "DELETE" if new is None else "ADD" if old is None else "UPDATE"
    return {
        "id": view.version_id or view.id,
        "memory_id": view.id,
        "old_memory": old,
        "new_memory": new,
        "event": event,
        "created_at": view.created.isoformat(),
        "updated_at": None,
        "is_deleted": new is None,
        "actor_id": None,
        "role": None,
    }


class Memory:
    """mem0's `Memory` over `pi_hermes_memory.open(**open_kwargs)` (see the module doc)."""

    def __init__(self, *, char_limit: int = CHAR_LIMIT, **open_kwargs: Any) -> None:
        if "agent_id" in open_kwargs:
            raise InvalidArgument("agent_id is chosen per call (user_id=, agent_id=, run_id=)")
        self._open_kwargs = open_kwargs
        self._char_limit = char_limit
        self._sessions: dict[str, Store] = {}

    # -- sessions -------------------------------------------------------------------------

    def _session(self, scope: str) -> Store:
        store = self._sessions.get(scope)
        if store is None:
            import pi_hermes_memory

            kwargs = dict(self._open_kwargs)
            overrides = dict(kwargs.pop("overrides", None) or {})
            # mem0 keeps every fact of a user: room for many, not a prompt-sized profile
            overrides.setdefault("userCharLimit", self._char_limit)
            overrides.setdefault("memoryCharLimit", self._char_limit)
            if scope.startswith("agent:"):
                agent = scope.removeprefix("agent:")
            else:
                agent = COMPAT_AGENT
                overrides["scopes"] = {"agentAccess": {agent: ["global", scope]}}
            store = pi_hermes_memory.open(agent_id=agent, overrides=overrides, **kwargs)
            self._sessions[scope] = store
        return store

    def _where(self, filters: Mapping[str, Any] | None, **ids: str | None) -> tuple[str, str]:
        merged: dict[str, Any] = {k: v for k, v in ids.items() if v is not None}
        for key, value in (filters or {}).items():
            if key not in _IDENTITIES:
                raise InvalidArgument(
                    f"filter {key!r} is not supported: this store keeps no mem0 metadata; "
                    "filter by user_id, agent_id or run_id"
                )
            merged[key] = value
        return _scope(merged.get("user_id"), merged.get("agent_id"), merged.get("run_id"))

    def _locate(self, memory_id: str, ids: Mapping[str, str | None]) -> tuple[Store, EntryView]:
        """The session that sees `memory_id`: the identity's, else every one used so far."""
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidArgument("memory_id must be a non-empty string")
        if any(v is not None for v in ids.values()):
            stores = [
                self._session(_scope(ids.get("user_id"), ids.get("agent_id"), ids.get("run_id"))[0])
            ]
        else:
            stores = list(self._sessions.values())
        for store in stores:
            view = store.get(memory_id)
            if view is not None:
                return store, view
        raise InvalidArgument(
            f"Memory with id {memory_id} not found (pass user_id=, agent_id= or run_id= when "
            "this object has not used that identity yet)"
        )

    def _item(self, view: EntryView, score: float | None = None) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": view.id,
            "memory": view.text,
            "hash": _hash(view.text),
            "metadata": {
                k: v
                for k, v in (("kind", view.kind), ("importance", view.importance))
                if v is not None
            }
            or None,
            "created_at": view.created.isoformat(),
            "updated_at": view.created.isoformat() if (view.version or 1) > 1 else None,
            **_identity(view.scope),
        }
        if score is not None:
            item["score"] = score
        return item

    # -- writes ---------------------------------------------------------------------------

    def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        **_ignored: Any,
    ) -> dict[str, Any]:
        """Store the facts of `messages` (see the module doc); `{"results": [{"id", "memory",
        "event"}]}` with event ADD, or NONE for a fact the store already holds."""
        scope, target = _scope(user_id, agent_id, run_id)
        turns = _messages(messages)
        meta = dict(metadata or {})
        store = self._session(scope)
        if not infer:
            facts = [m["content"] for m in turns if m["role"] != "system" and m["content"].strip()]
        else:
            facts = self._facts(store, turns)
        results = []
        for fact in facts:
            result = store.add(
                fact,
                force=not infer,
                target=target,
                scope=scope,
                importance=meta.get("importance"),
                kind=meta.get("kind"),
            )
            results.append(self._event(fact, result))
        return {"results": results}

    def _facts(self, store: Store, turns: list[dict[str, str]]) -> list[str]:
        said = [m["content"] for m in turns if m["role"] == "user"]
        if store.llm is not None and store.llm_off is None:
            conversation = "\n".join(f"{m['role']}: {m['content']}" for m in turns)
            try:
                reply = store.llm.complete(_FACTS_SYSTEM, conversation, timeout=60.0)
                found = _JSON_OBJECT.search(reply)
                facts = json.loads(found.group(0) if found else reply).get("facts")
                if isinstance(facts, list) and all(isinstance(f, str) for f in facts):
                    return [f for f in facts if f.strip()]
                _LOG.warning("mem0.add: the LLM's reply held no facts list; capture rules used")
            except (CompletionFailed, ValueError, AttributeError):
                _LOG.warning("mem0.add: fact extraction failed; capture rules used", exc_info=True)
        return [c.text for text in said for c in capture_candidates(text, limit=_CAPTURE_LIMIT)]

    def _event(self, fact: str, result: WriteResult) -> dict[str, Any]:
        if result.status in (Status.NOOP, Status.DUPLICATE, Status.NEAR_DUPLICATE):
            # the memory the store already holds (an exact or a near duplicate of the fact)
            held = result.entry_id or (result.candidates[0].entry_id if result.candidates else None)
            return {"id": held, "memory": fact, "event": "NONE"}
        if result.status not in SUCCESS or result.entry_id is None:
            raise WriteRefused(f"mem0.add refused: {result.message}", status=result.status.value)
        return {"id": result.entry_id, "memory": fact, "event": "ADD"}

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: Any = None,
        *,
        data: str | None = None,
        **ids: str | None,
    ) -> dict[str, str]:
        """Replace the text; the id stays, the old text becomes history."""
        text = text if text is not None else data
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgument("update needs the new text")
        store, view = self._locate(memory_id, ids)
        result = store.update(view.id, text)
        if result.status not in SUCCESS:
            raise WriteRefused(f"mem0.update refused: {result.message}", status=result.status.value)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str, **ids: str | None) -> dict[str, str]:
        """Remove the memory (`pi_hermes_memory.Memory.restore` brings it back)."""
        store, view = self._locate(memory_id, ids)
        result = store.delete(view.id)
        if result.status not in SUCCESS:
            raise WriteRefused(f"mem0.delete refused: {result.message}", status=result.status.value)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, str]:
        scope, target = _scope(user_id, agent_id, run_id)
        store = self._session(scope)
        for view in store.entries(target, scope=scope):
            store.delete(view.id)
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Remove every memory of every identity this object has used (restorable: the journal
        keeps them; `purge` erases for good)."""
        for scope, store in self._sessions.items():
            for view in store.entries(
                "user" if scope.startswith("user:") else "memory", scope=scope
            ):
                store.delete(view.id)

    # -- reads ----------------------------------------------------------------------------

    def get(self, memory_id: str, **ids: str | None) -> dict[str, Any] | None:
        try:
            _, view = self._locate(memory_id, ids)
        except InvalidArgument:
            return None
        return self._item(view)

    def get_all(
        self,
        *,
        filters: Mapping[str, Any] | None = None,
        top_k: int = 100,
        limit: int | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        scope, target = self._where(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        views = self._session(scope).entries(target, scope=scope)
        return {"results": [self._item(v) for v in views[: limit or top_k]]}

    def search(
        self,
        query: str,
        *,
        filters: Mapping[str, Any] | None = None,
        top_k: int = 20,
        limit: int | None = None,
        threshold: float | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        **_ignored: Any,
    ) -> dict[str, Any]:
        """Our search (hybrid when embeddings are configured) in the identity's scope."""
        scope, target = self._where(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        store = self._session(scope)
        wanted = limit or top_k
        found = store.search(query, target=target, limit=_SEARCH_LIMIT)
        hits = [
            h
            for h in found.hits
            if h.namespace == scope and (threshold is None or h.score >= threshold)
        ][:wanted]
        if not hits:
            return {"results": []}
        # the hits' own rows in one pass (ADR 0103): no read of the scope's every entry
        fetched = store.active_entries([h.id for h in hits], target)
        views = {v.version_id or v.id: v for v in fetched}
        results = []
        for hit in hits:
            view = views.get(hit.id)
            if view is not None:
                results.append(self._item(view, score=hit.score))
        return {"results": results}

    def history(self, memory_id: str, **ids: str | None) -> list[dict[str, Any]]:
        """The supersede chain as mem0's ADD / UPDATE / DELETE events, oldest first."""
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidArgument("memory_id must be a non-empty string")
        if any(v is not None for v in ids.values()):
            scope = _scope(ids.get("user_id"), ids.get("agent_id"), ids.get("run_id"))[0]
            stores = [(scope, self._session(scope))]
        else:
            stores = list(self._sessions.items())
        for scope, store in stores:
            chain = list(store.history(memory_id))
            removed = None
            if store.get(memory_id) is None:  # removed: its last version is a removed entry
                target = "user" if scope.startswith("user:") else "memory"
                removed = next((v for v in store.removed(target) if v.id == memory_id), None)
                if removed is not None:
                    chain.append(removed)
            if not chain:
                continue
            events: list[dict[str, Any]] = []
            previous: str | None = None
            for view in chain:
                events.append(_history_event(view, previous, view.text))
                previous = view.text
            if removed is not None:
                events.append(_history_event(removed, removed.text, None))
            return events
        return []

    def close(self) -> None:
        for store in self._sessions.values():
            store.close()
        self._sessions.clear()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
