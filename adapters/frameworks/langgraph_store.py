"""A LangGraph `BaseStore` over this store (issue 31 §1, ADR 0095). Needs the `langgraph` extra.

    from pi_hermes_memory.adapters.frameworks.langgraph_store import PiHermesStore
    store = PiHermesStore.open(agent_root="/tmp/agent")
    graph = builder.compile(store=store)

Mapping (one, documented in docs/frameworks.md): the whole LangGraph store is one scope of the
memory layer, `custom:langgraph` by default; a namespace of any depth and the key are kept in
the entry with the value, as one JSON line `{"text": …, "langgraph": {"namespace", "key",
"value", "created_at", "updated_at"}}` whose `text` holds the value's indexed fields (the
`index` config's `fields`, default the whole value), so our search (hybrid when embeddings are
configured) finds items by their content. Every put is `Memory.add` / `Memory.update` (scanner,
journal, supersede history: an overwritten value stays in `Memory.history`); a delete is
`Memory.delete` (`restore` brings it back). A refused put raises
`pi_hermes_memory.errors.WriteRefused`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal

from pi_hermes_memory.adapters.frameworks._extra import missing_extra
from pi_hermes_memory.domain.status import SUCCESS, Status
from pi_hermes_memory.errors import InvalidArgument, WriteRefused

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        get_text_at_path,
        tokenize_path,
    )
except ImportError as exc:  # pragma: no cover - exercised in a child without the extra
    raise missing_extra(__name__, "LangGraph", "langgraph") from exc

if TYPE_CHECKING:
    from pi_hermes_memory.api import Memory

__all__ = ["DEFAULT_SCOPE", "PiHermesStore"]

DEFAULT_SCOPE: Final = "custom:langgraph"
#: the store session's memoryCharLimit when `open` opens it: a key-value store must not evict
OPEN_CHAR_LIMIT: Final = 50_000_000
_MARK: Final = "langgraph"
_SEARCH_HITS: Final = 20
_SWEEP_BATCH: Final = 5_000
_WORD = re.compile(r"\w{2,}")


class _Row:
    __slots__ = (
        "created_at",
        "entry_id",
        "expires_at",
        "key",
        "namespace",
        "payload",
        "text",
        "ttl",
        "updated_at",
        "value",
    )

    def __init__(self, entry_id: str, payload: Mapping[str, Any], text: str) -> None:
        self.entry_id = entry_id
        self.payload = payload
        #: the indexed text of the value (the `index` fields)
        self.text = text
        self.namespace: tuple[str, ...] = tuple(payload["namespace"])
        self.key: str = payload["key"]
        self.value: dict[str, Any] = dict(payload["value"])
        self.created_at = datetime.fromisoformat(payload["created_at"])
        self.updated_at = datetime.fromisoformat(payload["updated_at"])
        #: TTL in minutes and the expiry it sets (ADR 0103); None: the item never expires
        ttl, expires = payload.get("ttl"), payload.get("expires_at")
        self.ttl: float | None = float(ttl) if isinstance(ttl, int | float) else None
        self.expires_at = datetime.fromisoformat(expires) if isinstance(expires, str) else None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def item(self) -> Item:
        return Item(
            value=copy.deepcopy(self.value),  # the caller's copy: the index keeps its own
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )


def _parse(text: str) -> tuple[Mapping[str, Any], str] | None:
    """The item payload and indexed text of an entry, or None for a row not one of ours."""
    if not text.startswith("{"):
        return None
    try:
        doc = json.loads(text)
        payload = doc[_MARK]
        if (
            isinstance(payload["namespace"], list)
            and all(isinstance(p, str) for p in payload["namespace"])
            and isinstance(payload["key"], str)
            and isinstance(payload["value"], dict)
        ):
            return payload, str(doc.get("text", ""))
    except (ValueError, KeyError, TypeError):
        return None
    return None


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics (equality, nested dicts, $eq $ne $gt $gte $lt $lte)."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, Mapping) and all(
            _matches(value.get(k), v) for k, v in wanted.items()
        )
    return bool(value == wanted)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if value is None:
        return False
    if op == "$gt":
        return float(value) > float(arg)
    if op == "$gte":
        return float(value) >= float(arg)
    if op == "$lt":
        return float(value) < float(arg)
    if op == "$lte":
        return float(value) <= float(arg)
    raise InvalidArgument(f"unsupported filter operator {op!r}")


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


class PiHermesStore(BaseStore):
    """LangGraph's `BaseStore` over one scope of a `pi_hermes_memory.Memory` session."""

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        *,
        scope: str = DEFAULT_SCOPE,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        owns_memory: bool = False,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if not scope.startswith(("custom:", "agent:")):
            raise InvalidArgument(f"scope must be custom:<name> or agent:<id>; got {scope!r}")
        self._memory = memory
        self._scope = scope
        self._owns = owns_memory
        self._index: dict[tuple[tuple[str, ...], str], _Row] | None = None
        self._revision = -1
        self._lock = threading.RLock()
        self.ttl_config = ttl
        self._now = clock or (lambda: datetime.now(UTC))
        self._sweeper: tuple[threading.Thread, threading.Event] | None = None
        fields = list((index or {}).get("fields") or ["$"])
        self._fields = [(f, tokenize_path(f)) for f in fields]

    @classmethod
    def open(
        cls,
        *,
        scope: str = DEFAULT_SCOPE,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        **open_kwargs: Any,
    ) -> PiHermesStore:
        """Open a session of the store (`pi_hermes_memory.open(**open_kwargs)`) that may use
        `scope` and has room for a key-value store (memoryCharLimit `OPEN_CHAR_LIMIT`)."""
        import pi_hermes_memory

        overrides = dict(open_kwargs.pop("overrides", None) or {})
        agent = "langgraph-store"
        overrides.setdefault("scopes", {"agentAccess": {agent: ["global", scope]}})
        overrides.setdefault("memoryCharLimit", OPEN_CHAR_LIMIT)
        memory = pi_hermes_memory.open(agent_id=agent, overrides=overrides, **open_kwargs)
        return cls(memory, scope=scope, index=index, ttl=ttl, owns_memory=True)

    @property
    def memory(self) -> Memory:
        return self._memory

    def close(self) -> None:
        self.stop_ttl_sweeper()
        if self._owns:
            self._memory.close()

    # -- TTL (ADR 0103) ---------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Remove every expired item through the journal (`Memory.batch` of removals: each
        restorable, as a delete); returns how many. Expired items are invisible before."""
        with self._lock:
            now = self._now()
            doomed = [r for r in self._rows().values() if r.expired(now)]
            for start in range(0, len(doomed), _SWEEP_BATCH):
                part = doomed[start : start + _SWEEP_BATCH]
                result = self._memory.batch(
                    [{"action": "remove", "target": "memory", "id": r.entry_id} for r in part]
                )
                self._index = None  # read again: the sweep wrote several events
                if not result.success:
                    refused = next(r for r in result.results if not r.success)
                    raise WriteRefused(
                        f"LangGraph store TTL sweep refused: {refused.message}",
                        status=refused.status.value,
                    )
            return len(doomed)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep in a daemon thread every `sweep_interval_minutes` (default the `ttl`
        config's `sweep_interval_minutes`) until `stop_ttl_sweeper` or `close`."""
        minutes = (
            sweep_interval_minutes
            if sweep_interval_minutes is not None
            else (self.ttl_config or {}).get("sweep_interval_minutes")
        )
        if not minutes or minutes <= 0:
            raise InvalidArgument("start_ttl_sweeper needs a positive sweep_interval_minutes")
        if self._sweeper is not None:
            return
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(float(minutes) * 60):
                self.sweep_ttl()

        thread = threading.Thread(target=loop, name="langgraph-ttl-sweeper", daemon=True)
        self._sweeper = (thread, stop)
        thread.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it has stopped (or none ran)."""
        if self._sweeper is None:
            return True
        thread, stop = self._sweeper
        stop.set()
        thread.join(timeout)
        self._sweeper = None
        return not thread.is_alive()

    # -- batch ------------------------------------------------------------------------------

    def _rows(self) -> dict[tuple[tuple[str, ...], str], _Row]:
        """Every item of the scope by (namespace, key): the index this object keeps, trusted
        only while the memory document's revision is the one it was built or last written at
        (any other process's write changes it: then the scope is read again, ADR 0103)."""
        revision = self._memory.revision("memory")
        if self._index is None or revision != self._revision:
            rows: dict[tuple[tuple[str, ...], str], _Row] = {}
            for view in self._memory.entries("memory", scope=self._scope):
                parsed = _parse(view.text)
                if parsed is not None:
                    row = _Row(view.id, *parsed)
                    rows[(row.namespace, row.key)] = row
            # the revision read before the scan: a write in between only forces another scan
            self._index, self._revision = rows, revision
        return self._index

    def _wrote(self, before: int) -> None:
        """After one write of ours at revision `before`: keep trusting the index only when
        the document moved by that write alone."""
        after = self._memory.revision("memory")
        if after == before + 1:
            self._revision = after
        else:  # another process wrote too (or our write took several events): read again
            self._index = None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        with self._lock:
            return self._batch(ops)

    def _batch(self, ops: list[Op]) -> list[Result]:
        loaded: dict[tuple[tuple[str, ...], str], _Row] | None = None

        def rows() -> dict[tuple[tuple[str, ...], str], _Row]:
            nonlocal loaded
            if loaded is None:  # once per batch, and only when an operation needs the items
                loaded = self._rows()
            return loaded

        now = self._now()
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                row = rows().get((tuple(op.namespace), op.key))
                if row is None or row.expired(now):  # an expired item is invisible
                    results.append(None)
                    continue
                if op.refresh_ttl and row.ttl is not None:
                    row = self._refresh(rows(), row, now)
                results.append(row.item())
            elif isinstance(op, PutOp):
                self._put(rows(), op, now)
                results.append(None)
            elif isinstance(op, SearchOp):
                found = self._query(op, now) if op.query else self._list(rows(), op, now)
                if op.refresh_ttl:
                    found = [self._refreshed(rows(), item, now) for item in found]
                results.append(found)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(rows(), op, now))
            else:
                raise InvalidArgument(f"unknown LangGraph store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations -------------------------------------------------------------------------

    def _text(self, value: Mapping[str, Any], index: Sequence[str] | Literal[False] | None) -> str:
        if index is False:
            return ""
        fields = self._fields if index is None else [(f, tokenize_path(f)) for f in index]
        parts: list[str] = []
        for path, tokens in fields:
            if path == "$":
                parts.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
            else:
                parts.extend(get_text_at_path(value, tokens))
        return " ".join(parts)

    def _put(self, rows: dict[tuple[tuple[str, ...], str], _Row], op: PutOp, now: datetime) -> None:
        where = (tuple(op.namespace), op.key)
        old = rows.get(where)
        if op.value is None:
            if old is not None:
                before = self._revision
                self._check(self._memory.delete(old.entry_id), "delete")
                del rows[where]
                self._wrote(before)
            return
        stamp = now.isoformat()
        live = old is not None and not old.expired(now)  # an expired key's put is a new item
        payload: dict[str, Any] = {
            "namespace": list(op.namespace),
            "key": op.key,
            "value": copy.deepcopy(dict(op.value)),
            "created_at": old.created_at.isoformat() if old is not None and live else stamp,
            "updated_at": stamp,
        }
        if op.ttl is not None:
            if op.ttl <= 0:
                raise InvalidArgument(f"ttl must be a positive number of minutes; got {op.ttl}")
            payload["ttl"] = op.ttl
            payload["expires_at"] = (now + timedelta(minutes=op.ttl)).isoformat()
        self._store(rows, where, old, payload, self._text(op.value, op.index))

    def _refresh(
        self, rows: dict[tuple[tuple[str, ...], str], _Row], row: _Row, now: datetime
    ) -> _Row:
        """Move a TTL item's expiry to `now + ttl` (a new version through the journal, as
        any write; its value and dates are unchanged)."""
        assert row.ttl is not None
        payload = dict(row.payload)
        payload["expires_at"] = (now + timedelta(minutes=row.ttl)).isoformat()
        where = (row.namespace, row.key)
        return self._store(rows, where, rows.get(where, row), payload, row.text)

    def _refreshed(
        self, rows: dict[tuple[tuple[str, ...], str], _Row], item: SearchItem, now: datetime
    ) -> SearchItem:
        row = rows.get((item.namespace, item.key))
        if row is None or row.ttl is None or row.expired(now):
            return item
        self._refresh(rows, row, now)
        return item

    def _store(
        self,
        rows: dict[tuple[tuple[str, ...], str], _Row],
        where: tuple[tuple[str, ...], str],
        old: _Row | None,
        payload: Mapping[str, Any],
        indexed: str,
    ) -> _Row:
        before = self._revision
        text = json.dumps(
            {"text": indexed, _MARK: payload},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        if old is not None:
            result = self._check(self._memory.update(old.entry_id, text), "put")
        else:
            result = self._check(
                self._memory.add(text, target="memory", scope=self._scope, force=True), "put"
            )
        row = rows[where] = _Row(result.entry_id or (old.entry_id if old else ""), payload, indexed)
        if result.status is Status.NOOP:
            self._index = None  # nothing written: the index may not hold what the store does
        else:
            self._wrote(before)
        return row

    @staticmethod
    def _check(result: Any, what: str) -> Any:
        if result.status not in SUCCESS and result.status is not Status.NOOP:
            raise WriteRefused(
                f"LangGraph store {what} refused: {result.message}", status=result.status.value
            )
        return result

    def _list(
        self, rows: dict[tuple[tuple[str, ...], str], _Row], op: SearchOp, now: datetime
    ) -> list[SearchItem]:
        found = sorted(
            (r for r in rows.values() if _wanted(r, op) and not r.expired(now)),
            key=lambda r: r.updated_at,
            reverse=True,
        )
        return [_search_item(r, None) for r in found[op.offset : op.offset + op.limit]]

    def _query(self, op: SearchOp, now: datetime) -> list[SearchItem]:
        """Our search's best rows (each hit carries its entry's text: no read of every item)."""
        assert op.query is not None
        hits = self._memory.search(op.query, target="memory", limit=_SEARCH_HITS).hits
        # keyword search sees the whole entry (the value is in it): without embeddings a hit
        # counts only when a word of the query is in the item's indexed text
        words = (
            None if self._memory.embeddings is not None else set(_WORD.findall(op.query.lower()))
        )
        scored: list[SearchItem] = []
        for hit in hits:
            parsed = _parse(hit.text) if hit.namespace == self._scope else None
            if parsed is None:
                continue
            row = _Row(hit.memory_id or hit.id, *parsed)
            if not _wanted(row, op) or row.expired(now):
                continue
            if words is not None and not words & set(_WORD.findall(row.text.lower())):
                continue
            scored.append(_search_item(row, hit.score))
        return scored[op.offset : op.offset + op.limit]

    @staticmethod
    def _namespaces(
        rows: dict[tuple[tuple[str, ...], str], _Row], op: ListNamespacesOp, now: datetime
    ) -> list[tuple[str, ...]]:
        names = {r.namespace for r in rows.values() if not r.expired(now)}
        if op.match_conditions:
            names = {n for n in names if all(_namespace_matches(c, n) for c in op.match_conditions)}
        if op.max_depth is not None:
            names = {n[: op.max_depth] for n in names}
        return sorted(names)[op.offset : op.offset + op.limit]


def _wanted(row: _Row, op: SearchOp) -> bool:
    prefix = tuple(op.namespace_prefix)
    return row.namespace[: len(prefix)] == prefix and all(
        _matches(row.value.get(k), v) for k, v in (op.filter or {}).items()
    )


def _search_item(row: _Row, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=row.namespace,
        key=row.key,
        value=row.value,
        created_at=row.created_at,
        updated_at=row.updated_at,
        score=score,
    )
