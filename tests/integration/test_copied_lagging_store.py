"""A store whose Markdown file lags its journal, copied with new timestamps (`cp -r`, a backup
restore, a sync tool): the file is read, since its stamp proves nothing, and it shows an older
render unchanged. That is no save by a person: the copy opens with every entry, renders the
file up to date and warns of nothing (ADR 0118's warning is for a file the person changed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.bench.run import TextGenerator, _open, prefill


def _touched_copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)
    later = os.stat(dst).st_mtime_ns + 5_000_000_000
    for path in dst.rglob("*"):
        os.utime(path, ns=(later, later))


def test_a_copied_store_whose_file_lags_opens_without_a_warning(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "copy"
    # the entries go straight into the journal: the file on disk is still the empty render
    prefill(src, 40, iter(TextGenerator(3)))
    _touched_copy(src, dst)
    memory = _open(dst)
    try:
        assert [w for w in memory.warnings if "lacks" in w] == []
        texts = [e.text for e in memory.entries("memory")]
    finally:
        memory.close()
    assert len(texts) == 40
    rendered = (dst / "agent" / "pi-hermes-memory" / "MEMORY.md").read_text(encoding="utf-8")
    assert all(text in rendered for text in texts)
