"""Random write sequences over a store's public API, for the stable-id properties (ADR 0074,
ADR 0079): the strategy and the driver that plays them, shared by the in-memory and the SQLite
tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

TEXTS = [f"The service listens on port {n}" for n in (80, 443, 8080)]

#: (operation, which id already returned, text); updates twice as likely, as they are what
#: gives a memory versions
OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "add_project", "update", "update", "delete", "promote", "demote", "restore"]
        ),
        st.integers(min_value=0, max_value=7),
        st.sampled_from(TEXTS),
    ),
    min_size=2,
    max_size=14,
)


def play(memory: Any, ops: list[tuple[str, int, str]]) -> list[str]:
    """Apply `ops` through `memory`'s public API; every id a write returned, in order. An
    update keeps the id it was given (the property the whole ADR is about)."""
    ids: list[str] = []
    for op, pick, text in ops:
        known = ids[pick % len(ids)] if ids else "missing"
        if op in ("promote", "demote", "restore"):
            args: dict[str, object] = {"action": op, "id": known}
            if op != "restore":
                args["force"] = True
            raw = memory.call_tool("memory", args)
            if raw.get("entry_id"):
                ids.append(str(raw["entry_id"]))
            continue
        if op == "add":
            out = memory.add(text, force=True)
        elif op == "add_project":
            out = memory.add(text, target="project", force=True)
        elif op == "update":
            out = memory.update(known, f"{text} now")
        else:
            out = memory.delete(known)
        if out.entry_id is not None:
            ids.append(out.entry_id)
            if op == "update" and out.success:
                assert out.entry_id == memory.get(known).id
    return ids
