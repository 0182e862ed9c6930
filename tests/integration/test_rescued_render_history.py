"""A render that was on disk for a moment is a version a person may have loaded (ADR 0115).

The editor-race failure this reproduces, step by step (found in a kept store of
`test_editor_race.py`): a person saves in place right after a render's last check, so the
render is renamed over the path and the save is then put back (`_rescue_late_save`). In the
microseconds between, the person's editor reloads the file: its buffer is that render. The
render was never recorded in the sidecar's history, so the person's next save (that buffer plus
a new line) matched a *later* render best, and the merge read the entries that later render
added (an agent's acknowledged add, the person's own previous line) as deleted by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pi_hermes_memory.adapters.markdown import store as store_module
from pi_hermes_memory.domain.memory.model import Target

from tests.support.consistency import check_store, markdown_path, open_memory, write_config


def _race_the_next_render(
    monkeypatch: pytest.MonkeyPatch, path: Path, line: str, loaded: list[bytes]
) -> None:
    """The next render of `path` (appending or full): right after its last check, the person
    saves in place (the buffer they hold plus `line`); right after its rename, their editor
    reloads the file into `loaded`."""
    real_replace, real_atomic = store_module.replace_temp, store_module.atomic_write
    fired: list[bool] = []

    def person_saves(before_replace: Callable[[], None] | None) -> Callable[[], None]:
        def check_then_save() -> None:
            if before_replace is not None:
                before_replace()  # passes: nothing changed yet
            if not fired:
                fired.append(True)
                held = path.read_bytes()
                with path.open("r+b") as f:  # in place: truncate, then write
                    f.truncate(0)
                    f.write(held.rstrip(b"\n") + f"\n§\n{line}\n".encode())

        return check_then_save

    def racing(real: Callable[..., None], target_at: int) -> Callable[..., None]:
        """`real` (`replace_temp`: target second; `atomic_write`: target first), raced."""

        def raced(*args: Any, before_replace: Any = None, **kw: Any) -> None:
            mine = args[target_at].name == path.name and not fired
            real(
                *args, before_replace=person_saves(before_replace) if mine else before_replace, **kw
            )
            if mine:
                loaded.append(path.read_bytes())  # the editor reloads: our render

        return raced

    monkeypatch.setattr(store_module, "replace_temp", racing(real_replace, 1))
    monkeypatch.setattr(store_module, "atomic_write", racing(real_atomic, 0))


def test_a_buffer_loaded_from_a_rescued_render_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path)
    path = markdown_path(tmp_path, Target.MEMORY)
    with open_memory(tmp_path, "alpha") as m:
        for i in range(3):
            assert m.add(f"agent fact number {i} before the race", force=True).success
        # a save of the person's the next write imports: the raced render holds it and the
        # agent's add, two versions past the last render the sidecar recorded
        zero = "\n§\ntyped by hand line zero\n".encode()
        path.write_bytes(path.read_bytes().rstrip(b"\n") + zero)
        loaded: list[bytes] = []
        _race_the_next_render(monkeypatch, path, "typed by hand first line", loaded)
        assert m.add("agent fact written during the race", force=True).success
        monkeypatch.undo()
        assert loaded, "the render under test did not run"
        # the person's save was put back; the next writes import it, and the agent goes on
        assert m.add("agent fact after the race", force=True).success
    # the person saves the buffer they reloaded (the render), plus a second line
    buffer = loaded[0]
    assert b"agent fact written during the race" in buffer
    assert b"typed by hand first line" not in buffer
    path.write_bytes(buffer.rstrip(b"\n") + "\n§\ntyped by hand second line\n".encode())
    with open_memory(tmp_path, "alpha") as m:
        active = {e.text for e in m.entries("memory")}
    assert "agent fact after the race" in active  # acknowledged: never read as deleted
    assert "agent fact written during the race" in active
    assert "typed by hand first line" in active  # the person's own earlier lines
    assert "typed by hand line zero" in active
    assert "typed by hand second line" in active
    check_store(tmp_path)
